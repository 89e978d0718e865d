"""Robot -> robot YAML in the `urdf` convention (origin + axis per joint, standard link parameters).

Used by `manipgen convert` to freeze a URDF (+ overlay) into one reviewable, bundled file.
"""

from __future__ import annotations

import json
import math

import numpy as np

from codegen.model import exact
from codegen.model.robot import JOINT_PARAMS, LINK_PARAMS, Encoder, Robot
from codegen.model.spatial import homogeneous, transform_inertial


class UrdfChain:
    """The robot as a URDF-style chain: per joint the fixed origin from the parent's frame and the
    axis, the child frame being the joint's frame moved by q; link parameters in those frames.

    A description joint is pre . Rz(q) . post (revolute; post: moved joint frame -> link frame).
    Split post's translation p = p_par + p_perp (along / across the rotation axis z): p_par commutes
    with Rz(q), so the link frame keeps its place as the URDF child frame when p_perp = 0 (URDFs,
    MDH tables, prismatic joints: the result is pre . post with axis post^T z). A standard-DH joint
    has p_perp = a != 0, and a URDF joint rotates about an axis through its child frame's origin: the
    child frame is then the link frame shifted by o = R^T p_perp, i.e. the frame at the rotation axis,
    and the link parameters, the next origin, the payload and the tip are re-expressed from it."""

    def __init__(self, robot: Robot) -> None:
        self.origins: list[np.ndarray] = []
        self.axes: list[np.ndarray] = []
        self.links: list[np.ndarray] = []
        shift = np.eye(4)  # child frame of the previous joint -> its link frame
        for joint, link in zip(robot.joints, robot.links):
            post = joint.post_matrix
            r, p = post[:3, :3], post[:3, 3]
            across = np.array([p[0], p[1], 0.0]) if joint.type == "revolute" else np.zeros(3)
            kept = homogeneous(r, p - across)  # the part of post that moves with the joint frame
            self.origins.append(exact.matmul(shift, joint.pre_matrix, kept))
            self.axes.append(exact.matmul(r.T, np.array([0.0, 0.0, 1.0])))
            shift = homogeneous(np.eye(3), exact.matmul(r.T, across))
            self.links.append(
                transform_inertial(np.asarray(link, float), shift) if np.any(across) else np.asarray(link, float)
            )
        self.payload = (
            transform_inertial(np.asarray(robot.payload, float), shift)
            if np.any(shift != np.eye(4))
            else np.asarray(robot.payload, float)
        )
        self.tip = exact.matmul(shift, robot.tip_matrix)


def rpy_of(r: np.ndarray) -> tuple[float, float, float]:
    """Inverse of spatial.rpy: R = Rz(yaw) Ry(pitch) Rx(roll). Correctly rounded (codegen.model.exact):
    the exported numbers are the same on every machine."""
    pitch = exact.atan2(-r[2, 0], exact.hypot(r[0, 0], r[1, 0]))
    if abs(exact.cos(pitch)) < 1e-12:  # gimbal lock: put everything in yaw
        return 0.0, pitch, exact.atan2(-r[0, 1], r[1, 1])
    return exact.atan2(r[2, 1], r[2, 2]), pitch, exact.atan2(r[1, 0], r[0, 0])


def _num(x: float) -> str:
    x = 0.0 if x == 0 else float(x)
    return repr(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _vec(v: np.ndarray | tuple[float, ...]) -> str:
    return "[" + ", ".join(_num(float(x)) for x in v) + "]"


def _encoder(e: Encoder, with_side: bool) -> str:
    return (
        "{" + f"cpr: {e.cpr}" + (f", side: {e.side}" if with_side else "") + f", bits: {e.bits}, "
        f"signed: {'true' if e.signed else 'false'}"
        + (f", offset: {_num(e.offset)}" if e.offset else "")
        + (f", direction: {e.direction}" if e.direction != 1 else "")
        + "}"
    )


def robot_to_yaml(robot: Robot, header: str = "") -> str:
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    out += [
        f"name: {robot.name}",
        f"source: {json.dumps(robot.source or robot.file)}",
        "convention: urdf",
        f"gravity: {_vec(robot.gravity)}",
        f"sample_period: {_num(robot.sample_period)}",
        f"joint_parameters: [{', '.join(robot.joint_parameters)}]",
    ]
    c = robot.coulomb
    scales = _num(c.velocity_scale[0]) if len(set(c.velocity_scale)) == 1 else _vec(c.velocity_scale)
    out.append("coulomb: {model: sign}" if c.model == "sign" else f"coulomb: {{model: tanh, velocity_scale: {scales}}}")
    chain = UrdfChain(robot)
    tip = chain.tip
    out.append(f"tip: {{xyz: {_vec(tip[:3, 3])}, rpy: {_vec(rpy_of(tip[:3, :3]))}}}")
    if any(robot.payload):
        out.append("payload: {" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, chain.payload)) + "}")
    out.append("joints:")
    for joint, link, origin, axis in zip(robot.joints, chain.links, chain.origins, chain.axes):
        out += [
            f"  - name: {joint.name}",
            f"    type: {joint.type}",
            f"    origin: {{xyz: {_vec(origin[:3, 3])}, rpy: {_vec(rpy_of(origin[:3, :3]))}}}",
            f"    axis: {_vec(axis)}",
        ]
        lim = joint.limits
        parts = []
        if math.isfinite(lim.q_min) and math.isfinite(lim.q_max):
            parts.append(f"q: [{_num(lim.q_min)}, {_num(lim.q_max)}]")
        parts += [
            f"{k}: {_num(getattr(lim, k))}" for k in ("qd", "qdd", "tau", "current") if math.isfinite(getattr(lim, k))
        ]
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
            parts = [
                f"{k}: {_num(getattr(el, k))}"
                for k in ("motor_inertia", "stiffness", "damping", "motor_viscous", "motor_coulomb")
            ]
            if el.coupling:
                parts.append(
                    "coupling: {" + ", ".join(f"{robot.joints[i].name}: {_num(f)}" for i, f in el.coupling) + "}"
                )
            if el.motor_encoder is not None:
                parts.append(f"motor_encoder: {_encoder(el.motor_encoder, False)}")
            out.append("    elastic: {" + ", ".join(parts) + "}")
        out.append("    link: {" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, link)) + "}")
    return "\n".join(out) + "\n"


def robot_to_urdf(robot: Robot) -> str:
    """Robot -> URDF: one link per joint (named after the joint's link, `<joint>_link`), the joint
    origins and axes as in robot_to_yaml, inertials about the centre of mass, FV/FC as the joint's
    damping/friction, limits where given, and the tip as a fixed `tip` link. A revolute joint without
    position limits is `continuous`; an effort or velocity limit the description does not give is
    written as 0, as URDF requires the attributes (manipgen's reader, like most, takes 0 as none). A
    prismatic joint without position limits has no URDF form: its <limit> has no lower/upper, which
    URDF reads as 0 and 0 (the dynamics are unaffected; a planner would see a fixed joint). Gravity, encoders,
    rotor inertia, torque constants and elastic drives have no URDF element and are not written
    (robot_to_yaml keeps them; for a URDF, put them in an overlay)."""
    from xml.sax.saxutils import quoteattr

    from codegen.model.spatial import inertia_about_com

    def xyz_rpy(t: np.ndarray) -> str:
        return (
            f'xyz="{" ".join(_num(float(v)) for v in t[:3, 3])}" rpy="{" ".join(_num(v) for v in rpy_of(t[:3, :3]))}"'
        )

    out = ['<?xml version="1.0"?>', f"<robot name={quoteattr(robot.name)}>", '  <link name="base"/>']
    parent = "base"
    chain = UrdfChain(robot)
    for j, (joint, link, origin, axis) in enumerate(zip(robot.joints, chain.links, chain.origins, chain.axes)):
        p = link + (chain.payload if j == robot.dof - 1 else 0.0)
        child = f"{joint.name}_link"
        m = float(p[0])
        com = p[1:4] / m if m > 0 else np.zeros(3)
        i_c = inertia_about_com(p) if m > 0 else np.zeros((3, 3))
        out += [
            f"  <link name={quoteattr(child)}>",
            "    <inertial>",
            f'      <origin xyz="{" ".join(_num(float(v)) for v in com)}" rpy="0 0 0"/>',
            f'      <mass value="{_num(m)}"/>',
            f'      <inertia ixx="{_num(i_c[0, 0])}" ixy="{_num(i_c[0, 1])}" ixz="{_num(i_c[0, 2])}" '
            f'iyy="{_num(i_c[1, 1])}" iyz="{_num(i_c[1, 2])}" izz="{_num(i_c[2, 2])}"/>',
            "    </inertial>",
            "  </link>",
        ]
        lim = joint.limits
        bounded = math.isfinite(lim.q_min) and math.isfinite(lim.q_max)
        kind = "continuous" if joint.type == "revolute" and not bounded else joint.type
        out += [
            f"  <joint name={quoteattr(joint.name)} type={quoteattr(kind)}>",
            f"    <parent link={quoteattr(parent)}/>",
            f"    <child link={quoteattr(child)}/>",
            f"    <origin {xyz_rpy(origin)}/>",
            f'    <axis xyz="{" ".join(_num(float(v)) for v in axis)}"/>',
        ]
        if kind != "continuous" or math.isfinite(lim.tau) or math.isfinite(lim.qd):
            # URDF requires <limit> on revolute and prismatic joints, with effort and velocity
            attrs = [f'{k}="{_num(v)}"' for k, v in (("lower", lim.q_min), ("upper", lim.q_max)) if bounded]
            attrs += [
                f'{k}="{_num(v) if math.isfinite(v) else 0}"' for k, v in (("effort", lim.tau), ("velocity", lim.qd))
            ]
            out.append(f"    <limit {' '.join(attrs)}/>")
        if joint.FV or joint.FC:
            out.append(f'    <dynamics damping="{_num(joint.FV)}" friction="{_num(joint.FC)}"/>')
        out.append("  </joint>")
        parent = child
    out += [
        '  <link name="tip"/>',
        '  <joint name="tip_joint" type="fixed">',
        f"    <parent link={quoteattr(parent)}/>",
        '    <child link="tip"/>',
        f"    <origin {xyz_rpy(chain.tip)}/>",
        "  </joint>",
        "</robot>",
    ]
    return "\n".join(out) + "\n"
