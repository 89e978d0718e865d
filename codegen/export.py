"""Robot -> robot YAML in the `urdf` convention (origin + axis per joint, standard link parameters).

Used by `manipgen convert` to freeze a URDF (+ overlay) into one reviewable, bundled file.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .model import JOINT_PARAMS, LINK_PARAMS, Robot


def rpy_of(r: np.ndarray) -> tuple[float, float, float]:
    """Inverse of spatial.rpy: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:  # gimbal lock: put everything in yaw
        return 0.0, pitch, math.atan2(-r[0, 1], r[1, 1])
    return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])


def _num(x: float) -> str:
    x = 0.0 if x == 0 else float(x)
    return repr(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _vec(v: np.ndarray | tuple[float, ...]) -> str:
    return "[" + ", ".join(_num(float(x)) for x in v) + "]"


def robot_to_yaml(robot: Robot, header: str = "") -> str:
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    out += [f"name: {robot.name}", f"source: {json.dumps(robot.source or robot.file)}", "convention: urdf",
            f"gravity: {_vec(robot.gravity)}", f"sample_period: {_num(robot.sample_period)}",
            f"joint_parameters: [{', '.join(robot.joint_parameters)}]"]
    c = robot.coulomb
    out.append("coulomb: {model: sign}" if c.model == "sign"
               else f"coulomb: {{model: tanh, velocity_scale: {_num(c.velocity_scale)}}}")
    tip = robot.tip_matrix
    out.append(f"tip: {{xyz: {_vec(tip[:3, 3])}, rpy: {_vec(rpy_of(tip[:3, :3]))}}}")
    if any(robot.payload):
        out.append("payload: {" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, robot.payload)) + "}")
    out.append("joints:")
    for joint, link in zip(robot.joints, robot.links):
        origin = joint.pre_matrix @ joint.post_matrix
        axis = joint.post_matrix[:3, :3].T @ np.array([0.0, 0.0, 1.0])
        out += [f"  - name: {joint.name}", f"    type: {joint.type}",
                f"    origin: {{xyz: {_vec(origin[:3, 3])}, rpy: {_vec(rpy_of(origin[:3, :3]))}}}",
                f"    axis: {_vec(axis)}"]
        lim = joint.limits
        parts = []
        if math.isfinite(lim.q_min) and math.isfinite(lim.q_max):
            parts.append(f"q: [{_num(lim.q_min)}, {_num(lim.q_max)}]")
        parts += [f"{k}: {_num(getattr(lim, k))}" for k in ("qd", "qdd", "tau")
                  if math.isfinite(getattr(lim, k))]
        if parts:
            out.append("    limits: {" + ", ".join(parts) + "}")
        out.append(f"    gear_ratio: {_num(joint.gear_ratio)}")
        if joint.encoder is not None:
            e = joint.encoder
            out.append(f"    encoder: {{cpr: {e.cpr}, side: {e.side}, bits: {e.bits}, "
                       f"signed: {'true' if e.signed else 'false'}"
                       + (f", offset: {_num(e.offset)}" if e.offset else "")
                       + (f", direction: {e.direction}" if e.direction != 1 else "") + "}")
        out += [f"    {k}: {_num(getattr(joint, k))}" for k in JOINT_PARAMS if getattr(joint, k) != 0]
        out.append("    link: {" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, link)) + "}")
    return "\n".join(out) + "\n"
