"""What every block may use while it builds its CasADi functions: the robot, its dynamics as
CasADi functions of (q, qd, ...; pi), the sample period and the parameter source."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import casadi as cs

from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.params import BaseParameters, base_parameters

from .options import RtOptions

RUNTIME_SCALE = ("rnea", "friction", "friction_correction")  # take cfg.model.coulomb_scale


@dataclass
class Ctx:
    robot: Robot
    dyn: Dynamics
    options: RtOptions

    @property
    def n(self) -> int:
        return self.robot.dof

    @property
    def ts(self) -> float:
        return self.options.sample_period or self.robot.sample_period

    @property
    def constant(self) -> bool:
        return self.options.constant_params

    def sym(self, name: str, size: int | None = None) -> cs.SX:
        return cs.SX.sym(name, self.n if size is None else size)

    def model_inputs(self) -> tuple[list[tuple[str, cs.SX]], cs.SX]:
        """Bindings a model-using function takes, and the parameter vector to use in it: the run-time
        parameters (``st.model.pi`` = params + payload, and the Coulomb scales
        ``cfg.model.coulomb_scale`` that ``call`` passes to the friction) or the robot's own, folded in."""
        if self.constant:
            return [], cs.SX(cs.DM(self.robot.standard_parameters()))
        pi = cs.SX.sym("pi", self.robot.n_standard)
        scale = [] if self.coulomb_scale is None else [("cfg.model.coulomb_scale", self.coulomb_scale)]
        return [("st.model.pi", pi), *scale], pi

    @cached_property
    def coulomb_scale(self) -> cs.SX | None:
        """The smooth Coulomb friction's scales as a run-time field (``cfg.model.coulomb_scale``): with
        run-time parameters and the description's ``coulomb: {model: tanh}``; None: compiled in."""
        if self.constant or self.robot.coulomb.model != "tanh":
            return None
        return cs.SX.sym("coulomb_scale", self.n)

    @property
    def has_friction_terms(self) -> bool:
        """Whether the pipeline has the ``fric`` block (codegen.blocks.friction): with run-time
        parameters, where the description declares a friction term on some joint."""
        return not self.constant and any(self.robot.friction_terms)

    def friction_terms(self) -> tuple[list[tuple[str, cs.SX]], cs.SX]:
        """Bindings an observer takes for the friction terms beyond viscous + Coulomb (the ``fric``
        block: has_friction_terms), and their torque (0 without the block)."""
        if not self.has_friction_terms:
            return [], cs.SX.zeros(self.n)
        tau = cs.SX.sym("fric_tau", self.n)
        return [("st.fric.tau", tau)], tau

    @cached_property
    def base(self) -> BaseParameters:
        """The base parameters (Gautier's numeric reduction, codegen.symbolic.params)."""
        return base_parameters(self.robot, self.dyn)

    @cached_property
    def _fns(self) -> dict[str, cs.Function]:
        d = self.dyn
        pi = d.pi
        momentum, dtdq = d.momentum_terms(pi)
        vc = [] if self.coulomb_scale is None else [self.coulomb_scale]  # run-time scales: the last argument
        scale = self.coulomb_scale
        return {
            "rnea": cs.Function("rnea", [d.q, d.qd, d.qdd, pi, *vc], [d.rnea(pi, scale)]),
            "rnea_frictionless": cs.Function("rnea_frictionless", [d.q, d.qd, d.qdd, pi], [d.rnea_frictionless(pi)]),
            "gravity": cs.Function("gravity", [d.q, pi], [d.gravity(pi)]),
            "friction": cs.Function("friction", [d.qd, pi, *vc], [d.friction(d.qd, pi, scale)]),
            # the run-time Coulomb scales' friction less the description's (compiled into the
            # dynamics library's forward dynamics, which the model-based estimators call)
            "friction_correction": cs.Function(
                "friction_correction", [d.qd, pi, *vc], [d.friction(d.qd, pi, scale) - d.friction(d.qd, pi)]
            ),
            "generalized_momentum": cs.Function("generalized_momentum", [d.q, d.qd, pi], [momentum]),
            "ctqd": cs.Function("ctqd", [d.q, d.qd, pi], [dtdq]),
            "mass_matrix": cs.Function("mass_matrix", [d.q, pi], [d.mass_matrix(pi)]),
        }

    @cached_property
    def _elastic_fns(self) -> dict[str, cs.Function]:
        d = self.dyn
        k, dmp = cs.SX.sym("k_e", self.n), cs.SX.sym("d_e", self.n)
        th, thd = d.motor_equilibrium(d.pi, k)
        return {
            "elastic_joint_torque": cs.Function(
                "elastic_joint_torque", [d.q, d.qd, d.theta, d.thetad, k, dmp], [d.elastic_joint_torque(k, dmp)]
            ),
            "motor_equilibrium": cs.Function("motor_equilibrium", [d.q, d.qd, d.pi, k], [th, thd]),
            "motor_gravity": cs.Function("motor_gravity", [d.q, d.pi], [d.motor_gravity(d.pi)]),
        }

    def call_elastic(self, name: str, *args: Any) -> Any:
        """The series-elastic drives' expressions (codegen.symbolic.dynamics), for elastic arms only."""
        return self._elastic_fns[name](*args)

    def call(self, name: str, *args: Any) -> Any:
        """One of the dynamics' functions; those with friction get the run-time Coulomb scales
        (``coulomb_scale``) after the arguments given, which end with the parameters."""
        if name in RUNTIME_SCALE and self.coulomb_scale is not None:
            args = (*args, self.coulomb_scale)
        return self._fns[name](*args)
