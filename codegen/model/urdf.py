"""URDF (+ optional YAML overlay) -> Robot, through urdf_parser_py (ROS's maintained parser).

The chain runs from ``base_link`` to ``tip_link``. Fixed joints are merged into their parent link;
movable joints off the chain (grippers, fingers) are locked at a reference position (default 0,
overlay ``locked: {joint: value}``) and their links merged, as Pinocchio's buildReducedModel does.
"""

from __future__ import annotations

import contextlib
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegen.errors import DescriptionError, warn
from codegen.model import exact, spatial
from codegen.model.robot import (
    Joint,
    Limits,
    Robot,
    as_tuple,
    c_identifier,
    digest_of,
    urdf_transforms,
    validate_inertial,
)
from codegen.model.schema import (
    OVERLAY_JOINT_KEYS,
    TOP_KEYS,
    check_coulomb_scales,
    check_keys,
    check_revolute_limits,
    check_triangle,
    elastic_drives,
    read_common,
    read_encoder,
    read_friction,
    read_imus,
    read_joint_params,
    read_limits,
    read_torque_constant,
)
from codegen.model.urdf_checks import checked_urdf_text
from codegen.model.yamlio import Located, load_yaml, number

OVERLAY_TOP_KEYS = (TOP_KEYS - {"convention"}) | {"locked"}


def _origin(element: Any) -> np.ndarray:
    o = getattr(element, "origin", None)
    xyz = list(o.xyz) if o is not None and o.xyz is not None else [0.0, 0.0, 0.0]
    rpy = list(o.rpy) if o is not None and o.rpy is not None else [0.0, 0.0, 0.0]
    return spatial.homogeneous(spatial.rpy(*rpy), xyz)


def _motion(kind: str, axis: np.ndarray, value: float) -> np.ndarray:
    if kind in ("revolute", "continuous"):
        r = spatial.z_to_axis(axis)
        return spatial.homogeneous(exact.matmul(r, spatial.rot_z(value), r.T))
    if kind == "prismatic":
        return spatial.homogeneous(np.eye(3), value * axis / exact.norm(axis))
    return np.eye(4)


def _link_params(link: Any, file: str) -> np.ndarray:
    inertial = getattr(link, "inertial", None)
    if inertial is None:
        return np.zeros(10)
    i = inertial.inertia
    mass = float(inertial.mass or 0.0)
    if mass < 0:
        raise DescriptionError(file, f"link[{link.name}].inertial.mass", f"mass must be positive, got {mass:g}")
    ic = (
        np.zeros((3, 3))
        if i is None
        else np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]], dtype=float)
    )
    t = _origin(inertial)
    return spatial.transform_inertial(spatial.pack(mass, np.zeros(3), ic), t)


# A URDF angle this close to a multiple of pi/2 is that multiple, rounded by the file's writer
# (xacro and most exporters print 10-12 decimals: 1.57079632679 is pi/2 - 4.9e-12). Left as
# written, such an angle puts 1e-11 terms into the model, and the base-parameter regrouping keeps
# them (FV1R = FV1 + 6.7e-11 IA2): parameters that are not identifiable are regrouped as if they
# were. Snapping changes every transform by at most QUARTER_TURN_TOL rad, so the dynamics by about
# that much relative: 10x below `verify`'s double-precision bound against Pinocchio on the same
# file (rtol 1e-9, host_tools.studies.pinocchio_reference.DOUBLE_TOL). A writer that rounds coarser
# (1.5708: 3.7e-6 off) is taken as written.
QUARTER_TURN_TOL = 1e-10


def _snap_quarter_turns(model: Any) -> list[str]:
    """Set every origin's roll, pitch or yaw within QUARTER_TURN_TOL of k pi/2 to k pi/2 (in place);
    the snapped elements, for one notice."""
    snapped = []
    elements = [(f"joint[{j.name}]", j) for j in model.joints]
    elements += [(f"link[{lk.name}].inertial", lk.inertial) for lk in model.links if lk.inertial is not None]
    for where, e in elements:
        o = getattr(e, "origin", None)
        if o is None or o.rpy is None:
            continue
        quarter = [round(float(a) / (np.pi / 2)) for a in o.rpy]
        near = [abs(float(a) - k * (np.pi / 2)) for a, k in zip(o.rpy, quarter)]
        if any(0 < d <= QUARTER_TURN_TOL for d in near):
            o.rpy = [k * (np.pi / 2) if d <= QUARTER_TURN_TOL else float(a) for a, k, d in zip(o.rpy, quarter, near)]
            snapped.append(f"{where} ({max(d for d in near if d <= QUARTER_TURN_TOL):.1e} rad off)")
    return snapped


def parse_urdf(path: Path) -> Any:
    from urdf_parser_py import urdf as up
    from urdf_parser_py.xml_reflection import core

    text = checked_urdf_text(path)
    saved = core.on_error
    core.on_error = lambda message: None  # unknown tags (gazebo, transmission) are not errors here
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return up.URDF.from_xml_string(text.encode("utf-8"))
    except Exception as exc:  # the parser raises bare Exceptions / lxml errors on malformed files
        raise DescriptionError(str(path), "", f"not a valid URDF ({exc})") from None
    finally:
        core.on_error = saved


@dataclass(frozen=True)
class _Tree:
    """A parsed URDF's links and joints by name, each link's child joints and each link's parent joint."""

    file: str
    links: dict[str, Any]
    joints: dict[str, Any]
    children: dict[str, list[Any]]
    parent_joint: dict[str, Any]


def _tree(model: Any, file: str) -> _Tree:
    children: dict[str, list[Any]] = {}
    for j in model.joints:
        children.setdefault(j.parent, []).append(j)
    return _Tree(
        file=file,
        links={link.name: link for link in model.links},
        joints={j.name: j for j in model.joints},
        children=children,
        parent_joint={j.child: j for j in model.joints},
    )


def _serial_chain(tree: _Tree, base: str, tip_link: str | None) -> tuple[str, list[Any]]:
    """The tip link (the only leaf when not given) and the joints from ``base`` to it, base first."""
    file, links, parent_joint = tree.file, tree.links, tree.parent_joint
    if base not in links:
        raise DescriptionError(file, "base_link", f"no link named {base!r}")
    if tip_link is None:
        leaves = sorted(n for n in links if n not in tree.children)
        if len(leaves) != 1:
            raise DescriptionError(
                file,
                "tip_link",
                f"the URDF is a tree; choose the tip link (--tip-link) among its leaves: {', '.join(leaves)}",
            )
        tip_link = leaves[0]
    if tip_link not in links:
        raise DescriptionError(file, "tip_link", f"no link named {tip_link!r}")
    chain: list[Any] = []
    cur = tip_link
    while cur != base:
        if cur not in parent_joint:
            raise DescriptionError(
                file,
                "tip_link",
                f"{tip_link!r} does not descend from base link {base!r}: not a serial chain between them",
            )
        chain.append(parent_joint[cur])
        cur = parent_joint[cur].parent
    chain.reverse()
    return tip_link, chain


@dataclass(frozen=True)
class _Overlay:
    """The overlay's document and what it says: the Robot's top-level keywords (``kw``, completed by
    the caller), the declared joint parameters, the locked joints' positions, per-joint data."""

    doc: Located
    top: dict[str, Any]
    kw: dict[str, Any]
    declared: tuple[str, ...]
    locked: dict[str, float]
    joints: dict[str, Any]


def _read_overlay(overlay: str | Path | None, tree: _Tree, on_chain: set[str], movable: list[str]) -> _Overlay:
    ov = load_yaml(overlay) if overlay is not None else Located("<no overlay>", {})
    top = check_keys(ov, (), ov.data or {}, OVERLAY_TOP_KEYS, "URDF overlay")
    kw = read_common(ov, top)
    declared = kw.get("joint_parameters", Robot.__dataclass_fields__["joint_parameters"].default)
    locked_raw = check_keys(ov, ("locked",), top.get("locked", {}), set(tree.joints), "locked joints")
    locked = {k: number(ov, ("locked", k), v) for k, v in locked_raw.items()}
    for k in locked:
        if k in on_chain:
            raise ov.error(("locked", k), "joint is on the chain from base to tip; it cannot be locked")
    joints = check_keys(ov, ("joints",), top.get("joints", {}), set(movable), "per-joint data by URDF joint name")
    return _Overlay(ov, top, kw, declared, locked, joints)


@dataclass(frozen=True)
class _Merger:
    """Merges a chain link with everything hanging off it: fixed joints' links, and movable joints
    off the chain locked at their reference position (collected in ``locked_off_chain``)."""

    tree: _Tree
    on_chain: set[str]
    locked: dict[str, float]
    locked_off_chain: set[str] = field(default_factory=set)

    def subtree(self, link_name: str, t_body_link: np.ndarray) -> np.ndarray:
        """Parameters of `link_name` and everything hanging off it (off-chain), in the body frame."""
        file = self.tree.file
        p = spatial.transform_inertial(_link_params(self.tree.links[link_name], file), t_body_link)
        for j in self.tree.children.get(link_name, []):
            if j.name in self.on_chain:
                continue
            if j.type != "fixed" and j.name not in self.locked:  # the overlay's locked: joints are chosen
                self.locked_off_chain.add(j.name)
            if j.type not in ("fixed", "revolute", "continuous", "prismatic"):
                raise DescriptionError(file, f"joint[{j.name}].type", f"cannot lock a {j.type!r} joint off the chain")
            axis = np.array(j.axis if j.axis is not None else [1.0, 0.0, 0.0])
            t = exact.matmul(t_body_link, _origin(j), _motion(j.type, axis, self.locked.get(j.name, 0.0)))
            p = p + self.subtree(j.child, t)
        return p


def _chain_axis(j: Any, file: str) -> np.ndarray:
    """A movable chain joint's axis, after checking that the joint can be one of the Robot's."""
    if j.type not in ("revolute", "continuous", "prismatic"):
        raise DescriptionError(file, f"joint[{j.name}].type", f"unsupported joint type {j.type!r} on a serial chain")
    if getattr(j, "mimic", None) is not None:
        raise DescriptionError(
            file,
            f"joint[{j.name}].mimic",
            "a mimic joint on the chain is not supported: it would become an independent joint",
        )
    axis = np.array(j.axis if j.axis is not None else [1.0, 0.0, 0.0], dtype=float)
    if np.linalg.norm(axis) < 1e-9:
        raise DescriptionError(file, f"joint[{j.name}].axis", "axis must be a non-zero vector")
    return axis


def _urdf_limits(j: Any) -> Limits:
    """The URDF's <limit>: position limits only where bounded, non-positive rates and efforts unlimited."""
    lim = getattr(j, "limit", None)
    if lim is None:
        return Limits()
    bounded = j.type != "continuous" and lim.lower is not None and lim.upper is not None and lim.lower < lim.upper
    return Limits(
        q_min=float(lim.lower) if bounded else -np.inf,
        q_max=float(lim.upper) if bounded else np.inf,
        qd=float(lim.velocity) if lim.velocity and lim.velocity > 0 else np.inf,
        tau=float(lim.effort) if lim.effort and lim.effort > 0 else np.inf,
    )


def _overlay_joint(ov: _Overlay, name: str, limits: Limits) -> tuple[dict[str, Any], Limits]:
    """The overlay's data for one chain joint: Joint keywords, and the limits it adds to the URDF's."""
    extra: dict[str, Any] = {}
    if name not in ov.joints:
        return extra, limits
    doc, jp = ov.doc, ("joints", name)
    m = check_keys(doc, jp, ov.joints[name], OVERLAY_JOINT_KEYS - {"locked"}, "joint overlay")
    extra.update(read_joint_params(doc, jp, m, ov.declared))
    if "limits" in m:
        limits = read_limits(doc, jp + ("limits",), m["limits"], limits)
    if "gear_ratio" in m:
        extra["gear_ratio"] = number(doc, jp + ("gear_ratio",), m["gear_ratio"])
    if "encoder" in m:
        extra["encoder"] = read_encoder(doc, jp + ("encoder",), m["encoder"])
    if "torque_constant" in m:
        extra["torque_constant"] = read_torque_constant(doc, jp, m)
    return extra, limits


# URDF <dynamics> attribute -> the joint parameter it states: damping is viscous friction (N m s/rad,
# N s/m for a prismatic joint), friction is Coulomb friction (N m, N), as Pinocchio reads them
# (Model.damping, Model.friction) and Gazebo applies them.
URDF_FRICTION = (("damping", "FV"), ("friction", "FC"))


def _urdf_friction(j: Any, ov: _Overlay, extra: dict[str, Any], file: str) -> dict[str, float]:
    """The joint's ``<dynamics damping friction>`` as FV, FC where the overlay does not state them
    (the overlay wins): the non-zero ones, checked."""
    dyn = getattr(j, "dynamics", None)
    out: dict[str, float] = {}
    for attr, key in URDF_FRICTION:
        raw = getattr(dyn, attr, None) if dyn is not None else None
        if raw is None or key in extra:
            continue
        v = float(raw)
        field_name = f"joint[{j.name}].dynamics.{attr}"
        if not np.isfinite(v) or v < 0:
            raise DescriptionError(file, field_name, f"must be a finite number >= 0, got {raw}")
        if v == 0:
            continue
        if key not in ov.declared:
            raise DescriptionError(
                file,
                field_name,
                f"is {v:g} but {key} is not in the overlay's joint_parameters ({', '.join(ov.declared)}): "
                f"declare {key}, or state {key}: 0 for joint {j.name} in the overlay",
            )
        out[key] = v
    return out


def _chain_joint(j: Any, pending: np.ndarray, ov: _Overlay, file: str) -> tuple[Joint, Any, dict[str, float]]:
    """A movable chain joint (``pending``: the fixed joints' transform since the last movable one),
    its overlay's ``elastic:`` block (None where absent) and the friction taken from its URDF
    ``<dynamics>`` (FV, FC; empty where none or where the overlay states them)."""
    axis = _chain_axis(j, file)
    pre, post = urdf_transforms(exact.matmul(pending, _origin(j)), axis)
    extra, limits = _overlay_joint(ov, j.name, _urdf_limits(j))
    from_urdf = _urdf_friction(j, ov, extra, file)
    extra.update(from_urdf)
    if j.type != "prismatic":
        check_revolute_limits(limits, functools.partial(warn, file, f"joint[{j.name}].limit"))
    raw = ov.joints.get(j.name)
    drive = raw.get("elastic") if isinstance(raw, dict) else None
    kin = tuple(zip(("x", "y", "z"), (float(v) for v in pre[:3, 3])))
    joint = Joint(
        name=c_identifier(j.name),
        type="prismatic" if j.type == "prismatic" else "revolute",
        pre=as_tuple(pre),
        post=as_tuple(post),
        kinematics=kin,
        limits=limits,
        **extra,
    )
    return joint, drive, from_urdf


def _check_c_names(out_joints: list[Joint], movable_names: list[str], file: str) -> None:
    c_names = [j.name for j in out_joints]
    for idx, c_name in enumerate(c_names):
        if c_names.index(c_name) != idx:
            raise DescriptionError(
                file,
                f"joint[{movable_names[idx]}].name",
                f"joints {movable_names[c_names.index(c_name)]!r} "
                f"and {movable_names[idx]!r} have the same C name {c_name!r}",
            )


def _check_links(out_joints: list[Joint], out_links: list[np.ndarray], file: str) -> None:
    for name, p in zip((j.name for j in out_joints), out_links):

        def error(msg: str, n: str = name) -> DescriptionError:
            return DescriptionError(file, f"link of joint {n}", msg)

        def notice(msg: str, n: str = name) -> None:
            warn(file, f"link of joint {n}", msg)

        validate_inertial(p, error)
        check_triangle(p, notice)


def robot_from_urdf(
    path: str | Path, base_link: str | None = None, tip_link: str | None = None, overlay: str | Path | None = None
) -> Robot:
    path = Path(path)
    file = str(path)
    model = parse_urdf(path)
    snapped = _snap_quarter_turns(model)
    if snapped:
        warn(
            file,
            "origin.rpy",
            f"angles within {QUARTER_TURN_TOL:g} rad of a multiple of pi/2 taken as that multiple (the file's "
            f"rounding, not the arm's geometry): {', '.join(snapped)}",
        )
    tree = _tree(model, file)
    base = base_link or model.get_root()
    tip_link, chain = _serial_chain(tree, base, tip_link)
    on_chain = {j.name for j in chain}
    movable_names = [j.name for j in chain if j.type != "fixed"]
    ov = _read_overlay(overlay, tree, on_chain, movable_names)
    kw = ov.kw
    merger = _Merger(tree, on_chain, ov.locked)

    out_joints: list[Joint] = []
    out_links: list[np.ndarray] = []
    drives: list[Any] = []
    friction_taken: dict[str, dict[str, float]] = {}
    pending = np.eye(4)
    for j in chain:
        if j.type == "fixed":
            pending = exact.matmul(pending, _origin(j))
            if out_links:
                out_links[-1] = out_links[-1] + merger.subtree(j.child, pending)
            continue
        joint, drive, from_urdf = _chain_joint(j, pending, ov, file)
        if from_urdf:
            friction_taken[j.name] = from_urdf
        drives.append(drive)
        out_joints.append(joint)
        out_links.append(merger.subtree(j.child, np.eye(4)))
        pending = np.eye(4)
    _check_c_names(out_joints, movable_names, file)
    if not out_joints:
        raise DescriptionError(file, "tip_link", f"no movable joint between {base!r} and {tip_link!r}")
    _check_links(out_joints, out_links, file)
    locked_off_chain = merger.locked_off_chain
    if locked_off_chain:
        warn(
            file,
            "tip_link",
            f"movable joints off the chain from {base!r} to {tip_link!r} are locked at their reference "
            f"position (0, or the overlay's locked:) and their links merged: {', '.join(sorted(locked_off_chain))}",
        )
    if friction_taken:
        listed = "; ".join(f"{n}: " + ", ".join(f"{k} {v:g}" for k, v in f.items()) for n, f in friction_taken.items())
        warn(
            file,
            f"joint[{', '.join(friction_taken)}].dynamics",
            f"<dynamics damping friction> taken as viscous FV (N m s/rad) and Coulomb FC (N m) friction -- {listed} "
            "(an overlay's FV/FC per joint override them)",
        )
    chain_joints = elastic_drives(
        ov.doc, tuple(out_joints), drives, [("joints", n) for n in movable_names], [j.name for j in out_joints], kw
    )
    kw.setdefault("name", c_identifier(model.name or path.stem))
    kw.setdefault("tip", as_tuple(pending))  # fixed joints after the last movable one
    check_coulomb_scales(ov.doc, kw, len(chain_joints))
    if "imus" in ov.top:
        kw["imus"] = read_imus(ov.doc, ov.top["imus"], chain_joints)
    if "friction" in ov.top:
        declared = kw.get("joint_parameters", Robot.__dataclass_fields__["joint_parameters"].default)
        kw["friction_terms"] = read_friction(ov.doc, ov.top["friction"], chain_joints, declared)
    digest = digest_of(path.read_bytes(), Path(overlay).read_bytes() if overlay else b"", f"{base}|{tip_link}".encode())
    return Robot(
        file=file,
        convention="urdf",
        joints=chain_joints,
        links=tuple(tuple(float(v) for v in p) for p in out_links),
        digest=digest,
        **kw,
    )
