"""Pinocchio models built independently of ``codegen``: the numeric referee of the peer tests.

Nothing here imports ``codegen``. The robot YAML (docs/robot_yaml.md) is parsed again with
``yaml.safe_load`` and turned into a ``pinocchio.Model`` by its own small code path, so a shared
misreading of the schema cannot hide in both sides of a comparison.

Frames. Pinocchio's joint frame of joint i is where the joint motion (about/along its z axis, or
the URDF axis) happens, and ``model.inertias[i]`` is expressed in it.

- ``mdh`` (Khalil-Craig): frame i = frame i-1 . Rx(alpha) Tx(a) Rz(theta) Tz(d), joint variable
  added to theta (revolute) or d (prismatic). Rz(theta+q) Tz(d) = Rz(theta) Tz(d) Rz(q), so the
  joint placement is Rx(alpha) Tx(a) Rz(theta) Tz(d) followed by JointModelRZ / JointModelPZ and
  the joint frame *is* MDH frame i: the link data go in unchanged.
- ``dh`` (standard): frame i = frame i-1 . Rz(theta+q) Tz(d) Tx(a) Rx(alpha); joint i moves about
  z(i-1). The Pinocchio joint frame J_i is frame i-1 moved by the joint: J_i = F_(i-1) . Rz(q)
  (or Tz(q)), and F_i = J_i . X_i with X_i = Rz(theta) Tz(d) Tx(a) Rx(alpha). So the placement of
  joint i+1 in joint i is X_i, and the link data, given in the distal frame F_i, are moved into
  J_i with X_i.act(inertia).
- ``urdf``: joint frame = parent link frame . origin (rpy = fixed-axis roll, pitch, yaw:
  R = Rz(yaw) Ry(pitch) Rx(roll)), motion about ``axis``; the link frame is the joint frame.

Frames added to the model: ``link_<i>`` (the convention's frame of link i, i = 1..n, on joint i)
and ``tip`` (the YAML ``tip``, or the last link frame if none).

``standard_params_pinocchio`` returns Pinocchio's per-joint dynamic parameters
``[m, mc_x, mc_y, mc_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` (about the joint frame origin, in the
joint frame), the column order of ``pinocchio.computeJointTorqueRegressor``.
"""

from __future__ import annotations

import ast
import math
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin
import yaml

# Pinocchio's dynamic-parameter order -> this project's order (Xu et al. 2020 eq. 3):
# pin: m, MX, MY, MZ, XX, XY, YY, XZ, YZ, ZZ ; project: M, MX, MY, MZ, XX, XY, XZ, YY, YZ, ZZ
PIN_TO_PROJECT = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])
PROJECT_PARAM_NAMES = ("M", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ")

_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


# --------------------------------------------------------------------------------------------
# YAML reading (independent of codegen.model.yamlio)
# --------------------------------------------------------------------------------------------
def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "pi":
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    raise ValueError(f"unsupported expression element {ast.dump(node)}")


def num(value: Any) -> float:
    """A YAML number, or a string such as ``pi/2`` / ``-140*pi/180`` (numbers, pi, + - * /)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _eval(ast.parse(value.strip(), mode="eval"))
    raise ValueError(f"not a number: {value!r}")


def vec(values: Sequence[Any], n: int) -> np.ndarray:
    if len(values) != n:
        raise ValueError(f"expected {n} numbers, got {values!r}")
    return np.array([num(v) for v in values], dtype=float)


def load_yaml(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    if not isinstance(doc, dict) or "joints" not in doc:
        raise ValueError(f"{path}: not a robot description (no 'joints')")
    return doc


# --------------------------------------------------------------------------------------------
# Small rigid-body helpers (written out here rather than taken from codegen)
# --------------------------------------------------------------------------------------------
def rot_x(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def se3(R: np.ndarray | None = None, p: Sequence[float] | None = None) -> pin.SE3:
    return pin.SE3(
        np.eye(3) if R is None else np.asarray(R, dtype=float), np.zeros(3) if p is None else np.asarray(p, dtype=float)
    )


def rx(t: float) -> pin.SE3:
    return se3(rot_x(t))


def rz(t: float) -> pin.SE3:
    return se3(rot_z(t))


def tx(a: float) -> pin.SE3:
    return se3(p=[a, 0.0, 0.0])


def tz(d: float) -> pin.SE3:
    return se3(p=[0.0, 0.0, d])


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF rpy: rotation about fixed x (roll), then fixed y (pitch), then fixed z (yaw)."""
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def origin_se3(spec: Mapping[str, Any] | None) -> pin.SE3:
    """``{xyz: [..], rpy: [..]}`` (both optional) as an SE3."""
    if not spec:
        return pin.SE3.Identity()
    xyz = vec(spec.get("xyz", [0, 0, 0]), 3)
    rpy = vec(spec.get("rpy", [0, 0, 0]), 3)
    return se3(rpy_matrix(*rpy), list(xyz))


def _sym3(six: np.ndarray) -> np.ndarray:
    xx, xy, xz, yy, yz, zz = six
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def inertia_from_spec(spec: Mapping[str, Any] | None) -> pin.Inertia:
    """A ``link:`` or ``payload:`` block as a Pinocchio inertia in the block's own frame.

    Accepts ``{mass, com, inertia: [xx, xy, xz, yy, yz, zz], inertia_about: com|origin}`` or the
    standard parameters ``{M, MX, MY, MZ, XX, XY, XZ, YY, YZ, ZZ}`` (about the frame origin).
    """
    if not spec:
        return pin.Inertia.Zero()
    if "M" in spec:
        p = {k: num(spec.get(k, 0.0)) for k in PROJECT_PARAM_NAMES}
        # pin order: m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz (about the origin)
        dyn = np.array([p["M"], p["MX"], p["MY"], p["MZ"], p["XX"], p["XY"], p["YY"], p["XZ"], p["YZ"], p["ZZ"]])
        if dyn[0] == 0.0:
            if np.any(dyn != 0.0):
                raise ValueError("massless link with non-zero parameters")
            return pin.Inertia.Zero()
        return pin.Inertia.FromDynamicParameters(dyn)
    mass = num(spec.get("mass", 0.0))
    com = vec(spec.get("com", [0, 0, 0]), 3)
    inertia = _sym3(vec(spec.get("inertia", [0, 0, 0, 0, 0, 0]), 6))
    about = spec.get("inertia_about", "com")
    if mass == 0.0:
        if np.any(com != 0.0) or np.any(inertia != 0.0):
            raise ValueError("massless link with non-zero parameters")
        return pin.Inertia.Zero()
    if about == "origin":
        # parallel-axis theorem, back to the centre of mass
        inertia = inertia - mass * (float(com @ com) * np.eye(3) - np.outer(com, com))
    elif about != "com":
        raise ValueError(f"inertia_about must be 'com' or 'origin', got {about!r}")
    return pin.Inertia(mass, com, inertia)


def _axis_joint(axis: np.ndarray, prismatic: bool) -> pin.JointModel:
    axis = axis / np.linalg.norm(axis)
    aligned = {(1.0, 0.0, 0.0): "X", (0.0, 1.0, 0.0): "Y", (0.0, 0.0, 1.0): "Z"}
    key = tuple(float(v) for v in axis)
    if key in aligned:
        return getattr(pin, ("JointModelP" if prismatic else "JointModelR") + aligned[key])()
    if prismatic:
        return pin.JointModelPrismaticUnaligned(axis)
    return pin.JointModelRevoluteUnaligned(axis)


# --------------------------------------------------------------------------------------------
# Model builder
# --------------------------------------------------------------------------------------------
def _joint_geometry(convention: str, jspec: Mapping[str, Any]) -> tuple[pin.SE3, pin.JointModel, pin.SE3]:
    """(placement before the joint motion, joint model, link frame in the joint frame).

    For ``dh`` the placement before the motion is identity in the *previous* joint's distal
    frame; the caller composes it with the previous link's X (see module docstring).
    """
    prismatic = jspec.get("type", "revolute") == "prismatic"
    if jspec.get("type", "revolute") not in ("revolute", "prismatic"):
        raise ValueError(f"joint {jspec.get('name')}: unknown type {jspec.get('type')!r}")
    joint_z = pin.JointModelPZ() if prismatic else pin.JointModelRZ()
    if convention == "mdh":
        k = jspec["mdh"]
        placement = (
            rx(num(k.get("alpha", 0))) * tx(num(k.get("a", 0))) * rz(num(k.get("theta", 0))) * tz(num(k.get("d", 0)))
        )
        return placement, joint_z, pin.SE3.Identity()
    if convention == "dh":
        k = jspec["dh"]
        link_in_joint = (
            rz(num(k.get("theta", 0))) * tz(num(k.get("d", 0))) * tx(num(k.get("a", 0))) * rx(num(k.get("alpha", 0)))
        )
        return pin.SE3.Identity(), joint_z, link_in_joint
    if convention == "urdf":
        placement = origin_se3(jspec.get("origin"))
        axis = vec(jspec.get("axis", [0, 0, 1]), 3)
        return placement, _axis_joint(axis, prismatic), pin.SE3.Identity()
    raise ValueError(f"unknown convention {convention!r}")


def pin_model_from_yaml(path: str | Path) -> pin.Model:
    """Build a ``pinocchio.Model`` from a robot YAML file (mdh, dh or urdf convention).

    Joint i gets ``model.inertias[i]`` = link i (+ the payload on the last link) expressed in
    Pinocchio's joint frame, ``model.armature[i-1]`` = IA, gravity from the YAML, position /
    velocity / effort limits where given, frames ``link_<i>`` and ``tip``. Friction is not part of
    a Pinocchio model: see :func:`friction_torque`.
    """
    doc = load_yaml(path)
    convention = doc.get("convention", "mdh")
    joints = doc["joints"]
    n = len(joints)

    model = pin.Model()
    model.name = str(doc.get("name", Path(path).stem))
    g = vec(doc.get("gravity", [0.0, 0.0, -9.81]), 3)
    model.gravity = pin.Motion(g, np.zeros(3))

    parent = 0
    prev_link_in_joint = pin.SE3.Identity()  # X of the previous joint (dh), identity otherwise
    link_frames: list[pin.SE3] = []
    armature = np.zeros(n)
    lower = np.full(n, -np.inf)
    upper = np.full(n, np.inf)
    vel = np.full(n, np.inf)
    eff = np.full(n, np.inf)
    for i, jspec in enumerate(joints):
        placement, jmodel, link_in_joint = _joint_geometry(convention, jspec)
        if convention == "dh":
            placement = prev_link_in_joint
        name = str(jspec.get("name", f"joint{i + 1}"))
        jid = model.addJoint(parent, jmodel, placement, name)
        inertia = link_in_joint.act(inertia_from_spec(jspec.get("link")))
        model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        joint_frame = model.addJointFrame(jid)
        model.addFrame(pin.Frame(f"link_{i + 1}", jid, joint_frame, link_in_joint, pin.FrameType.OP_FRAME))
        link_frames.append(link_in_joint)
        armature[i] = num(jspec.get("IA", 0.0))
        lim = jspec.get("limits") or {}
        if "q" in lim:
            lower[i], upper[i] = vec(lim["q"], 2)
        if "qd" in lim:
            vel[i] = num(lim["qd"])
        if "tau" in lim:
            eff[i] = num(lim["tau"])
        parent = jid
        prev_link_in_joint = link_in_joint

    payload = doc.get("payload")
    if payload and num(payload.get("mass", payload.get("M", 0.0))) != 0.0:
        model.inertias[n] = model.inertias[n] + link_frames[-1].act(inertia_from_spec(payload))

    tip = link_frames[-1] * origin_se3(doc.get("tip"))
    model.addFrame(pin.Frame("tip", n, model.getFrameId(f"link_{n}"), tip, pin.FrameType.OP_FRAME))

    model.armature = armature
    model.lowerPositionLimit = lower
    model.upperPositionLimit = upper
    model.velocityLimit = vel
    model.effortLimit = eff
    return model


def tanh_scales(value: Any) -> np.ndarray:
    """coulomb.velocity_scale as written: one number for every joint or a list, one per joint."""
    return np.array([num(v) for v in value]) if isinstance(value, list) else np.array(num(value))


def friction_torque(path: str | Path, qd: np.ndarray) -> np.ndarray:
    """Joint friction of the YAML model: FV qd + FC coul(qd) + FO (coul = sign or tanh(qd/s))."""
    doc = load_yaml(path)
    qd = np.asarray(qd, dtype=float)
    coulomb = doc.get("coulomb") or {"model": "sign"}
    if coulomb.get("model", "sign") == "tanh":
        shape = np.tanh(qd / tanh_scales(coulomb["velocity_scale"]))
    else:
        shape = np.sign(qd)
    fv = np.array([num(j.get("FV", 0.0)) for j in doc["joints"]])
    fc = np.array([num(j.get("FC", 0.0)) for j in doc["joints"]])
    fo = np.array([num(j.get("FO", 0.0)) for j in doc["joints"]])
    return fv * qd + fc * shape + fo


def standard_params_pinocchio(model: pin.Model) -> np.ndarray:
    """Per-joint dynamic parameters, shape (njoints - 1, 10), Pinocchio order and joint frames.

    Row i-1 is ``model.inertias[i].toDynamicParameters()`` = [m, mc_x, mc_y, mc_z, I_xx, I_xy,
    I_yy, I_xz, I_yz, I_zz] about joint i's frame origin. ``.ravel()`` matches the columns of
    ``pinocchio.computeJointTorqueRegressor``; ``[:, PIN_TO_PROJECT]`` gives the project's order.
    """
    return np.array([model.inertias[i].toDynamicParameters() for i in range(1, model.njoints)])


def standard_params_yaml(path: str | Path) -> np.ndarray:
    """Per-link standard parameters in the project's order (M, MX, .., ZZ) and *link* frames.

    Frames are those of the YAML's convention (MDH frame i, standard-DH frame i, URDF link frame),
    about their origin; the payload is added to the last link. Shape (n, 10).
    """
    doc = load_yaml(path)
    rows = []
    for jspec in doc["joints"]:
        rows.append(inertia_from_spec(jspec.get("link")))
    payload = doc.get("payload")
    if payload and num(payload.get("mass", payload.get("M", 0.0))) != 0.0:
        rows[-1] = rows[-1] + inertia_from_spec(payload)
    return np.array([r.toDynamicParameters()[PIN_TO_PROJECT] for r in rows])


# --------------------------------------------------------------------------------------------
# A user's URDF chain (+ overlay), read by Pinocchio's own URDF parser
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UrdfChainModel:
    model: pin.Model  # the chain's joints free, every other movable joint locked (buildReducedModel)
    joints: list[dict[str, Any]]  # the overlay's entries of the free joints, in chain order ({} if none)
    coulomb: dict[str, Any]  # the overlay's coulomb: block ({} if none)
    tip_frame: str
    base_frame: str | None


def _urdf_tree(path: Path) -> tuple[dict[str, tuple[str, str, str]], set[str]]:
    """joint name -> (parent link, child link, type); the link names."""
    root = ElementTree.parse(path).getroot()
    joints = {
        j.get("name", ""): (j.find("parent").get("link", ""), j.find("child").get("link", ""), j.get("type", ""))  # type: ignore[union-attr]
        for j in root.findall("joint")
    }
    return joints, {link.get("name", "") for link in root.findall("link")}


def pin_model_from_urdf(
    path: str | Path, base_link: str | None = None, tip_link: str | None = None, overlay: str | Path | None = None
) -> UrdfChainModel:
    """The chain base_link -> tip_link of a URDF as Pinocchio builds it (``buildModelFromUrdf``):
    movable joints off the chain locked at 0 or at the overlay's ``locked:`` value (their links
    merged by ``buildReducedModel``); the overlay's gravity, payload (in the last joint's frame),
    tip transform (which replaces the tip link) and IA (armature) applied; its friction returned
    for :class:`Friction`. Defaults: the root link and the only leaf, as the project's URDF reader."""
    path = Path(path)
    tree, links = _urdf_tree(path)
    children = {c for _, c, _ in tree.values()}
    parents = {p for p, _, _ in tree.values()}
    roots, leaves = sorted(links - children), sorted(links - parents)
    base = base_link or (roots[0] if len(roots) == 1 else "")
    tip = tip_link or (leaves[0] if len(leaves) == 1 else "")
    if not base or not tip:
        raise ValueError(f"{path}: give base_link and tip_link (roots {roots}, leaves {leaves})")
    by_child = {c: (name, p, kind) for name, (p, c, kind) in tree.items()}
    chain: list[str] = []
    link = tip
    while link != base:
        if link not in by_child:
            raise ValueError(f"{path}: {tip!r} does not descend from {base!r}")
        name, link, kind = by_child[link]
        if kind != "fixed":
            chain.insert(0, name)
    ov = load_yaml(overlay) if overlay else {"joints": {}}
    ov_joints = ov.get("joints") or {}
    full = pin.buildModelFromUrdf(str(path))
    locked_values = {k: num(v) for k, v in (ov.get("locked") or {}).items()}
    q_ref = pin.neutral(full)
    lock = []
    for jid in range(1, full.njoints):
        name = full.names[jid]
        if name in chain:
            continue
        lock.append(jid)
        value, joint = locked_values.get(name, 0.0), full.joints[jid]
        q_ref[joint.idx_q : joint.idx_q + joint.nq] = [math.cos(value), math.sin(value)] if joint.nq == 2 else [value]
    model = pin.buildReducedModel(full, lock, q_ref) if lock else full
    n = model.nv
    if "gravity" in ov:
        model.gravity = pin.Motion(vec(ov["gravity"], 3), np.zeros(3))
    model.armature = np.array([num(ov_joints.get(name, {}).get("IA", 0.0)) for name in chain])
    # the overlay's payload and tip are given in the last link's frame = Pinocchio's last joint frame
    if ov.get("payload"):
        model.inertias[n] = model.inertias[n] + inertia_from_spec(ov["payload"])
    tip_frame = tip
    if ov.get("tip"):
        model.addFrame(pin.Frame("tip", n, 0, origin_se3(ov["tip"]), pin.FrameType.OP_FRAME))
        tip_frame = "tip"
    # each chain joint's friction: the overlay's FV/FC, else the URDF's <dynamics damping friction>
    # as Pinocchio's parser reads them (Model.damping: viscous, Model.friction: Coulomb)
    joints = []
    for k, name in enumerate(chain):
        joint = dict(ov_joints.get(name, {}))
        v = model.joints[k + 1].idx_v
        joint.setdefault("FV", float(model.damping[v]))
        joint.setdefault("FC", float(model.friction[v]))
        joints.append(joint)
    return UrdfChainModel(
        model,
        joints,
        dict(ov.get("coulomb") or {}),
        tip_frame,
        None if base == (roots[0] if len(roots) == 1 else None) else base,
    )


# --------------------------------------------------------------------------------------------
# Real arms from example-robot-data (URDF)
# --------------------------------------------------------------------------------------------
def example_robot_data_dir() -> Path:
    """``.../cmeel.prefix/share/example-robot-data/robots`` of the installed example-robot-data."""
    for entry in sys.path:
        candidate = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


def ur_urdf_path(name: str = "ur5") -> Path:
    if name not in ("ur3", "ur5", "ur10"):
        raise ValueError(f"unknown UR arm {name!r}")
    return example_robot_data_dir() / "ur_description" / "urdf" / f"{name}_robot.urdf"


def panda_urdf_path() -> Path:
    return example_robot_data_dir() / "panda_description" / "urdf" / "panda.urdf"


def ur_model(name: str = "ur5") -> pin.Model:
    """UR3 / UR5 / UR10 (6 revolute joints) from example-robot-data; gravity (0, 0, -9.81)."""
    return pin.buildModelFromUrdf(str(ur_urdf_path(name)))


def panda_model() -> pin.Model:
    """Franka Panda arm (7 revolute joints), the two finger joints locked at 0 and merged."""
    full = pin.buildModelFromUrdf(str(panda_urdf_path()))
    fingers = [full.getJointId(n) for n in full.names if "finger" in n]
    q_ref = pin.neutral(full)
    for jid in fingers:
        q_ref[full.joints[jid].idx_q] = 0.0
    return pin.buildReducedModel(full, fingers, q_ref)
