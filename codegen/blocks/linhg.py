"""Linear high-gain observer (Liu et al. §II-D, [8] eq. 9), per joint, discretised with the bilinear
(Tustin) transform (Liu et al. §II-G):

  d/dt [x1; x2] = A [x1; x2] + B y,  A = [-h1/eps 1; -h2/eps^2 0],  B = [h1/eps; h2/eps^2]
  x_k = A_d x_{k-1} + B_d (y_k + y_{k-1}),  A_d = (I - A T/2)^-1 (I + A T/2),  B_d = (I - A T/2)^-1 B T/2

so the discrete poles are (1 + s T/2) / (1 - s T/2) of the continuous ones. eps, h1, h2 are run-time
config (Liu et al. tune the diagonals h1, h2 with eps = 0.03 fixed); A_d, B_d are derived from them.
"""

from __future__ import annotations

import casadi as cs

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx
from .estimator import outputs


def build(
    ctx: Ctx, eps: float = 0.03, h1: float | tuple[float, ...] = 40.0, h2: float | tuple[float, ...] = 200.0
) -> Block:
    n, ts = ctx.n, ctx.ts
    e, g1, g2 = cs.SX.sym("eps"), ctx.sym("h1"), ctx.sym("h2")
    ad_rows, bd_rows = [], []
    for i in range(n):
        a = cs.vertcat(cs.horzcat(-g1[i] / e, 1), cs.horzcat(-g2[i] / e**2, 0))
        b = cs.vertcat(g1[i] / e, g2[i] / e**2)
        m = cs.SX.eye(2) - a * (ts / 2)
        det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
        minv = cs.vertcat(cs.horzcat(m[1, 1], -m[0, 1]), cs.horzcat(-m[1, 0], m[0, 0])) / det
        ad = cs.mtimes(minv, cs.SX.eye(2) + a * (ts / 2))
        bd = cs.mtimes(minv, b) * (ts / 2)
        ad_rows.append(cs.vertcat(ad[0, 0], ad[0, 1], ad[1, 0], ad[1, 1]))
        bd_rows.append(bd)
    derive = sx_function(
        "linhg_derive",
        [("cfg.est.eps", e), ("cfg.est.h1", g1), ("cfg.est.h2", g2)],
        [("st.est.ad", cs.horzcat(*ad_rows)), ("st.est.bd", cs.horzcat(*bd_rows))],
        "Tustin A_d, B_d from eps, h1, h2",
    )
    q = ctx.sym("q")
    xs, yp, ads, bds = cs.SX.sym("x", 2 * n), ctx.sym("y_prev"), cs.SX.sym("ad", 4 * n), cs.SX.sym("bd", 2 * n)
    x, ad_m, bd_m = cs.reshape(xs, 2, n), cs.reshape(ads, 4, n), cs.reshape(bds, 2, n)
    u = (q + yp).T
    x1 = ad_m[0, :] * x[0, :] + ad_m[1, :] * x[1, :] + bd_m[0, :] * u
    x2 = ad_m[2, :] * x[0, :] + ad_m[3, :] * x[1, :] + bd_m[1, :] * u
    step = sx_function(
        "step",
        [("out.q", q), ("st.est.x", xs), ("st.est.y_prev", yp), ("st.est.ad", ads), ("st.est.bd", bds)],
        [
            ("out.q_hat", x1.T),
            ("out.qd_hat", x2.T),
            ("out.qdd_hat", cs.SX.zeros(n)),
            ("st.est.x", cs.vertcat(x1, x2)),
            ("st.est.y_prev", q),
        ],
        "Tustin update",
    )
    init = sx_function(
        "init",
        [("out.q", q)],
        [("st.est.x", cs.vertcat(q.T, cs.SX.zeros(1, n))), ("st.est.y_prev", q)],
        "x := [q, 0], y_prev := q",
    )
    return Block(
        kind="est",
        name="linhg",
        doc=__doc__ or "",
        config=[
            Field("eps", "real", (), "epsilon_l (s)", (eps,), low=0.0, low_open=True),
            Field("h1", "real", (n,), "diagonal of H1", per_joint(h1, n), low=0.0, low_open=True),
            Field("h2", "real", (n,), "diagonal of H2", per_joint(h2, n), low=0.0, low_open=True),
        ],
        state=[
            Field("x", "real", (n, 2), "[x1_hat, x2_hat] per joint"),
            Field("y_prev", "real", (n,), "previous position sample"),
            Field("ad", "real", (n, 4), "derived: A_d row-major per joint"),
            Field("bd", "real", (n, 2), "derived: B_d per joint"),
        ],
        outputs=outputs(n),
        functions=[init, step],
        derive=derive,
    )


SPEC = registry.Estimator(
    name="linhg",
    summary="linear high-gain observer (Liu et al. §II-D)",
    build=lambda ctx, choice: build(ctx),
    genes=(
        registry.Gene("est.h1", 0.5, 300.0),
        registry.Gene("est.h2", 0.5, 5000.0),
    ),
    in_study=True,
)
registry.register(SPEC)
