"""Assemble the real-time pipeline of a robot: encoder -> estimator -> observer -> detection ->
controller, each block chosen at generation time. Its fields are those of ``<robot>_rt_t`` /
``_config_t`` / ``_input_t`` / ``_output_t``, named by bindings (``cfg.est.gain``, ``st.obs.r``,
``in.tau``, ``out.qd_hat``, ``loc.q``); its step (the fault/ready logic) is templates/rt.c.j2's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from codegen.blocks import detect, encoder, friction, model_params, motor, registry
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import FunctionSpec

from ..errors import DescriptionError
from .base import Block, Field
from .context import Ctx
from .options import RtOptions
from .shared import share_trig


def _estimator(ctx: Ctx) -> Block:
    choice = ctx.options.estimator
    spec = registry.estimators()[choice.name]
    block = spec.build(ctx, choice)
    text = spec.template_text()
    return dataclasses.replace(block, template_text=text) if text else block


def input_fields(n: int, motor_channel: bool) -> list[Field]:
    """The inputs every pipeline reads; ``motor_channel``: the second (motor) encoder's, an elastic
    arm's (a rigid arm has none)."""
    motor = [
        Field("motor_counts", "uint32", (n,), "raw motor-side counter values"),
        Field("motor_valid", "uint8", (n,), "1: motor_counts[i] was received this sample"),
    ]
    return [
        Field(
            "counts", "uint32", (n,), "raw counters of the primary encoder (link or motor side; low `bits` bits used)"
        ),
        Field("valid", "uint8", (n,), "1: counts[i] was received this sample, 0: lost"),
        *(motor if motor_channel else []),
        Field(
            "tau",
            "real",
            (n,),
            "link-side joint torque over the last sample (measured or the previous command), N m or N",
        ),
        Field("q_des", "real", (n,), "desired position (rad or m)"),
        Field("qd_des", "real", (n,), "desired velocity"),
        Field("qdd_des", "real", (n,), "desired acceleration"),
        Field("reset", "uint8", (), "1: clear the latched collision and its reaction"),
    ]


LOCALS = ("valid", "total_r")
MOTOR_LOCALS = ("motor_valid", "motor_total_r")  # an elastic arm's second channel
INPUT_LIMIT = 1e6  # a real input beyond +-this (SI units) is a numeric fault (<robot>_rt.h)
# outputs a waiting (or faulted) step still sets; the others are 0
KEPT_WHILE_WAITING = ("q", "theta", "faults", "motor_faults", "ready", "fault")


@dataclass
class Pipeline:
    robot: Robot
    options: RtOptions
    blocks: list[Block]
    ctx: Ctx
    # cos and sin of q_hat for the blocks' functions that share them (codegen.blocks.shared), computed
    # by the step after the estimator; None: no function shares them
    shared: FunctionSpec | None = None

    @property
    def n(self) -> int:
        return self.robot.dof

    def block(self, kind: str) -> Block | None:
        return next((b for b in self.blocks if b.kind == kind), None)

    @property
    def inputs(self) -> list[Field]:
        return input_fields(self.n, self.robot.elastic) + [f for b in self.blocks for f in b.inputs]

    @property
    def outputs(self) -> list[Field]:
        out: list[Field] = []
        desired = [
            Field("q_d", "real", (self.n,), "desired position used (reaction applied)"),
            Field("qd_d", "real", (self.n,), "desired velocity used"),
            Field("qdd_d", "real", (self.n,), "desired acceleration used"),
        ]
        for b in self.blocks:
            out += b.outputs
            if b.kind == "enc":
                out.append(
                    Field(
                        "ready",
                        "uint8",
                        (),
                        (
                            "0 until every joint has delivered a valid sample on both encoders (the blocks "
                            "start then; until then only q, theta and the fault counters are set)"
                            if self.robot.elastic
                            else "0 until every joint has delivered a valid sample (the blocks start then; "
                            "until then only q and the fault counter are set)"
                        ),
                    )
                )
                out.append(
                    Field(
                        "fault",
                        "uint8",
                        (),
                        "numeric fault this sample: MG_FAULT_NONE, MG_FAULT_INPUT (a non-finite input) or "
                        "MG_FAULT_NUMERIC (a non-finite result); the blocks restarted (header: Numeric faults)",
                    )
                )
            if b.kind == "est":
                out += desired
        return out

    @property
    def waiting_outputs(self) -> list[str]:
        """Outputs zeroed while the pipeline waits for a first valid sample on every joint."""
        return [f.name for f in self.outputs if f.name not in KEPT_WHILE_WAITING]

    def fields(self) -> dict[str, Field]:
        """Every binding's field: cfg.<kind>.<name>, st.<kind>.<name>, in.<name>, out.<name>, loc.<name>."""
        f: dict[str, Field] = {}
        for b in self.blocks:
            f.update({f"cfg.{b.kind}.{x.name}": x for x in b.config})
            f.update({f"st.{b.kind}.{x.name}": x for x in b.state})
        f.update({f"in.{x.name}": x for x in self.inputs})
        f.update({f"out.{x.name}": x for x in self.outputs})
        names = LOCALS + (MOTOR_LOCALS if self.robot.elastic else ())
        names += tuple(b.partition(".")[2] for b in self.shared.writes) if self.shared is not None else ()
        f.update({f"loc.{x}": Field(x, "real", (self.n,), "local") for x in names})
        for b in self.blocks:
            f.update({f"loc.{x.name}": x for x in b.scratch})
        return f


def _apply_overrides(blocks: list[Block], robot: Robot) -> dict[str, tuple[tuple[float, ...], int]]:
    """Apply the YAML ``realtime.config`` defaults; return the design values given (key -> values, line).
    Keys are ``<estimator name>.<field>`` (e.g. ``linhg.h1``: used only when that estimator is
    generated) or ``<kind>.<field>`` for the other blocks (``obs.k_o``, ``det.threshold``,
    ``ctl.kp``; ignored when the block is not generated)."""
    prefixes = {b.name if b.kind == "est" else b.kind: b for b in blocks}  # the motor estimator: mest
    estimators = registry.estimators()
    design_keys = {f"{n}.{k}" for n, e in estimators.items() for k in e.design_keys}  # not config fields
    observer_fields = {f for o in registry.observers().values() for f in o.fields}  # obs.<field> keys
    design: registry.Design = {}
    for key, values, line in robot.realtime.config:  # checked against the blocks here
        prefix, _, name = key.partition(".")
        where = f"realtime.config.{key}"
        if prefix not in set(estimators) | {"model", "enc", "mest", "fric", "obs", "det", "ctl"}:
            raise DescriptionError(
                robot.file,
                where,
                "keys are <estimator>.<field> (estimators: "
                + ", ".join(estimators)
                + ") or model/enc/mest/fric/obs/det/ctl.<field>",
                line,
            )
        b = prefixes.get(prefix)
        if b is None:
            continue
        if key in design_keys:
            if len(values) not in (1, robot.dof) or not all(v > 0 for v in values):
                raise DescriptionError(robot.file, where, f"expected 1 or {robot.dof} positive numbers", line)
            design[key] = (tuple(values) * (robot.dof if len(values) == 1 else 1), line)
            continue
        idx = next((i for i, x in enumerate(b.config) if x.name == name), None)
        if idx is None and prefix == "obs" and name in observer_fields:
            continue  # a field of another observer (the YAML may serve several pipelines)
        if idx is None:
            keys = estimators[b.name].design_keys if b.kind == "est" else ()
            extra = " and the design values " + ", ".join(keys) if keys else ""
            raise DescriptionError(
                robot.file,
                where,
                f"{b.name} has no config field {name!r} (fields: " + ", ".join(x.name for x in b.config) + extra + ")",
                line,
            )
        fld = b.config[idx]
        if len(values) not in (1, fld.size):
            raise DescriptionError(robot.file, where, f"expected 1 or {fld.size} numbers, got {len(values)}", line)
        problem = fld.problem(np.array(values))
        if problem:
            raise DescriptionError(robot.file, where, problem, line)
        b.config[idx] = dataclasses.replace(fld, default=tuple(values) * (fld.size if len(values) == 1 else 1))
        if b.kind in ("est", "mest") and estimators[b.name].design_keys:
            design[key] = (tuple(values), line)  # a designed field given outright: no redesign
    return design


def _gives_acceleration(estimator: Block) -> bool:
    """Whether the estimator's q-ddot output is not identically zero (findiff, linhg and the FIR
    filters without acceleration coefficients give 0)."""
    fn = estimator.fn("step")
    out = fn.casadi.call(fn.casadi.sx_in())[fn.writes.index("out.qdd_hat")]
    return not out.is_zero()


def build_pipeline(robot: Robot, options: RtOptions, dyn: Dynamics | None = None) -> Pipeline:
    ctx = Ctx(robot, dyn or Dynamics(robot), options)
    estimator = registry.estimators()[options.estimator.name]
    observer = registry.observers()[options.observer]
    controller = registry.controllers()[options.controller]
    blocks: list[Block] = []
    if not options.constant_params and (
        observer.build is not None or controller.build is not None or estimator.model_based
    ):
        blocks.append(model_params.build(ctx))
    blocks.append(encoder.build(ctx))
    blocks.append(_estimator(ctx))
    if robot.elastic:
        _check_elastic(robot, options)
        try:
            blocks.append(motor.build(blocks[-1]))
        except ValueError as exc:
            raise DescriptionError(robot.file, "realtime.estimator", str(exc)) from None
    elif not controller.rigid:
        rigid = ", ".join(n for n, c in registry.controllers().items() if c.rigid and c.build is not None)
        raise DescriptionError(
            robot.file,
            "realtime.controller",
            f"the {controller.name} controller is for series-elastic joints (elastic:); choose {rigid}",
        )
    if observer.needs_acceleration and not _gives_acceleration(blocks[-1]):
        raise DescriptionError(
            robot.file,
            "realtime.observer",
            f"the {observer.name} observer needs the joint "
            f"acceleration, which the {options.estimator.label} estimator does not give: choose "
            f"{registry.acceleration_estimators()}, or {observer.name}_measured (q-dot, q-ddot "
            "as inputs)",
        )
    if observer.build is not None:
        if ctx.has_friction_terms:  # the friction terms the observer's model adds (ctx.friction_terms)
            blocks.append(friction.build(ctx))
        blocks.append(observer.build(ctx))
        blocks.append(detect.build(ctx, window=observer.window))
    if controller.build is not None:
        blocks.append(controller.build(ctx))
    design = _apply_overrides(blocks, robot)
    for b in blocks:  # designed config (the Kalman gain) follows the final design values
        spec = registry.estimators()[b.name] if b.kind in ("est", "mest") else None
        prefix = b.name if b.kind == "est" else b.kind
        given = (
            any(k.startswith(prefix + ".") and k.partition(".")[2] not in spec.design_keys for k in design)
            if spec
            else True
        )
        if spec is not None and spec.finish is not None and not given:
            spec.finish(b, blocks, robot, design, ctx.ts)
    return Pipeline(robot, options, blocks, ctx, share_trig(blocks, robot.dof))


def _check_elastic(robot: Robot, options: RtOptions) -> None:
    """An elastic arm's pipeline: the tau_el momentum observer (or none), the state-feedback
    controller (or none) -- the others need a link-side torque the arm does not measure -- and a
    motor encoder on every joint (the pipeline reads theta)."""
    for i, j in enumerate(robot.joints):
        if j.elastic is not None and j.elastic.motor_encoder is None:
            raise DescriptionError(
                robot.file,
                f"joints[{i}].elastic.motor_encoder",
                "the real-time pipeline of an "
                "elastic arm reads the motor positions theta (the tau_el observer, the "
                "state-feedback controller): give each joint its motor encoder",
            )
    observers = [n for n, o in registry.observers().items() if o.elastic]
    if options.observer not in observers:
        raise DescriptionError(
            robot.file,
            "realtime.observer",
            f"{robot.name} has series-elastic joints: its observer is one of "
            f"{', '.join(observers)} (driven by tau_el, Kirchhoff (2011) §5.2), not {options.observer}",
        )
    controllers = [n for n, c in registry.controllers().items() if c.elastic]
    if options.controller not in controllers:
        raise DescriptionError(
            robot.file,
            "realtime.controller",
            f"{robot.name} has series-elastic joints: its controller commands motor torques: one of "
            f"{', '.join(controllers)} (Kirchhoff 2011 §3.2.4), not {options.controller}",
        )
