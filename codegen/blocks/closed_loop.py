"""The closed-loop model output-error identification simulates (Brunot et al. 2019 §2.2, §3.2): the robot's
rigid dynamics in the parameterised form, driven by the industrial joint controller of the
real-time pipeline -- the ``pid`` block (PID + gravity compensation from the controller's own, fixed
model) on a ``findiff`` velocity (q_k - q_{k-1}) / T_s, both the very CasADi functions the generated
pipeline runs -- and the drive gains G_tau of Brunot et al. (2019) eq. 5 (torque = G_tau x controller output).

Only compositions and derivatives of existing expressions are made here:
* ``controller``: (q_k, q_{k-1}, integ_k; q_d, qd_d; gains, G_tau, the controller's pi) ->
  (tau_k, integ_{k+1}) and its Jacobian with respect to (q_k, q_{k-1}, integ_k);
* ``inverse_dynamics_jacobian``: d rnea / d(q, qd) at fixed qdd, for the forward sensitivity of
  the plant, qdd = M^-1 (tau - n): d qdd = M^-1 (d tau - d rnea/dq dq - d rnea/dqd dqd - Y_b d beta)
  (implicit differentiation of rnea(q, qd, qdd) = Y_b beta = tau).
"""

from __future__ import annotations

import casadi as cs

from codegen.blocks import controllers, findiff
from codegen.blocks.context import Ctx
from codegen.blocks.options import EstimatorChoice, RtOptions
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import FunctionSpec


def _call(fn: FunctionSpec, bindings: dict[str, cs.SX]) -> dict[str, cs.SX]:
    """Evaluate a block's function symbolically on named bindings; returns its outputs by binding."""
    res = fn.casadi(*[bindings[b] for b in fn.reads])
    outs = list(res) if isinstance(res, (list, tuple)) else [res]
    return dict(zip(fn.writes, outs))


def controller(robot: Robot, dyn: Dynamics, sample_period: float) -> tuple[cs.Function, cs.Function]:
    """(controller, its Jacobian). Inputs of both: q, q_prev, integ, q_d, qd_d, kp, kd, ki, i_max,
    tau_max, drive_gain, ctl_pi. controller -> (tau, integ_next); jacobian -> (dtau, dinteg), each
    n x 3n, columns (q, q_prev, integ)."""
    n = robot.dof
    ctx = Ctx(
        robot,
        dyn,
        RtOptions(
            estimator=EstimatorChoice(findiff.FINDIFF.name),
            observer="none",
            controller=controllers.PID.name,
            sample_period=sample_period,
        ),
    )
    s = {
        name: cs.SX.sym(name, robot.n_standard if name == "ctl_pi" else n)
        for name in (
            "q",
            "q_prev",
            "integ",
            "q_d",
            "qd_d",
            "kp",
            "kd",
            "ki",
            "i_max",
            "tau_max",
            "drive_gain",
            "ctl_pi",
        )
    }
    est = _call(findiff.build(ctx, 1).fn("step"), {"out.q": s["q"], "st.est.hist": s["q_prev"]})
    pid = controllers.pid(ctx, kp=(0.0,) * n, kd=(0.0,) * n)
    ctl = _call(
        pid.fn("step"),
        {
            "out.q_hat": est["out.q_hat"],
            "out.qd_hat": est["out.qd_hat"],
            "out.q_d": s["q_d"],
            "out.qd_d": s["qd_d"],
            "cfg.ctl.kp": s["kp"],
            "cfg.ctl.kd": s["kd"],
            "cfg.ctl.ki": s["ki"],
            "cfg.ctl.i_max": s["i_max"],
            "cfg.ctl.tau_max": s["tau_max"],
            "st.ctl.integ": s["integ"],
            "st.model.pi": s["ctl_pi"],
            # PID + gravity has no friction: the run-time Coulomb scales' binding is unused
            **({} if ctx.coulomb_scale is None else {"cfg.model.coulomb_scale": ctx.coulomb_scale}),
        },
    )
    tau = s["drive_gain"] * ctl["out.tau_cmd"]
    integ = ctl["st.ctl.integ"]
    x = cs.vertcat(s["q"], s["q_prev"], s["integ"])
    names = list(s)
    ins = [s[k] for k in names]
    f = cs.Function("controller", ins, [cs.cse(tau), cs.cse(integ)], names, ["tau", "integ_next"])
    j = cs.Function(
        "controller_jacobian",
        ins,
        [cs.cse(cs.densify(cs.vec(cs.jacobian(tau, x).T))), cs.cse(cs.densify(cs.vec(cs.jacobian(integ, x).T)))],
        names,
        ["dtau", "dinteg"],
    )
    return f, j


def inverse_dynamics_jacobian(dyn: Dynamics) -> cs.Function:
    """(q, qd, qdd, pi) -> d rnea / d[q, qd], row-major n x 2n."""
    tau = dyn.rnea(dyn.pi)
    jac = cs.jacobian(tau, cs.vertcat(dyn.q, dyn.qd))
    return cs.Function(
        "inverse_dynamics_jacobian",
        [dyn.q, dyn.qd, dyn.qdd, dyn.pi],
        [cs.cse(cs.densify(cs.vec(jac.T)))],
        ["q", "qd", "qdd", "pi"],
        ["a"],
    )
