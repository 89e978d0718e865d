"""Velocity estimators' oracles: the generic plumbing (templates/rt/estimator.c.j2: init on the
first sample, then step) and the model-based one (nlhg, slimod: the forward dynamics
f = (M(q) + T D)^-1 (tau - n(q, qd_hat)) by a numpy Cholesky solve, zeros where it is not positive
definite, as the C's)."""

from __future__ import annotations

from functools import cache

import casadi as cs
import numpy as np

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from codegen.symbolic.dynamics import Dynamics
from tests.oracles.base import Data, evaluate, register


@register("findiff", "movav", "lsf", "bde", "tse", "ewlr", "kalman", "linhg", "imu")
def init_then_step(d: Data, block: Block, ctx: Ctx) -> None:
    if d["loc.first"]:
        evaluate(block.fn("init"), d)
    evaluate(block.fn("step"), d)


@cache
def _nle(dyn: Dynamics) -> cs.Function:
    return cs.Function("nle", [dyn.q, dyn.qd, dyn.pi], [dyn.nonlinear_effects(dyn.pi)])


def forward_dynamics(m: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """m^-1 rhs by a numpy Cholesky solve; zeros if m is not positive definite (as in C)."""
    try:
        c = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.zeros(len(rhs))
    return np.linalg.solve(c.T, np.linalg.solve(c, rhs))


@register("nlhg", "slimod")
def model_based(d: Data, block: Block, ctx: Ctx) -> None:
    """M(q) and n(q, qd_hat) (the description's friction, as the dynamics library's) into the
    workspace, the block's semi-implicit terms (M + T D, tau - n), the solve into ``st.est.f``, then
    the step."""
    if d["loc.first"]:
        evaluate(block.fn("init"), d)
    pi = d["st.model.pi"] if "st.model.pi" in d else ctx.robot.standard_parameters()
    q, qd = d["out.q"], d["st.est.x2"]
    d["st.est.m"] = np.array(ctx.call("mass_matrix", q, pi)).ravel()
    d["st.est.f"] = np.array(_nle(ctx.dyn)(q, qd, pi)).ravel()
    evaluate(block.fn("semi_implicit"), d)
    d["st.est.f"] = forward_dynamics(np.reshape(d["st.est.m"], (ctx.n, ctx.n)), d["st.est.f"])
    evaluate(block.fn("step"), d)
