"""The model-adaptive observers' oracle: the RLS restart/freeze of templates/rt/adaptive.c.j2,
the recursive least squares' update (dense, then P's diagonal blocks kept) and mg_cholesky_solve in
numpy, around the block's predict, prior and wrench functions (codegen.blocks.adaptive)."""

from __future__ import annotations

import numpy as np

from codegen.blocks.adaptive import Covariance, covariance_of
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


def unpack(p: np.ndarray, cov: Covariance, nb: int) -> np.ndarray:
    """The packed block-diagonal P as a dense b x b matrix in base-column order."""
    full, off = np.zeros((nb, nb)), 0
    for cols in packed_blocks(cov):
        full[np.ix_(cols, cols)] = p[off : off + cols.size**2].reshape(cols.size, cols.size)
        off += cols.size**2
    return full


def pack(full: np.ndarray, cov: Covariance) -> np.ndarray:
    """P's diagonal blocks of a dense b x b matrix, packed (what is off them is dropped)."""
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


@register(
    "adaptive", "adaptive_measured", "adaptive_momentum", "adaptive_momentum_measured", "adaptive_momentum_essential"
)
def observe(d: Data, block: Block, ctx: Ctx) -> None:
    integral = bool(block.options.get("integral"))
    restart = bool(d["loc.first"] or d["in.reset"])
    if integral and restart:  # the low-passes start again (also after a non-finite r, flagged below)
        d["st.obs.restart"] = np.array(1.0)
    evaluate(block.fn("predict"), d)
    if integral:
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
    if restart:  # remove the whole residual seen now, claim no information from it
        d["st.obs.gain"] = np.ones_like(d["st.obs.gain"])
        d["st.obs.gain_p"] = d["st.obs.gain_p"] * 0.0
        if integral:  # the low-passes start at 0 (G = 0: the correction is 0 too)
            d["st.obs.y"] = np.zeros_like(d["st.obs.y"])
    level = d["st.det.level"]  # the last sample's thresholds (0: not detecting)
    suspect = bool(np.any((level > 0) & (np.abs(d["out.r"]) > float(d["cfg.obs.suspect"]) * level)))
    hold = bool(d["st.det.collision"] or np.any(d["st.det.above"]))
    if not suspect or d["in.reset"]:  # below the suspect level: the hold is armed again
        d["st.obs.held"] = np.array(0, np.int32)
    elif int(d["st.obs.held"]) < int(d["cfg.obs.suspect_hold"]):  # held at most suspect_hold samples a time
        d["st.obs.held"] = np.array(int(d["st.obs.held"]) + 1, np.int32)
        hold = True
    if not (d["cfg.obs.freeze"] and hold):
        ok = rls_update(d, cov)
        if not (ok and np.all(np.isfinite(d["st.obs.dtheta"]))):
            d["st.obs.dtheta"] = np.zeros_like(d["st.obs.dtheta"])
            d["st.obs.p"] = pack(np.diag(d["st.obs.p0"]), cov)
    if restart:
        d["out.r"] = np.zeros_like(d["out.r"])
    evaluate(block.fn("wrench"), d)
    f = _solve(d["st.obs.jjt"], d["out.f_tip"])
    d["out.f_tip"] = np.zeros(6) if f is None else f
