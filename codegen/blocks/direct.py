"""Direct-method collision residual (the baseline of Birjandi & Haddadin §IV, its Fig. 5 without the
high-pass): r = Y_b theta_hat - tau = rnea(q_hat, qd, qdd; model) + tau_f - tau (tau_f: the friction
terms beyond viscous + Coulomb, the [fric] block, 0 unless configured), with qd, qdd from the
estimator (one that gives qdd) or, ``direct_measured``, from ``in.qd_meas``, ``in.qdd_meas``.
No state, no filtering: r carries the whole model error and the noise of qdd. Sign: the external
torque on the robot, as the other observers."""

from __future__ import annotations

from . import registry
from .adaptive import motion_inputs, motion_source
from .base import Block, Field, sx_function
from .context import Ctx


def build(ctx: Ctx, measured: bool = False) -> Block:
    n = ctx.n
    model, pi = ctx.model_inputs()
    q, qd, qdd, tau = (ctx.sym(s) for s in ("q", "qd", "qdd", "tau"))
    src = motion_source(measured)
    terms, tau_f = ctx.friction_terms()
    step = sx_function(
        "step",
        [("out.q_hat", q), (src[0], qd), (src[1], qdd), ("in.tau", tau)] + model + terms,
        [("out.r", ctx.call("rnea", q, qd, qdd, pi) + tau_f - tau)],
        "r = rnea(q, qd, qdd) + tau_f - tau",
    )
    return Block(
        kind="obs",
        name=(DIRECT_MEASURED if measured else DIRECT).name,
        doc=__doc__ or "",
        template="direct",
        inputs=motion_inputs(n) if measured else [],
        outputs=[Field("r", "real", (n,), "residual r: external joint torque estimate (N m or N)")],
        functions=[step],
    )


DIRECT = registry.Observer(
    name="direct",
    summary="direct residual tau - (M qdd + n), estimated q-dot and q-ddot (Birjandi & Haddadin §II)",
    build=build,
    motion=("qd", "qdd"),
    collide=1,
    imu={"links": False},
)
DIRECT_MEASURED = registry.Observer(
    name="direct_measured",
    summary="direct residual with measured q-dot and q-ddot as inputs",
    build=lambda ctx: build(ctx, measured=True),
    motion=("qd", "qdd"),
    measured=True,
    collide=1,
)
registry.register(DIRECT, DIRECT_MEASURED)
