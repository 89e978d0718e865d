"""Nonlinear high-gain observer (Liu et al. §II-E, [20] eq. 9.4), model-based, forward Euler:

  e = q - x1,  x1 += T (x2 + L1/eps e),  x2 += T (f(q, x2, tau) + L2/eps^2 e)

with f = M(q)^-1 (tau - n(q, x2)) the generated forward dynamics (run-time parameters) and tau the
link-side torque applied over the last sample (``in.tau``). The estimate output is the updated state.
eps, L1, L2 (diagonals) are run-time config; Liu et al. fix eps = 0.03 and tunes L1, L2.
"""

from __future__ import annotations

import casadi as cs

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx
from .estimator import fdyn_torque, outputs


def build(
    ctx: Ctx, eps: float = 0.03, l1: float | tuple[float, ...] = 1.1, l2: float | tuple[float, ...] = 2.0
) -> Block:
    n, ts = ctx.n, ctx.ts
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
    torque_fns, torque_state = fdyn_torque(ctx, "st.est.x2")
    return Block(
        kind="est",
        name="nlhg",
        doc=__doc__ or "",
        template="model_based_estimator",
        options={"fdyn": "st.est.f", "qd": "st.est.x2", "fdyn_torque": bool(torque_fns)},
        config=[
            Field("eps", "real", (), "epsilon_n (s)", (eps,), low=0.0, low_open=True),
            Field("l1", "real", (n,), "diagonal of L1", per_joint(l1, n), low=0.0, low_open=True),
            Field("l2", "real", (n,), "diagonal of L2", per_joint(l2, n), low=0.0, low_open=True),
        ],
        state=[
            Field("x1", "real", (n,), "position estimate"),
            Field("x2", "real", (n,), "velocity estimate"),
            Field("f", "real", (n,), "workspace: f(q, x2, tau)"),
            *torque_state,
        ],
        outputs=outputs(n),
        functions=[init, step, *torque_fns],
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
