"""The list of dynamics functions a robot gets, each a CasADi function plus its C documentation.

Every function with dynamic parameters comes in two forms: the constant form (the robot's own
parameters folded in at generation time: the fast path) and the parameterised form ``<name>_p``
taking the standard parameter vector ``pi`` as its last input.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs

from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.params import BaseParameters


@dataclass(frozen=True)
class Arg:
    """An argument of a C function: its C name, its size, its documentation (with units) and, for a
    real-time block's function, its binding (``cfg.est.gain``, ``st.est.x``, ``in.tau``, ``out.q``,
    ``loc.q``: where the pipeline's step reads or writes it). ``optional``: an output the caller may
    not want this call (the pointer may be NULL: nothing is stored; codegen.emit.cprint.body)."""

    name: str
    size: int
    doc: str
    binding: str = ""
    optional: bool = False


@dataclass(frozen=True)
class FunctionSpec:
    """A C function of the generated code: its name, documentation, arguments (name, size, units
    in the doc) and the CasADi function it evaluates -- or None for a function whose body is
    template structure (forward dynamics' Cholesky solve). The one description of a C function that
    every emitter renders (codegen.emit.cfunction)."""

    name: str
    doc: str
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    function: cs.Function | None
    ret: str = "void"
    returns: str = ""  # what the return value means (ret != "void")

    @property
    def casadi(self) -> cs.Function:
        """The CasADi function (ValueError for a function whose body is template structure)."""
        if self.function is None:
            raise ValueError(f"{self.name}: its body is template structure, not a CasADi function")
        return self.function

    @property
    def reads(self) -> tuple[str, ...]:
        """The bindings of the inputs (a real-time block's function)."""
        return tuple(a.binding for a in self.inputs)

    @property
    def writes(self) -> tuple[str, ...]:
        """The bindings of the outputs (a real-time block's function)."""
        return tuple(a.binding for a in self.outputs)

    @staticmethod
    def of(function: cs.Function, doc: str) -> FunctionSpec:
        """A CasADi function as a spec whose arguments are its own input and output names."""
        ins = tuple(Arg(function.name_in(i), int(function.numel_in(i)), "") for i in range(function.n_in()))
        outs = tuple(Arg(function.name_out(i), int(function.numel_out(i)), "") for i in range(function.n_out()))
        return FunctionSpec(function.name(), doc, ins, outs, function)


def _args(dyn: Dynamics) -> dict[str, tuple[cs.SX, Arg]]:
    n = dyn.n
    return {
        "q": (dyn.q, Arg("q", n, "joint positions (rad or m)")),
        "qd": (dyn.qd, Arg("qd", n, "joint velocities (rad/s or m/s)")),
        "qdd": (dyn.qdd, Arg("qdd", n, "joint accelerations (rad/s^2 or m/s^2)")),
        "pi": (
            dyn.pi,
            Arg("pi", dyn.robot.n_standard, "standard parameters, order of <robot>_standard_names"),
        ),
    }


Row = tuple[str, str, list[str], Arg, cs.SX]  # name, doc, input keys of _args, output, expression


def _parameterised(dyn: Dynamics, a: dict[str, tuple[cs.SX, Arg]]) -> list[Row]:
    """The functions of the dynamic parameters: each has a constant and a ``_p`` form."""
    n = dyn.n
    unit = "N m (revolute) or N (prismatic), link side"
    return [
        (
            "rnea",
            "Inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) + IA qdd + friction(qd) "
            "(Newton-Euler, Kirchhoff (2011) §3.3; linear in pi: tau = Y pi, Xu et al. (2020) eq. 5).",
            ["q", "qd", "qdd"],
            Arg("tau", n, f"joint torques, {unit}"),
            dyn.rnea(dyn.pi),
        ),
        (
            "mass_matrix",
            "Joint-space inertia M(q) including rotor inertia IA on the diagonal "
            "(composite-rigid-body algorithm); symmetric positive definite.",
            ["q"],
            Arg("m", n * n, "M, row-major n x n (kg m^2, kg)"),
            dyn.mass_matrix(dyn.pi),
        ),
        (
            "coriolis_matrix",
            "Coriolis/centrifugal matrix C(q, qd) from the Christoffel symbols of "
            "M, so that dM/dt - 2C is skew-symmetric. Not for the hot path: use coriolis().",
            ["q", "qd"],
            Arg("c", n * n, "C, row-major n x n"),
            dyn.coriolis_matrix(dyn.pi),
        ),
        (
            "coriolis",
            "C(q, qd) qd by Newton-Euler with zero acceleration and no gravity.",
            ["q", "qd"],
            Arg("c", n, unit),
            dyn.coriolis(dyn.pi),
        ),
        (
            "gravity",
            "Gravity torque g(q) for the robot's gravity vector (base frame).",
            ["q"],
            Arg("g", n, unit),
            dyn.gravity(dyn.pi),
        ),
        (
            "friction",
            "Joint friction FV qd + FC sgn(qd) + FO (sgn: sign or tanh(qd/v), robot description).",
            ["qd"],
            Arg("tau_f", n, unit),
            dyn.friction(dyn.qd, dyn.pi),
        ),
        (
            "nonlinear_effects",
            "n(q, qd) = C(q, qd) qd + g(q) + friction(qd): inverse dynamics at zero acceleration.",
            ["q", "qd"],
            Arg("n", n, unit),
            dyn.nonlinear_effects(dyn.pi),
        ),
    ]


def dynamics_functions(dyn: Dynamics, base: BaseParameters) -> list[FunctionSpec]:
    n = dyn.n
    nb = base.n_base
    pi_value = cs.DM(dyn.robot.standard_parameters())
    a = _args(dyn)
    out: list[FunctionSpec] = []
    for name, doc, ins, res, expr in _parameterised(dyn, a):
        syms = [a[k][0] for k in ins]
        param = cs.Function(name + "_p", syms + [dyn.pi], [cs.densify(cs.vec(expr.T))])
        const_expr = param(*syms, pi_value)
        out.append(
            FunctionSpec(name, doc, tuple(a[k][1] for k in ins), (res,), cs.Function(name, syms, [cs.cse(const_expr)]))
        )
        out.append(
            FunctionSpec(
                name + "_p",
                doc + " Parameterised form.",
                tuple(a[k][1] for k in ins + ["pi"]),
                (res,),
                cs.Function(name + "_p", syms + [dyn.pi], [cs.cse(cs.densify(cs.vec(expr.T)))]),
            )
        )
    y = dyn.regressor(list(base.columns))
    out.append(
        FunctionSpec(
            "regressor",
            "Base regressor Y_b(q, qd, qdd): tau = Y_b beta for the base parameters beta "
            "(<robot>_base_names; Xu et al. (2020) eqs. 5-6, Gautier's numeric reduction).",
            (a["q"][1], a["qd"][1], a["qdd"][1]),
            (Arg("y", n * nb, f"Y_b, row-major n x {nb}"),),
            cs.Function("regressor", [dyn.q, dyn.qd, dyn.qdd], [cs.cse(cs.densify(cs.vec(y.T)))]),
        )
    )
    out.append(
        FunctionSpec(
            "tip_pose",
            "Pose of the tip frame in the base frame (homogeneous 4x4, m).",
            (a["q"][1],),
            (Arg("t", 16, "row-major 4x4 [R p; 0 0 0 1]"),),
            cs.Function("tip_pose", [dyn.q], [cs.cse(cs.densify(cs.vec(dyn.tip_pose.T)))]),
        )
    )
    out.append(
        FunctionSpec(
            "tip_jacobian",
            "Geometric Jacobian of the tip: rows [v; omega] of the tip origin, base "
            "frame axes (Pinocchio's LOCAL_WORLD_ALIGNED).",
            (a["q"][1],),
            (Arg("j", 6 * n, "row-major 6 x n"),),
            cs.Function("tip_jacobian", [dyn.q], [cs.cse(cs.densify(cs.vec(dyn.tip_jacobian.T)))]),
        )
    )
    if dyn.robot.elastic:
        out += elastic_functions(dyn, pi_value)
    return out


def forward_dynamics_bodies(dyn: Dynamics) -> dict[str, cs.Function]:
    """The bodies of forward_dynamics ("") and forward_dynamics_p ("_p"): (q, qd, tau[, pi]) ->
    (qdd, d), Dynamics.forward_dynamics in one graph, d the pivots the C function checks (> 0)."""
    qdd, d = dyn.forward_dynamics(dyn.pi)
    syms = [dyn.q, dyn.qd, dyn.tau]
    n = dyn.n
    # one cse over both outputs: the pivots are nodes of qdd's graph, not a second copy of M
    both = cs.cse(cs.vertcat(qdd, d))
    param = cs.Function("forward_dynamics_p", syms + [dyn.pi], [both[:n], both[n:]])
    const = cs.cse(cs.vertcat(*param(*syms, cs.DM(dyn.robot.standard_parameters()))))
    return {
        "": cs.Function("forward_dynamics", syms, [const[:n], const[n:]]),
        "_p": param,
    }


def elastic_functions(dyn: Dynamics, pi_value: cs.DM) -> list[FunctionSpec]:
    """The series-elastic drives' functions (constant parameters; Kirchhoff (2011) eqs. 3.10, 3.23-3.25)."""
    n = dyn.n
    a = _args(dyn)
    th = Arg("theta", n, "motor positions, link side (rotor angle / transmission ratio; rad or m)")
    thd = Arg("thetad", n, "motor velocities, link side")
    tm = Arg("tau_m", n, "motor torques, link side (N m or N)")
    tel = Arg("tau_el", n, "elastic torque (N m or N)")
    syms = [dyn.q, dyn.qd, dyn.theta, dyn.thetad]
    ins = (a["q"][1], a["qd"][1], th, thd)

    def const(expr: cs.SX) -> cs.SX:
        return cs.cse(cs.densify(cs.Function("f", syms + [dyn.tau_m, dyn.pi], [expr])(*syms, dyn.tau_m, pi_value)))

    return [
        FunctionSpec(
            "elastic_torque",
            "Torque of the elastic transmission tau_el = K (theta - q - "
            "alpha_c(q)) + D (thetad - qd - alpha_c'(q, qd)), alpha_c(q) = A q the coupling "
            "correction (Kirchhoff 2011 eqs. 3.10, 3.25).",
            ins,
            (tel,),
            cs.Function("elastic_torque", syms, [const(dyn.elastic_torque())]),
        ),
        FunctionSpec(
            "elastic_joint_torque",
            "Link-side joint torque the drives transmit, (I + A)^T "
            "tau_el (Kirchhoff 2011 eq. 3.24's right side; the loopback's elastic plant adds it to the "
            "external torques).",
            ins,
            (Arg("tau", n, "joint torque (N m or N)"),),
            cs.Function("elastic_joint_torque", syms, [const(dyn.elastic_joint_torque())]),
        ),
        FunctionSpec(
            "elastic_link_rhs",
            "Right-hand side of the link dynamics M(q) qdd = (I + A)^T "
            "tau_el - n(q, qd) (Kirchhoff 2011 eq. 3.24; n with joint friction).",
            ins,
            (Arg("f", n, "link-side force (N m or N)"),),
            cs.Function("elastic_link_rhs", syms, [const(dyn.elastic_link_force(dyn.pi))]),
        ),
        FunctionSpec(
            "elastic_link_rhs_p",
            "Right-hand side of the link dynamics M(q) qdd = (I + A)^T "
            "tau_el - n(q, qd) (Kirchhoff 2011 eq. 3.24). Parameterised form (the links' standard "
            "parameters; the drives' are the description's).",
            ins + (a["pi"][1],),
            (Arg("f", n, "link-side force (N m or N)"),),
            cs.Function("elastic_link_rhs_p", syms + [dyn.pi], [cs.cse(cs.densify(dyn.elastic_link_force(dyn.pi)))]),
        ),
        FunctionSpec(
            "motor_rest",
            "The motor positions holding the links still at q against gravity, theta "
            "= q + A q + K^-1 (I + A)^-T g(q) (Kirchhoff 2011 eq. 3.28), and their rate along qd (the "
            "state-feedback controller's theta_d; a simulation's rest start).",
            (a["q"][1], a["qd"][1]),
            (th, thd),
            cs.Function(
                "motor_rest",
                [dyn.q, dyn.qd],
                [
                    cs.cse(e)
                    for e in cs.Function("f", [dyn.q, dyn.qd, dyn.pi], list(dyn.motor_equilibrium(dyn.pi)))(
                        dyn.q, dyn.qd, pi_value
                    )
                ],
            ),
        ),
        FunctionSpec(
            "motor_rest_p",
            "The motor positions holding the links still at q against gravity "
            "(Kirchhoff 2011 eq. 3.28) and their rate along qd. Parameterised form (the links' standard "
            "parameters; the springs are the description's).",
            (a["q"][1], a["qd"][1], a["pi"][1]),
            (th, thd),
            cs.Function("motor_rest_p", [dyn.q, dyn.qd, dyn.pi], [cs.cse(e) for e in dyn.motor_equilibrium(dyn.pi)]),
        ),
        FunctionSpec(
            "motor_acceleration",
            "Motor dynamics thetadd = (tau_m - D_vm thetad - D_Cm sgn(thetad) - tau_el) / I_m "
            "(Kirchhoff 2011 eq. 3.23).",
            ins + (tm,),
            (Arg("thetadd", n, "motor accelerations, link side"),),
            cs.Function("motor_acceleration", syms + [dyn.tau_m], [const(dyn.motor_acceleration())]),
        ),
        FunctionSpec(
            "motor_regressor",
            "Actuator-side regressor (Kirchhoff 2011 eq. 4.4): tau_m - I_m thetadd "
            "= Y_m theta_m, theta_m = [d_e, d_vm, k_e, d_Cm] per joint (<robot>_motor_parameters "
            "order); block diagonal, deflections with the coupling alpha_c.",
            ins,
            (Arg("y", n * 4 * n, f"Y_m, row-major n x {4 * n}"),),
            cs.Function("motor_regressor", syms, [cs.cse(cs.densify(cs.vec(dyn.motor_regressor().T)))]),
        ),
    ]
