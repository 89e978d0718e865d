"""What every velocity estimator shares: its outputs, the first-sample initialisation, the call order.

An estimator block has an ``init`` function (state from the first position ``loc.q``) and a ``step``
function; model-based ones (nlhg, slimod) step on f = (M(q) + T D)^-1 (tau - n(q, qd_hat)), the
generated dynamics with the friction taken semi-implicitly (``semi_implicit_dynamics``). All read
``loc.q`` (the encoder's position, held on a lost sample) and ``loc.valid`` (1.0 or 0.0 per joint) and write
``out.q_hat``, ``out.qd_hat`` and, where the method gives it, ``out.qdd_hat``. On a lost sample only
the Kalman filter changes its update (it predicts); the others see the held position, as in
Liu et al.'s sensor-fault experiment (§IV-C).
"""

from __future__ import annotations

import casadi as cs

from codegen.symbolic.functions import FunctionSpec

from .base import Field, sx_function
from .context import Ctx


def outputs(n: int) -> list[Field]:
    return [
        Field("q_hat", "real", (n,), "estimated position (rad or m)"),
        Field("qd_hat", "real", (n,), "estimated velocity (rad/s or m/s)"),
        Field("qdd_hat", "real", (n,), "estimated acceleration where the estimator gives it, else 0"),
    ]


SECANT_FLOOR = 1e-6  # rad/s
Correction = tuple[list[tuple[str, cs.SX]], cs.SX]  # an observer's injection into d/dt x2: bindings, term


def semi_implicit_dynamics(ctx: Ctx, qd_binding: str, correction: Correction) -> tuple[FunctionSpec, list[Field]]:
    """A model-based estimator's forward dynamics with the friction taken semi-implicitly. The C step
    writes M(q) into ``st.est.m`` and n(q, qd_hat) into ``st.est.f`` (the dynamics library's
    functions, the description's Coulomb scales); this function turns them into

        st.est.m = M(q) + T D,   D = diag(max(0, (f_j(v_j) - f_j(0)) / v_j)),  v = qd_hat
                                 (|v_j| raised to SECANT_FLOOR where smaller),
        st.est.f = tau - n(q, qd_hat) - T D c   (less the run-time Coulomb scales' change, if any),

    f the joints' friction and c the observer's own injection into d/dt x2 (``correction``:
    L2/eps^2 e for the high-gain observer); the C step solves (M + T D) a = st.est.f by Cholesky and
    the observer steps x2' = x2 + T (a + c). So x2' - x2 = T (M + T D)^-1 (tau - n(x2) + M c): the
    friction's velocity-dependent part taken at the step's end along its secant through the origin,
    f(x2') - f(0) ~ D x2'.

    Why: taken explicitly, a = M^-1 (tau - n(x2)), one Euler step of the friction alone maps a velocity
    x to x - T M^-1 (f(x) - f(0)), which crosses zero and chatters once T f'(0) / M > 2 (the LWA-4P's
    tanh Coulomb at 0.01 rad/s: 2.6-11 on Liu et al.'s motion at 125 Hz; sgn friction: always).
    Semi-implicitly it maps x to (M + T D)^-1 M x. For a joint alone that is x M / (M + T D_j): the same
    sign and smaller, for every monotone friction (D_j >= 0), every slope and every rate, sgn included;
    for the arm the eigenvalues of (M + T D)^-1 M lie in (0, 1] (similar to the symmetric
    (M + T D)^-1/2 M (M + T D)^-1/2, M > 0, D >= 0). The tangent slope f'(x2) would be stable only
    near x2 = 0: out of the steep band it is ~0 and the step jumps across the band into a 2-cycle of
    about T F_C / (2 M) (seen with the Coulomb scales at 1e-5 rad/s). The price is a lag of the model's
    acceleration by (M + T D)^-1 M where T D is not small against M: at low speed on light joints,
    where the explicit step chattered instead. SECANT_FLOOR keeps D finite at x2 = 0 (for sgn
    friction D = F_C / 1e-6 there, which only pins the step's velocity change to ~0)."""
    n = ctx.n
    model, pi = ctx.model_inputs()
    tau, qd, nle = ctx.sym("tau"), ctx.sym("qd"), ctx.sym("nle")
    m = cs.SX.sym("m", n * n)
    away = cs.if_else(cs.fabs(qd) < SECANT_FLOOR, SECANT_FLOOR, qd)  # element-wise
    slope = cs.fmax(0.0, (ctx.call("friction", away, pi) - ctx.call("friction", cs.SX.zeros(n), pi)) / away)
    bindings, c = correction
    rhs = tau - nle - ctx.ts * slope * c
    if ctx.coulomb_scale is not None:  # the library's n has the description's scales compiled in
        rhs = rhs - ctx.call("friction_correction", qd, pi)
    damped = m + cs.vec(cs.diag(ctx.ts * slope))
    fn = sx_function(
        "semi_implicit",
        [("in.tau", tau), (qd_binding, qd), ("st.est.f", nle), ("st.est.m", m), *bindings, *model],
        [("st.est.f", rhs), ("st.est.m", damped)],
        "M + T D and tau - n - T D c for the semi-implicit forward dynamics",
    )
    return fn, [
        Field("m", "real", (n * n,), "workspace: M(q) + T D (row-major), then its Cholesky factor"),
        Field("f", "real", (n,), "workspace: n(q, x2), tau - n, then the acceleration f"),
    ]
