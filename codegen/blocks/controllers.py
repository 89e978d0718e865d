"""Controllers (optional): computed torque (Liu et al. eqs. 2-3) and PID with gravity compensation
(the industrial joint controller of Brunot et al. (2019) §2.2), each a block whose doc is its own function's
docstring (the generated header carries the one generated), and the elastic arms' state feedback.
"""

from __future__ import annotations

import casadi as cs
import numpy as np

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx


def _tau_max(ctx: Ctx) -> tuple[float, ...]:
    return tuple(j.limits.tau if np.isfinite(j.limits.tau) else 1e6 for j in ctx.robot.joints)


def _sat(u: cs.SX, m: cs.SX) -> cs.SX:
    return cs.fmin(cs.fmax(u, -m), m)


# the computed-torque loop's default stiffness Kp (1/s^2): a 10 rad/s bandwidth for every joint
CT_KP = 100.0


def computed_torque(ctx: Ctx, kp: float | tuple[float, ...] = CT_KP, kd: float | tuple[float, ...] = 13.0) -> Block:
    """Computed torque (Liu et al. eqs. 2-3), saturated to +-tau_max per joint:
    u = M(q_hat) nu + c(q_hat, qd_hat) + g(q_hat) + f_ff,
      nu = qdd_d + Kp (q_d - q_hat) + Kd (qd_d - qd_hat)
      (the usual signs; Liu et al. print them for negative gains), evaluated as one Newton-Euler pass
      u = rnea_frictionless(q_hat, qd_hat, nu) + f_ff (rotor inertia included), run-time parameters.
    f_ff = (1 - w) f(qd_hat) + w f(qd_d), w = ctl.friction_ff (run-time, 0 or 1; default 1): the
    friction f (viscous + Coulomb, the description's model) fed forward at the desired velocity
    (w = 1: its sign changes only where the desired motion reverses) or compensated at the estimated
    one (w = 0, with exactly the numbers of u = rnea(q_hat, qd_hat, nu)). At the estimate, sgn(qd_hat)
    of a noisy estimate around zero switches the full Coulomb torque every few samples, and a light
    joint that sticks (qd_hat ~ 0) gets no breakaway torque. Where the arm is held (a contact without
    the stop reaction) while q_d moves on, the feed-forward pushes on with FC sgn(qd_d) that the
    plant's friction no longer meets.
    The desired trajectory is the reaction's (out.q_d ...), i.e. in.q_des ... unless a collision
    reaction is active. The output tau_cmd is the link-side torque to command."""
    n = ctx.n
    model, pi = ctx.model_inputs()
    q, qd, q_d, qd_d, qdd_d, kps, kds, tm = (ctx.sym(s) for s in ("q", "qd", "q_d", "qd_d", "qdd_d", "kp", "kd", "tm"))
    nu = qdd_d + kps * (q_d - q) + kds * (qd_d - qd)
    w = cs.SX.sym("friction_ff")
    u = _sat(
        ctx.call("rnea_frictionless", q, qd, nu, pi)
        + (1 - w) * ctx.call("friction", qd, pi)
        + w * ctx.call("friction", qd_d, pi),
        tm,
    )
    step = sx_function(
        "step",
        [
            ("out.q_hat", q),
            ("out.qd_hat", qd),
            ("out.q_d", q_d),
            ("out.qd_d", qd_d),
            ("out.qdd_d", qdd_d),
            ("cfg.ctl.kp", kps),
            ("cfg.ctl.kd", kds),
            ("cfg.ctl.tau_max", tm),
            ("cfg.ctl.friction_ff", w),
        ]
        + model,
        [("out.tau_cmd", u)],
        "computed torque",
    )
    return Block(
        kind="ctl",
        name="computed_torque",
        doc=computed_torque.__doc__ or "",
        config=[
            Field("kp", "real", (n,), "Kp (1/s^2)", per_joint(kp, n), low=0.0),
            Field("kd", "real", (n,), "Kd (1/s)", per_joint(kd, n), low=0.0),
            Field("tau_max", "real", (n,), "torque limit (N m or N)", _tau_max(ctx), low=0.0, low_open=True),
            Field(
                "friction_ff",
                "real",
                (),
                "friction compensated at the estimated velocity (0) or fed forward at the desired one (1)",
                (1.0,),
                choices=(0.0, 1.0),
            ),
        ],
        outputs=[Field("tau_cmd", "real", (n,), "commanded link-side torque (N m or N)")],
        functions=[step],
    )


def pid(
    ctx: Ctx,
    kp: tuple[float, ...] | None = None,
    kd: tuple[float, ...] | None = None,
    ki: float | tuple[float, ...] = 0.0,
    i_max: float | tuple[float, ...] = 0.1,
) -> Block:
    """PID with gravity compensation (the industrial joint controller of Brunot et al. (2019) §2.2), saturated
    to +-tau_max per joint: e = q_d - q_hat, I = clamp(I + T e, +-i_max),
    u = Kp e + Kd (qd_d - qd_hat) + Ki I + g(q_hat).
    The desired trajectory is the reaction's (out.q_d ...), i.e. in.q_des ... unless a collision
    reaction is active. The output tau_cmd is the link-side torque to command."""
    n, ts = ctx.n, ctx.ts
    if kp is None or kd is None:  # default: 100 / 20 rad/s^2-equivalent on the diagonal of M(0)
        m0 = np.diag(np.array(ctx.call("mass_matrix", np.zeros(n), ctx.robot.standard_parameters())))
        kp = kp if kp is not None else tuple(100.0 * m0)
        kd = kd if kd is not None else tuple(20.0 * m0)
    model, pi = ctx.model_inputs()
    q, qd, q_d, qd_d, kps, kds, kis, im, tm, integ = (
        ctx.sym(s) for s in ("q", "qd", "q_d", "qd_d", "kp", "kd", "ki", "i_max", "tm", "integ")
    )
    e = q_d - q
    integ_n = _sat(integ + ts * e, im)
    u = _sat(kps * e + kds * (qd_d - qd) + kis * integ_n + ctx.call("gravity", q, pi), tm)
    step = sx_function(
        "step",
        [
            ("out.q_hat", q),
            ("out.qd_hat", qd),
            ("out.q_d", q_d),
            ("out.qd_d", qd_d),
            ("cfg.ctl.kp", kps),
            ("cfg.ctl.kd", kds),
            ("cfg.ctl.ki", kis),
            ("cfg.ctl.i_max", im),
            ("cfg.ctl.tau_max", tm),
            ("st.ctl.integ", integ),
        ]
        + model,
        [("st.ctl.integ", integ_n), ("out.tau_cmd", u)],
        "PID + gravity",
    )
    return Block(
        kind="ctl",
        name="pid",
        doc=pid.__doc__ or "",
        config=[
            Field("kp", "real", (n,), "Kp (N m/rad)", per_joint(kp, n), low=0.0),
            Field("kd", "real", (n,), "Kd (N m s/rad)", per_joint(kd, n), low=0.0),
            Field("ki", "real", (n,), "Ki (N m/(rad s))", per_joint(ki, n), low=0.0),
            Field("i_max", "real", (n,), "integral clamp (rad s)", per_joint(i_max, n), low=0.0),
            Field("tau_max", "real", (n,), "torque limit (N m or N)", _tau_max(ctx), low=0.0, low_open=True),
        ],
        state=[Field("integ", "real", (n,), "integral of q_d - q_hat")],
        outputs=[Field("tau_cmd", "real", (n,), "commanded link-side torque (N m or N)")],
        functions=[step],
    )


def state_feedback(ctx: Ctx) -> Block:
    """The elastic arm's joint controller (Kirchhoff 2011 §3.2.4, Fig. 3.9): full state feedback on
    (q, qd, theta, thetad) around the motor positions that hold q_d against gravity (eq. 3.28; the
    (I + A)^-T is ours, the static balance of our coupled link side), plus the gravity torque at
    the actual position:
      theta_d = q_d + A q_d + K^-1 (I + A)^-T g(q_d),  thetad_d its rate along qd_d (K: cfg.ctl.k_e),
      u = (I + A)^-T g(q_hat) + K_th (theta_d - theta_hat) + D_th (thetad_d - thetad_hat)
          + K_q e + K_i I + D_q (qd_d - qd_hat),  e = q_d - q_hat,  I = clamp(I + T e, +-i_max).
    The output is the motor torque tau_m (link side). Default gains: K_th = 4 k_e, D_th a damping
    ratio of 0.7 on the motor against K_th + k_e, K_q = k_e, K_i = 2 k_e, D_q = 0."""
    n, ts = ctx.n, ctx.ts
    drives = [j.elastic for j in ctx.robot.joints]
    if any(d is None for d in drives):
        raise ValueError("the state-feedback controller is for series-elastic joints")
    ke = np.array([d.stiffness for d in drives if d is not None])
    im = np.array([d.motor_inertia for d in drives if d is not None])
    model, pi = ctx.model_inputs()
    q, qd, th, thd, q_d, qd_d, kt, dt, kq, ki, dq, imx, tm, integ, kes = (
        ctx.sym(s)
        for s in ("q", "qd", "th", "thd", "q_d", "qd_d", "kt", "dt", "kq", "ki", "dq", "i_max", "tm", "integ", "k_e")
    )
    th_d, thd_d = ctx.call_elastic("motor_equilibrium", q_d, qd_d, pi, kes)
    g_m = ctx.call_elastic("motor_gravity", q, pi)
    e = q_d - q
    integ_n = _sat(integ + ts * e, imx)
    u = _sat(g_m + kt * (th_d - th) + dt * (thd_d - thd) + kq * e + ki * integ_n + dq * (qd_d - qd), tm)
    step = sx_function(
        "step",
        [
            ("out.q_hat", q),
            ("out.qd_hat", qd),
            ("out.theta_hat", th),
            ("out.thetad_hat", thd),
            ("out.q_d", q_d),
            ("out.qd_d", qd_d),
            ("cfg.ctl.k_theta", kt),
            ("cfg.ctl.d_theta", dt),
            ("cfg.ctl.k_q", kq),
            ("cfg.ctl.k_i", ki),
            ("cfg.ctl.d_q", dq),
            ("cfg.ctl.i_max", imx),
            ("cfg.ctl.tau_max", tm),
            ("cfg.ctl.k_e", kes),
            ("st.ctl.integ", integ),
        ]
        + model,
        [("st.ctl.integ", integ_n), ("out.tau_cmd", u)],
        "state feedback + gravity (motor torque)",
    )
    kt0 = 4.0 * ke
    return Block(
        kind="ctl",
        name="state_feedback",
        doc=state_feedback.__doc__ or "",
        config=[
            Field("k_theta", "real", (n,), "K_th, motor position gain (N m/rad)", tuple(kt0), low=0.0),
            Field(
                "d_theta",
                "real",
                (n,),
                "D_th, motor velocity gain (N m s/rad)",
                tuple(1.4 * np.sqrt(im * (kt0 + ke))),
                low=0.0,
            ),
            Field("k_q", "real", (n,), "K_q, link position gain (N m/rad)", tuple(ke), low=0.0),
            Field("k_i", "real", (n,), "K_i, link position integral gain (N m/(rad s))", tuple(2.0 * ke), low=0.0),
            Field("d_q", "real", (n,), "D_q, link velocity gain (N m s/rad)", (0.0,) * n, low=0.0),
            Field("i_max", "real", (n,), "integral clamp (rad s)", (0.1,) * n, low=0.0),
            Field(
                "tau_max",
                "real",
                (n,),
                "motor torque limit, link side (N m or N)",
                _tau_max(ctx),
                low=0.0,
                low_open=True,
            ),
            Field(
                "k_e",
                "real",
                (n,),
                "spring stiffness k_e in theta_d (N m/rad), e.g. identified",
                tuple(ke),
                low=0.0,
                low_open=True,
            ),
        ],
        state=[Field("integ", "real", (n,), "integral of q_d - q_hat")],
        outputs=[Field("tau_cmd", "real", (n,), "commanded motor torque tau_m, link side (N m or N)")],
        functions=[step],
    )


COMPUTED_TORQUE = registry.Controller(
    name="computed_torque",
    summary="computed torque on the estimates (Liu et al. §IV: Kp = 100, Kd = 13)",
    build=computed_torque,
    default=True,
)
PID = registry.Controller(name="pid", summary="joint PID with gravity compensation (Brunot et al.'s loop)", build=pid)
STATE_FEEDBACK = registry.Controller(
    name="state_feedback",
    summary="full-state feedback of a series-elastic arm, motor torques (Kirchhoff 2011 §3.2.4)",
    build=state_feedback,
    rigid=False,
    elastic=True,
    default_elastic=True,
)
registry.register(COMPUTED_TORQUE, PID, STATE_FEEDBACK)
