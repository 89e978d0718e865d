"""The list of dynamics functions a robot gets, each a CasADi function plus its C documentation.

Every function with dynamic parameters comes in two forms: the constant form (the robot's own
parameters folded in at generation time: the fast path) and the parameterised form ``<name>_p``
taking the standard parameter vector ``pi`` as its last input.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs
from .dynamics import Dynamics
from .params import BaseParameters


@dataclass(frozen=True)
class Arg:
    name: str
    size: int
    doc: str


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    doc: str
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    function: cs.Function
    parameterised: bool


def _args(dyn: Dynamics) -> dict[str, tuple[cs.SX, Arg]]:
    n = dyn.n
    return {
        "q": (dyn.q, Arg("q", n, "joint positions (rad or m)")),
        "qd": (dyn.qd, Arg("qd", n, "joint velocities (rad/s or m/s)")),
        "qdd": (dyn.qdd, Arg("qdd", n, "joint accelerations (rad/s^2 or m/s^2)")),
        "pi": (dyn.pi, Arg("pi", dyn.robot.n_standard,
                           "standard parameters, order of <robot>_standard_parameter_names")),
    }


def dynamics_functions(dyn: Dynamics, base: BaseParameters) -> list[FunctionSpec]:
    n = dyn.n
    nb = base.n_base
    pi_value = cs.DM(dyn.robot.standard_parameters())
    a = _args(dyn)
    unit = "N m (revolute) or N (prismatic), link side"
    table: list[tuple[str, str, list[str], Arg, cs.SX]] = [
        ("rnea", "Inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) + IA qdd + friction(qd) "
         "(Newton-Euler, seed 003 §3.3; linear in pi: tau = Y pi, seed 004 eq. 5).",
         ["q", "qd", "qdd"], Arg("tau", n, f"joint torques, {unit}"), dyn.rnea(dyn.pi)),
        ("mass_matrix", "Joint-space inertia M(q) including rotor inertia IA on the diagonal "
         "(composite-rigid-body algorithm); symmetric positive definite.",
         ["q"], Arg("m", n * n, "M, row-major n x n (kg m^2, kg)"), dyn.mass_matrix(dyn.pi)),
        ("coriolis_matrix", "Coriolis/centrifugal matrix C(q, qd) from the Christoffel symbols of "
         "M, so that dM/dt - 2C is skew-symmetric. Not for the hot path: use coriolis().",
         ["q", "qd"], Arg("c", n * n, "C, row-major n x n"), dyn.coriolis_matrix(dyn.pi)),
        ("coriolis", "C(q, qd) qd by Newton-Euler with zero acceleration and no gravity.",
         ["q", "qd"], Arg("c", n, unit), dyn.coriolis(dyn.pi)),
        ("gravity", "Gravity torque g(q) for the robot's gravity vector (base frame).",
         ["q"], Arg("g", n, unit), dyn.gravity(dyn.pi)),
        ("friction", "Joint friction FV qd + FC sgn(qd) + FO (sgn: sign or tanh(qd/v), robot "
         "description).", ["qd"], Arg("tau_f", n, unit), dyn.friction(dyn.qd, dyn.pi)),
        ("nonlinear_effects", "n(q, qd) = C(q, qd) qd + g(q) + friction(qd): inverse dynamics at "
         "zero acceleration.", ["q", "qd"], Arg("n", n, unit), dyn.nonlinear_effects(dyn.pi)),
    ]
    out: list[FunctionSpec] = []
    for name, doc, ins, res, expr in table:
        syms = [a[k][0] for k in ins]
        param = cs.Function(name + "_p", syms + [dyn.pi], [cs.densify(cs.vec(expr.T))])
        const_expr = param(*syms, pi_value)
        out.append(FunctionSpec(name, doc, tuple(a[k][1] for k in ins), (res,),
                                cs.Function(name, syms, [cs.cse(const_expr)]), False))
        out.append(FunctionSpec(
            name + "_p", doc + " Parameterised form.", tuple(a[k][1] for k in ins + ["pi"]), (res,),
            cs.Function(name + "_p", syms + [dyn.pi], [cs.cse(cs.densify(cs.vec(expr.T)))]), True))
    y = dyn.regressor(list(base.columns))
    out.append(FunctionSpec(
        "regressor", "Base regressor Y_b(q, qd, qdd): tau = Y_b beta for the base parameters beta "
        "(<robot>_base_parameter_names; seed 004 eqs. 5-6, Gautier's numeric reduction).",
        (a["q"][1], a["qd"][1], a["qdd"][1]), (Arg("y", n * nb, f"Y_b, row-major n x {nb}"),),
        cs.Function("regressor", [dyn.q, dyn.qd, dyn.qdd], [cs.cse(cs.densify(cs.vec(y.T)))]), False))
    out.append(FunctionSpec(
        "tip_pose", "Pose of the tip frame in the base frame (homogeneous 4x4, m).", (a["q"][1],),
        (Arg("t", 16, "row-major 4x4 [R p; 0 0 0 1]"),),
        cs.Function("tip_pose", [dyn.q], [cs.cse(cs.densify(cs.vec(dyn.tip_pose.T)))]), False))
    out.append(FunctionSpec(
        "tip_jacobian", "Geometric Jacobian of the tip: rows [v; omega] of the tip origin, base "
        "frame axes (Pinocchio's LOCAL_WORLD_ALIGNED).", (a["q"][1],),
        (Arg("j", 6 * n, "row-major 6 x n"),),
        cs.Function("tip_jacobian", [dyn.q], [cs.cse(cs.densify(cs.vec(dyn.tip_jacobian.T)))]), False))
    return out
