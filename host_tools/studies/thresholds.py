"""Collision thresholds from collision-free data (issue #7 item 3): replay a log through the robot's
pipeline, take each joint's largest |r| after the start-up transient, and set
det.threshold = margin x that + floor -- the smallest false-alarm-free threshold on this run, with
a margin for runs it has not seen. ``check_thresholds`` replays another run against them (false
alarms); ``tune_adaptive`` picks the adaptive observer's damping that gives the lowest thresholds
on a run, at the observer gain K it has.

    rt = load_rt("kuka_iiwa14", observer="momentum")
    design = design_thresholds(rt, Log.load("free.npz"))
    rt.config["det.threshold"] = design.threshold; rt.config.save("config.json")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_tools.bindings.rt import Realtime
from host_tools.data.logs import Log


@dataclass(frozen=True)
class Thresholds:
    threshold: np.ndarray  # per joint, N m (or N)
    max_residual: np.ndarray  # largest |r| per joint after the skipped start
    at_time: np.ndarray  # when it occurred, s from the start of the log
    samples: int  # samples used
    residual: np.ndarray  # r (K, n) over the whole log, N m (or N)
    skipped: int  # samples left out at the start


def design_thresholds(rt: Realtime, log: Log, margin: float = 1.2, skip: float = 0.5, floor: float = 0.0) -> Thresholds:
    """``skip`` seconds at the start are left out (observer start-up); the log must be collision-free."""
    if not margin >= 1.0:
        raise ValueError(f"margin must be >= 1 (a factor on the largest residual), got {margin!r}")
    if not (skip >= 0 and floor >= 0):
        raise ValueError("skip and floor must be >= 0")
    if log.robot != rt.name:
        raise ValueError(f"the log is of robot {log.robot!r}, the pipeline is {rt.name!r}")
    if abs(log.sample_period - rt.sample_period) > 1e-9 * rt.sample_period:
        raise ValueError(
            f"the log is sampled every {log.sample_period:g} s, the pipeline runs every {rt.sample_period:g} s"
        )
    if "qd_meas" in (rt.input_dtype.names or ()):
        raise ValueError(
            f"the {rt.rt_manifest['observer']} observer reads qd_meas and qdd_meas, which the log "
            "format does not carry: use its estimator-fed variant"
        )
    if "det.threshold" not in rt.config.keys():
        raise ValueError("the pipeline has no collision observer (choose one with --observer)")
    k0 = int(round(skip / rt.sample_period))
    if len(log) <= k0 + 1:
        raise ValueError(f"the log has {len(log)} samples; skipping {skip:g} s leaves none")
    outs = replay(rt, log)
    residual = np.asarray(outs["r"], float)
    speed = np.max(np.abs(np.asarray(outs["qd_hat"], float)[k0:]), axis=0)
    moving = np.array([MOVING[t] for t in rt.manifest["joint_types"]])
    if not np.any(speed >= moving):
        raise ValueError(
            "the robot barely moves on this log (peak estimated joint speeds "
            + ", ".join(f"{v:.3g}" for v in speed)
            + f" rad/s or m/s; some joint must reach {MOVING['revolute']:g} rad/s, {MOVING['prismatic']:g} m/s "
            "if prismatic): thresholds from standstill are below the residual of any motion; record a run "
            "that moves (manipgen record)"
        )
    r = np.abs(residual[k0:])
    if not np.all(np.isfinite(r)):
        raise ValueError("the residual is not finite on this log (diverged estimator or bad torques)")
    worst = r.max(axis=0)
    return Thresholds(margin * worst + floor, worst, (k0 + r.argmax(axis=0)) * rt.sample_period, len(r), residual, k0)


def replay(rt: Realtime, log: Log) -> dict[str, np.ndarray]:
    """The pipeline's outputs over the log with detection off (det.threshold restored afterwards)."""
    saved = np.array(rt.config["det.threshold"], float)
    rt.config["det.threshold"] = 0.0  # not designed: no detection (and no reaction) while replaying
    try:
        rt.reset()
        return rt.run(log)
    finally:
        rt.config["det.threshold"] = saved


# A log moves when some joint's estimated speed reaches this after the skipped start: thresholds from
# a robot at (or near) standstill hold only friction-free, Coriolis-free residuals, far below those of
# any motion (seed 001's thresholds come from the robot's own motions).
MOVING = {"revolute": 0.1, "prismatic": 0.01}  # rad/s, m/s


@dataclass(frozen=True)
class Check:
    """Another collision-free run against designed thresholds."""

    max_residual: np.ndarray  # per joint after the skipped start
    false_alarm_samples: np.ndarray  # samples with |r| above the threshold, per joint
    ratio: np.ndarray  # max |r| / threshold per joint (< 1: no false alarm)
    residual: np.ndarray
    skipped: int


def check_thresholds(rt: Realtime, log: Log, threshold: np.ndarray, skip: float = 0.5) -> Check:
    """Replay ``log`` (collision-free, of the same robot and rate) and count the samples whose |r|
    exceeds ``threshold`` -- each one a false alarm (before the detector's debounce)."""
    design = design_thresholds(rt, log, 1.0, skip, 0.0)
    r = np.abs(design.residual[design.skipped :])
    th = np.asarray(threshold, float)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero threshold: ratio inf (or 0 for r = 0)
        ratio = np.where(design.max_residual > 0, design.max_residual / th, 0.0)
    return Check(design.max_residual, np.sum(r > th, axis=0), ratio, design.residual, design.skipped)


ADAPTIVE_LAMBDA_GRID = tuple(10.0**k for k in range(-6, 5))  # the adaptive observer's Y+ damping


@dataclass(frozen=True)
class Tuned:
    lam: float  # the chosen obs.lam
    objective: float  # sum_j max|r_j| / RMS(tau_j) on the run
    default_objective: float  # the same with the config as it was
    table: list[tuple[float, float]]  # every candidate (lam, objective)


def require_tunable(rt: Realtime) -> None:
    """tune_adaptive needs the adaptive observer (one clear error otherwise)."""
    if "obs.lam" not in rt.config.keys():
        raise ValueError(
            f"nothing to tune in {rt.label}: --tune chooses the adaptive observer's damping "
            "(--observer adaptive); the momentum observer's only gain is K, its detection bandwidth"
        )


def tune_adaptive(rt: Realtime, log: Log, skip: float = 0.5) -> Tuned:
    """The adaptive observer's damping lambda of Y+ that makes its residual quietest on this
    collision-free run (a grid over 1e-6 ... 1e4; lambda -> 0 adapts fully to every model-error
    change, the estimator's q-ddot noise included; lambda -> inf stops adapting, r -> the direct
    residual). The objective is the thresholds' sum relative to each joint's torque RMS,
    sum_j max|r_j| / RMS(tau_j), so no joint dominates by its size. The observer gain K and the
    estimator are kept: lowering K (or slowing the estimator) lowers r for any model error but
    slows detection -- and the estimator also feeds the controller. The chosen lambda is left in
    ``rt.config``."""
    require_tunable(rt)
    scale = np.sqrt(np.mean(np.asarray(log.tau, float) ** 2, axis=0))
    scale = np.where(scale > 0, scale, 1.0)

    def objective() -> float:
        return float(np.sum(design_thresholds(rt, log, 1.0, skip, 0.0).max_residual / scale))

    start = float(rt.config["obs.lam"])
    default = objective()  # a log that does not fit the pipeline fails here, once
    table = []
    for lam in ADAPTIVE_LAMBDA_GRID:
        rt.config["obs.lam"] = lam
        try:
            table.append((lam, objective()))
        except ValueError:  # a diverged candidate (non-finite residual)
            table.append((lam, float("inf")))
    lam, best = min(table, key=lambda row: row[1])
    if best >= default:  # the config as it was is at least as quiet: keep it
        lam, best = start, default
    rt.config["obs.lam"] = lam
    return Tuned(lam, best, default, table)
