"""Development data that looks like a real arm's log (issue #44): a loopback run of a description
made hostile the way field logs are, with everything planted stated so that tests can check what
the tools find (``manipgen record ROBOT --hostile --out run.csv --out run.npz``; docs/realtime.md).

From a loopback run whose plant has no friction of its own (``plant_parameters``), ``hostile``
makes the rows a logger writes:

- **jittered stamps**: row k is taken at t_k = k Ts + e_k, e_k normal with standard deviation
  ``jitter`` (default Ts / 20), clipped to +-JITTER_CLIP Ts (4 standard deviations by default),
  and stamped with that instant: positions by cubic Hermite interpolation of the simulated q, q-dot
  (error h^4 |q''''| / 384 with h = Ts; at an acceleration step of the trapezoidal moves at most
  h^2 |dq''| / 8, 1.3e-7 rad for 1 rad/s^2 at 1 kHz, below an encoder count), torque linearly
  between the grid's; then quantised to
  the encoders' counts (host_tools.data.measured.encoders). The clip keeps every step within
  [1 - 2 JITTER_CLIP, 1 + 2 JITTER_CLIP] Ts = [0.6, 1.4] Ts: under the checks' gap bound (1.5 x the
  median step, host_tools.data.timing.GAP), so jitter alone never makes a gap;
- **gaps**: ``gaps`` runs of ``gap_samples`` (first, last) consecutive rows left out;
- **repeated samples**: ``repeats`` rows whose values (q, q-dot, tau) are the row before's, at their
  own new stamp (a logger that re-sent its last sample);
- **a recorded velocity from another filter**: the drive's: the backward difference of the encoder
  counts on the drive's own uniform clock, through a first-order low-pass of time constant
  ``drive_filter`` (exact discretisation, pole exp(-Ts / T)), read by the logger as the drive's last
  value at each row's instant (lag about T + Ts / 2);
- **a constant torque offset** per joint (``offsets``, N m: a torque sensor's or current loop's
  bias, or asymmetric Coulomb friction: FC+ sgn + FO is FC+ + FO one way and FC+ - FO the other);
- **a plant whose friction has another shape than the description's**, per joint
  f_j(qd) = FV_j qd + FC_j c_j(qd) + FS_j c_j(qd) exp(-(qd / v_s,j)^2): Stribeck terms on the joints
  of ``stribeck`` (FS, v_s), and the offsets above on others (asymmetric Coulomb friction), where the
  description has viscous + Coulomb alone; c_j is the description's Coulomb shape (sgn, or tanh with
  its scales), or tanh(qd / ``coulomb_scale``) where that is given: a Coulomb of another smoothness,
  whose difference from the description's near rest no single term of identify's represents
  exactly (docs/realtime.md: what identify makes of it). FV, FC are the
  description's where it has them; a description without friction (a URDF's zero <dynamics>) gets
  FC = FRICTION_SHARE x the joint's torque limit (1 N m without one) and FV = FC x 1 s/rad.
  The loopback's plant runs without friction; the logged torque is the applied one plus f(qd) along
  the simulated motion: the torque a plant with this friction needs to make that very motion;
- torque noise: normal, ``torque_noise`` per joint (default TORQUE_NOISE x the torque limit).

``Recording`` holds the rows and what was planted (``planted()``: stamps of the gaps and repeats,
offsets, friction per joint); ``write_csv`` writes the CSV of host_tools.data.csvdata (time, q, qd,
tau; irregular stamps: resampled by the importer), ``as_log`` the NPZ log taken row by row (its
``time`` the stamps; tau in the log format's convention, the mean over the sample before).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import casadi as cs
import numpy as np

from codegen.emit.files import write_file
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import smooth_coulomb, stribeck
from host_tools.data.bag_writer import joint_states_bag
from host_tools.data.logs import Log, fingerprint
from host_tools.data.measured import encoders

JITTER_CLIP = 0.2  # x Ts: the largest |e_k| (module docstring: steps stay under the gap bound)
FRICTION_SHARE = 0.02  # x the torque limit: a geared drive's Coulomb friction where the description has none
TORQUE_NOISE = 1e-3  # x the torque limit: twice a 12-bit current reading's quantum over +-limit
STRIBECK_VELOCITY = 0.07  # rad/s (m/s): between two of identify's Stribeck grid values (0.05, 0.1)
EDGE = 1.0  # s: no gap or repeat within this of the run's ends (identification trims its filters' edges)
SPACING = 1.2  # s: between two planted defects: each is left out with its settling (at most SETTLE) on its own
# the default offset's joint (0-based): the first, whose axis is vertical on most arms: no gravity
# column there, so a constant can only be an offset. On a joint whose gravity torque barely changes
# over the motion a constant is nearly a base parameter's column, and the description's model takes
# it up (the UR5's joint 6: docs/realtime.md, "Hostile logs")
OFFSET_JOINT = 0


@dataclass(frozen=True)
class Hostile:
    """What to plant; None: the default stated in the module docstring. Joints are 0-based."""

    jitter: float | None = None  # s, standard deviation of the sampling instants
    gaps: int = 4
    gap_samples: tuple[int, int] = (3, 9)  # rows left out per gap, drawn uniformly from first..last
    repeats: int = 5
    drive_filter: float = 0.005  # s: the drive's velocity filter's time constant
    torque_noise: float | None = None  # N m (N), every joint
    offsets: dict[int, float] | None = None  # default: +0.5 FC on the first joint (OFFSET_JOINT's reason)
    stribeck: dict[int, tuple[float, float]] | None = None  # joint -> (FS, v_s); default {1: (FC_1, 0.07)}
    coulomb_scale: float | None = None  # rad/s (m/s): the plant's tanh scale (None: the description's shape)
    seed: int = 0

    def check(self) -> None:
        lo, hi = self.gap_samples
        if not (
            (self.jitter is None or self.jitter >= 0)
            and self.gaps >= 0
            and 1 <= lo <= hi
            and self.repeats >= 0
            and self.drive_filter >= 0
            and (self.torque_noise is None or self.torque_noise >= 0)
            and (self.coulomb_scale is None or self.coulomb_scale > 0)
        ):
            raise ValueError(
                "hostile log: jitter, gaps, repeats, drive filter and torque noise must be >= 0, gap "
                "samples 1 <= first <= last, the Coulomb scale > 0"
            )


@dataclass(frozen=True)
class PlantFriction:
    """Per joint: FV, FC (N m s/rad, N m), FS and v_s (0: no Stribeck term), the Coulomb shape's
    tanh scales v_c (None: sgn)."""

    fv: np.ndarray
    fc: np.ndarray
    fs: np.ndarray
    vs: np.ndarray
    coulomb_scale: tuple[float, ...] | None

    def torque(self, qd: np.ndarray) -> np.ndarray:
        """(K, n) f(qd) (module docstring), through the shapes of codegen.symbolic.dynamics."""
        qd = np.asarray(qd, float)
        x, scale, vs = cs.SX.sym("qd"), cs.SX.sym("scale"), cs.SX.sym("vs")
        c = cs.sign(x) if self.coulomb_scale is None else smooth_coulomb(x, scale)
        shape = cs.Function("shape", [x, scale, vs], [c, stribeck(c, x, vs)]).map(len(qd))
        c_, bump = np.zeros(qd.shape), np.zeros(qd.shape)
        for j in range(qd.shape[1]):
            v = 1.0 if self.coulomb_scale is None else self.coulomb_scale[j]
            a, b = shape(qd[None, :, j], v, self.vs[j] if self.vs[j] > 0 else 1.0)
            c_[:, j], bump[:, j] = np.asarray(a).ravel(), np.asarray(b).ravel()
        return self.fv * qd + self.fc * c_ + np.where(self.vs > 0, self.fs, 0.0) * bump


def description_friction(robot: Robot) -> tuple[np.ndarray, np.ndarray]:
    """Per joint FV, FC of the description (0 where it has none)."""
    values = dict(zip(robot.standard_parameter_names, robot.standard_parameters()))
    fv = np.array([float(values.get(f"FV{j + 1}", 0.0)) for j in range(robot.dof)])
    fc = np.array([float(values.get(f"FC{j + 1}", 0.0)) for j in range(robot.dof)])
    return fv, fc


def torque_limits(robot: Robot) -> np.ndarray:
    """Per joint |tau| limit, nan where the description has none."""
    return np.array([j.limits.tau if np.isfinite(j.limits.tau) else np.nan for j in robot.joints])


def plant_friction(robot: Robot, h: Hostile) -> PlantFriction:
    fv, fc = description_friction(robot)
    limit = torque_limits(robot)
    none = (fv == 0) & (fc == 0)
    fc = np.where(none, np.where(np.isfinite(limit), FRICTION_SHARE * np.nan_to_num(limit), 1.0), fc)
    fv = np.where(none, fc * 1.0, fv)
    fs, vs = np.zeros(robot.dof), np.zeros(robot.dof)
    spec = (
        h.stribeck
        if h.stribeck is not None
        else {stribeck_joint(robot): (float(fc[stribeck_joint(robot)]), STRIBECK_VELOCITY)}
    )
    for j, (s, v) in spec.items():
        _joint(robot, j, "stribeck")
        if not v > 0:
            raise ValueError(f"hostile log: stribeck: joint {j + 1}: v_s must be > 0")
        fs[j], vs[j] = s, (v if s != 0 else 0.0)  # FS = 0 (a description without FC): no Stribeck term
    if h.coulomb_scale is not None:
        scale: tuple[float, ...] | None = (h.coulomb_scale,) * robot.dof
    elif robot.coulomb.model == "tanh":
        scale = tuple(robot.coulomb.scale(j) for j in range(robot.dof))
    else:
        scale = None
    return PlantFriction(fv, fc, fs, vs, scale)


def unplanted(robot: Robot, h: Hostile) -> str | None:
    """What the default offset and Stribeck term (sized by the description's Coulomb friction FC)
    leave out where FC is 0 (a description with viscous friction only: plant_friction keeps it as it
    is), or None: the user's notice that the log plants less than the recipe says."""
    fc = plant_friction(robot, h).fc
    lost: list[tuple[int, str]] = []
    if h.offsets is None and fc[OFFSET_JOINT] == 0:
        lost.append((OFFSET_JOINT, f"the offset (+FC/2 on joint {OFFSET_JOINT + 1}; --offset J:V)"))
    joint = stribeck_joint(robot)
    if h.stribeck is None and fc[joint] == 0:
        lost.append((joint, f"the Stribeck term (FS = FC on joint {joint + 1}; --stribeck J:FS:VS)"))
    if not lost:
        return None
    joints = sorted({j + 1 for j, _ in lost})
    terms = [t for _, t in lost]
    plants = f"plants neither {terms[0]} nor {terms[1]}" if len(terms) > 1 else f"does not plant {terms[0]}"
    return (
        f"no Coulomb friction (FC = 0) on joint{'s' if len(joints) > 1 else ''} "
        f"{' and '.join(map(str, joints))}, which sizes the hostile log's default terms: it {plants}; "
        f"give {'them' if len(terms) > 1 else 'it'} to plant {'them' if len(terms) > 1 else 'it'}"
    )


def stribeck_joint(robot: Robot) -> int:
    """The default Stribeck term's joint (0-based): the second, or a one-joint arm's only one."""
    return min(1, robot.dof - 1)


def offsets(robot: Robot, h: Hostile, fc: np.ndarray) -> np.ndarray:
    out = np.zeros(robot.dof)
    spec = h.offsets if h.offsets is not None else {OFFSET_JOINT: 0.5 * fc[OFFSET_JOINT]}
    for j, v in spec.items():
        _joint(robot, j, "offset")
        out[j] = v
    return out


def _joint(robot: Robot, j: int, what: str) -> None:
    if not 0 <= j < robot.dof:
        raise ValueError(f"hostile log: {what}: joint {j + 1}: {robot.name} has joints 1..{robot.dof}")


def plant_parameters(robot: Robot, standard: np.ndarray) -> np.ndarray:
    """The standard parameter vector with the joints' friction (FV, FC, FO) zeroed: the loopback's
    plant for a hostile log, whose friction is added along the motion (PlantFriction)."""
    out = np.array(standard, float)
    for i, name in enumerate(robot.standard_parameter_names):
        if name.rstrip("0123456789") in ("FV", "FC", "FO"):
            out[i] = 0.0
    return out


@dataclass
class Recording:
    """The rows a logger wrote (R of them) and what was planted."""

    robot: str
    sample_period: float
    time: np.ndarray  # (R,) s, the stamps (the first is 0)
    q: np.ndarray  # (R, n) on the encoders' grid
    qd: np.ndarray  # (R, n) the drive's velocity
    tau: np.ndarray  # (R, n) the measured torque at the stamp
    gaps: list[tuple[float, float]]  # the stamps before and after each gap
    repeats: list[float]  # the stamps of the repeated rows
    offsets: np.ndarray  # (n,) N m
    friction: PlantFriction
    settings: dict[str, Any] = field(default_factory=dict)

    def planted(self) -> dict[str, Any]:
        f = self.friction
        return {
            "robot": self.robot,
            "sample_period": self.sample_period,
            "rows": len(self.time),
            "gaps": [list(g) for g in self.gaps],
            "repeats": self.repeats,
            "offsets": self.offsets.tolist(),
            "friction": {
                "FV": f.fv.tolist(),
                "FC": f.fc.tolist(),
                "FS": f.fs.tolist(),
                "stribeck_velocity": f.vs.tolist(),
                "coulomb_scale": None if f.coulomb_scale is None else list(f.coulomb_scale),
                "formula": "FV qd + FC c(qd) + FS c(qd) exp(-(qd/v_s)^2), c = sgn(qd) (coulomb_scale null) "
                "or tanh(qd/coulomb_scale)",
            },
            **self.settings,
        }

    def write_planted(self, path: str | Path) -> None:
        write_file(Path(path), (json.dumps(self.planted(), indent=1) + "\n").encode())


def _instants(k: int, ts: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    e = np.clip(rng.normal(0.0, sigma, k), -JITTER_CLIP * ts, JITTER_CLIP * ts)
    e[0] = 0.0  # the first stamp is time 0
    return np.arange(k) * ts + e


def _hermite(t: np.ndarray, ts: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """q at instants t (within the grid) by cubic Hermite interpolation of q, qd on the grid."""
    i = np.clip(np.floor(t / ts).astype(int), 0, len(q) - 2)
    s = ((t - i * ts) / ts)[:, None]
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    return np.asarray(h00 * q[i] + h10 * ts * qd[i] + h01 * q[i + 1] + h11 * ts * qd[i + 1])


def _places(rng: np.random.Generator, k: int, ts: float, count: int, taken: list[int]) -> list[int]:
    """``count`` row indices at least EDGE from the ends and SPACING from each other and ``taken``."""
    lo, hi, space = int(EDGE / ts), k - int(EDGE / ts) - 1, int(SPACING / ts)
    out: list[int] = []
    for _ in range(count):
        for _try in range(1000 if hi > lo else 0):  # hi <= lo: no row is EDGE from both ends
            i = int(rng.integers(lo, hi))
            if all(abs(i - j) >= space for j in taken + out):
                out.append(i)
                break
        else:
            raise ValueError(
                f"hostile log: the run ({k * ts:g} s) is too short for {count} more defects {SPACING:g} s "
                f"apart and {EDGE:g} s from its ends (a longer --duration, or fewer --gaps/--repeats)"
            )
    return sorted(out)


def hostile(robot: Robot, log: Log, h: Hostile = Hostile()) -> Recording:
    """The hostile recording of a loopback ``log`` of ``robot`` simulated with plant_parameters (its
    ground truth q_true, qd_true is used)."""
    h.check()
    ts, n = log.sample_period, robot.dof
    rng = np.random.default_rng(h.seed)
    q_true, qd_true = (np.asarray(log.extra[k], float) for k in ("q_true", "qd_true"))
    k = len(q_true)
    friction = plant_friction(robot, h)
    # the torque at the grid instants: the mean of the holds either side (identification's
    # torque_at_samples), plus the plant's friction at the simulated velocity
    held = np.asarray(log.tau, float)
    tau_grid = np.vstack([(held[:-1] + held[1:]) / 2, held[-1:]]) + friction.torque(qd_true)
    rpc, offset, direction = encoders(robot)

    def quantised(q: np.ndarray) -> np.ndarray:
        return np.round((q - offset) * direction / rpc) * rpc * direction + offset

    sigma = ts / 20 if h.jitter is None else h.jitter
    t = np.minimum(_instants(k, ts, sigma, rng), (k - 1) * ts)
    q = quantised(_hermite(t, ts, q_true, qd_true))
    tau = np.stack([np.interp(t, np.arange(k) * ts, tau_grid[:, j]) for j in range(n)], 1)
    off = offsets(robot, h, friction.fc)
    limit = np.nan_to_num(torque_limits(robot), nan=50.0)  # 50 N m: TORQUE_NOISE x it = 0.05 N m
    noise = TORQUE_NOISE * limit if h.torque_noise is None else np.full(n, h.torque_noise)
    tau = tau + off + rng.normal(size=tau.shape) * noise
    # the drive's velocity on its own clock, read at the rows' instants (its last value)
    diff = np.vstack([np.zeros((1, n)), np.diff(quantised(q_true), axis=0) / ts])
    a = np.exp(-ts / h.drive_filter) if h.drive_filter > 0 else 0.0
    from scipy.signal import lfilter

    drive = lfilter([1 - a], [1, -a], diff, axis=0)
    qd = drive[np.clip(np.floor(t / ts + 1e-9).astype(int), 0, k - 1)]
    gap_at = _places(rng, k, ts, h.gaps, [])
    repeat_at = _places(rng, k, ts, h.repeats, gap_at)
    for i in repeat_at:  # the row before's values at this row's stamp
        q[i], qd[i], tau[i] = q[i - 1], qd[i - 1], tau[i - 1]
    keep = np.ones(k, bool)
    lengths = [int(rng.integers(h.gap_samples[0], h.gap_samples[1] + 1)) for _ in gap_at]
    for i, m in zip(gap_at, lengths):
        keep[i : i + m] = False
    gaps = [(float(t[i - 1]), float(t[i + m])) for i, m in zip(gap_at, lengths)]
    return Recording(
        robot.c_name,
        ts,
        t[keep],
        q[keep],
        qd[keep],
        tau[keep],
        gaps,
        [float(t[i]) for i in repeat_at],
        off,
        friction,
        {
            "jitter_std": sigma,
            "jitter_clip": JITTER_CLIP * ts,
            "gap_rows": lengths,
            "drive_filter": h.drive_filter,
            "torque_noise": noise.tolist(),
            "seed": h.seed,
        },
    )


def write_csv(rec: Recording, path: str | Path, robot: Robot) -> None:
    """The CSV of host_tools.data.csvdata: time, q1..qn, qd1..qdn, tau1..taun (irregular stamps)."""
    names = [j.name for j in robot.joints]
    header = ",".join(["time"] + [f"q_{a}" for a in names] + [f"qd_{a}" for a in names] + [f"tau_{a}" for a in names])
    table = np.column_stack([rec.time, rec.q, rec.qd, rec.tau])
    lines = [header] + [",".join(f"{v:.12g}" for v in row) for row in table]
    write_file(Path(path), ("\n".join(lines) + "\n").encode())


def write_bag(rec: Recording, path: str | Path, robot: Robot) -> None:
    """The same rows as a ROS 1 bag of JointState messages (host_tools.data.bag_writer): stamps,
    positions, the drive's velocities and the torques, the joints by the description's names."""
    names = [j.name for j in robot.joints]
    write_file(Path(path), joint_states_bag(rec.time, names, rec.q, rec.qd, rec.tau))


def as_log(rec: Recording, robot: Robot) -> Log:
    """The NPZ log taken row by row: time = the stamps, counts through the encoders, tau the mean of
    the measured torque over the sample before (the format's convention), the drive's velocity as
    ``qd_hat_logged``; q_des the measured positions, qd_des and qdd_des zero (no desired trajectory
    is recorded: the off-trajectory check has nothing to judge)."""
    rpc, offset, direction = encoders(robot)
    tau = np.vstack([rec.tau[:1], (rec.tau[:-1] + rec.tau[1:]) / 2])
    repeat = np.zeros(len(rec.time), bool)
    repeat[np.searchsorted(rec.time, rec.repeats)] = True
    tau[repeat] = tau[np.flatnonzero(repeat) - 1]  # a repeated row repeats every value
    log = Log(
        robot=rec.robot,
        sample_period=rec.sample_period,
        time=rec.time,
        counts=np.round((rec.q - offset) * direction / rpc).astype(np.int64),
        valid=np.ones(rec.q.shape, bool),
        tau=tau,
        q_des=rec.q,
        qd_des=np.zeros_like(rec.q),
        qdd_des=np.zeros_like(rec.q),
        extra={"qd_hat_logged": rec.qd, **fingerprint(robot)},
    )
    log.check("hostile log")
    return log
