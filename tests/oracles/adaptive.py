"""The model-adaptive observers' oracle: the RLS restart/freeze of templates/rt/adaptive.c.j2,
the recursive least squares' update (dense, then P's diagonal blocks kept; or sliced over a window,
SLICED_DOC: each slice's rows or columns of the dense update, with numpy's products and
factorisation) and mg_cholesky_solve in numpy, around the block's predict, prior and wrench
functions (codegen.blocks.adaptive)."""

from __future__ import annotations

from typing import cast

import numpy as np

from codegen.blocks.adaptive import SLICE_PHASES, Covariance, covariance_of
from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from tests.oracles.base import Data, evaluate, register


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The C's mg_cholesky_solve: None where it fails (a not positive definite or not finite; a
    non-finite b goes through, as in C)."""
    if not np.all(np.isfinite(a)):
        return None
    try:
        c = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.solve(c.T, np.linalg.solve(c, b))


def packed_blocks(cov: Covariance) -> list[np.ndarray]:
    """The base columns of each of P's diagonal blocks, in the packed P's order (codegen.blocks.adaptive)."""
    col = np.asarray(cov["col"])
    return [col[start : start + size] for start, size, _, _ in cov["blocks"]]


def triangular(cov: Covariance) -> bool:
    """P stored as its upper triangle (the sliced update) rather than as square diagonal blocks."""
    return cov["size"] != sum(size**2 for _, size, _, _ in cov["blocks"])


def unpack(p: np.ndarray, cov: Covariance, nb: int) -> np.ndarray:
    """The packed block-diagonal P as a dense b x b matrix in base-column order (the sliced update's:
    its upper triangle row by row)."""
    if triangular(cov):
        upper = np.zeros((nb, nb))
        upper[np.triu_indices(nb)] = p
        return upper + np.triu(upper, 1).T
    full, off = np.zeros((nb, nb)), 0
    for cols in packed_blocks(cov):
        full[np.ix_(cols, cols)] = p[off : off + cols.size**2].reshape(cols.size, cols.size)
        off += cols.size**2
    return full


def pack(full: np.ndarray, cov: Covariance) -> np.ndarray:
    """P's diagonal blocks of a dense b x b matrix, packed (what is off them is dropped; the sliced
    update's: the upper triangle row by row)."""
    if triangular(cov):
        return full[np.triu_indices(full.shape[0])]
    return np.concatenate([full[np.ix_(cols, cols)].ravel() for cols in packed_blocks(cov)])


def rls_update(d: Data, cov: Covariance) -> bool:
    """Recursive least squares' dense update (the runtime's mg_rls_gain and mg_rls_correct before
    issue #47) from the block-diagonal P, then P's diagonal blocks kept: S = Y P Y^T + lambda I = L L^T,
    V = L^-1 Y P, dtheta_hat -= V^T L^-1 (gain .* r), P -= gain_p V^T V, P_ii += drift_i. False where
    S is not positive definite (P and dtheta_hat then unchanged)."""
    yt = d["st.obs.y"]
    nb, n = yt.shape
    p = unpack(d["st.obs.p"], cov, nb)
    s = yt.T @ p @ yt + float(d["cfg.obs.lam"]) * np.eye(n)
    if not np.all(np.isfinite(s)):
        return False
    try:
        lower = np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        return False
    v = np.linalg.solve(lower, yt.T @ p)
    d["st.obs.dtheta"] = d["st.obs.dtheta"] - v.T @ np.linalg.solve(lower, d["st.obs.gain"] * d["out.r"])
    if float(d["st.obs.gain_p"]) > 0:
        p = p - float(d["st.obs.gain_p"]) * (v.T @ v)
    d["st.obs.p"] = pack(p + np.diag(d["st.obs.drift"]), cov)
    return True


def snapshot(gs: np.ndarray, block: Block) -> np.ndarray:
    """The sliced update's snapshot of G (n x b) from its stored entries (those that can be non-zero,
    row by row: the block's ``rows`` and ``cols``, SLICED_DOC)."""
    rows, cols = cast(list[int], block.options["rows"]), cast(list[int], block.options["cols"])
    g = np.zeros((len(rows) - 1, len(cast(tuple[int, ...], block.options["adapted"]))))
    for j in range(len(rows) - 1):
        g[j, cols[rows[j] : rows[j + 1]]] = gs[rows[j] : rows[j + 1]]
    return g


def sliced_slice(d: Data, block: Block, discard: bool, held: bool) -> None:
    """The sliced update's work this sample (SLICED_DOC): an update whose correction is not applied
    yet is discarded (``discard``: a restart, or frozen by a latched collision or a joint above its
    threshold); with none in flight a window starts unless discarded or ``held`` (frozen by any hold,
    the suspect level's included): the snapshot (its G written by predict); else the next slice runs
    its rows or columns."""
    slices = cast(list[tuple[int, int, int]], block.options["slices"])
    corrected = [ph for ph, _, _ in slices].index(SLICE_PHASES["correct"]) + 1
    at = int(d["st.obs.slice"])
    if 0 < at <= corrected and discard:
        at = 0
    if at == 0:
        if not (discard or held):  # a window starts: this sample's snapshot (predict wrote its G)
            d["st.obs.v"] = np.zeros_like(d["st.obs.v"])
            d["st.obs.u"] = d["st.obs.gain"] * d["out.r"]
            d["st.obs.gain_w"] = d["st.obs.gain_p"].copy()
            at = 1
        d["st.obs.slice"] = np.array(at, np.int32)
        return
    phase, lo, hi = slices[at - 1]
    g, v, s = snapshot(d["st.obs.gs"], block), d["st.obs.v"].copy(), d["st.obs.s"].copy()
    cov = covariance_of(block)
    p = unpack(d["st.obs.p"], cov, g.shape[1])
    ok = True
    if phase == SLICE_PHASES["w"]:  # W = G P, P's rows lo..hi - 1: their upper part and its mirror
        for i in range(lo, hi):
            v[:, i:] += np.outer(g[:, i], p[i, i:])
            v[:, i] += g[:, i + 1 :] @ p[i, i + 1 :]
    elif phase == SLICE_PHASES["s"]:  # S = W G^T + lambda I, rows lo..hi - 1 of the lower triangle
        full = v @ g.T + float(d["cfg.obs.lam"]) * np.eye(g.shape[0])
        for j in range(lo, hi):
            s[j, : j + 1] = full[j, : j + 1]
    elif phase == SLICE_PHASES["v"]:  # L (first), then V = L^-1 W, columns lo..hi - 1
        if lo == 0:
            lower = np.tril(s)
            try:
                s = np.triu(s, 1) + np.linalg.cholesky(lower + np.tril(lower, -1).T)
            except np.linalg.LinAlgError:
                ok = False
        if ok:
            v[:, lo:hi] = np.linalg.solve(np.tril(s), v[:, lo:hi])
    elif phase == SLICE_PHASES["correct"]:  # dtheta_hat -= V^T L^-1 u
        d["st.obs.u"] = np.linalg.solve(np.tril(s), d["st.obs.u"])
        d["st.obs.dtheta"] = d["st.obs.dtheta"] - v.T @ d["st.obs.u"]
        ok = bool(np.all(np.isfinite(d["st.obs.dtheta"])))
    else:  # P -= g_min V^T V + Q, P's rows lo..hi - 1
        for i in range(lo, hi):
            p[i, i:] -= float(d["st.obs.gain_w"]) * (v[:, i] @ v[:, i:])
            p[i, i] += float(d["st.obs.drift"]) * d["st.obs.p0"][i]  # Q = scale P_0
        d["st.obs.p"] = pack(p, cov)  # the upper triangle
    d["st.obs.v"], d["st.obs.s"] = v, s
    at = at + 1 if at < len(slices) else 0
    if not ok:  # non-finite inputs or S not positive definite: start the observer again
        d["st.obs.dtheta"] = np.zeros_like(d["st.obs.dtheta"])
        d["st.obs.p"] = pack(np.diag(d["st.obs.p0"]), cov)
        at = 0
    d["st.obs.slice"] = np.array(at, np.int32)


@register(
    "adaptive",
    "adaptive_measured",
    "adaptive_momentum",
    "adaptive_momentum_measured",
    "adaptive_momentum_essential",
    "adaptive_momentum_dense",
)
def observe(d: Data, block: Block, ctx: Ctx) -> None:
    integral = bool(block.options.get("integral"))
    restart = bool(d["loc.first"] or d["in.reset"])
    if integral and restart:  # the low-passes start again (also after a non-finite r, flagged below)
        d["st.obs.restart"] = np.array(1.0)
    sliced = "slices" in block.options
    kept = d["st.obs.gs"].copy() if sliced else None
    evaluate(block.fn("predict"), d)
    if kept is not None and int(d["st.obs.slice"]) != 0:  # G is stored only when a window can start
        d["st.obs.gs"] = kept
    if integral:
        if not sliced:  # the sliced update's predict writes D over itself (no w)
            d["st.obs.d"] = d["st.obs.w"].reshape(d["st.obs.d"].shape)
        # non-finite inputs now (a non-finite G reaches r through G dtheta_hat): no correction, r = 0,
        # and the low-passes start again next sample
        finite = bool(np.all(np.isfinite(d["out.r"])))
        restart = restart or bool(d["st.obs.restart"]) or not finite
        d["st.obs.restart"] = np.array(0.0 if finite else 1.0)
    cov = covariance_of(block)
    if d["loc.first"]:
        evaluate(block.fn("prior"), d)
        d["st.obs.p"] = pack(np.diag(d["st.obs.p0"]), cov)
    if restart:  # remove the whole residual seen now (the direct form's: at most rate T of it), claim no information
        if integral:
            d["st.obs.gain"] = np.ones_like(d["st.obs.gain"])
        else:
            r, step = d["out.r"], float(d["cfg.obs.rate"]) * ctx.ts
            # fmax as the generated code's: a non-finite r gives g = 1 (the observer then starts again)
            d["st.obs.gain"] = np.full_like(d["st.obs.gain"], step / float(np.fmax(np.linalg.norm(r), step)))
        d["st.obs.gain_p"] = d["st.obs.gain_p"] * 0.0
        if integral and not sliced:  # the low-passes start at 0 (G = 0: the correction is 0 too)
            d["st.obs.y"] = np.zeros_like(d["st.obs.y"])
    level = d["st.det.level"]  # the last sample's thresholds (0: not detecting)
    suspect = bool(np.any((level > 0) & (np.abs(d["out.r"]) > float(d["cfg.obs.suspect"]) * level)))
    hold = bool(d["st.det.collision"] or np.any(d["st.det.above"]))
    firm = hold  # a latched collision or a joint above its threshold: not only suspect
    if not suspect or d["in.reset"]:  # below the suspect level: the hold is armed again
        d["st.obs.held"] = np.array(0, np.int32)
    elif int(d["st.obs.held"]) < int(d["cfg.obs.suspect_hold"]):  # held at most suspect_hold samples a time
        d["st.obs.held"] = np.array(int(d["st.obs.held"]) + 1, np.int32)
        hold = True
    if sliced:
        sliced_slice(d, block, restart or bool(d["cfg.obs.freeze"] and firm), bool(d["cfg.obs.freeze"] and hold))
    elif not (d["cfg.obs.freeze"] and hold):
        ok = rls_update(d, cov)
        if not (ok and np.all(np.isfinite(d["st.obs.dtheta"]))):
            d["st.obs.dtheta"] = np.zeros_like(d["st.obs.dtheta"])
            d["st.obs.p"] = pack(np.diag(d["st.obs.p0"]), cov)
    if restart:
        d["out.r"] = np.zeros_like(d["out.r"])
    evaluate(block.fn("wrench"), d)
    f = _solve(d["loc.jjt"].reshape(6, 6), d["out.f_tip"])
    d["out.f_tip"] = np.zeros(6) if f is None else f
