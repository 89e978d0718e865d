"""Robot -> robot YAML in the `urdf` convention (origin + axis per joint, standard link parameters).

Used by `manipgen convert` to freeze a URDF (+ overlay) into one reviewable, bundled file.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .model import JOINT_PARAMS, LINK_PARAMS, Encoder, Robot


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


def _encoder(e: Encoder, with_side: bool) -> str:
    return ("{" + f"cpr: {e.cpr}" + (f", side: {e.side}" if with_side else "") + f", bits: {e.bits}, "
            f"signed: {'true' if e.signed else 'false'}" + (f", offset: {_num(e.offset)}" if e.offset else "")
            + (f", direction: {e.direction}" if e.direction != 1 else "") + "}")


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
        parts += [f"{k}: {_num(getattr(lim, k))}" for k in ("qd", "qdd", "tau", "current")
                  if math.isfinite(getattr(lim, k))]
        if parts:
            out.append("    limits: {" + ", ".join(parts) + "}")
        out.append(f"    gear_ratio: {_num(joint.gear_ratio)}")
        if joint.torque_constant:
            out.append(f"    torque_constant: {_num(joint.torque_constant)}")
        if joint.encoder is not None:
            out.append(f"    encoder: {_encoder(joint.encoder, True)}")
        out += [f"    {k}: {_num(getattr(joint, k))}" for k in JOINT_PARAMS if getattr(joint, k) != 0]
        if joint.elastic is not None:
            el = joint.elastic
            parts = [f"{k}: {_num(getattr(el, k))}" for k in ("motor_inertia", "stiffness", "damping",
                                                              "motor_viscous", "motor_coulomb")]
            if el.coupling:
                parts.append("coupling: {" + ", ".join(f"{robot.joints[i].name}: {_num(f)}" for i, f in el.coupling) + "}")
            if el.motor_encoder is not None:
                parts.append(f"motor_encoder: {_encoder(el.motor_encoder, False)}")
            out.append("    elastic: {" + ", ".join(parts) + "}")
        out.append("    link: {" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, link)) + "}")
    return "\n".join(out) + "\n"


def robot_to_urdf(robot: Robot) -> str:
    """Robot -> URDF: one link per joint (named after the joint's link, `<joint>_link`), the joint
    origins and axes as in robot_to_yaml, inertials about the centre of mass, FV/FC as the joint's
    damping/friction, limits where given, and the tip as a fixed `tip` link. Gravity, encoders,
    rotor inertia, torque constants and elastic drives have no URDF element and are not written
    (robot_to_yaml keeps them; for a URDF, put them in an overlay)."""
    from xml.sax.saxutils import quoteattr

    from .spatial import inertia_about_com

    def xyz_rpy(t: np.ndarray) -> str:
        return (f'xyz="{" ".join(_num(float(v)) for v in t[:3, 3])}" '
                f'rpy="{" ".join(_num(v) for v in rpy_of(t[:3, :3]))}"')

    out = ['<?xml version="1.0"?>', f"<robot name={quoteattr(robot.name)}>", '  <link name="base"/>']
    parent = "base"
    for j, (joint, link) in enumerate(zip(robot.joints, robot.links)):
        p = np.asarray(link, float) + (np.asarray(robot.payload, float) if j == robot.dof - 1 else 0.0)
        child = f"{joint.name}_link"
        m = float(p[0])
        com = p[1:4] / m if m > 0 else np.zeros(3)
        i_c = inertia_about_com(p) if m > 0 else np.zeros((3, 3))
        out += [f"  <link name={quoteattr(child)}>", "    <inertial>",
                f'      <origin xyz="{" ".join(_num(float(v)) for v in com)}" rpy="0 0 0"/>',
                f'      <mass value="{_num(m)}"/>',
                f'      <inertia ixx="{_num(i_c[0, 0])}" ixy="{_num(i_c[0, 1])}" ixz="{_num(i_c[0, 2])}" '
                f'iyy="{_num(i_c[1, 1])}" iyz="{_num(i_c[1, 2])}" izz="{_num(i_c[2, 2])}"/>',
                "    </inertial>", "  </link>"]
        origin = joint.pre_matrix @ joint.post_matrix
        axis = joint.post_matrix[:3, :3].T @ np.array([0.0, 0.0, 1.0])
        lim = joint.limits
        out += [f"  <joint name={quoteattr(joint.name)} type={quoteattr(joint.type)}>",
                f"    <parent link={quoteattr(parent)}/>", f"    <child link={quoteattr(child)}/>",
                f"    <origin {xyz_rpy(origin)}/>", f'    <axis xyz="{" ".join(_num(float(v)) for v in axis)}"/>']
        attrs = [f'{k}="{_num(v)}"' for k, v in (("lower", lim.q_min), ("upper", lim.q_max), ("effort", lim.tau),
                                                 ("velocity", lim.qd)) if math.isfinite(v)]
        if attrs:
            out.append(f"    <limit {' '.join(attrs)}/>")
        if joint.FV or joint.FC:
            out.append(f'    <dynamics damping="{_num(joint.FV)}" friction="{_num(joint.FC)}"/>')
        out.append("  </joint>")
        parent = child
    out += ['  <link name="tip"/>', '  <joint name="tip_joint" type="fixed">',
            f'    <parent link={quoteattr(parent)}/>', '    <child link="tip"/>',
            f"    <origin {xyz_rpy(robot.tip_matrix)}/>", "  </joint>", "</robot>"]
    return "\n".join(out) + "\n"
