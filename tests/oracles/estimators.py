"""Velocity estimators' oracles: the generic plumbing (templates/rt/estimator.c.j2: init on the
first sample, then step) and the model-based one (nlhg, slimod: the forward dynamics
f = M(q)^-1 (tau - n(q, qd_hat)) by a numpy Cholesky solve, zeros where M is not positive definite,
as the C's)."""

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


def forward_dynamics(ctx: Ctx, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """M(q)^-1 (tau - n(q, qd)) with the description's friction (the dynamics library's), by a numpy
    Cholesky solve; zeros if M is not positive definite (as in C)."""
    m = np.array(ctx.call("mass_matrix", q, pi))
    rhs = np.asarray(tau, float) - np.array(_nle(ctx.dyn)(q, qd, pi)).ravel()
    try:
        c = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.zeros(ctx.n)
    return np.linalg.solve(c.T, np.linalg.solve(c, rhs))


@register("nlhg", "slimod")
def model_based(d: Data, block: Block, ctx: Ctx) -> None:
    """The forward dynamics into ``st.est.f`` (at q and the estimate ``st.est.x2``), then the step."""
    if d["loc.first"]:
        evaluate(block.fn("init"), d)
    pi = d["st.model.pi"] if "st.model.pi" in d else ctx.robot.standard_parameters()
    tau = d["in.tau"]
    if any(f.name == "fdyn_torque" for f in block.functions):
        evaluate(block.fn("fdyn_torque"), d)
        tau = d["st.est.tau_f"]
    d["st.est.f"] = forward_dynamics(ctx, d["out.q"], d["st.est.x2"], tau, pi)
    evaluate(block.fn("step"), d)
