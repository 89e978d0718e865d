"""The schema shared by robot YAMLs and URDF overlays: the keys each section may hold and the
readers that check them, with the file, field and line of any error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from codegen.model import spatial
from codegen.model.robot import (
    FRICTION_TERMS,
    JOINT_PARAMS,
    LINK_PARAMS,
    Coulomb,
    Elastic,
    Encoder,
    Imu,
    Joint,
    Limits,
    RealtimeSection,
    as_tuple,
    c_identifier,
    coupling_matrix,
    triangle_excess,
    validate_inertial,
)
from codegen.model.yamlio import Located, Path_t, number, vector

TOP_KEYS = {
    "name",
    "source",
    "convention",
    "gravity",
    "sample_period",
    "joint_parameters",
    "coulomb",
    "tip",
    "payload",
    "joints",
    "realtime",
    "imus",
    "friction",
}
JOINT_KEYS = {
    "name",
    "type",
    "mdh",
    "dh",
    "origin",
    "axis",
    "limits",
    "gear_ratio",
    "torque_constant",
    "encoder",
    "link",
    "elastic",
    *JOINT_PARAMS,
}
ELASTIC_KEYS = {"motor_inertia", "stiffness", "damping", "motor_viscous", "motor_coulomb", "coupling", "motor_encoder"}
MAX_CPR = 2**31  # a count must fit the generated C's 32-bit integers
MAX_DOF = 64  # far beyond any manipulator; thousands of joints would only hang the generator
KIN_KEYS = {"mdh": ("alpha", "a", "theta", "d"), "dh": ("theta", "d", "a", "alpha")}
OVERLAY_JOINT_KEYS = {"limits", "gear_ratio", "torque_constant", "encoder", "locked", "elastic", *JOINT_PARAMS}


def check_keys(
    doc: Located, path: Path_t, value: Any, allowed: set[str] | tuple[str, ...], what: str
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping ({what}), got {value!r}")
    for k in value:
        if k not in allowed:
            raise doc.error(path + (k,), f"unknown field; allowed here: {', '.join(sorted(allowed))}")
    return value


def require(doc: Located, path: Path_t, mapping: dict[str, Any], key: str) -> Any:
    if key not in mapping or mapping[key] is None:
        raise doc.error(path + (key,), "missing")
    return mapping[key]


def read_limits(doc: Located, path: Path_t, value: Any, base: Limits = Limits()) -> Limits:
    m = check_keys(doc, path, value, {"q", "qd", "qdd", "tau", "current"}, "limits")
    kw: dict[str, float] = dict(
        q_min=base.q_min, q_max=base.q_max, qd=base.qd, qdd=base.qdd, tau=base.tau, current=base.current
    )
    if "q" in m:
        lo, hi = vector(doc, path + ("q",), m["q"], 2)
        if lo >= hi:
            raise doc.error(path + ("q",), f"lower limit {lo:g} must be below upper {hi:g}")
        kw["q_min"], kw["q_max"] = lo, hi
    for k in ("qd", "qdd", "tau", "current"):
        if k in m:
            v = number(doc, path + (k,), m[k])
            if v <= 0:
                raise doc.error(path + (k,), f"must be positive, got {v:g}")
            kw[k] = v
    return Limits(**kw)


def read_encoder(doc: Located, path: Path_t, value: Any) -> Encoder:
    m = check_keys(doc, path, value, {"cpr", "side", "bits", "signed", "offset", "direction"}, "encoder")
    cpr = require(doc, path, m, "cpr")
    if not isinstance(cpr, int) or isinstance(cpr, bool) or cpr <= 0:
        raise doc.error(path + ("cpr",), f"counts per revolution must be a positive integer, got {cpr!r}")
    if cpr > MAX_CPR:
        raise doc.error(path + ("cpr",), f"counts per revolution must be at most 2^31 = {MAX_CPR}, got {cpr}")
    side = m.get("side", "link")
    if side not in ("motor", "link"):
        raise doc.error(path + ("side",), f"must be 'motor' or 'link', got {side!r}")
    bits = m.get("bits", 32)
    if bits not in (16, 32):
        raise doc.error(path + ("bits",), f"counter width must be 16 or 32, got {bits!r}")
    signed = m.get("signed", True)
    if not isinstance(signed, bool):
        raise doc.error(path + ("signed",), f"must be true or false, got {signed!r}")
    offset = number(doc, path + ("offset",), m.get("offset", 0.0))
    direction = m.get("direction", 1)
    if direction not in (1, -1) or isinstance(direction, bool):
        raise doc.error(path + ("direction",), f"must be 1 or -1, got {direction!r}")
    return Encoder(cpr=cpr, side=side, bits=bits, signed=signed, offset=offset, direction=direction)


def read_torque_constant(doc: Located, path: Path_t, m: dict[str, Any]) -> float:
    """A joint's ``torque_constant`` k_t (N m/A at the motor shaft, > 0; 0 when absent)."""
    if "torque_constant" not in m:
        return 0.0
    v = number(doc, path + ("torque_constant",), m["torque_constant"])
    if not v > 0:
        raise doc.error(path + ("torque_constant",), f"must be positive (N m/A at the motor shaft), got {v:g}")
    return v


def read_elastic(doc: Located, path: Path_t, value: Any, names: list[str], own: int) -> Elastic:
    """A joint's series-elastic drive (docs/robot_yaml.md, "Elastic joints"); ``names``: every
    joint's name, for the coupling."""
    m = check_keys(doc, path, value, ELASTIC_KEYS, "elastic drive")
    kw: dict[str, float] = {}
    for key in ("motor_inertia", "stiffness"):
        v = number(doc, path + (key,), require(doc, path, m, key))
        if not v > 0:
            raise doc.error(path + (key,), f"must be positive, got {v:g}")
        kw[key] = v
    for key in ("damping", "motor_viscous", "motor_coulomb"):
        v = number(doc, path + (key,), m.get(key, 0.0))
        if v < 0:
            raise doc.error(path + (key,), f"must be >= 0, got {v:g}")
        kw[key] = v
    coupling = m.get("coupling", {})
    if not isinstance(coupling, dict):
        raise doc.error(path + ("coupling",), "expected a mapping joint_name: factor (eq. 3.10)")
    pairs: list[tuple[int, float]] = []
    for other, factor in coupling.items():
        key = c_identifier(str(other))
        if key not in names or names.index(key) == own:
            raise doc.error(path + ("coupling", other), f"not another joint of this robot ({', '.join(names)})")
        if any(j == names.index(key) for j, _ in pairs):
            raise doc.error(path + ("coupling", other), f"joint {key} is named twice")
        pairs.append((names.index(key), number(doc, path + ("coupling", other), factor)))
    enc = None
    if "motor_encoder" in m:
        raw = m["motor_encoder"]
        enc = replace(read_encoder(doc, path + ("motor_encoder",), raw), side="motor")
        if isinstance(raw, dict) and raw.get("side", "motor") != "motor":
            raise doc.error(
                path + ("motor_encoder", "side"),
                "the motor encoder is on the motor side (its counts go through the joint's gear_ratio)",
            )
    return Elastic(coupling=tuple(sorted(pairs)), motor_encoder=enc, **kw)


def read_inertial(doc: Located, path: Path_t, value: Any) -> np.ndarray:
    """A link as mass/com/inertia or as the 10 standard parameters; returns LINK_PARAMS order."""
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping, got {value!r}")
    if any(k in value for k in LINK_PARAMS):
        m = check_keys(doc, path, value, LINK_PARAMS, "standard link parameters")
        p = np.array([number(doc, path + (k,), m.get(k, 0.0)) for k in LINK_PARAMS])
    else:
        m = check_keys(doc, path, value, {"mass", "com", "inertia", "inertia_about"}, "link")
        mass = number(doc, path + ("mass",), require(doc, path, m, "mass"))
        if mass < 0:
            raise doc.error(path + ("mass",), f"mass must be positive, got {mass:g}")
        com = np.array(vector(doc, path + ("com",), m.get("com", [0, 0, 0]), 3))
        xx, xy, xz, yy, yz, zz = vector(doc, path + ("inertia",), m.get("inertia", [0] * 6), 6)
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        about = m.get("inertia_about", "com")
        if about == "com":
            p = spatial.from_com(mass, com, inertia)
        elif about == "origin":
            p = spatial.pack(mass, mass * com, inertia)
        else:
            raise doc.error(path + ("inertia_about",), f"must be 'com' or 'origin', got {about!r}")
    validate_inertial(p, lambda msg: doc.error(path, msg))
    check_triangle(p, lambda msg: doc.warn(path, msg))
    return p


def check_triangle(p: np.ndarray, warn: Callable[[str], None]) -> None:
    """A warning when the inertia is positive definite yet no rigid body's (I_a + I_b < I_c): a typo
    or a unit slip. Tolerance: 1 % of the largest principal moment, for published values rounded to
    two digits (the iiwa's data sheet values break the inequality by up to 0.03 %; a swapped or
    mistyped moment, such as [0.5, 0.08, 0.08], by tens of per cent)."""
    excess = triangle_excess(p)
    if p[0] > 0 and excess > 0.01 * np.max(np.linalg.eigvalsh(spatial.inertia_about_com(p))):
        warn(
            "the principal moments about the centre of mass break the triangle inequality "
            f"I_a + I_b >= I_c by {excess:.3g} kg m^2: no rigid body has this inertia (a typo or a unit slip?)"
        )


MIN_SAMPLE_PERIOD, MAX_SAMPLE_PERIOD = 1e-5, 0.1  # s: the controllers this tool is made for


def sample_period_problems(ts: float) -> tuple[str | None, str | None]:
    """(error, notice) of a sample period in seconds, the description's or a command's: an error
    beyond any digital joint controller (0.1 x MIN to 10 x MAX), a notice outside the usual range."""
    if not ts > 0:
        return f"must be positive, got {ts:g}", None
    if not 0.1 * MIN_SAMPLE_PERIOD <= ts <= 10 * MAX_SAMPLE_PERIOD:
        return f"must be in seconds, {0.1 * MIN_SAMPLE_PERIOD:g} to {10 * MAX_SAMPLE_PERIOD:g} s, got {ts:g}", None
    if not MIN_SAMPLE_PERIOD <= ts <= MAX_SAMPLE_PERIOD:
        return None, (
            f"{ts:g} s is outside the usual {MIN_SAMPLE_PERIOD:g} to {MAX_SAMPLE_PERIOD:g} s of a joint controller "
            "(seconds, not milliseconds?)"
        )
    return None, None


TURN = 2 * np.pi + 1e-6  # rad: beyond a turn by more than a written-out 2 pi's rounding (6.28318530718)


def check_revolute_limits(limits: Limits, warn: Callable[[str], None]) -> None:
    """A warning for revolute limits beyond a full turn each way: allowed (multi-turn joints exist)
    but more often degrees written where radians are meant."""
    worst = max(abs(limits.q_min), abs(limits.q_max))
    if np.isfinite(worst) and worst > TURN:
        warn(f"revolute limits [{limits.q_min:g}, {limits.q_max:g}] rad go beyond a full turn (degrees?)")


def read_joint_params(doc: Located, path: Path_t, m: dict[str, Any], declared: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in JOINT_PARAMS:
        if k not in m:
            continue
        v = number(doc, path + (k,), m[k])
        if k in ("IA", "FV", "FC") and v < 0:
            raise doc.error(path + (k,), f"must be >= 0, got {v:g}")
        if v != 0 and k not in declared:
            raise doc.error(
                path + (k,),
                f"{k} is non-zero but not listed in joint_parameters ({', '.join(declared)}): declare it or remove it",
            )
        out[k] = v
    return out


def read_common(doc: Located, top: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys shared by robot YAMLs and URDF overlays."""
    kw: dict[str, Any] = {}
    if "gravity" in top:
        kw["gravity"] = vector(doc, ("gravity",), top["gravity"], 3)
    if "sample_period" in top:
        ts = number(doc, ("sample_period",), top["sample_period"])
        problem, notice = sample_period_problems(ts)
        if problem:
            raise doc.error(("sample_period",), problem)
        if notice:
            doc.warn(("sample_period",), notice)
        kw["sample_period"] = ts
    if "joint_parameters" in top:
        jp = top["joint_parameters"]
        if not isinstance(jp, list) or any(p not in JOINT_PARAMS for p in jp) or len(set(jp)) != len(jp):
            raise doc.error(("joint_parameters",), f"expected a list from {list(JOINT_PARAMS)}, got {jp!r}")
        kw["joint_parameters"] = tuple(p for p in JOINT_PARAMS if p in jp)
    if "coulomb" in top:
        c = check_keys(doc, ("coulomb",), top["coulomb"], {"model", "velocity_scale"}, "coulomb")
        model = c.get("model", "sign")
        if model == "sign":
            kw["coulomb"] = Coulomb()
        elif model == "tanh":
            raw = require(doc, ("coulomb",), c, "velocity_scale")
            path: Path_t = ("coulomb", "velocity_scale")
            if isinstance(raw, list) and len(raw) <= MAX_DOF:
                if not raw:
                    raise doc.error(path, "expected a number, or a list with one per joint, got an empty list")
                scales = tuple(number(doc, path + (i,), v) for i, v in enumerate(raw))
            else:
                scales = (number(doc, path, raw),)
            for i, v in enumerate(scales):
                if v <= 0:
                    raise doc.error(path + ((i,) if isinstance(raw, list) else ()), f"must be positive, got {v:g}")
            kw["coulomb"] = Coulomb("tanh", scales)
        else:
            raise doc.error(("coulomb", "model"), f"must be 'sign' or 'tanh', got {model!r}")
    if "payload" in top:
        kw["payload"] = tuple(read_inertial(doc, ("payload",), top["payload"]))
    if "tip" in top:
        t = check_keys(doc, ("tip",), top["tip"], {"xyz", "rpy"}, "tip frame")
        xyz = vector(doc, ("tip", "xyz"), t.get("xyz", [0, 0, 0]), 3)
        r = spatial.rpy(*vector(doc, ("tip", "rpy"), t.get("rpy", [0, 0, 0]), 3))
        kw["tip"] = as_tuple(spatial.homogeneous(r, xyz))
    if "name" in top:
        if not isinstance(top["name"], str) or not top["name"].strip():
            raise doc.error(("name",), "must be a non-empty string")
        kw["name"] = c_identifier(top["name"])
    if "source" in top:
        kw["source"] = str(top["source"])
    if "realtime" in top:
        kw["realtime"] = read_realtime(doc, top["realtime"])
    return kw


MAX_IMUS = 64  # one per link of the largest arm the schema reads


def read_imus(doc: Located, value: Any, joints: tuple[Joint, ...]) -> tuple[Imu, ...]:
    """``imus: [{link: <joint name or 1-based number>, xyz: [m], rpy: [rad], name: ...}]``: IMUs fixed
    to the link the joint moves, placed in the frame its ``link:`` parameters are given in (for MDH
    frame i; URDF: the child link's frame); the gyroscope and accelerometer axes are the sensor
    frame's. The model keeps each pose in the joint's frame J_i (codegen.model.robot)."""
    path: Path_t = ("imus",)
    if not isinstance(value, list) or not value:
        raise doc.error(path, "expected a non-empty list of IMUs ({link: ..., xyz: [...], rpy: [...]})")
    if len(value) > MAX_IMUS:
        raise doc.error(path, f"{len(value)} IMUs; at most {MAX_IMUS} are supported")
    names = [j.name for j in joints]
    out: list[Imu] = []
    for i, raw in enumerate(value):
        where = path + (i,)
        m = check_keys(doc, where, raw, {"link", "xyz", "rpy", "name"}, "IMU placement")
        index = _joint_index(doc, where + ("link",), require(doc, where, m, "link"), names)
        xyz = vector(doc, where + ("xyz",), m.get("xyz", [0, 0, 0]), 3)
        rot = spatial.rpy(*vector(doc, where + ("rpy",), m.get("rpy", [0, 0, 0]), 3))
        if np.linalg.norm(xyz) > 10.0:
            raise doc.error(where + ("xyz",), f"{np.linalg.norm(xyz):g} m from the link frame: metres expected")
        name = c_identifier(str(m.get("name", f"sensor_{i + 1}")))
        if name in [u.name for u in out]:
            raise doc.error(where + ("name",), f"duplicate IMU name {name!r}")
        placed = joints[index].post_matrix @ spatial.homogeneous(rot, xyz)
        out.append(Imu(name, index, as_tuple(placed)))
    return tuple(out)


def _joint_index(doc: Located, path: Path_t, key: Any, names: list[str]) -> int:
    """A joint named by its name or its 1-based number."""
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise doc.error(path, f"expected a joint name or a number 1..{len(names)}, got {key!r}")
    if isinstance(key, str) and key not in names and key.isdigit():  # a mapping's key read as text
        key = int(key)
    if isinstance(key, int):
        if not 1 <= key <= len(names):
            raise doc.error(path, f"joint number must be 1..{len(names)}, got {key}")
        return key - 1
    if key not in names:
        raise doc.error(path, f"no joint named {key!r}; joints: {', '.join(names)}")
    return names.index(key)


def _terms(doc: Located, path: Path_t, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or any(t not in FRICTION_TERMS for t in value):
        raise doc.error(path, f"expected a list of terms from {', '.join(FRICTION_TERMS)}, got {value!r}")
    return tuple(t for t in FRICTION_TERMS if t in value)


def read_friction(
    doc: Located, value: Any, joints: tuple[Joint, ...], joint_parameters: tuple[str, ...]
) -> tuple[tuple[str, ...], ...]:
    """``friction: {model: general}`` (every term on every joint) or ``friction: {terms: [stribeck]}``
    (these on every joint) or ``friction: {terms: {<joint name or 1-based number>: [dahl, load]}}``:
    the friction terms beyond viscous + Coulomb (FRICTION_TERMS) the generated code has per joint,
    their coefficients and shape parameters run-time config (codegen.blocks.friction). Without
    the section: none. A description whose ``joint_parameters`` identify FO has its own offset:
    ``general`` leaves the offset term out, and naming it is refused (two constants would add up)."""
    path: Path_t = ("friction",)
    m = check_keys(doc, path, value, {"model", "terms"}, "friction terms")
    if ("model" in m) == ("terms" in m):
        raise doc.error(path, "give either model: general (every term on every joint) or terms: (which terms)")
    if "model" in m:
        if m["model"] not in ("general", "description"):
            raise doc.error(path + ("model",), f"must be 'general' or 'description', got {m['model']!r}")
        own_offset = "FO" in joint_parameters
        every = tuple(t for t in FRICTION_TERMS if not (own_offset and t == "offset"))
        out: list[tuple[str, ...]] = [every if m["model"] == "general" else ()] * len(joints)
    elif isinstance(m["terms"], dict):
        names = [j.name for j in joints]
        out = [()] * len(joints)
        for key, terms in m["terms"].items():
            out[_joint_index(doc, path + ("terms", key), key, names)] = _terms(doc, path + ("terms", key), terms)
    else:
        out = [_terms(doc, path + ("terms",), m["terms"])] * len(joints)
    if "FO" in joint_parameters and any("offset" in t for t in out):
        raise doc.error(
            path + ("terms",),
            "offset: joint_parameters identifies FO, the description's own offset, on every joint (two constants "
            "would add up); leave the offset term out",
        )
    return tuple(out) if any(out) else ()


def read_realtime(doc: Located, value: Any) -> RealtimeSection:
    """``realtime: {estimator, observer, controller, constant_params, config: {block.field: value}}``:
    its shape here; which names exist is the real-time layer's check (codegen.blocks.options)."""
    path: Path_t = ("realtime",)
    m = check_keys(
        doc, path, value, {"estimator", "observer", "controller", "constant_params", "config"}, "realtime section"
    )
    choices: list[tuple[str, str | bool, int]] = []
    for key in ("estimator", "observer", "controller", "constant_params"):
        if key not in m:
            continue
        v, line = m[key], doc.line(path + (key,)) or 0
        if key == "estimator" and isinstance(v, dict):
            if not isinstance(v.get("name"), str):
                raise doc.error(path + (key,), "expected a name or {name: ..., option: value}")
            v = v["name"] + "".join(
                f"{',' if i else ':'}{k}={x!r}" for i, (k, x) in enumerate((k, x) for k, x in v.items() if k != "name")
            )
        elif key == "constant_params" and not isinstance(v, bool):
            raise doc.error(path + (key,), "must be true or false")
        elif key != "constant_params" and not isinstance(v, str):
            raise doc.error(path + (key,), f"expected a name, got {v!r}")
        choices.append((key, v, line))
    config: list[tuple[str, tuple[float, ...], int]] = []
    cfg = m.get("config", {})
    if not isinstance(cfg, dict):
        raise doc.error(path + ("config",), "expected a mapping block.field: value(s)")
    for key, v in cfg.items():
        where = path + ("config", key)
        values = v if isinstance(v, list) else [v]
        nums = tuple(number(doc, where + ((i,) if isinstance(v, list) else ()), x) for i, x in enumerate(values))
        config.append((str(key), nums, doc.line(where) or 0))
    return RealtimeSection(choices=tuple(choices), config=tuple(config))


def elastic_drives(
    doc: Located, joints: tuple[Joint, ...], raw: list[Any], paths: list[Path_t], names: list[str], kw: dict[str, Any]
) -> tuple[Joint, ...]:
    """The joints with their ``elastic:`` blocks (``raw[i]``, None where absent; ``paths[i]`` the
    joint's place in ``doc``, ``names`` what couplings refer to): all or none, no IA, link-side
    primary encoders, I + A invertible."""
    if all(r is None for r in raw):
        return joints
    if any(r is None for r in raw):
        raise doc.error(
            paths[raw.index(None)],
            "elastic: give every joint its elastic drive or none "
            "(arms with both rigid and elastic joints are not supported)",
        )
    for path, j in zip(paths, joints):
        if j.IA != 0:
            raise doc.error(
                path + ("IA",),
                "an elastic joint's rotor inertia is elastic.motor_inertia "
                "(motor side); IA would count it again on the link side",
            )
        if j.encoder is not None and j.encoder.side == "motor":
            raise doc.error(
                path + ("encoder", "side"),
                "an elastic joint's encoder measures the link "
                "(q): side link; the motor's goes in elastic.motor_encoder",
            )
    joints = tuple(
        replace(j, elastic=read_elastic(doc, path + ("elastic",), r, names, i))
        for i, (j, r, path) in enumerate(zip(joints, raw, paths))
    )
    if abs(np.linalg.det(np.eye(len(joints)) + coupling_matrix(joints))) < 1e-9:
        i = next(k for k, j in enumerate(joints) if j.elastic and j.elastic.coupling)
        raise doc.error(
            paths[i] + ("elastic", "coupling"),
            "the couplings make I + A singular: the springs' deflections theta - (I + A) q would not determine q",
        )
    return joints


def check_coulomb_scales(doc: Located, kw: dict[str, Any], dof: int) -> None:
    """A per-joint list of tanh scales must have one value per joint (a single number serves all)."""
    c = kw.get("coulomb")
    if isinstance(c, Coulomb) and c.model == "tanh" and len(c.velocity_scale) not in (1, dof):
        raise doc.error(
            ("coulomb", "velocity_scale"),
            f"expected one number, or a list of {dof} (one per joint), got a list of {len(c.velocity_scale)}",
        )
