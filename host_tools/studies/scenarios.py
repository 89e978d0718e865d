"""Closed-loop scenarios on the loopback: a collision with a tip force, detected by the momentum
observer; a short estimator comparison. Used by ``manipgen demo`` and the tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import Run, simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory, generated_trajectory


@dataclass
class CollisionResult:
    thresholds: np.ndarray  # N m per joint, from the contact-free run
    onset_s: float  # contact starts
    detected_s: float | None  # first sample with out.collision (None: missed)
    link: int  # isolated link (1-based, 0: none), as latched at the end of the run
    false_alarm: bool  # flagged before the contact
    peak_r: np.ndarray  # max |r| per joint during the contact
    free: Run
    hit: Run

    @property
    def delay_ms(self) -> float | None:
        return None if self.detected_s is None else 1e3 * (self.detected_s - self.onset_s)


def tip_force_torque(
    robot: Robot, q: np.ndarray, force: np.ndarray, start: float, stop: float, ts: float, rise: float = 0.01
) -> np.ndarray:
    """tau_ext (K, n) = J_tip(q)^T [F; 0] for a tip force F (base frame, N) between start and stop,
    ramped over ``rise`` s at both ends (a filtered step)."""
    dyn = load(robot)
    t = np.arange(len(q)) * ts
    shape = np.clip((t - start) / rise, 0, 1) * np.clip((stop - t) / rise, 0, 1)
    wrench = np.concatenate([force, np.zeros(3)])
    return np.array([s * (dyn.tip_jacobian(qk).T @ wrench) if s > 0 else np.zeros(len(qk)) for s, qk in zip(shape, q)])


def collision(
    robot: Robot,
    duration: float = 8.0,
    onset: float = 4.0,
    length: float = 0.3,
    force: float = 30.0,
    direction: tuple[float, float, float] | None = None,
    margin: float = 1.5,
    floor: float = 0.2,
    rt: Realtime | None = None,
    trajectory: Trajectory | None = None,
) -> CollisionResult:
    """A contact-free run of another motion sets per-joint thresholds (margin x max |r| + floor); the
    test motion without contact gives the joint positions the force acts at, and with a
    tip force of ``force`` N from ``onset`` for ``length`` s must be flagged after the onset, the
    isolated link being the highest joint the force loads, with the stop reaction. ``direction``
    (base frame) defaults to the one the joints feel most at the onset (the tip Jacobian's first
    left singular vector), so that any robot gets a detectable push."""
    rt = rt or load_rt(robot)
    ts = rt.sample_period
    traj = trajectory or generated_trajectory(robot, duration, ts)
    rt.config["det.threshold"] = 1e9
    # thresholds from a different contact-free motion (another seed): a false alarm stays possible
    calibration = simulate(rt, generated_trajectory(robot, duration, ts, seed=11))
    thresholds = margin * np.max(np.abs(calibration.out["r"]), axis=0) + floor
    free = simulate(rt, traj)
    rt.config["det.threshold"] = thresholds
    rt.config["det.reaction"] = 1
    q_true = free.log.extra["q_true"]
    k0 = int(round(onset / ts))
    if direction is None:
        u = np.linalg.svd(load(robot).tip_jacobian(q_true[k0])[:3])[0][:, 0]
    else:
        u = np.asarray(direction, float) / np.linalg.norm(direction)
    tau_ext = tip_force_torque(robot, q_true, force * u, onset, onset + length, ts)
    hit = simulate(rt, traj, tau_ext=tau_ext)
    flagged = np.flatnonzero(hit.out["collision"])
    first = int(flagged[0]) if len(flagged) else None
    return CollisionResult(
        thresholds=thresholds,
        onset_s=onset,
        detected_s=None if first is None else first * ts,
        link=int(hit.out["link"][-1]),  # latched: the highest joint seen above threshold
        false_alarm=first is not None and first < k0,
        peak_r=np.max(np.abs(hit.out["r"][k0 : k0 + int(length / ts)]), axis=0),
        free=free,
        hit=hit,
    )


def estimator_table(robot: Robot, estimators: tuple[str, ...], duration: float = 8.0) -> list[tuple[str, float, float]]:
    """(estimator, ISE of the velocity estimate, ISE of tracking), summed over joints, one run each."""
    rows = []
    for est in estimators:
        rt = load_rt(robot, estimator=est)
        rt.config["det.threshold"] = 1e9
        run = simulate(rt, generated_trajectory(robot, duration, rt.sample_period))
        rows.append((est, float(run.ise_velocity.sum()), float(run.ise_tracking.sum())))
    return rows
