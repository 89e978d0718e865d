"""``host/<robot>_loopback.{h,c}``: the closed-loop simulation around the step (plant, encoders,
IMUs, contact), host-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2

from codegen.blocks import imu as imu_block
from codegen.blocks import registry
from codegen.blocks.base import Block
from codegen.blocks.encoder import sensor_function
from codegen.emit.cfunction import view
from codegen.emit.cprint import Precision
from codegen.emit.pipeline import LOOPBACK_MAX_DELAY
from codegen.model.robot import Robot
from codegen.symbolic.contact import contact_function
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import FunctionSpec
from codegen.symbolic.imu import readings_function


def motion_inputs(observer: Block | None) -> list[str]:
    """The pipeline's measured-motion inputs that the loopback fills in from the plant: the sensors
    its observer's spec declares (in.qd_meas, in.qdd_meas)."""
    return [] if observer is None else list(registry.observers()[observer.name].sensors)


def _sensor(n: int, precision: Precision) -> dict[str, Any]:
    """The loopback's encoder model (codegen.blocks.encoder.sensor_function)."""
    return view(sensor_function(n), precision)


def _imus(robot: Robot, dyn: Dynamics, est: Block | None, precision: Precision) -> dict[str, Any] | None:
    """The loopback's simulated IMUs (those the pipeline's imu estimator reads), or None."""
    if est is None or not registry.estimators()[est.name].sensors:
        return None
    imus = imu_block.placements(robot, bool(est.options.get("tip")))
    spec = FunctionSpec.of(readings_function(dyn, imus), "exact readings of the pipeline's IMUs (codegen.symbolic.imu)")
    return view(spec, precision) | {
        "count": len(imus),
        "where": ", ".join(f"{u.name} on link {u.link + 1}" for u in imus),
    }


def loopback_files(
    env: jinja2.Environment,
    ctx: Mapping[str, Any],
    dyn: Dynamics,
    observer: Block | None,
    est: Block | None,
    has_controller: bool,
) -> dict[str, str]:
    """{file name: text} of the loopback around a pipeline with ``observer`` and estimator ``est``
    (the sensors their specs declare are simulated)."""
    robot: Robot = dyn.robot
    precision: Precision = ctx["real"]
    p = ctx["p"]
    common = dict(ctx, motion_inputs=motion_inputs(observer), imu=_imus(robot, dyn, est, precision))
    contact = FunctionSpec.of(
        contact_function(dyn),
        "Hunt-Crossley contact of the tip with a plane (Kirchhoff 2011 eq. 5.19; codegen.symbolic.contact)",
    )
    return {
        f"{p}_loopback.h": env.get_template("loopback.h.j2").render(dict(common, max_delay=LOOPBACK_MAX_DELAY)),
        f"{p}_loopback.c": env.get_template("loopback.c.j2").render(
            dict(
                common,
                has_controller=has_controller,
                sensor=_sensor(robot.dof, precision),
                contact=view(contact, precision),
                floor="floor" if precision == "double" else "floorf",
            )
        ),
    }
