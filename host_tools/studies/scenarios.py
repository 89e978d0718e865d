"""Closed-loop scenarios on the loopback: a collision with a tip force, detected by the momentum
observer; a short estimator comparison. Used by ``manipgen demo`` and the tests."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import Run, simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory, generated_trajectory

# The demo's motion and push fitted to the description's limits (fit_to_limits), so that a small arm
# gets a motion and a push it can carry out (a motion or push made for a big arm pins tau_cmd at a
# small arm's limits, and a saturated run says nothing about detection). The rule:
# - centre: the middle of each joint's range (+-pi for a continuous joint), unless holding it needs
#   more than HOLD_SHARE of a joint's torque limit; then the posture within the ranges that needs the
#   least (the largest |g_i| / tau_max_i; coordinate search over CENTRE_GRID points per joint, inside
#   the range: at its ends the motion would have no room, and a +-pi end is where an encoder wraps).
# - motion: the test motions (generated_trajectory, the run's and the calibration's) at SPEED x the
#   velocity and acceleration limits and SPAN of each range around the centre, both scaled down by
#   SLOWER until the inverse dynamics (gravity, friction and inertia along the desired motion) needs
#   at most MOTION_SHARE of every joint's torque limit, down to MIN_SCALE (then the fit fails and
#   says so). The other half is the feedback's (tracking errors, the estimate's noise, the stop
#   reaction's braking) and the push's.
# - push: PUSH_N newtons (a light push), halved while the stop does not hold the arm once the push is
#   over: tau_cmd at a limit from HELD_S after the push's end (at most PUSH_TRIES runs, fit_push).
#   HELD_S = 0.1 s = 1 / sqrt(kp), the computed-torque loop's time constant at the default gain:
#   braking at the limit right after the detection is the stop's, as on a real arm (planar2 at
#   2 rad/s: kd v = 26 rad/s^2 > its 20 rad/s^2), but an arm still pinned at its limits after the
#   push is gone was thrown out of control. A static budget (J^T F within what the motion leaves of
#   each limit) misses it: a light wrist (the Kinova Jaco2's: ~550 rad/s^2 per 30 N at the demo's
#   posture) is thrown 3 rad and at 18 rad/s by a push its limits carry statically, and tau_cmd stays
#   pinned for seconds after it. The velocity limits are not used for the push: a push drives a
#   light wrist past them at any detectable force (the Jaco2's at 3 N, 3.5 x).
# An arm whose motion needs < MOTION_SHARE of its limits keeps the middle, SPEED, SPAN and PUSH_N (the
# iiwa, UR5, Panda and LWA-4P).
SPEED = 0.5  # generated_trajectory's defaults
SPAN = 0.3
HOLD_SHARE = 0.25
CENTRE_GRID = 31
SLOWER = 0.8
MIN_SCALE = 0.1
MOTION_SHARE = 0.5
PUSH_N = 30.0
PUSH_TRIES = 4
HELD_S = 0.1
CALIBRATION_SEED = 11  # the thresholds' contact-free run: another motion than the test's (seed 0)
# a clamped output equals its limit; 1e-6 relative covers the limit's rounding to float (6e-8)
AT_LIMIT = 1e-6


def torque_limits(robot: Robot) -> np.ndarray:
    """Per joint N m (or N); inf where the description gives none."""
    return np.array([j.limits.tau for j in robot.joints], float)


def saturated(tau_cmd: np.ndarray, tau_max: np.ndarray) -> np.ndarray:
    """Samples per joint with |tau_cmd| at the limit (the controller's clamp), (n,)."""
    return np.sum(np.abs(tau_cmd) >= np.asarray(tau_max) * (1 - AT_LIMIT), axis=0)


@dataclass(frozen=True)
class Motion:
    """The generated test motion's scaling (generated_trajectory's speed, span and centre)."""

    speed: float = SPEED
    span: float = SPAN
    centre: np.ndarray | None = None  # None: the middle of each range

    def trajectory(self, robot: Robot, duration: float, ts: float, seed: int = 0) -> Trajectory:
        return generated_trajectory(robot, duration, ts, seed, self.speed, self.span, self.centre)


@dataclass(frozen=True)
class Fit:
    """The demo's motion and push, fitted to the limits (module notes)."""

    motion: Motion
    motion_peak: np.ndarray  # max |tau| of the inverse dynamics along the motions, per joint
    tau_max: np.ndarray
    force: float = PUSH_N  # N, the push (fit_push)

    @property
    def motion_fits(self) -> bool:
        return bool(np.all(self.motion_peak <= MOTION_SHARE * self.tau_max))


def _centre(robot: Robot, tau_max: np.ndarray) -> np.ndarray | None:
    """The motion's centre (module notes): None for the middle of the ranges."""
    dyn = load(robot)
    lo = np.array([j.limits.q_min if np.isfinite(j.limits.q_min) else -np.pi for j in robot.joints])
    hi = np.array([j.limits.q_max if np.isfinite(j.limits.q_max) else np.pi for j in robot.joints])
    q = (lo + hi) / 2

    def worst(x: np.ndarray) -> float:
        return float(np.max(np.abs(dyn.gravity(x)) / tau_max))

    if worst(q) <= HOLD_SHARE:
        return None
    for _ in range(2):  # two sweeps of a coordinate search
        for i in range(robot.dof):
            for v in np.linspace(lo[i], hi[i], CENTRE_GRID + 2)[1:-1]:
                x = q.copy()
                x[i] = v
                if worst(x) < worst(q):
                    q = x
    return q


def _motion_peak(robot: Robot, motion: Motion, duration: float, ts: float) -> np.ndarray:
    """max |tau_id| per joint over the test and calibration motions (every 5th sample: the motions are
    smooth over 5 ms)."""
    dyn = load(robot)
    peak = np.zeros(robot.dof)
    for seed in (0, CALIBRATION_SEED):
        traj = motion.trajectory(robot, duration, ts, seed)
        for k in range(0, len(traj.time), 5):
            peak = np.maximum(peak, np.abs(dyn.rnea(traj.q[k], traj.qd[k], traj.qdd[k])))
    return peak


def fit_to_limits(robot: Robot, ts: float, duration: float = 8.0, tau_max: np.ndarray | None = None) -> Fit:
    """The motion of the module notes' rule (``tau_max``: the limits, default the description's);
    the push: fit_push."""
    tau_max = torque_limits(robot) if tau_max is None else np.asarray(tau_max, float)
    centre = _centre(robot, tau_max)
    scale = 1.0
    motion = Motion(centre=centre)
    peak = _motion_peak(robot, motion, duration, ts)
    while np.any(peak > MOTION_SHARE * tau_max) and scale * SLOWER >= MIN_SCALE:
        scale *= SLOWER
        motion = Motion(SPEED * scale, SPAN * scale, centre)
        peak = _motion_peak(robot, motion, duration, ts)
    return Fit(motion, peak, tau_max)


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
    motion: Motion = Motion(),
) -> CollisionResult:
    """A contact-free run of another motion sets per-joint thresholds (margin x max |r| + floor); the
    test motion without contact gives the joint positions the force acts at, and with a
    tip force of ``force`` N from ``onset`` for ``length`` s must be flagged after the onset, the
    isolated link being the highest joint the force loads, with the stop reaction. ``direction``
    (base frame) defaults to the one the joints feel most at the onset (the tip Jacobian's first
    left singular vector), so that any robot gets a detectable push. ``motion``: the generated
    motions' scaling (fit_to_limits)."""
    rt = rt or load_rt(robot)
    ts = rt.sample_period
    traj = trajectory or motion.trajectory(robot, duration, ts)
    rt.config["det.threshold"] = 1e9
    # thresholds from a different contact-free motion (another seed): a false alarm stays possible
    calibration = simulate(rt, motion.trajectory(robot, duration, ts, CALIBRATION_SEED))
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


def fit_push(
    robot: Robot, rt: Realtime, fit: Fit, duration: float = 8.0
) -> tuple[CollisionResult, Fit, np.ndarray, np.ndarray]:
    """The collision run (``duration`` s, the push at half time) with the push halved while the stop
    does not hold the arm after it (module notes): the result, the fit with the push used, and the
    saturated samples per joint of the last run, all and from HELD_S after the push."""
    tau_max = np.asarray(rt.config["ctl.tau_max"], float) if "ctl.tau_max" in rt.config.keys() else fit.tau_max
    force = PUSH_N
    for tries in range(PUSH_TRIES):
        force = PUSH_N / 2**tries
        r = collision(robot, duration, duration / 2, rt=rt, motion=fit.motion, force=force)
        tau_cmd = r.hit.log.extra["tau_cmd"]
        pushed = np.flatnonzero(np.any(r.hit.log.extra["tau_ext_true"] != 0, axis=1))
        held = int(pushed[-1]) + 1 + int(round(HELD_S / rt.sample_period)) if len(pushed) else 0
        after = saturated(tau_cmd[held:], tau_max)
        if not after.any():
            break
    return r, replace(fit, force=force), saturated(tau_cmd, tau_max), after


def estimator_table(
    robot: Robot, estimators: tuple[str, ...], duration: float = 8.0, motion: Motion = Motion()
) -> list[tuple[str, float, float]]:
    """(estimator, ISE of the velocity estimate, ISE of tracking), summed over joints, one run each
    (the generated motion scaled as ``motion``)."""
    rows = []
    for est in estimators:
        rt = load_rt(robot, estimator=est)
        rt.config["det.threshold"] = 1e9
        run = simulate(rt, motion.trajectory(robot, duration, rt.sample_period))
        rows.append((est, float(run.ise_velocity.sum()), float(run.ise_tracking.sum())))
    return rows
