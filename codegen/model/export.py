"""Robot -> robot YAML in the `urdf` convention (origin + axis per joint, standard link parameters)
or the `mdh` one (a modified-DH table), and Robot -> URDF.

Used by `manipgen convert` to freeze a URDF (+ overlay) into one reviewable, bundled file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Literal

import numpy as np

from codegen.errors import DescriptionError
from codegen.model import exact
from codegen.model.robot import JOINT_PARAMS, LINK_PARAMS, Encoder, Joint, Robot, mdh_transforms
from codegen.model.spatial import homogeneous, inverse, transform_inertial


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

    @property
    def tip_text(self) -> str:
        return _pose(self.tip)

    def kinematics(self, i: int) -> list[str]:
        """Joint i's kinematic lines in the description YAML."""
        return [f"    origin: {_pose(self.origins[i])}", f"    axis: {_vec(self.axes[i])}"]


# MdhChain's geometric decisions (are axes i and i+1 parallel, do they coincide, is the first axis
# reachable), in m and unit-vector components: far above rounding, below the digits URDFs print.
# Axes parallel to within it are taken as parallel: the common normal of nearly parallel axes lies
# far away (d ~ offset / angle), the ill-conditioning of every DH convention.
_TOL = 1e-9
# Written MDH numbers within _SNAP of 0 (lengths, angles, inertial parameters) or of +-pi/2, +-pi
# (angles) are snapped to them, so that a table computed through rotations and cross products reads
# like a textbook one (0, pi/2 written as such) instead of carrying 1e-17 rounding residue. The model
# moves by at most ~1e-12 (relative), far below any test's tolerance.
_SNAP = 1e-12
_ANGLES = {0.0: "0.0", math.pi / 2: "pi/2", -math.pi / 2: "-pi/2", math.pi: "pi", -math.pi: "pi"}


def _snap(x: float, angle: bool = False) -> float:
    for e in _ANGLES if angle else (0.0,):
        if abs(x - e) <= _SNAP:
            return math.pi if e == -math.pi else e  # -pi and pi are the same angle: written as pi
    return float(x)


def _angle(x: float) -> str:
    """An (already snapped) angle: 0, +-pi/2, pi as such (the reader takes `pi/2`), else repr."""
    return _ANGLES.get(x, _num(x))


def _length(x: float) -> str:
    return _num(_snap(x))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(exact.matmul(a, b))


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, float) / exact.norm(v)


def _along(p: np.ndarray, z: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The point of the line through p along unit z nearest to o."""
    return p + _dot(o - p, z) * z


class MdhChain:
    """The robot as a modified-DH (Khalil-Craig) table: frame i = frame i-1 . Rx(alpha_i) Tx(a_i)
    Rz(theta_i) Tz(d_i), the joint variable added to theta_i (revolute) or d_i (prismatic).

    At q = 0, every joint's axis z_i (signed as its motion: q keeps its sign) and a point p_i on it
    are found in the base frame, which is MDH frame 0. Frame i has z along axis i, its origin O_i on
    it and x_i along a common normal of axes i and i+1:
    - not parallel: x_i = +-(z_i x z_{i+1}) / |.|, O_i the normal's foot on axis i (a_{i+1} = 0 if
      the axes intersect);
    - parallel: O_i is where x_{i-1} meets axis i (d_i = 0: the offsets along parallel axes add up
      in the last of them, as in textbook tables), x_i the perpendicular from O_i to axis i+1, or
      x_{i-1} if the axes coincide;
    - the last joint: x_n = x_{n-1} (theta_n = 0; it is normal to z_n, being normal to axis n),
      O_n the tip's foot on axis n (the tip then has no offset along the axis).
    The sign of x_i is the one nearer x_{i-1} (|theta_i| <= pi/2; a_{i+1} is signed), +pi/2 on a
    tie. Frame 0 cannot move: axis 1 must be normal to x_0 and meet the x_0 axis (DescriptionError
    otherwise: the YAML has no base transform).

    Each frame i moves with joint i exactly as the robot's link frame i does (both are the joint
    frame times a constant: Rz(q), Tz(q) commute with a rotation about and a shift along z), so
    links, payload and tip are re-expressed by constant transforms. The parameters are read from
    the frames rebuilt from the snapped table (mdh_transforms, as the reader builds them), so
    snapping never accumulates and the inertials and the tip are exact in the frames the reader
    will have."""

    def __init__(self, robot: Robot) -> None:
        world, axes, bodies = np.eye(4), [], []
        for joint in robot.joints:
            frame = exact.matmul(world, joint.pre_matrix)  # the joint frame at q = 0
            axes.append((frame[:3, 2], frame[:3, 3]))
            world = exact.matmul(frame, joint.post_matrix)
            bodies.append(world)
        tip = exact.matmul(world, robot.tip_matrix)
        x, o = np.array([1.0, 0.0, 0.0]), np.zeros(3)
        z, p = axes[0]
        if abs(_dot(z, x)) > _TOL or abs(_dot(p, exact.cross(x, z))) > _TOL:
            raise DescriptionError(
                robot.file,
                f"joint 1 ({robot.joints[0].name})",
                "the first axis is not reachable by MDH from the base frame (it must be normal to the "
                "base x axis and meet it; the YAML has no base transform): convert with --convention urdf",
            )
        self.params: list[tuple[float, float, float, float]] = []
        self.links: list[np.ndarray] = []
        built = np.eye(4)  # frame i-1 as the reader will build it from the snapped table
        for i, (z, p) in enumerate(axes):
            if i + 1 == len(axes):
                o = _along(p, z, tip[:3, 3])  # x stays x_{n-1}
            elif exact.norm(normal := exact.cross(z, axes[i + 1][0])) > _TOL:
                z2, p2 = axes[i + 1]
                o = p + _dot(exact.cross(p2 - p, z2), normal) / _dot(normal, normal) * z
                x = _nearest(_unit(normal), x, z)
            else:
                o = _along(p, z, o)  # where x_{i-1} meets axis i
                across = axes[i + 1][1] - o - _dot(axes[i + 1][1] - o, z) * z
                if exact.norm(across) > _TOL:  # else the axes coincide: x stays x_{i-1}
                    x = _nearest(_unit(across), x, z)
            x = _unit(x - _dot(x, z) * z)  # exactly normal to z (x_{i-1} is, to _TOL)
            frame = homogeneous(np.column_stack([x, exact.cross(z, x), z]), o)
            t = exact.matmul(inverse(built), frame)
            alpha = _snap(exact.atan2(-t[1, 2], t[2, 2]), angle=True)
            theta = _snap(exact.atan2(-t[0, 1], t[0, 0]), angle=True)
            a, d = _snap(t[0, 3]), _snap(_dot(t[:3, 3], t[:3, 2]))
            self.params.append((alpha, a, theta, d))
            built = exact.matmul(built, mdh_transforms(robot.joints[i].type, alpha, a, theta, d)[0])
            link = transform_inertial(np.asarray(robot.links[i], float), exact.matmul(inverse(built), bodies[i]))
            self.links.append(np.array([_snap(v) for v in link]))
        last = exact.matmul(inverse(built), world)
        self.payload = np.array([_snap(v) for v in transform_inertial(np.asarray(robot.payload, float), last)])
        self.tip = exact.matmul(inverse(built), tip)

    @property
    def tip_text(self) -> str:
        return _pose(self.tip, _length, lambda v: _angle(_snap(v, angle=True)))

    def kinematics(self, i: int) -> list[str]:
        alpha, a, theta, d = self.params[i]
        return [f"    mdh: {{alpha: {_angle(alpha)}, a: {_num(a)}, theta: {_angle(theta)}, d: {_num(d)}}}"]


def _nearest(v: np.ndarray, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """+-v (unit, normal to z), the one nearer x (normal to z too); on a tie, z x x's side."""
    c = _dot(v, x)
    return v if (c if abs(c) > _TOL else _dot(v, exact.cross(z, x))) > 0 else -v


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


def _pose(t: np.ndarray, length: Callable[[float], str] = _num, angle: Callable[[float], str] = _num) -> str:
    """A transform as the YAML's {xyz, rpy} (origins, the tip)."""
    return (
        f"{{xyz: [{', '.join(length(float(v)) for v in t[:3, 3])}], "
        f"rpy: [{', '.join(angle(v) for v in rpy_of(t[:3, :3]))}]}}"
    )


def _encoder(e: Encoder, with_side: bool) -> str:
    return (
        "{" + f"cpr: {e.cpr}" + (f", side: {e.side}" if with_side else "") + f", bits: {e.bits}, "
        f"signed: {'true' if e.signed else 'false'}"
        + (f", offset: {_num(e.offset)}" if e.offset else "")
        + (f", direction: {e.direction}" if e.direction != 1 else "")
        + "}"
    )


def _header(robot: Robot, header: str, convention: str) -> list[str]:
    """The comment header and the top-level keys up to `coulomb` (the same in every convention)."""
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    out += [
        f"name: {robot.name}",
        f"source: {json.dumps(robot.source or robot.file)}",
        f"convention: {convention}",
        f"gravity: {_vec(robot.gravity)}",
        f"sample_period: {_num(robot.sample_period)}",
        f"joint_parameters: [{', '.join(robot.joint_parameters)}]",
    ]
    c = robot.coulomb
    scales = _num(c.velocity_scale[0]) if len(set(c.velocity_scale)) == 1 else _vec(c.velocity_scale)
    out.append("coulomb: {model: sign}" if c.model == "sign" else f"coulomb: {{model: tanh, velocity_scale: {scales}}}")
    if robot.friction_terms:  # per joint by name (schema.read_friction)
        terms = (f"{json.dumps(j.name)}: [{', '.join(robot.terms_of(i))}]" for i, j in enumerate(robot.joints))
        out.append(f"friction: {{terms: {{{', '.join(terms)}}}}}")
    return out


def _inertial(p: np.ndarray) -> str:
    return "{" + ", ".join(f"{k}: {_num(v)}" for k, v in zip(LINK_PARAMS, p)) + "}"


def _drive(robot: Robot, joint: Joint) -> list[str]:
    """A joint's lines after its kinematic block, before its link: limits, gear, torque constant,
    encoder, the joint parameters, the elastic drive (everything a convention does not change)."""
    out = []
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
            parts.append("coupling: {" + ", ".join(f"{robot.joints[i].name}: {_num(f)}" for i, f in el.coupling) + "}")
        if el.motor_encoder is not None:
            parts.append(f"motor_encoder: {_encoder(el.motor_encoder, False)}")
        out.append("    elastic: {" + ", ".join(parts) + "}")
    return out


def robot_to_yaml(robot: Robot, header: str = "", convention: Literal["urdf", "mdh"] = "urdf") -> str:
    """The robot as a description YAML: `urdf` (UrdfChain: origin + axis per joint) or `mdh`
    (MdhChain: a modified-DH table; DescriptionError if the first axis is out of its reach)."""
    chain: UrdfChain | MdhChain = UrdfChain(robot) if convention == "urdf" else MdhChain(robot)
    out = _header(robot, header, convention)
    out.append(f"tip: {chain.tip_text}")
    if any(robot.payload):
        out.append(f"payload: {_inertial(chain.payload)}")
    out.append("joints:")
    for i, (joint, link) in enumerate(zip(robot.joints, chain.links)):
        out += [f"  - name: {joint.name}", f"    type: {joint.type}", *chain.kinematics(i), *_drive(robot, joint)]
        out.append(f"    link: {_inertial(link)}")
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
