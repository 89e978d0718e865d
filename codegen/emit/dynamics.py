"""``<robot>_dynamics.{h,c}``: the robot's dynamics functions, the same for every pipeline variant of
the robot, so built once per robot and precision in a process (:func:`dynamics_part`) and compiled
once per content on the host (host_tools.bindings.build.dynamics_object)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from codegen import __version__
from codegen.emit.cfunction import view
from codegen.emit.cprint import Precision, literal
from codegen.emit.references import with_references
from codegen.emit.templates import template_environment
from codegen.model.robot import Robot, c_comment_text
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import Arg, FunctionSpec, dynamics_functions, forward_dynamics_bodies
from codegen.symbolic.params import BaseParameters, base_parameters

RETURNS_PD = "0, or -1 if M(q) is not positive definite (qdd unspecified)"


@dataclass(frozen=True)
class DynamicsPart:
    dyn: Dynamics
    base: BaseParameters
    functions: tuple[dict[str, Any], ...]  # the views of every function the header declares
    ctx: MappingProxyType[str, Any]  # the template context every file of the folder shares
    files: MappingProxyType[str, str]  # <robot>_dynamics.{h,c}


def _solved(q: Arg, qd: Arg, tau: Arg, qdd: Arg, pi: Arg) -> list[FunctionSpec]:
    """The functions whose body is template structure (a Cholesky solve of M): forward dynamics and,
    on series-elastic arms, the coupled link and motor dynamics; each in both forms."""
    doc = (
        "Forward dynamics qdd = M(q)^-1 (tau - n(q, qd)) by Featherstone's (2005) LTDL "
        "factorisation M = L^T D L, unrolled with M and n in one expression (never an explicit "
        "inverse, no square root); M includes rotor inertia, n friction."
    )
    return [
        FunctionSpec(
            "forward_dynamics" + form,
            doc + (" Parameterised form." if form else ""),
            (q, qd, tau) + ((pi,) if form else ()),
            (qdd,),
            None,
            "int",
            RETURNS_PD,
        )
        for form in ("", "_p")
    ]


def _elastic_solved(specs: list[FunctionSpec], q: Arg, qd: Arg, qdd: Arg, pi: Arg) -> list[FunctionSpec]:
    th, thd, tm = {s.name: s for s in specs}["motor_acceleration"].inputs[2:5]
    doc = (
        "Forward dynamics of the series-elastic arm "
        "(Kirchhoff 2011 eqs. 3.23-3.25): qdd = M(q)^-1 ((I + A)^T tau_el - n(q, qd)) by a Cholesky "
        "solve of M, and the motors' thetadd."
    )
    return [
        FunctionSpec(
            "elastic_dynamics" + form,
            doc
            + (
                " Parameterised form (the links' standard parameters; the drives' are the description's)."
                if form
                else ""
            ),
            (q, qd, th, thd, tm) + ((pi,) if form else ()),
            (qdd, Arg("thetadd", q.size, "motor accelerations, link side")),
            None,
            "int",
            RETURNS_PD,
        )
        for form in ("", "_p")
    ]


def _context(robot: Robot, base: BaseParameters, precision: Precision) -> dict[str, Any]:
    std = robot.standard_parameters()
    p = robot.c_name
    return {
        "p": p,
        "P": p.upper(),
        "version": __version__,
        "robot_name": robot.name,
        "source": c_comment_text(robot.source),
        "digest": robot.digest,
        "dof": robot.dof,
        "gravity": ", ".join(repr(g) for g in robot.gravity),
        "real": precision,
        "sqrt": "sqrt" if precision == "double" else "sqrtf",
        "n_standard": robot.n_standard,
        "n_base": base.n_base,
        "n_base_inertial": base.n_inertial,
        "joint_parameters": ", ".join(robot.joint_parameters) or "none",
        "convention": robot.convention,
        "standard_names": robot.standard_parameter_names,
        "standard_values": [literal(v, precision) for v in std],
        "base_names": base.names,
        "base_values": [literal(v, precision) for v in base.values(std)],
        "elastic": robot.elastic,
        "sources": [f"{p}_dynamics.c", f"{p}_rt.c"],
        "name_length": 1 + max(len(x) for x in robot.standard_parameter_names + base.names),
    }


@lru_cache(maxsize=8)
def _part(robot: Robot, digest: str, precision: Precision) -> DynamicsPart:
    dyn = Dynamics(robot)
    base = base_parameters(robot, dyn)
    specs = dynamics_functions(dyn, base)
    n = robot.dof
    q, qd = specs[0].inputs[0], specs[0].inputs[1]
    tau = Arg("tau", n, "joint torques (N m or N), link side")
    qdd = Arg("qdd", n, "joint accelerations (rad/s^2 or m/s^2)")
    pi = Arg("pi", robot.n_standard, "standard parameters, order of <robot>_standard_names")
    solved = _solved(q, qd, tau, qdd, pi)
    fdyn = [view(s, precision) for s in solved]
    pivots = Arg("d", n, "pivots of M = L^T D L")
    fbody = {
        form: view(FunctionSpec(s.name, s.doc, s.inputs, (qdd, pivots), f), precision)
        for s, (form, f) in zip(solved, forward_dynamics_bodies(dyn).items(), strict=True)
    }
    for v in fdyn:  # the public views: the signature without the pivots, the body's count
        v["ops"] = fbody["_p" if v["name"].endswith("_p") else ""]["ops"]
    efdyn = [view(s, precision) for s in _elastic_solved(specs, q, qd, qdd, pi)] if robot.elastic else []
    functions = [view(s, precision) for s in specs] + fdyn + efdyn
    ctx = _context(robot, base, precision) | {
        "functions": functions,
        "fdyn": {"": fdyn[0], "_p": fdyn[1]},
        "fbody": fbody,
        "efdyn": efdyn,
    }
    env = template_environment()
    p = robot.c_name
    files = {
        f"{p}_dynamics.h": with_references(env.get_template("dynamics.h.j2").render(ctx)),
        f"{p}_dynamics.c": env.get_template("dynamics.c.j2").render(ctx),
    }
    return DynamicsPart(dyn, base, tuple(functions), MappingProxyType(ctx), MappingProxyType(files))


def dynamics_part(robot: Robot, precision: Precision) -> DynamicsPart:
    """The dynamics of ``robot`` in ``precision``, built once per process for equal descriptions
    (the key is the Robot's value and its digest, which the files print)."""
    return _part(robot, robot.digest, precision)
