"""Nonlinear high-gain observer (Liu et al. §II-E, [20] eq. 9.4), model-based, forward Euler:

  e = q - x1,  x1 += T (x2 + L1/eps e),  x2 += T (f(q, x2, tau) + L2/eps^2 e)

with f = (M(q) + T D)^-1 (tau - n(q, x2)) the generated forward dynamics, the friction's slope D taken
semi-implicitly so that steep friction cannot make the step chatter (codegen.blocks.estimator.
semi_implicit_dynamics), run-time parameters, and tau the link-side torque applied over the last
sample (``in.tau``). The estimate output is the updated state.
eps, L1, L2 (diagonals) are run-time config; Liu et al. fix eps = 0.03 and tunes L1, L2.
"""

from __future__ import annotations

import casadi as cs

from codegen.errors import warn

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx
from .estimator import outputs, semi_implicit_dynamics


def euler_stable(ts: float, eps: float, l1: float, l2: float) -> bool:
    """Whether the forward-Euler error dynamics of one joint, e1' = (1 - a) e1 + T e2,
    e2' = e2 - (T L2/eps^2) e1 with a = T L1/eps and b = T^2 L2/eps^2, are stable: the Jury conditions
    of z^2 - (2 - a) z + (1 - a + b) give 0 < b < a, a - b < 2, 2a - b < 4. The model's friction is
    not in it: taken semi-implicitly it only damps (codegen.blocks.estimator.semi_implicit_dynamics)."""
    a, b = ts * l1 / eps, ts * ts * l2 / eps**2
    return 0.0 < b < a and a - b < 2.0 and 2.0 * a - b < 4.0


def build(
    ctx: Ctx, eps: float = 0.03, l1: float | tuple[float, ...] = 1.1, l2: float | tuple[float, ...] = 2.0
) -> Block:
    n, ts = ctx.n, ctx.ts
    gains = zip(per_joint(l1, n), per_joint(l2, n))
    unstable = [j for j, (a, b) in enumerate(gains) if not euler_stable(ts, eps, a, b)]
    if unstable:
        warn(
            ctx.robot.file,
            "realtime.estimator",
            f"nlhg's default gains (eps = {eps:g} s, L1, L2) give an unstable forward-Euler step at "
            f"T = {ts:g} s on joints {', '.join(str(j + 1) for j in unstable)}: set cfg.est.eps, l1, l2 "
            "before running (stable needs T^2 L2/eps^2 < T L1/eps, their difference < 2)",
        )
    q, x1, x2, f = ctx.sym("q"), ctx.sym("x1"), ctx.sym("x2"), ctx.sym("f")
    e_, g1, g2 = cs.SX.sym("eps"), ctx.sym("l1"), ctx.sym("l2")
    e = q - x1
    n1 = x1 + ts * (x2 + g1 / e_ * e)
    n2 = x2 + ts * (f + g2 / e_**2 * e)
    step = sx_function(
        "step",
        [
            ("out.q", q),
            ("st.est.x1", x1),
            ("st.est.x2", x2),
            ("st.est.f", f),
            ("cfg.est.eps", e_),
            ("cfg.est.l1", g1),
            ("cfg.est.l2", g2),
        ],
        [
            ("out.q_hat", n1),
            ("out.qd_hat", n2),
            ("out.qdd_hat", f + g2 / e_**2 * e),
            ("st.est.x1", n1),
            ("st.est.x2", n2),
        ],
        "forward-Euler update",
    )
    init = sx_function("init", [("out.q", q)], [("st.est.x1", q), ("st.est.x2", cs.SX.zeros(n))], "x1 := q, x2 := 0")
    injection = ([("out.q", q), ("st.est.x1", x1), ("cfg.est.eps", e_), ("cfg.est.l2", g2)], g2 / e_**2 * e)
    dynamics, workspace = semi_implicit_dynamics(ctx, "st.est.x2", injection)
    return Block(
        kind="est",
        name="nlhg",
        doc=__doc__ or "",
        template="model_based_estimator",
        options={},
        config=[
            Field("eps", "real", (), "epsilon_n (s)", (eps,), low=0.0, low_open=True),
            Field("l1", "real", (n,), "diagonal of L1", per_joint(l1, n), low=0.0, low_open=True),
            Field("l2", "real", (n,), "diagonal of L2", per_joint(l2, n), low=0.0, low_open=True),
        ],
        state=[
            Field("x1", "real", (n,), "position estimate"),
            Field("x2", "real", (n,), "velocity estimate"),
            *workspace,
        ],
        outputs=outputs(n),
        functions=[init, step, dynamics],
    )


SPEC = registry.Estimator(
    name="nlhg",
    summary="nonlinear high-gain observer on the rigid model (Liu et al. §II-E)",
    build=lambda ctx, choice: build(ctx),
    acceleration="always",
    model_based=True,
    genes=(
        registry.Gene("est.l1", 0.05, 20.0),
        registry.Gene("est.l2", 0.05, 50.0),
    ),
    in_study=True,
)
registry.register(SPEC)
