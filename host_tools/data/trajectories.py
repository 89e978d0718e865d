"""Desired joint trajectories for closed-loop runs: Liu et al.'s test trajectory and a generator.

A trajectory is sampled (time, q, qd, qdd); ``resample`` re-evaluates it at another rate through a
cubic spline of q (derivatives from the spline), as a controller running at that rate would see it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from codegen.model.robot import Robot
from codegen.resources import resource_dir


@dataclass(frozen=True)
class Trajectory:
    name: str
    time: np.ndarray  # (K,) s, from 0
    q: np.ndarray  # (K, n) rad or m
    qd: np.ndarray
    qdd: np.ndarray

    @property
    def duration(self) -> float:
        return float(self.time[-1])

    def resample(self, ts: float, duration: float | None = None) -> Trajectory:
        spline = CubicSpline(self.time, self.q, axis=0)
        t = np.arange(0.0, (duration or self.duration) + 1e-12, ts)
        return Trajectory(self.name, t, spline(t), spline(t, 1), spline(t, 2))


def liu_test_trajectory() -> Trajectory:
    """The desired trajectory of Liu et al.'s LWA-4P runs (Fig. 4: sine, 5th-order polynomial and
    trapezoidal parts; 97 s, recorded every 4 ms; data package doi:10.21227/tse3-h285)."""
    z = np.load(resource_dir("robots") / "trajectories" / "schunk_lwa4p_liu_test.npz")
    t, q = z["time"], z["q_d"]
    spline = CubicSpline(t, q, axis=0)
    return Trajectory("liu_test", t, q, spline(t, 1), spline(t, 2))


def quintic(q0: np.ndarray, q1: np.ndarray, t: np.ndarray, duration: float) -> tuple[np.ndarray, ...]:
    """Rest-to-rest quintic move from q0 to q1 in ``duration`` s at times t (held after): q, qd, qdd (K, n)."""
    s = np.clip(t / duration, 0.0, 1.0)[:, None]
    d = (q1 - q0)[None, :]
    pos = q0 + d * (10 * s**3 - 15 * s**4 + 6 * s**5)
    vel = d * (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
    acc = d * (60 * s - 180 * s**2 + 120 * s**3) / duration**2
    return pos, vel, acc


DEFAULT_QD = 1.0  # rad/s (or m/s): a joint whose description gives no velocity limit
DEFAULT_QDD = 2.0  # rad/s^2: no acceleration limit given (Liu et al.'s test motion stays near 2)


def _bounds(robot: Robot, speed: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: position range (lo, hi; +-pi if unlimited) and speed x the velocity and
    acceleration limits."""
    lo = np.array([j.limits.q_min if np.isfinite(j.limits.q_min) else -np.pi for j in robot.joints])
    hi = np.array([j.limits.q_max if np.isfinite(j.limits.q_max) else np.pi for j in robot.joints])
    vmax = speed * np.array([j.limits.qd if np.isfinite(j.limits.qd) else DEFAULT_QD for j in robot.joints])
    amax = speed * np.array([j.limits.qdd if np.isfinite(j.limits.qdd) else DEFAULT_QDD for j in robot.joints])
    return lo, hi, vmax, amax


def generated_trajectory(
    robot: Robot,
    duration: float = 20.0,
    ts: float = 0.001,
    seed: int = 0,
    speed: float = 0.5,
    span: float = 0.3,
    centre: np.ndarray | None = None,
) -> Trajectory:
    """Liu et al.-like test motion for any robot: a sine part, quintic point-to-point moves and a
    trapezoidal-velocity move, around the middle of each joint's range or ``centre`` (span: fraction
    of the range used, at most +-1 rad and within the range), scaled so that |qd| <= speed x the
    joint's velocity limit and |qdd| <= speed x its acceleration limit (DEFAULT_QD, DEFAULT_QDD where
    the description has none)."""
    rng = np.random.default_rng(seed)
    n = robot.dof
    lo, hi, vmax, amax = _bounds(robot, speed)
    mid = (lo + hi) / 2 if centre is None else np.clip(np.asarray(centre, float), lo, hi)
    amp = np.minimum(np.minimum(span * (hi - lo) / 2, 1.0), np.minimum(hi - mid, mid - lo))
    t = np.arange(0.0, duration + 1e-12, ts)
    q, qd, qdd = (np.zeros((len(t), n)) for _ in range(3))
    third = duration / 3
    # 1) a sine from rest to rest: q = mid + a (1 - cos(w t)) / 2, |qd| <= a w / 2
    w_max = np.minimum(2 * vmax / np.maximum(amp * 0.8, 1e-9), 2 * np.pi * 0.5)
    cycles = np.maximum(np.floor(w_max * third / (2 * np.pi)), 1.0)  # whole cycles: ends at rest
    w = 2 * np.pi * cycles / third
    a = np.minimum(np.minimum(amp * 0.8, 2 * vmax / w), 2 * amax / w**2)  # |qdd| = a w^2 / 2
    seg = t < third
    ts_ = t[seg, None]
    q[seg] = mid + a * (1 - np.cos(w * ts_)) / 2
    qd[seg] = a * w * np.sin(w * ts_) / 2
    qdd[seg] = a * w * w * np.cos(w * ts_) / 2
    # 2) three quintic point-to-point moves (peak speed 1.875 d / T), steps limited to the bound
    k0 = int(seg.sum())
    move = third / 3
    # peak speed 1.875 d / T, peak acceleration 10 / sqrt(3) d / T^2
    reach = 0.95 * np.minimum(vmax * move / 1.875, amax * move**2 * np.sqrt(3) / 10)
    points = [q[k0 - 1].copy() if k0 else mid.copy()]
    for _ in range(3):
        target = mid + amp * rng.uniform(-0.8, 0.8, n)
        points.append(points[-1] + np.clip(target - points[-1], -reach, reach))
    for m in range(3):
        idx = slice(k0 + int(round(m * move / ts)), k0 + int(round((m + 1) * move / ts)))
        tt = t[idx] - t[idx][0]
        q[idx], qd[idx], qdd[idx] = quintic(points[m], points[m + 1], tt, move)
    # 3) a trapezoidal-velocity move back towards the middle (accelerate 1/4, cruise, decelerate 1/4)
    k1 = k0 + int(round(3 * move / ts))
    tt = t[k1:] - t[k1]
    t_total = max(float(tt[-1]) if len(tt) else 0.0, 1e-9)
    t_acc = t_total / 4
    v_top = 0.95 * np.minimum(vmax, amax * t_acc)  # |qdd| = v / t_acc
    d = np.clip(mid - points[-1], -v_top * (t_total - t_acc), v_top * (t_total - t_acc))
    v = d / (t_total - t_acc)
    s_acc = np.clip(tt, 0, t_acc)[:, None]
    s_dec = np.clip(tt - (t_total - t_acc), 0, t_acc)[:, None]
    q[k1:] = (
        points[-1]
        + v / (2 * t_acc) * s_acc**2
        + v * np.clip(tt - t_acc, 0, t_total - 2 * t_acc)[:, None]
        + v * s_dec
        - v / (2 * t_acc) * s_dec**2
    )
    qd[k1:] = v * (np.clip(tt / t_acc, 0, 1) - np.clip((tt - (t_total - t_acc)) / t_acc, 0, 1))[:, None]
    qdd[k1:] = (v / t_acc) * ((tt < t_acc) * 1.0 - (tt > t_total - t_acc) * 1.0)[:, None]
    if np.any(np.max(np.abs(qd), axis=0) > vmax * (1 + 1e-9)) or np.any(
        np.max(np.abs(qdd), axis=0) > amax * (1 + 1e-9)
    ):
        raise ValueError(f"generated trajectory exceeds {speed:g} x the velocity or acceleration limit; lower span")
    return Trajectory(f"generated(seed={seed})", t, q, qd, qdd)


def trapezoid_trajectory(robot: Robot, velocity: float, ts: float, cruise: float = 4.0) -> Trajectory:
    """Every joint accelerates from rest to ``velocity`` (at speed 1 x its acceleration limit, at
    most 1 s), cruises for ``cruise`` s and stops, centred in its range: the motion of Liu et al.'s
    switch-on test (Fig. 7, estimators activated during the constant-velocity part)."""
    lo, hi, vmax, amax = _bounds(robot, 1.0)
    if np.any(velocity > vmax):
        raise ValueError(f"{velocity:g} rad/s exceeds a joint's velocity limit")
    t_acc = float(min(1.0, np.max(velocity / amax)))
    travel = velocity * (t_acc + cruise)
    start = (lo + hi) / 2 - travel / 2
    t = np.arange(0.0, 2 * t_acc + cruise + 1e-12, ts)
    s_acc = np.clip(t, 0, t_acc)
    s_dec = np.clip(t - t_acc - cruise, 0, t_acc)
    v = velocity / t_acc
    pos = v / 2 * s_acc**2 + velocity * np.clip(t - t_acc, 0, cruise) + velocity * s_dec - v / 2 * s_dec**2
    vel = v * s_acc - v * s_dec
    acc = v * ((t < t_acc) * 1.0 - ((t > t_acc + cruise) & (t < 2 * t_acc + cruise)) * 1.0)
    ones = np.ones(robot.dof)
    return Trajectory(
        f"trapezoid({velocity:g} rad/s)", t, start + pos[:, None] * ones, vel[:, None] * ones, acc[:, None] * ones
    )
