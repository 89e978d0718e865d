"""The validated robot model every later stage reads (frozen dataclasses).

Internally every joint is ``pre`` (a fixed transform from the previous link frame), then the joint
motion about/along its z axis, then ``post`` (a fixed transform to the link frame in which the
user's convention expresses the link parameters):

* MDH (Khalil-Craig): pre = Rx(alpha) Tx(a) Rz(theta) Tz(d), post = I (link frame = frame i);
* standard DH: pre = I, post = Rz(theta) Tz(d) Tx(a) Rx(alpha) (link frame = distal frame i);
* URDF: pre = origin . Rz->axis, post = (Rz->axis)^T (link frame = the URDF child link frame).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from codegen.model import exact, spatial

LINK_PARAMS: tuple[str, ...] = ("M", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ")
JOINT_PARAMS: tuple[str, ...] = ("IA", "FV", "FC", "FO")
JointType = Literal["revolute", "prismatic"]
Convention = Literal["mdh", "dh", "urdf"]


def c_identifier(text: str) -> str:
    """Sanitise user text into a C identifier fragment: [a-z0-9_], never starting with a digit,
    at most 32 characters (the robot's name prefixes every generated symbol)."""
    out = re.sub(r"[^a-z0-9_]", "_", text.lower())
    out = re.sub(r"_+", "_", out).strip("_")[:32].rstrip("_") or "robot"
    return out if not out[0].isdigit() else "r" + out


# C99 5.2.4.1 and MISRA C:2012 rule 5.1 guarantee 31 significant characters of an external name. A
# prefix of at most 12 characters leaves 18 after its underscore, where the generated suffixes
# (``_nonlinear_effects`` vs ``_nonlinear_effects_p`` is the longest pair) differ; a test checks
# every bundled robot's objects and a 32-character name.
C_PREFIX_MAX = 12


def c_prefix(name: str) -> str:
    """The C prefix of a robot named ``name``: the C identifier itself up to ``C_PREFIX_MAX``
    characters; a longer one is cut to 7 and followed by ``_`` and 4 hexadecimal digits of its
    SHA-256, so two long names that share their first characters still get different prefixes."""
    full = c_identifier(name)
    if len(full) <= C_PREFIX_MAX:
        return full
    return full[:7].rstrip("_") + "_" + hashlib.sha256(full.encode()).hexdigest()[:4]


def c_comment_text(text: str, limit: int = 200) -> str:
    """User text made safe inside a C block comment: one line of printable ASCII with no comment
    delimiters, line splices (backslash) or trigraphs (??), at most ``limit`` characters."""
    out = "".join(ch if " " <= ch <= "~" else "_" for ch in text[:limit]).replace("\\", "/")
    while "*/" in out or "/*" in out or "??" in out:
        out = out.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    return out


@dataclass(frozen=True)
class Limits:
    """Joint limits (rad or m, per second, per second squared, N m or N; the drive's motor current
    in A); inf = no limit."""

    q_min: float = -np.inf
    q_max: float = np.inf
    qd: float = np.inf
    qdd: float = np.inf
    tau: float = np.inf
    current: float = np.inf


@dataclass(frozen=True)
class Encoder:
    cpr: int
    side: Literal["motor", "link"] = "link"
    bits: Literal[16, 32] = 32
    signed: bool = True
    offset: float = 0.0  # rad or m, added after scaling
    direction: Literal[1, -1] = 1


@dataclass(frozen=True)
class Elastic:
    """A series-elastic drive (Kirchhoff 2011 §3.2: eqs. 3.18, 3.21-3.25), reflected to the link side: the
    motor position theta is in link units (rotor angle / transmission ratio, eq. 3.13), its torques
    are link-side torques (eq. 3.15).

    Motor: I_m thetadd + d_vm thetad + d_cm sgn(thetad) + tau_el = tau_m; link: the rigid-body
    dynamics driven by tau_el = k_e (theta - q - alpha_c(q)) + d_e (thetad - qd - alpha_c'), where
    alpha_c(q) = sum_j coupling_j q_j shifts the spring's equilibrium by other joints' positions
    (eq. 3.10: a cable over a pulley of another joint)."""

    motor_inertia: float  # I_m = z^2 (I_r + I_g), kg m^2 (kg)
    stiffness: float  # k_e, N m/rad (N/m)
    damping: float = 0.0  # d_e, N m s/rad
    motor_viscous: float = 0.0  # d_v,m, N m s/rad
    motor_coulomb: float = 0.0  # d_C,m, N m (model: the robot's coulomb)
    coupling: tuple[tuple[int, float], ...] = ()  # (other joint, 0-based; factor) of alpha_c
    motor_encoder: Encoder | None = None  # the motor-side encoder (counts per motor revolution, gear)


@dataclass(frozen=True)
class Joint:
    name: str
    type: JointType
    pre: tuple[tuple[float, ...], ...]  # 4x4, previous link frame -> joint frame
    post: tuple[tuple[float, ...], ...]  # 4x4, moved joint frame -> link frame
    kinematics: tuple[tuple[str, float], ...]  # the user's numbers (a, d, alpha, ... or xyz)
    limits: Limits = Limits()
    gear_ratio: float = 1.0
    # k_t, N m/A at the motor shaft (0: not given); the link-side torque of an armature current i
    # is gear_ratio k_t i (Kirchhoff 2011 eq. 4.51)
    torque_constant: float = 0.0
    encoder: Encoder | None = None
    IA: float = 0.0
    FV: float = 0.0
    FC: float = 0.0
    FO: float = 0.0
    elastic: Elastic | None = None  # a series-elastic drive (None: rigid)

    @property
    def pre_matrix(self) -> np.ndarray:
        return np.array(self.pre)

    @property
    def post_matrix(self) -> np.ndarray:
        return np.array(self.post)


def coupling_matrix(joints: tuple[Joint, ...]) -> np.ndarray:
    """A with alpha_c(q) = A q (Kirchhoff 2011 eq. 3.10): row i holds joint i's coupling factors."""
    a = np.zeros((len(joints), len(joints)))
    for i, j in enumerate(joints):
        for other, factor in j.elastic.coupling if j.elastic else ():
            a[i, other] = factor
    return a


# Friction terms beyond viscous + Coulomb a joint may declare (the description's ``friction:``;
# codegen.blocks.friction generates each with run-time coefficients): position-domain (Dahl),
# load-dependent (Dahl times the gravity torque), Stribeck friction, a smooth Coulomb term
# FT tanh(qd / v_t) beside the description's own Coulomb shape, and a constant offset FO (where
# joint_parameters has no FO of its own)
FRICTION_TERMS = ("dahl", "load", "stribeck", "smooth", "offset")


@dataclass(frozen=True)
class Coulomb:
    """sign(qd), or tanh(qd_i / velocity_scale_i) (smooth; fits real data better, Liu et al. README).
    ``velocity_scale``: one value for every joint, or one per joint (rad/s or m/s)."""

    model: Literal["sign", "tanh"] = "sign"
    velocity_scale: tuple[float, ...] = ()

    def scale(self, i: int) -> float:
        """Joint i's tanh scale."""
        return self.velocity_scale[0 if len(self.velocity_scale) == 1 else i]


def as_tuple(t: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(v) for v in row) for row in t)


@dataclass(frozen=True)
class Imu:
    """An inertial measurement unit (3-axis gyroscope + accelerometer) fixed to a link: ``link`` the
    0-based joint whose link carries it, ``pose`` (4x4) the sensor frame in that joint's frame J_i
    (the description's link frame times its placement; the readings are in the sensor frame)."""

    name: str
    link: int
    pose: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class RealtimeSection:
    """The description's ``realtime:`` section as written. The model only keeps it; the real-time
    layer reads and checks it (``codegen.blocks.options.realtime_defaults``), so the model does not
    depend on which blocks exist. ``choices``: (estimator | observer | controller | constant_params,
    value, line), an estimator as its ``name:key=value,...`` text; ``config``: (block.field, values,
    line)."""

    choices: tuple[tuple[str, str | bool, int], ...] = ()
    config: tuple[tuple[str, tuple[float, ...], int], ...] = ()


@dataclass(frozen=True)
class Robot:
    name: str
    file: str
    convention: Convention
    joints: tuple[Joint, ...]
    links: tuple[tuple[float, ...], ...]  # per link: LINK_PARAMS in its link frame
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    sample_period: float = 0.001
    joint_parameters: tuple[str, ...] = ("IA", "FV", "FC")
    coulomb: Coulomb = Coulomb()
    payload: tuple[float, ...] = (0.0,) * 10  # LINK_PARAMS in the last link frame
    tip: tuple[tuple[float, ...], ...] = as_tuple(np.eye(4))
    source: str = ""
    realtime: RealtimeSection = RealtimeSection()  # the realtime: section, read by codegen.blocks.options
    imus: tuple[Imu, ...] = ()  # link-mounted IMUs (the imus: section), for the imu estimator
    # per joint, the FRICTION_TERMS its generated code has (the friction: section; () = none on any joint)
    friction_terms: tuple[tuple[str, ...], ...] = ()
    digest: str = field(default="", compare=False)  # hash of the description (file bytes + options)

    @property
    def dof(self) -> int:
        return len(self.joints)

    def terms_of(self, joint: int) -> tuple[str, ...]:
        """The friction terms beyond viscous + Coulomb joint ``joint`` (0-based) declares."""
        return self.friction_terms[joint] if self.friction_terms else ()

    @property
    def elastic(self) -> bool:
        """Every joint has a series-elastic drive (mixed arms are refused by the description)."""
        return bool(self.joints) and all(j.elastic is not None for j in self.joints)

    @property
    def drives(self) -> tuple[Elastic, ...]:
        """The series-elastic drives of an elastic arm, one per joint (ValueError for a rigid arm)."""
        drives = tuple(j.elastic for j in self.joints if j.elastic is not None)
        if not self.elastic or len(drives) != self.dof:
            raise ValueError(f"{self.name} has no series-elastic drives")
        return drives

    @property
    def standard_parameter_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for j in range(1, self.dof + 1):
            names += [f"{p}{j}" for p in LINK_PARAMS]
            names += [f"{p}{j}" for p in JOINT_PARAMS if p in self.joint_parameters]
        return tuple(names)

    def standard_parameters(self, payload: np.ndarray | None = None) -> np.ndarray:
        """The standard parameter vector; the payload (default: the robot's) adds to the last link."""
        pay = np.asarray(self.payload if payload is None else payload, dtype=float)
        out: list[float] = []
        for j, (joint, link) in enumerate(zip(self.joints, self.links)):
            p = np.asarray(link, dtype=float) + (pay if j == self.dof - 1 else 0.0)
            out += list(p)
            out += [getattr(joint, k) for k in JOINT_PARAMS if k in self.joint_parameters]
        return np.array(out)

    @property
    def n_standard(self) -> int:
        return len(self.standard_parameter_names)

    @property
    def c_name(self) -> str:
        """The prefix of every generated C symbol and file: the name, at most ``C_PREFIX_MAX``
        characters (``c_prefix``)."""
        return c_prefix(self.name)

    @property
    def tip_matrix(self) -> np.ndarray:
        return np.array(self.tip)


def with_friction_terms(robot: Robot, extra: Sequence[Iterable[str]]) -> Robot:
    """The robot with the friction terms ``extra`` (per joint) besides its own, e.g. those an
    identified config sets (host_tools.bindings.rt.config_friction_terms); itself if none is new."""
    merged = tuple(
        tuple(t for t in FRICTION_TERMS if t in robot.terms_of(j) or t in set(extra[j])) for j in range(robot.dof)
    )
    if all(m == robot.terms_of(j) for j, m in enumerate(merged)):
        return robot
    terms = merged if any(merged) else ()
    return replace(robot, friction_terms=terms, digest=digest_of(robot.digest.encode(), repr(terms).encode()))


# a stand-in for a joint's missing position and velocity limits, half-range about its zero and speed
# (rad, rad/s; prismatic: m, m/s), for the scenarios that need a bounded motion (collide, issue #46):
# a stated placeholder, not the arm's range; limits.q and limits.qd in the description replace it
STANDIN_LIMITS = {"revolute": (1.0, 1.0), "prismatic": (0.1, 0.1)}


def lacking_motion_limits(robot: Robot) -> list[str]:
    """The joints without a finite position range or velocity limit."""
    return [
        j.name
        for j in robot.joints
        if not (np.isfinite(j.limits.q_min) and np.isfinite(j.limits.q_max) and np.isfinite(j.limits.qd))
    ]


def with_standin_limits(robot: Robot) -> Robot:
    """The robot with STANDIN_LIMITS where a joint has no position range or no velocity limit (each
    missing one alone); itself if none is missing."""
    if not lacking_motion_limits(robot):
        return robot
    joints = []
    for j in robot.joints:
        half, speed = STANDIN_LIMITS[j.type]
        lim = j.limits
        bounded = np.isfinite(lim.q_min) and np.isfinite(lim.q_max)
        joints.append(
            replace(
                j,
                limits=replace(
                    lim,
                    q_min=lim.q_min if bounded else -half,
                    q_max=lim.q_max if bounded else half,
                    qd=lim.qd if np.isfinite(lim.qd) else speed,
                ),
            )
        )
    return replace(robot, joints=tuple(joints), digest=digest_of(robot.digest.encode(), b"standin limits"))


def digest_of(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def mdh_transforms(kind: JointType, alpha: float, a: float, theta: float, d: float) -> tuple[np.ndarray, np.ndarray]:
    """frame i = frame i-1 . Rx(alpha) Tx(a) Rz(theta) Tz(d); q adds to theta or d."""
    pre = exact.matmul(
        spatial.homogeneous(spatial.rot_x(alpha)),
        spatial.trans(x=a),
        spatial.homogeneous(spatial.rot_z(theta)),
        spatial.trans(z=d),
    )
    return spatial.snapped(pre), np.eye(4)


def dh_transforms(kind: JointType, theta: float, d: float, a: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """frame i = frame i-1 . Rz(theta) Tz(d) Tx(a) Rx(alpha); q adds to theta or d (about z_{i-1})."""
    post = exact.matmul(
        spatial.homogeneous(spatial.rot_z(theta)),
        spatial.trans(z=d),
        spatial.trans(x=a),
        spatial.homogeneous(spatial.rot_x(alpha)),
    )
    return np.eye(4), spatial.snapped(post)


def urdf_transforms(origin: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = spatial.z_to_axis(axis)
    return exact.matmul(origin, spatial.homogeneous(r)), spatial.homogeneous(r.T)


def triangle_excess(p: np.ndarray) -> float:
    """How far (kg m^2) the principal moments about the centre of mass break the triangle inequality
    I_a + I_b >= I_c, which every rigid body meets (0: it holds; a massless link: 0)."""
    if p[0] <= 0:
        return 0.0
    eig = np.linalg.eigvalsh(spatial.inertia_about_com(p))
    return float(max(0.0, eig[2] - eig[0] - eig[1]))


def validate_inertial(p: np.ndarray, fail: Callable[[str], Exception]) -> None:
    """Mass >= 0; a massless link has all-zero parameters; inertia about the COM positive definite."""
    if not np.all(np.isfinite(p)):
        raise fail("parameters must be finite (NaN or inf found)")
    if p[0] < 0:
        raise fail(f"mass must be positive, got {p[0]:g}")
    if p[0] == 0:
        if np.any(p != 0):
            raise fail("a massless link must have zero first moments and inertia")
        return
    eig = np.linalg.eigvalsh(spatial.inertia_about_com(p))
    if eig.min() <= 0:
        raise fail(
            "inertia about the centre of mass is not positive definite "
            f"(eigenvalues {', '.join(f'{e:.4g}' for e in eig)})"
        )
