"""Third-order sliding-mode observer (Liu et al. §II-F, [25] eq. 28) in Levant's recursive form,
model-based, forward Euler. The text copy of Liu et al. lost a dot: the second and third equations use
s = d/dt x1_hat - x2_hat, where d/dt x1_hat is the right-hand side of the first equation:

  e = q - x1,   s = alpha3 |e|^(2/3) sgn(e) + k1 e          (so d/dt x1_hat = x2 + s)
  x1 += T (x2 + s)
  x2 += T (f(q, x2, tau) + alpha2 |s|^(1/2) sgn(s) + k2 e + z_eq)
  z_eq += T alpha1 sgn(s)

with alpha1 = 1.1 f+, alpha2 = 1.5 (f+)^(1/2), alpha3 = 1.9 (f+)^(1/3) (Liu et al. §III, after [42],
[43]; f+ the bound of the model perturbation, per joint) and scalar k1, k2. z_eq estimates the input
disturbance and is an output. f = (M(q) + T D)^-1 (tau - n(q, x2)) is the generated forward dynamics
with the friction's slope D taken semi-implicitly (codegen.blocks.estimator.semi_implicit_dynamics).
"""

from __future__ import annotations

import casadi as cs

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx
from .estimator import outputs, semi_implicit_dynamics


def build(ctx: Ctx, f_plus: float | tuple[float, ...] = 25.0, k1: float = 80.0, k2: float = 40.0) -> Block:
    n, ts = ctx.n, ctx.ts
    fp = ctx.sym("f_plus")
    alpha = cs.horzcat(1.1 * fp, 1.5 * cs.sqrt(fp), 1.9 * fp ** (1.0 / 3.0)).T  # 3 x n
    derive = sx_function("slimod_derive", [("cfg.est.f_plus", fp)], [("st.est.alpha", alpha)], "alpha1..3 from f+")
    q, x1, x2, z, f = (ctx.sym(s) for s in ("q", "x1", "x2", "z", "f"))
    al = cs.SX.sym("alpha", 3 * n)
    a = cs.reshape(al, 3, n)
    c1, c2 = cs.SX.sym("k1"), cs.SX.sym("k2")
    e = q - x1
    s = a[2, :].T * cs.fabs(e) ** (2.0 / 3.0) * cs.sign(e) + c1 * e
    n1 = x1 + ts * (x2 + s)
    injection = a[1, :].T * cs.sqrt(cs.fabs(s)) * cs.sign(s) + c2 * e + z
    acc = f + injection  # d/dt x2_hat
    n2 = x2 + ts * acc
    nz = z + ts * a[0, :].T * cs.sign(s)
    step = sx_function(
        "step",
        [
            ("out.q", q),
            ("st.est.x1", x1),
            ("st.est.x2", x2),
            ("st.est.z", z),
            ("st.est.f", f),
            ("st.est.alpha", al),
            ("cfg.est.k1", c1),
            ("cfg.est.k2", c2),
        ],
        [
            ("out.q_hat", n1),
            ("out.qd_hat", n2),
            ("out.qdd_hat", acc),
            ("out.z_eq", nz),
            ("st.est.x1", n1),
            ("st.est.x2", n2),
            ("st.est.z", nz),
        ],
        "forward-Euler update",
    )
    init = sx_function(
        "init",
        [("out.q", q)],
        [("st.est.x1", q), ("st.est.x2", cs.SX.zeros(n)), ("st.est.z", cs.SX.zeros(n))],
        "x1 := q, x2 := z := 0",
    )
    reads = [
        ("out.q", q),
        ("st.est.x1", x1),
        ("st.est.z", z),
        ("st.est.alpha", al),
        ("cfg.est.k1", c1),
        ("cfg.est.k2", c2),
    ]
    dynamics, workspace = semi_implicit_dynamics(ctx, "st.est.x2", (reads, injection))
    return Block(
        kind="est",
        name="slimod",
        doc=__doc__ or "",
        template="model_based_estimator",
        options={},
        config=[
            Field(
                "f_plus", "real", (n,), "f+, bound of the model perturbation per joint", per_joint(f_plus, n), low=0.0
            ),
            Field("k1", "real", (), "linear gain k1 (1/s)", (k1,), low=0.0),
            Field("k2", "real", (), "linear gain k2 (1/s^2)", (k2,), low=0.0),
        ],
        state=[
            Field("x1", "real", (n,), "position estimate"),
            Field("x2", "real", (n,), "velocity estimate"),
            Field("z", "real", (n,), "disturbance estimate z_eq"),
            Field("alpha", "real", (n, 3), "derived: alpha1, alpha2, alpha3"),
            *workspace,
        ],
        outputs=outputs(n) + [Field("z_eq", "real", (n,), "input disturbance estimate z_eq")],
        functions=[init, step, dynamics],
        derive=derive,
    )


SPEC = registry.Estimator(
    name="slimod",
    summary="sliding-mode observer on the rigid model (Liu et al. §II-F)",
    build=lambda ctx, choice: build(ctx),
    acceleration="always",
    model_based=True,
    genes=(
        registry.Gene("est.f_plus", 0.1, 200.0),
        registry.Gene("est.k1", 1.0, 500.0, per_joint=False),
        registry.Gene("est.k2", 1.0, 500.0, per_joint=False),
    ),
    in_study=True,
)
registry.register(SPEC)
