"""What every velocity estimator shares: its outputs, the first-sample initialisation, the call order.

An estimator block has an ``init`` function (state from the first position ``loc.q``) and a ``step``
function; model-based ones (nlhg, slimod) also name the state field where the C step first puts
f = M(q)^-1 (tau - n(q, qd_hat)) (the generated forward dynamics). All read ``loc.q`` (the encoder's
position, held on a lost sample) and ``loc.valid`` (1.0 or 0.0 per joint) and write
``out.q_hat``, ``out.qd_hat`` and, where the method gives it, ``out.qdd_hat``. On a lost sample only
the Kalman filter changes its update (it predicts); the others see the held position, as in
Liu et al.'s sensor-fault experiment (§IV-C).
"""

from __future__ import annotations

from codegen.symbolic.functions import FunctionSpec

from .base import Field, sx_function
from .context import Ctx


def outputs(n: int) -> list[Field]:
    return [
        Field("q_hat", "real", (n,), "estimated position (rad or m)"),
        Field("qd_hat", "real", (n,), "estimated velocity (rad/s or m/s)"),
        Field("qdd_hat", "real", (n,), "estimated acceleration where the estimator gives it, else 0"),
    ]


def fdyn_torque(ctx: Ctx, qd_binding: str) -> tuple[list[FunctionSpec], list[Field]]:
    """A model-based estimator's torque for the dynamics library's forward dynamics, which has the
    description's Coulomb scales compiled in: ``in.tau`` less the run-time scales' friction minus the
    description's (``cfg.model.coulomb_scale``), so that f = M(q)^-1 (tau - n(q, qd_hat)) has the
    run-time scales. Its function and workspace field, or nothing when the scales are compiled in."""
    if ctx.coulomb_scale is None:
        return [], []
    model, pi = ctx.model_inputs()
    tau, qd = ctx.sym("tau"), ctx.sym("qd")
    fn = sx_function(
        "fdyn_torque",
        [("in.tau", tau), (qd_binding, qd), *model],
        [("st.est.tau_f", tau - ctx.call("friction_correction", qd, pi))],
        "tau less the run-time Coulomb scales' friction change",
    )
    return [fn], [Field("tau_f", "real", (ctx.n,), "workspace: the forward dynamics' torque")]
