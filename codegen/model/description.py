"""Robot descriptions in YAML (MDH, DH or URDF-style origin/axis joints) and the one entry point for
any description: ``load_robot`` (a bundled name, a .yaml or a .urdf with its chain ends and overlay)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codegen.errors import DescriptionError
from codegen.model import spatial
from codegen.model.robot import (
    Joint,
    Limits,
    Robot,
    as_tuple,
    c_identifier,
    dh_transforms,
    digest_of,
    mdh_transforms,
    urdf_transforms,
)
from codegen.model.schema import (
    JOINT_KEYS,
    KIN_KEYS,
    MAX_DOF,
    TOP_KEYS,
    TURN,
    check_coulomb_scales,
    check_keys,
    check_revolute_limits,
    elastic_drives,
    read_common,
    read_encoder,
    read_friction,
    read_imus,
    read_inertial,
    read_joint_params,
    read_limits,
    read_torque_constant,
    require,
)
from codegen.model.yamlio import Located, Path_t, load_yaml, number, vector


def read_origin(doc: Located, path: Path_t, value: Any) -> np.ndarray:
    o = check_keys(doc, path, value, {"xyz", "rpy"}, "origin")
    xyz = vector(doc, path + ("xyz",), o.get("xyz", [0, 0, 0]), 3)
    return spatial.homogeneous(spatial.rpy(*vector(doc, path + ("rpy",), o.get("rpy", [0, 0, 0]), 3)), xyz)


def read_joint(
    doc: Located, i: int, value: Any, convention: str, declared: tuple[str, ...]
) -> tuple[Joint, np.ndarray]:
    path: Path_t = ("joints", i)
    m = check_keys(doc, path, value, JOINT_KEYS, "joint")
    name = m.get("name", f"joint{i + 1}")
    if not isinstance(name, str):
        raise doc.error(path + ("name",), f"must be a string, got {name!r}")
    kind = require(doc, path, m, "type")
    if kind not in ("revolute", "prismatic"):
        raise doc.error(path + ("type",), f"unknown joint type {kind!r}; use revolute or prismatic")
    others = [k for k in ("mdh", "dh", "origin") if k in m and k != ("origin" if convention == "urdf" else convention)]
    if others:
        raise doc.error(
            path + (others[0],),
            f"this robot's convention is {convention!r}; "
            f"use the {'origin/axis' if convention == 'urdf' else convention} block",
        )
    if convention in KIN_KEYS:
        keys = KIN_KEYS[convention]
        k = check_keys(doc, path + (convention,), require(doc, path, m, convention), keys, convention)
        vals = {key: number(doc, path + (convention, key), require(doc, path + (convention,), k, key)) for key in keys}
        for key in ("alpha", "theta"):  # angles: beyond a turn they are degrees, whatever the joint
            if abs(vals[key]) > TURN:
                raise doc.error(
                    path + (convention, key),
                    f"{vals[key]:g} rad is beyond a full turn: angles are in radians (degrees? write e.g. pi/2)",
                )
        fn = mdh_transforms if convention == "mdh" else dh_transforms
        pre, post = fn(kind, **vals)
        kin = tuple(vals.items())
    else:
        origin = read_origin(doc, path + ("origin",), require(doc, path, m, "origin"))
        axis = np.array(vector(doc, path + ("axis",), m.get("axis", [0, 0, 1]), 3))
        if np.linalg.norm(axis) < 1e-9:
            raise doc.error(path + ("axis",), "axis must be a non-zero vector")
        pre, post = urdf_transforms(origin, axis)
        kin = tuple(zip(("x", "y", "z"), (float(v) for v in origin[:3, 3])))
    limits = read_limits(doc, path + ("limits",), m["limits"]) if "limits" in m else Limits()
    if kind == "revolute":
        check_revolute_limits(limits, lambda msg: doc.warn(path + ("limits", "q"), msg))
    gear = number(doc, path + ("gear_ratio",), m.get("gear_ratio", 1.0))
    if gear == 0:
        raise doc.error(path + ("gear_ratio",), "must be non-zero")
    enc = read_encoder(doc, path + ("encoder",), m["encoder"]) if "encoder" in m else None
    kt = read_torque_constant(doc, path, m)
    fr = read_joint_params(doc, path, m, declared)
    link = read_inertial(doc, path + ("link",), require(doc, path, m, "link"))
    joint = Joint(
        name=c_identifier(name),
        type=kind,
        pre=as_tuple(pre),
        post=as_tuple(post),
        kinematics=kin,
        limits=limits,
        gear_ratio=gear,
        torque_constant=kt,
        encoder=enc,
        IA=fr.get("IA", 0.0),
        FV=fr.get("FV", 0.0),
        FC=fr.get("FC", 0.0),
        FO=fr.get("FO", 0.0),
    )
    return joint, link


def robot_from_yaml(path: str | Path) -> Robot:
    doc = load_yaml(path)
    top = check_keys(doc, (), doc.data, TOP_KEYS, "robot description")
    convention = top.get("convention", "mdh")
    if convention not in ("mdh", "dh", "urdf"):
        raise doc.error(("convention",), f"must be mdh, dh or urdf, got {convention!r}")
    kw = read_common(doc, top)
    kw.setdefault("name", c_identifier(Path(path).stem))
    declared = kw.get("joint_parameters", Robot.__dataclass_fields__["joint_parameters"].default)
    joints_raw = require(doc, (), top, "joints")
    if not isinstance(joints_raw, list) or not joints_raw:
        raise doc.error(("joints",), "expected a non-empty list of joints")
    if len(joints_raw) > MAX_DOF:
        raise doc.error(("joints",), f"{len(joints_raw)} joints; at most {MAX_DOF} are supported")
    joints, links = zip(*(read_joint(doc, i, j, convention, declared) for i, j in enumerate(joints_raw)))
    check_coulomb_scales(doc, kw, len(joints))
    names = [j.name for j in joints]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise doc.error(("joints", i, "name"), f"duplicate joint name {n!r}")
    joints = elastic_drives(
        doc,
        joints,
        [j.get("elastic") if isinstance(j, dict) else None for j in joints_raw],
        [("joints", i) for i in range(len(joints))],
        names,
        kw,
    )
    if "imus" in top:
        kw["imus"] = read_imus(doc, top["imus"], tuple(joints))
    if "friction" in top:
        kw["friction_terms"] = read_friction(doc, top["friction"], tuple(joints), declared)
    return Robot(
        file=str(path),
        convention=convention,
        joints=tuple(joints),
        links=tuple(tuple(float(v) for v in p) for p in links),
        digest=digest_of(Path(path).read_bytes()),
        **kw,
    )


# Robots already read, by file and content: a Robot is frozen, so the tools share one (a command
# that reads the description in several stages reads it once; about 80 ms for a 6-joint arm).
_LOADED: dict[tuple[str, str, bytes], Robot] = {}


def load_robot(
    spec: str | Path, base_link: str | None = None, tip_link: str | None = None, overlay: str | Path | None = None
) -> Robot:
    """A bundled robot name, a .yaml path, or a .urdf path (with chain ends and optional overlay)."""
    from codegen.model.urdf import robot_from_urdf
    from codegen.resources import bundled_robot_path

    p = Path(spec)
    if p.suffix.lower() == ".urdf":
        return robot_from_urdf(p, base_link=base_link, tip_link=tip_link, overlay=overlay)
    if p.suffix.lower() in (".yaml", ".yml"):
        if base_link or tip_link or overlay:
            raise DescriptionError(str(p), "", "base_link, tip_link and overlay apply to URDF input only")
        key = (str(p.resolve()), str(p), p.read_bytes()) if p.is_file() else None
        if key is None or key not in _LOADED:
            robot = robot_from_yaml(p)  # a missing or bad file raises here, every time
            if key is None:
                return robot
            _LOADED[key] = robot
        return _LOADED[key]
    found = bundled_robot_path(str(spec))
    if found is None:
        raise DescriptionError(str(spec), "", "not a bundled robot name nor a .yaml/.urdf file")
    return load_robot(found, base_link, tip_link, overlay)
