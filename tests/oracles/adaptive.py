"""The model-adaptive observers' oracle: the RLS restart/freeze of templates/rt/adaptive.c.j2 and
runtime mg_rls_gain, mg_rls_correct, mg_cholesky_solve in numpy, around the block's predict, prior
and wrench functions (codegen.blocks.adaptive)."""

from __future__ import annotations

import numpy as np

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


def rls_gain(d: Data) -> bool:
    """The runtime's mg_rls_gain on the block's state: False where Y P Y^T + lambda I is not
    positive definite (P then unchanged)."""
    yt, p = d["st.obs.y"], d["st.obs.p"]
    n = yt.shape[1]
    s = yt.T @ p @ yt + float(d["cfg.obs.lam"]) * np.eye(n)
    if not np.all(np.isfinite(s)):
        return False
    try:
        lower = np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        return False
    v = np.linalg.solve(lower, yt.T @ p)
    d["st.obs.w"] = v
    d["st.obs.s"] = lower + np.triu(s, 1)  # as the C leaves it: L below, S's upper triangle above
    d["st.obs.p"] = p - float(d["st.obs.gain_p"]) * (v.T @ v) + np.diag(d["st.obs.drift"])
    return True


def rls_correct(d: Data) -> None:
    """The runtime's mg_rls_correct: dtheta_hat -= V^T L^-1 (gain .* r)."""
    lower = np.tril(d["st.obs.s"])
    d["st.obs.dtheta"] = d["st.obs.dtheta"] - d["st.obs.w"].T @ np.linalg.solve(lower, d["st.obs.gain"] * d["out.r"])


@register("adaptive", "adaptive_measured", "adaptive_momentum", "adaptive_momentum_measured")
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
    if d["loc.first"]:
        evaluate(block.fn("prior"), d)
        d["st.obs.p"] = np.diag(d["st.obs.p0"])
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
        ok = rls_gain(d)
        if ok:
            rls_correct(d)
        if not (ok and np.all(np.isfinite(d["st.obs.dtheta"]))):
            d["st.obs.dtheta"] = np.zeros_like(d["st.obs.dtheta"])
            d["st.obs.p"] = np.diag(d["st.obs.p0"])
    if restart:
        d["out.r"] = np.zeros_like(d["out.r"])
    evaluate(block.fn("wrench"), d)
    f = _solve(d["st.obs.jjt"], d["out.f_tip"])
    d["out.f_tip"] = np.zeros(6) if f is None else f
