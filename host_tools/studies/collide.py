"""`manipgen collide`: the collision-detection scenario of Birjandi & Haddadin §IV on the loopback, for every
residual the pipeline can generate -- the momentum observer, the model-adaptive observer and the
direct method, the last two once with the Kalman estimator's qd, qdd (encoders only) and once with
the plant's exact qd, qdd (``*_measured``: Birjandi & Haddadin's IMU-fused assumption), and fed by the ``imu``
estimator reading simulated IMUs (``*_imu``: one BMI055 per link, the description's ``imus:``;
``*_imu_tip``: one at the tip frame; host_tools.bindings.imu_sensors: the same sensors throughout,
a new noise sequence every run, a collision run keeping the check run's up to its push: _from_check).

The controller's (and observers') model is the description's with every inertial (link) parameter
scaled by U(1 -+ model_error) (Birjandi & Haddadin eq. 22; friction and rotor inertia exact unless
``friction_error``: then the joint parameters too); the plant keeps the true ones.

Per observer the thresholds are designed on a collision-free design run -- ``warmup_motions``
smooth 20 s motions the design leaves out (the observers converge: an adaptive observer's learning
transient is not what a robot in operation shows), then ``design_motions`` more, one after the
other -- as ``manipgen thresholds`` designs them (host_tools.studies.thresholds, issue #24): per
joint the level that covers every |r| of the design motions, times the margin that brings the
worst of ``design_motions`` held-out blocks (one motion each) to ``target`` (static: a constant per
joint; ``shape="fitted"``: with the velocity, acceleration and standstill parts). Every later run
continues from the end of the design run (the pipeline's state and the plant's, as on a robot in
operation):
- the check motion, another motion without collisions, counts the false alarms the thresholds give
  on a motion they were not designed on (rising edges of "some joint above");
- the check motion again, now with the collisions (so that no delay is measured on a motion the
  thresholds were designed on), as in Birjandi & Haddadin §IV: a step of ``amplitude`` on one joint,
  low-passed at each cut-off frequency (first order, Birjandi & Haddadin Fig. 6), held ``hold`` s (or
  until it has reached 95 % of its amplitude: step_hold), at each
  event time, one run per event; the delay is from the event to the first sample with a
  joint above its threshold (debounce 1);
- then impacts: at the instant of that motion whose tip speed is closest to each of
  ``impact_speeds``, a plane appears through the tip, facing its velocity, for ``hold`` s
  (Hunt-Crossley contact, Kirchhoff (2011) eq. 5.19 with its k = 10 kN/m, alpha = 0.04 s/m, flat surface;
  targets above the motion's top tip speed share its fastest instant, which is used once); the
  delay is from the impact.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy.signal import lfilter

from codegen.blocks import kalman, momentum
from codegen.model.robot import LINK_PARAMS, STANDIN_LIMITS, Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.imu_sensors import ImuSensors
from host_tools.bindings.loopback import (
    Contact,
    Replays,
    Run,
    contact_from,
    contact_samples,
    replay,
    resume,
    simulate,
    tail,
)
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.bindings.source import RobotSource
from host_tools.data.logs import Log
from host_tools.data.trajectories import Trajectory
from host_tools.identification.excitation import random_excitation
from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES, Entry
from host_tools.studies.commissioning import MODELS, identified_parameters
from host_tools.studies.imu_calibration import calibrate
from host_tools.studies.paper_setups import COLLISION, COLLISION_SETUPS, calibrates_imus, kalman_loop_gains
from host_tools.studies.thresholds import (
    TARGET,
    Thresholds,
    coulomb_floor,
    count_floor,
    design_from_outputs,
    holds,
    threshold_along,
)

Progress = Callable[[str], None]
SHAPES = ("static", "fitted")


@dataclass(frozen=True)
class CollideSettings:
    model_error: float = 0.1
    duration: float = 20.0  # s per motion (Birjandi & Haddadin: 20 s)
    cutoffs: tuple[float, ...] = (1.0, 10.0, 100.0)  # Hz, of the filtered steps
    amplitude: float = 5.0  # N m (N)
    # 1-based joint the torque acts on: Birjandi & Haddadin §IV applies "the external force to the first link
    # only"; on the iiwa joint 2 carries the arm's weight, and 10 % of its gravity torque (8 N m)
    # hides a 5 N m step from every residual that does not adapt (docs/collision.md, --joint 2)
    joint: int = 1
    hold: float = 0.3  # s
    events: tuple[float, ...] = (6.0, 12.0, 18.0)  # s from the start
    window: float = 0.5  # s after an event in which a detection counts
    skip: float = 1.0  # s of start-up left out everywhere
    adaptive_gain: float = 100.0  # Birjandi & Haddadin's K (the momentum observer keeps its K_O)
    impact_speeds: tuple[float, ...] = (0.1, 0.25, 0.5)  # m/s, Hunt-Crossley impacts of the tip
    seed: int = 0
    observers: tuple[str, ...] = DEFAULT_OBSERVERS
    friction_error: bool = False  # the model error also on the joint parameters (FV, FC, ...)
    shape: str = "static"  # the thresholds' shape: "static" or "fitted" (design_thresholds)
    target: float = TARGET  # the worst held-out max |r| / threshold the design's margin gives
    # collision-free motions of the design run: one 20 s motion's largest |r| does not bound another's
    # (measured on kuka_iiwa14, momentum: 0.6-2.6 N m over ten motions), several with one held out
    # at a time do (docs/collision.md)
    design_motions: int = 5
    # collision-free motions run before the design run and left out of the design: the thresholds
    # are for the converged observer that every later run continues with; without it the adaptive
    # observer's learning transient (its first seconds) set a held-out margin of 7.6 where the later
    # blocks need 1.1 (kuka_iiwa14 seed 1, docs/collision.md)
    warmup_motions: int = 1
    # the set-up record the pipelines run (paper_setups.COLLISION_SETUPS): "collide", the product's
    # (the model-adaptive observers hold their adaptation near the threshold), or "birjandi",
    # Birjandi & Haddadin's (their observer adapts through contacts)
    setup: str = "collide"
    # the non-adaptive observers' model (momentum, direct*): "description", the drawn one (Birjandi &
    # Haddadin's set-up), or "identified" on a commissioning run of the warm-up motions
    # (commissioning_motion, host_tools.studies.commissioning); the model-adaptive observers keep the drawn one
    model: str = "description"


@dataclass(frozen=True)
class Learned:
    """Where the design run ended: the pipeline's state and the plant's (at rest near the start
    position, off it by the tracking error the model error leaves)."""

    state: bytes
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray  # the last command: it acts over the sample before the next run's first
    imu: Sensors | None = None


@dataclass
class Sensors:
    """The simulated IMUs of one observer's runs: the same sensors (biases) throughout, a new noise
    sequence for every run."""

    sensors: ImuSensors
    runs: int = 0

    def next(self) -> ImuSensors:
        self.runs += 1
        return replace(self.sensors, noise_seed=self.runs)


def _after(rt: Realtime, learned: Learned, motion: Trajectory, true: np.ndarray, plants: Replays, **kw: Any) -> Run:
    """A closed-loop run of ``motion`` continuing the design run (pipeline and plant where it
    ended: no jump a real arm would not make) under the config set now; the IMUs (if the pipeline
    reads any) with their biases of the design run and a noise sequence of their own."""
    rt.restore(learned.state)
    if learned.imu is not None:
        kw["imu"] = learned.imu.next()
    return plants.simulate(
        rt, motion, true_params=true, reset=False, q0=learned.q, qd0=learned.qd, tau0=learned.tau, **kw
    )


def _from_check(
    rt: Realtime,
    learned: Learned,
    check: Run | None,
    motion: Trajectory,
    k: int,
    runs: Runs,
    plants: Replays,
    **kw: Any,
) -> Run:
    """_after's run of ``motion`` (the check motion up to some sample) pushed from sample ``k`` on
    (kw's ``tau_ext`` 0 before k, or its ``contact`` from k): up to k it is the check run ``check``
    (the same plant and pipeline from the same state, the loopback causal), so it is that run's first k
    samples, then a run from rt's and the plant's state there, bit for bit the whole run. An IMU-fed
    pipeline's run keeps the check run's IMU noise up to k and draws its own after it (its noise
    sequence's samples from k on), the sensors' chain continued from the check run's at k: bit for
    bit the whole run with that noise. Without ``check``'s state at k the whole run from the design
    run's end (with a noise sequence of its own)."""
    if check is None or k not in check.states or (learned.imu is not None and k not in check.imu_states):
        return _after(rt, learned, motion, runs.true, plants, **kw)
    if "tau_ext" in kw:
        if np.any(kw["tau_ext"][:k] != 0):
            raise ValueError(f"the push starts before sample {k}, where the run leaves the check run")
        kw["tau_ext"] = kw["tau_ext"][k:]
    if "contact" in kw:
        kw["contact"] = contact_from(kw["contact"], k, rt.sample_period)
    resume(rt, check.states[k])
    if learned.imu is not None:
        own, m = learned.imu.next(), rt.input_dtype["imu_gyro"].shape[0]
        kw.update(
            imu=own, imu_noise=own.noise(len(motion.time), m, rt.sample_period)[k:], imu_chain=check.imu_states[k]
        )
    extra = check.log.extra
    q0, qd0, tau0 = extra["q_true"][k], extra["qd_true"][k], check.log.tau[k]
    tail = plants.simulate(
        rt, after_sample(motion, k), true_params=runs.true, reset=False, q0=q0, qd0=qd0, tau0=tau0, **kw
    )
    return joined(check, k, tail)


def joined(head: Run, k: int, tail: Run) -> Run:
    """``head``'s first ``k`` samples, then ``tail``, a run that continued it from sample k: the
    outputs and the log of the whole run (an array the head lacks, the external torque, is 0 there)."""

    def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a[:k], b])

    def before(name: str, value: np.ndarray) -> np.ndarray:
        return head.log.extra[name] if name in head.log.extra else np.zeros((k, *value.shape[1:]), value.dtype)

    log = tail.log
    extra = {
        name: cat(before(name, value), value) if isinstance(value, np.ndarray) and len(value) == len(log) else value
        for name, value in log.extra.items()
    }
    whole = Log(
        robot=log.robot,
        sample_period=log.sample_period,
        time=head.log.time[: k + len(log)],
        counts=cat(head.log.counts, log.counts),
        valid=cat(head.log.valid, log.valid),
        tau=cat(head.log.tau, log.tau),
        q_des=cat(head.log.q_des, log.q_des),
        qd_des=cat(head.log.qd_des, log.qd_des),
        qdd_des=cat(head.log.qdd_des, log.qdd_des),
        extra=extra,
    )
    return Run(whole, {name: cat(head.out[name], value) for name, value in tail.out.items()})


def pushed_from(ext: np.ndarray) -> int:
    """The first sample of an external torque (K, n) that is not 0 on every joint (K: none)."""
    pushed = np.flatnonzero(np.any(ext != 0, axis=1))
    return int(pushed[0]) if pushed.size else len(ext)


def concatenated(motions: list[Trajectory]) -> Trajectory:
    """Motions one after the other (each from and to rest at the same position), one time base."""
    ts = float(motions[0].time[1] - motions[0].time[0])
    q = np.concatenate([m.q[:-1] for m in motions[:-1]] + [motions[-1].q])
    qd = np.concatenate([m.qd[:-1] for m in motions[:-1]] + [motions[-1].qd])
    qdd = np.concatenate([m.qdd[:-1] for m in motions[:-1]] + [motions[-1].qdd])
    return Trajectory("+".join(m.name for m in motions), np.arange(len(q)) * ts, q, qd, qdd)


def until(motion: Trajectory, last: int) -> Trajectory:
    """``motion`` up to sample ``last`` (included): a closed-loop run of it is the first samples of the
    whole motion's run, bit for bit (the loopback is causal, the IMU noise drawn sample after sample),
    so a collision run stops after the last sample its delay and traces read."""
    k = min(last + 1, len(motion.time))
    return Trajectory(motion.name, motion.time[:k], motion.q[:k], motion.qd[:k], motion.qdd[:k])


def step_hold(hold: float, cutoff: float) -> float:
    """How long a step low-passed at ``cutoff`` Hz is held: ``hold``, or until the low-pass has reached
    95 % of the step (three time constants, 3 / (2 pi cutoff): 0.48 s at 1 Hz). Held 0.3 s, the 1 Hz
    step reached 85 % of its amplitude (4.24 of 5 N m) when it was released: a smaller contact than
    the one stated, which on planar2 fell below the momentum observer's threshold plus its model-error
    residual at that instant (2.85 N m + 1.3 N m; issue #46)."""
    return max(hold, 3.0 / (2 * np.pi * cutoff))


def filtered_step(
    k: int, n: int, ts: float, joint: int, start: float, hold: float, amplitude: float, cutoff: float
) -> np.ndarray:
    """(k, n) external torque: a step of ``amplitude`` on ``joint`` (0-based) from ``start`` for ``hold``
    s, through a first-order low-pass at ``cutoff`` Hz (exact for the held input)."""
    t = np.arange(k) * ts
    u = np.where((t >= start) & (t < start + hold), amplitude, 0.0)
    u[0] = 0.0  # the filter starts at rest: x[0] = 0
    a = np.exp(-2 * np.pi * cutoff * ts)
    # x[i] = a x[i-1] + (1 - a) u[i] (lfilter's transposed direct form computes exactly these products and sum)
    x = lfilter([1 - a], [1.0, -a], u)
    out = np.zeros((k, n))
    out[:, joint] = x
    return out


def milliseconds(samples: int, ts: float) -> float:
    """A whole number of samples in ms, without the binary fraction's tail (9, not 9.000000000000002)."""
    return round(float(samples * ts * 1e3), 9)


def any_above(out: dict[str, np.ndarray]) -> np.ndarray:
    """Per sample: some joint's |r| above its threshold (the detection before debounce and latch)."""
    return np.asarray(np.any(out["above"] != 0, axis=1), dtype=bool)


def rising_edges(flag: np.ndarray) -> int:
    """The number of alarms in a run of per-sample flags (a flag already up at the start counts)."""
    return int(np.sum(flag[1:] & ~flag[:-1]) + (flag[0] if len(flag) else 0))


@dataclass(frozen=True)
class Impact:
    """One Hunt-Crossley impact: the target tip speed it was placed for, the speed the motion reached
    there (a motion slower than the target: its fastest instant) and the obstacle."""

    target: float  # m/s, one of CollideSettings.impact_speeds
    speed: float  # m/s, the tip's speed at the contact
    contact: Contact

    @property
    def label(self) -> str:
        """The key of its delay in the JSON (speed_label of the speed reached)."""
        return speed_label(self.speed)

    @property
    def figure_label(self) -> str:
        """Its panel's label in the impacts' figure: the target, the speed met where it differs, and
        when (a loop of its own meets a target at another instant: a panel of its own)."""
        met = speed_label(self.speed)
        at = "" if met == f"{self.target:g}" else f", met at {met} m/s"
        return f"{self.target:g} m/s{at}, t = {self.contact.start:.3f} s"


def speed_label(speed: float) -> str:
    """An impact's key in the JSON: the tip speed reached, 3 digits (unique: _impacts keeps one
    impact per label, a later target whose instant has the label of one placed already gets none)."""
    return f"{speed:.3g}"


def _impacts(
    robot: Robot,
    motion: Trajectory,
    model: np.ndarray,
    true: np.ndarray,
    s: CollideSettings,
    entry: Entry | None = None,
) -> list[Impact]:
    """One impact per target impact speed: the plane through the tip at the instant of the
    (collision-free, closed-loop) motion whose tip speed is closest to the target, facing the velocity.
    The motion through the Kalman-fed loop every observer shares, or (``entry``) through that
    observer's estimator's own loop (its IMUs' noise a sequence its runs do not draw)."""
    estimator = choices(entry)[0]
    rt = load_rt(robot, estimator, "none", COLLISION.controller)
    COLLISION_SETUPS[s.setup].apply(rt.config, robot)
    rt.config["model.params"] = model
    imu = ImuSensors(seed=s.seed) if entry is not None and entry.imu else None
    calibrated(rt, robot, entry, s, motion.q[0])
    run = simulate(rt, motion, true_params=true, imu=imu)
    dyn = load(robot)
    ts = motion.time[1] - motion.time[0]
    ks = np.arange(int(s.skip / ts), int((s.duration - s.hold - s.window) / ts), max(1, int(0.01 / ts)))
    q, qd = run.log.extra["q_true"], run.log.extra["qd_true"]
    tips = [(dyn.tip_pose(q[k])[:3, 3], dyn.tip_jacobian(q[k])[:3] @ qd[k]) for k in ks]
    speeds = np.array([np.linalg.norm(v) for _, v in tips])
    out, used = [], set()
    for target in s.impact_speeds:
        i = int(np.argmin(np.abs(speeds - target)))
        if speed_label(speeds[i]) in used:
            continue  # the motion is slower than this target (its fastest instant is taken), or two targets met alike
        used.add(speed_label(speeds[i]))
        p, v = tips[i]
        t = float(ks[i] * ts)
        out.append(
            Impact(
                target,
                float(speeds[i]),
                Contact(point=tuple(p), normal=tuple(-v / np.linalg.norm(v)), start=t, stop=t + s.hold),
            )
        )
    return out


def impact_doc(impact: Impact) -> dict[str, float]:
    """An impact's JSON entry: when, the tip speed reached, and the target speed it stands for (the
    study's rows and the reports' columns group impacts by their target)."""
    return {"time_s": impact.contact.start, "speed_m_s": impact.speed, "target_m_s": impact.target}


def impacts_line(impacts: list[dict[str, float]]) -> str:
    """The reports' sentence on which tip speed each impact column's contact met (impact_doc's entries;
    _impacts: the motion's instant closest to the target, a motion slower than the target its fastest)."""
    met = ", ".join(f"{i['target_m_s']:g} m/s at {speed_label(i['speed_m_s'])} m/s" for i in impacts)
    return (
        f"The impacts of the Kalman-fed loop (target tip speed, met at): {met}; an observer whose loop "
        "differs (its own gains, an identified model) meets its own, for the same targets, at other speeds "
        "(its JSON's impact_targets)."
    )


def delays_by_target(entry: dict[str, Any]) -> dict[float, float | None]:
    """An observer's JSON entry's impact delays by the target speed each impact was placed for (a
    target its loop met no instant of its own for is absent)."""
    return {entry["impact_targets"][label]: d for label, d in entry["impact_delay_ms"].items()}


def standin_doc(joints: list[str]) -> dict[str, Any]:
    """The JSON entry of the stand-in motion limits (codegen.model.robot.STANDIN_LIMITS) for ``joints``."""
    return {"joints": joints} | {kind: list(v) for kind, v in STANDIN_LIMITS.items()}


def check_settings(robot: Robot, s: CollideSettings) -> None:
    """One clear error per setting the scenario cannot run with on this robot."""
    if robot.elastic:
        raise ValueError(
            f"{robot.name} has series-elastic joints: Birjandi & Haddadin's scenario needs a link-side torque; "
            f"run Kirchhoff's with the tau_el observer: manipgen elastic collide {robot.name}"
        )
    if not 1 <= s.joint <= robot.dof:
        raise ValueError(f"--joint must be 1..{robot.dof}, got {s.joint}")
    if s.design_motions < 1 or s.warmup_motions < 0:
        raise ValueError(
            f"the design run needs at least one motion and no negative warm-up, got {s.design_motions}, "
            f"{s.warmup_motions}"
        )
    if not 0 <= s.model_error < 1:
        raise ValueError(f"--model-error must be in [0, 1), got {s.model_error}")
    unknown = [o for o in s.observers if o not in ENTRIES]
    if unknown:
        raise ValueError(f"unknown observer(s) {', '.join(unknown)}; choose from {', '.join(ENTRIES)}")
    longest = max([step_hold(s.hold, c) for c in s.cutoffs] + [s.hold])
    if any(e + longest + s.window > s.duration for e in s.events) or min(s.events) < s.skip:
        raise ValueError("every event (and its window) must lie inside the motion, after the skipped start")
    if s.shape not in SHAPES:
        raise ValueError(f"unknown threshold shape {s.shape!r}; choose from {', '.join(SHAPES)}")
    if s.setup not in COLLISION_SETUPS:
        raise ValueError(f"unknown set-up {s.setup!r}; choose from {', '.join(COLLISION_SETUPS)}")
    if s.model not in MODELS:
        raise ValueError(f"unknown model {s.model!r}; choose from {', '.join(MODELS)}")


def identifies(s: CollideSettings) -> bool:
    """Whether the draw needs the commissioning run's model: --model identified and a non-adaptive
    observer to run on it (the model-adaptive ones keep the drawn model)."""
    return s.model == "identified" and any(not ENTRIES[o].observer.adaptive for o in s.observers)


def shared_runs(robot: Robot, s: CollideSettings, identify: bool | None = None) -> Runs:
    """The model (Birjandi & Haddadin eq. 22), the motions and the impacts every observer's runs share;
    with ``identify`` (default: whether ``s``'s observers need it) the commissioning run's model too."""
    true = robot.standard_parameters()
    inertial = np.array([name.rstrip("0123456789") in LINK_PARAMS for name in robot.standard_parameter_names])
    factor = 1 + np.random.default_rng(s.seed).uniform(-s.model_error, s.model_error, true.shape)
    # Birjandi & Haddadin eq. 22: the inertial parameters (and with friction_error the joint parameters too)
    model = true * np.where(inertial | s.friction_error, factor, 1.0)
    ts = robot.sample_period
    # smooth 20 s Fourier motions (Birjandi & Haddadin §IV): acceleration steps would make the inertial model error
    # a fast signal, which no residual separates from a collision
    # (each starts and ends at rest in the middle of the joints' ranges: they follow one another)
    motions = [
        random_excitation(robot, s.seed + 1 + i, base_frequency=1 / s.duration, rate=1 / ts).trajectory(ts)
        for i in range(s.design_motions + 1 + s.warmup_motions)
    ]
    # the warm-up motions (seeds after the check motion's), then the design motions
    warmup = motions[s.design_motions + 1 :]
    design, test = concatenated(warmup + motions[: s.design_motions]), motions[s.design_motions]
    collided = test  # the collisions and impacts happen on the check motion: held out from the design
    k0 = int(round(s.skip / ts))
    k_design = sum(len(m.time) for m in warmup) if warmup else k0  # where the design's samples start
    impacts = _impacts(robot, collided, model, true, s)
    # no threshold below what a count's flip moves the residual by (issue #46): the exact-motion
    # observers' thresholds otherwise sit at the design motion's count steps, and a stiffer place on
    # another motion crosses them (planar2's adaptive_measured: 6 false alarms)
    least = count_floor(robot, model, (design.q[k_design:], design.qd[k_design:], design.qdd[k_design:]), s.target)
    # nor a level at rest below what Coulomb friction's sign can flip it by
    at_rest = coulomb_floor(robot, model, s.target)
    runs = Runs(design, test, collided, impacts, model, true, k_design, k0, least, at_rest)
    wanted = identifies(s) if identify is None else identify
    return replace(runs, identified=_identified(robot, s, runs)) if wanted else runs


def commissioning_motion(s: CollideSettings, runs: Runs) -> Trajectory:
    """The motions ``--model identified`` identifies on: the warm-up motions, which the threshold
    design leaves out, so that each of its held-out blocks sees the model's error on a motion it was
    not fitted on, as the check motion does (fitted on the design motions, the residual there is
    in-sample and the thresholds understate the next motion's: thresholds' cross-fitting, issue #44).
    Without a warm-up, the design motions (the thresholds then see the in-sample residual)."""
    return until(runs.design, runs.k_design - 1) if s.warmup_motions > 0 else runs.design


def _identified(robot: Robot, s: CollideSettings, runs: Runs) -> Runs:
    """The draw's runs for the non-adaptive observers under ``--model identified``: the model
    identified on the commissioning run (commissioning_motion through collide's loop on the drawn
    model), the impacts placed on the loop that model closes (the plane meets the tip where that
    loop takes it), and its count floor."""
    rt = load_rt(robot, *choices(None))
    COLLISION_SETUPS[s.setup].apply(rt.config, robot)
    rt.config["model.params"] = runs.model
    params = identified_parameters(robot, rt, commissioning_motion(s, runs), runs.true)
    k = runs.k_design
    least = count_floor(robot, params, (runs.design.q[k:], runs.design.qd[k:], runs.design.qdd[k:]), s.target)
    return replace(
        runs,
        model=params,
        impacts=_impacts(robot, runs.collided, params, runs.true, s),
        least=least,
        at_rest=coulomb_floor(robot, params, s.target),
    )


def _document(robot: Robot, s: CollideSettings, impacts: list[Impact]) -> dict[str, Any]:
    """The JSON document's head: the settings and where the thresholds, false alarms and collisions come from."""
    seeds = f"{s.seed + 1}-{s.seed + s.design_motions}" if s.design_motions > 1 else f"{s.seed + 1}"
    first_warmup = s.seed + 2 + s.design_motions
    warmup_seeds = f"{first_warmup}" + (f"-{first_warmup + s.warmup_motions - 1}" if s.warmup_motions > 1 else "")
    return {
        "robot": robot.name,
        "settings": asdict(s),
        "thresholds_from": f"the design run: {s.design_motions} collision-free {s.duration:g} s motions (random "
        f"excitations, seeds {seeds}) one after the other, "
        + (
            f"after {s.warmup_motions} warm-up motion(s) (random excitation, seed {warmup_seeds}; left out: "
            "the observers converge)"
            if s.warmup_motions
            else f"after its first {s.skip:g} s"
        )
        + f": {s.shape} "
        f"thresholds covering every |r|, times the margin that brings the worst of {s.design_motions} held-out "
        f"blocks (one motion each) to {s.target:g} (manipgen thresholds' design)",
        "false_alarms_on": f"the check motion (random excitation, seed {s.seed + 1 + s.design_motions}), "
        f"collision-free, {s.duration:g} s, run after the design run (the observers keep what they learned)",
        "collisions_on": f"the check motion (seed {s.seed + 1 + s.design_motions}), held out from the design, "
        "run after the design run",
        "observers": {},
        "impacts": [impact_doc(i) for i in impacts],
    }


@dataclass
class CollideResult:
    doc: dict[str, Any]  # the JSON document (host_tools.reports.collision writes it)
    arrays: dict[str, Any]  # the figures' traces (host_tools.reports.plots.collision)


def scenario(
    source: RobotSource,
    settings: CollideSettings = CollideSettings(),
    progress: Progress = lambda _: None,
    executor: Executor | None = None,
) -> CollideResult:
    """The scenario on ``source``'s robot. ``executor``: runs the observers fed alike as pure items
    (feed_item; default: here, one after the other, with progress inside each)."""
    s = settings
    robot = source.robot()
    check_settings(robot, s)
    t0 = time.perf_counter()
    if identifies(s):
        on = "warm-up" if s.warmup_motions else "design"
        progress(f"commissioning run: identifying the non-adaptive observers' model on the {on} motions")
    runs = shared_runs(robot, s)
    doc = _document(robot, s, runs.impacts)
    if runs.identified is not None:
        doc["model"] = _identified_doc(robot, s, runs)
    arrays: dict[str, Any] = {
        "ts": robot.sample_period,
        "joint": s.joint - 1,
        "runs": {},
        "free_ratio": {},
        "impacts": {},
    }
    found: dict[str, ObserverResult] = {}
    if executor is None:
        for group in feeds(s.observers):
            found.update(zip(group, feed_item(source, s, group, runs, progress)))
    else:
        futures = {group: executor.submit(feed_item, source, s, group, runs) for group in feeds(s.observers)}
        for group, fu in futures.items():
            found.update(zip(group, fu.result()))
    for obs in s.observers:
        got = found[obs]
        progress(f"{obs}: done")
        doc["observers"][obs] = got.entry
        arrays["free_ratio"][obs] = got.free_ratio
        arrays["runs"].update(got.runs)
        # an identified model's loop meets its impacts elsewhere: its own traces
        tag = ", identified model's loop" if got.entry.get("model") == "identified" else ""
        for panel, (time_ms, force, estimate, ratio) in got.impacts.items():
            label = panel + tag
            if label not in arrays["impacts"]:  # the plant's motion is the same for every observer of a loop
                arrays["impacts"][label] = ImpactTrace(label, time_ms, force, float(np.max(force)), {}, {})
            arrays["impacts"][label].estimates[obs] = estimate
            arrays["impacts"][label].ratio[obs] = ratio
    baseline = momentum.SPEC.name
    if baseline in doc["observers"]:  # each observer's thresholds against momentum's, equal design
        largest = max(doc["observers"][baseline]["threshold_mean"])
        for o in doc["observers"].values():
            o["ratio_to_momentum"] = max(o["threshold_mean"]) / largest
    doc["seconds"] = time.perf_counter() - t0
    return CollideResult(doc, arrays)


def _identified_doc(robot: Robot, s: CollideSettings, runs: Runs) -> dict[str, Any]:
    """What --model identified changed: each model's inverse-dynamics torque error against the plant's
    along the check motion (RMS per joint, N m or N, every 10th sample: the standard parameters
    themselves are not identifiable one by one, their torque is) and the impacts the non-adaptive
    observers meet (placed on their own loop)."""
    assert runs.identified is not None
    dyn = load(robot)
    m = runs.test
    at = range(0, len(m.time), 10)

    def error(model: np.ndarray) -> list[float]:
        d = [
            dyn.rnea(m.q[k], m.qd[k], m.qdd[k], params=model) - dyn.rnea(m.q[k], m.qd[k], m.qdd[k], params=runs.true)
            for k in at
        ]
        return np.sqrt(np.mean(np.square(d), axis=0)).tolist()

    return {
        "non_adaptive": f"identified on the commissioning run (the {'warm-up' if s.warmup_motions else 'design'} "
        "motions in closed loop on the drawn model)",
        "model_adaptive": "the drawn model (adapted on line)",
        "torque_error_rms": {"drawn": error(runs.model), "identified": error(runs.identified.model)},
        "identified_impacts": [impact_doc(i) for i in runs.identified.impacts],
    }


def feeds(observers: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The observers by their feed (the estimator of their pipeline), in order, those that read the
    plant's motion first (the most of it first: their runs record every input the others read)."""
    groups: dict[str, list[str]] = {}
    for obs in observers:
        groups.setdefault(ENTRIES[obs].estimator, []).append(obs)
    measured = {obs: -len(ENTRIES[obs].observer.motion) if ENTRIES[obs].observer.measured else 0 for obs in observers}
    return [tuple(sorted(g, key=measured.__getitem__)) for g in groups.values()]


def feed_item(
    source: RobotSource, s: CollideSettings, observers: tuple[str, ...], runs: Runs, progress: Progress = lambda _: None
) -> list[ObserverResult]:
    """observer_item for observers fed alike, one after the other (a pure work item). Each plant run
    is simulated once: with reaction 0 (COLLISION_SETUPS) an observer moves nothing, so the
    pipelines of one feed send the same commands and each later observer's runs are the first one's
    replayed through its pipeline (host_tools.bindings.loopback.replay: bit for bit the closed loop
    wherever its commands equal the recorded ones, checked at every sample; a run where they differ,
    e.g. under a reaction, is simulated in closed loop)."""
    plants = Replays(record=len(observers) > 1)
    return [observer_item(source, s, obs, runs, progress, plants=plants) for obs in observers]


@dataclass
class ImpactTrace:
    """One impact seen by the observers of one loop, for ``impact_figure``: times in ms from the contact."""

    label: str
    time_ms: np.ndarray
    force: np.ndarray  # the true contact force along the obstacle normal, N
    peak: float  # N
    estimates: dict[str, np.ndarray]  # observer -> its tip-force estimate along the normal, N
    ratio: dict[str, np.ndarray]  # observer -> max_j |r_j| / threshold_j


def threshold_ratio(r: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """max_j |r_j| / threshold_j per sample (``threshold`` (n,) or along the run (K, n)): a detection
    is a ratio above 1."""
    return np.asarray(np.abs(r) / np.asarray(threshold), float).max(axis=1)


def tip_force_along(
    q: np.ndarray, tau: np.ndarray, jacobian: Callable[[np.ndarray], np.ndarray], normal: np.ndarray
) -> np.ndarray:
    """f·n with f the force part of (Jᵀ)⁺ tau, the tip wrench that explains the joint torques tau
    (Birjandi & Haddadin eq. 28; exact for a force at the tip when J has rank 6, the least-norm wrench below)."""
    # one stacked pseudo-inverse (the same LAPACK call per sample as one at a time)
    inverse = np.linalg.pinv(np.transpose(np.array([jacobian(qk) for qk in q]), (0, 2, 1)))
    return np.array([(ik[:3] @ tk) @ normal for ik, tk in zip(inverse, tau)])


@dataclass(frozen=True)
class Runs:
    """What every observer's runs share: the motions, the impacts, the model and the plant."""

    design: Trajectory
    test: Trajectory
    collided: Trajectory
    impacts: list[Impact]
    model: np.ndarray
    true: np.ndarray
    k_design: int
    k0: int
    # no static threshold below what a count's flip moves the residual by on the design motions
    # (thresholds.count_floor), per joint: the same for every observer of the draw
    least: np.ndarray
    # the level's floor at rest, per joint (thresholds.coulomb_floor): twice the model's Coulomb friction
    at_rest: np.ndarray
    # --model identified: the same with the model identified on the commissioning run, for the
    # non-adaptive observers (its impacts and count floor on that model's loop)
    identified: Runs | None = None

    def nominal(self, entry: Entry) -> Runs:
        """The runs of ``entry``'s observer: the identified model's for a non-adaptive one if any."""
        return self.identified if self.identified is not None and not entry.observer.adaptive else self


@dataclass
class ObserverResult:
    entry: dict[str, Any]  # the observer's JSON entry
    free_ratio: np.ndarray
    runs: dict[tuple[str, float], tuple[np.ndarray, np.ndarray, np.ndarray]]
    impacts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # time, force, estimate, ratio


def choices(entry: Entry | None) -> tuple[str, str, str]:
    """The (estimator, observer, controller) of the pipeline the scenario runs for ``entry``; for
    None, the impacts' collision-free run (no observer)."""
    if entry is None:
        return kalman.SPEC.name, "none", COLLISION.controller
    return entry.estimator, entry.observer.name, COLLISION.controller


def calibrated(
    rt: Realtime, robot: Robot, entry: Entry | None, s: CollideSettings, rest: np.ndarray
) -> list[float] | None:
    """An IMU-fed pipeline's biases from a standstill calibration of the draw's sensors at ``rest``
    where the set-up calibrates them (paper_setups.IMU_CALIBRATED; the paper's pins them at 0), and
    what it leaves of each axis' bias (host_tools.studies.imu_calibration); else None."""
    if entry is None or not entry.imu or not calibrates_imus(COLLISION_SETUPS[s.setup]):
        return None
    return calibrate(rt, robot, entry.imu == "tip", ImuSensors(seed=s.seed), rest).tolist()


def _pipeline(robot: Robot, entry: Entry, s: CollideSettings, model: np.ndarray) -> Realtime:
    """The entry's pipeline in the set-up ``s.setup`` (paper_setups.COLLISION_SETUPS: detection
    without reaction or debounce; collide's model-adaptive observers hold their adaptation near the
    threshold, Birjandi & Haddadin's adapt through contacts) with the model error and (a
    model-adaptive observer) the gain ``s.adaptive_gain``; thresholds not designed."""
    rt = load_rt(robot, *choices(entry))
    COLLISION_SETUPS[s.setup].apply(rt.config, robot)
    rt.config["model.params"] = model
    if entry.observer.adaptive:
        rt.config["obs.k_o"] = s.adaptive_gain
    rt.config["det.threshold"] = 1e30
    return rt


@dataclass(frozen=True)
class ClosedLoop:
    """How the controller held the collision-free design run (issue #46). ``at_limit``: the fraction
    of its samples with some joint's command at its torque limit (``ctl.tau_max``: the saturation
    returns the limit itself, so the test is exact); ``tracking``: max |q_d - q| per joint (rad or m).

    A command at its limit on a collision-free motion means the loop has left the controller's
    linear range: before collide's gains kept a 6 dB gain margin (paper_setups.LOOP_GAINS,
    2026-12-01), planar2's computed torque on the Kalman estimate went unstable with the arm folded
    in some +-10 % draws and oscillated at the limit; a motion that asks for more than a joint's
    limit does it too. The thresholds designed on such a run measure the saturation, not the
    observer; collide reports it and the study's rates leave such runs out
    (host_tools.reports.collide_study). Tracking alone does not decide it: a PD loop on a model 10 %
    off leaves light joints tenths of a radian behind without any instability (the iiwa's wrist).
    ``kp``, ``kd``: the loop's gains per joint."""

    at_limit: float
    tracking: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    @property
    def torque_limited(self) -> bool:
        return self.at_limit > 0

    def entry(self) -> dict[str, Any]:
        return {
            "torque_limited": self.torque_limited,
            "at_torque_limit": self.at_limit,
            "max_tracking_error": self.tracking.tolist(),
            "kp": self.kp.tolist(),
            "kd": self.kd.tolist(),
        }


def closed_loop(rt: Realtime, run: Run, k: int) -> ClosedLoop:
    """The design run's ClosedLoop over its samples from ``k`` on."""
    tau = run.log.extra["tau_cmd"][k:]
    limit = np.asarray(rt.config["ctl.tau_max"]) if "ctl.tau_max" in rt.config.keys() else np.full(rt.dof, np.inf)
    at = float((np.abs(tau) >= limit).any(axis=1).mean()) if len(tau) else 0.0
    gains = [np.array(rt.config[f"ctl.k{g}"], float) if f"ctl.k{g}" in rt.config.keys() else np.zeros(0) for g in "pd"]
    tracking = np.abs(run.log.q_des[k:] - run.log.extra["q_true"][k:]).max(axis=0, initial=0.0)
    return ClosedLoop(at, tracking, *gains)


@dataclass(frozen=True)
class Designed:
    """An observer's thresholds from the design run, how its loop held it, and where it ended."""

    learned: Learned
    thresholds: Thresholds
    free: np.ndarray  # |r| of the design samples
    loop: ClosedLoop


def _design(
    rt: Realtime,
    s: CollideSettings,
    runs: Runs,
    imu: Sensors | None,
    plants: Replays,
    least: np.ndarray | None = None,
) -> Designed:
    """The collision-free design run and its thresholds (set in ``rt.config``). A
    model-adaptive observer whose adaptation holds on its thresholds (``obs.freeze``: above them, and
    for a while above ``obs.suspect`` of them) is designed twice: the second time on the same run
    with the first thresholds acting on the hold (detection without its latch: a debounce longer
    than the run), so that the thresholds are for the observer as it runs. Designed once, without
    the hold, the exact-motion observers' thresholds sat at residual peaks the adaptation removes
    within a few samples when it is not held (planar2: 1.03-1.4x on the check motion; issue #46).
    ``least``: the static thresholds' floor per joint (thresholds.count_floor).

    The same run: the first pass's design samples with the first thresholds acting
    (_second_pass), the IMUs' noise and chain continued. Until 2026-12-02 it was a closed loop
    continuing a run of the warm-up alone: the plant held one sample at the seam, and an IMU-fed
    pipeline ran the warm-up again on a noise sequence of its own (its start-up then left out)."""
    holding = holds(rt)  # thresholds.holds: the rule `manipgen thresholds` designs by too
    k = runs.k_design
    sensors = _noise(imu)
    # where the second pass starts (the state and the IMUs' chain), kept by any observer's first
    # pass: a later observer's replays a recorded run, which then has them too
    free_run = plants.simulate(rt, runs.design, true_params=runs.true, imu=sensors, keep=(k,), inputs=holding)
    first = _design_on(rt, s, runs, free_run, k, imu, least)
    if not holding:
        return first
    debounce = np.array(rt.config["det.debounce"], copy=True)
    rt.config["det.debounce"] = 1e6  # the hold acts, no collision latches
    try:
        return _design_on(rt, s, runs, _second_pass(rt, runs, free_run, k, sensors), 0, imu, least)
    finally:
        rt.config["det.debounce"] = debounce


def _second_pass(rt: Realtime, runs: Runs, first: Run, k: int, sensors: ImuSensors | None) -> Run:
    """The first pass's run ``first`` from sample ``k`` on under rt's config now (the first thresholds
    acting): the closed loop continued at k -- rt's state kept there, the plant's state at k, the
    torque applied over the sample before, the IMUs' noise from k on and their chain at k -- which is
    the first run's samples replayed through the pipeline (loopback.replay, no plant simulated)
    wherever its commands are the first run's: the controller reads no observer (detection without
    reaction, and no collision latches). Where they differ (a numeric fault that restarts the
    pipeline in one pass only, a controller that reads the observer), that closed loop is run."""
    rt.restore(first.states[k])  # under the config set now: the first thresholds
    again = replay(rt, tail(first, k), reset=False)
    if again is not None:
        return again
    extra = first.log.extra
    kw: dict[str, Any] = {}
    if sensors is not None:
        m = rt.input_dtype["imu_gyro"].shape[0]
        noise = sensors.noise(len(runs.design.time), m, rt.sample_period)[k:]
        kw = {"imu": sensors, "imu_noise": noise, "imu_chain": first.imu_states[k]}
    rt.restore(first.states[k])
    return simulate(
        rt,
        after_sample(runs.design, k),
        true_params=runs.true,
        reset=False,
        q0=extra["q_true"][k],
        qd0=extra["qd_true"][k],
        tau0=first.log.tau[k],
        **kw,
    )


def _noise(imu: Sensors | None) -> ImuSensors | None:
    return None if imu is None else imu.next()


def after_sample(motion: Trajectory, k: int) -> Trajectory:
    """``motion`` from sample ``k`` on, its time from 0."""
    return Trajectory(motion.name, motion.time[k:] - motion.time[k], motion.q[k:], motion.qd[k:], motion.qdd[k:])


def _design_on(
    rt: Realtime,
    s: CollideSettings,
    runs: Runs,
    free_run: Run,
    k_design: int,
    imu: Sensors | None,
    least: np.ndarray | None = None,
) -> Designed:
    """The thresholds designed on ``free_run``'s samples from ``k_design`` on (set in
    ``rt.config``), and where the run ended (rt's state now: every later run continues from there,
    a robot in operation)."""
    free_out = free_run.out
    extra = free_run.log.extra
    learned = Learned(rt.snapshot(), extra["q_true"][-1], extra["qd_true"][-1], extra["tau_cmd"][-1], imu)
    th = design_from_outputs(
        free_out,
        k_design,
        rt.sample_period,
        target=s.target,
        blocks=max(2, s.design_motions),
        static=s.shape == "static",
        static_vs=float(rt.config["det.vs"][0]),
        least=least,
        at_rest=runs.at_rest,
    )
    for key, value in th.config().items():
        rt.config[key] = value
    return Designed(learned, th, np.abs(free_out["r"])[k_design:], closed_loop(rt, free_run, k_design))


def window(out: dict[str, np.ndarray], sl: slice) -> dict[str, np.ndarray]:
    """A run's outputs on the samples ``sl`` (the threshold along them: per sample, so only where a trace is kept)."""
    return {key: value[sl] for key, value in out.items()}


def _first_hit(out: dict[str, np.ndarray], ke: int, s: CollideSettings, ts: float) -> float | None:
    """ms from sample ``ke`` to the first with a joint above its threshold, within the window."""
    hits = np.flatnonzero(any_above(out)[ke : ke + int(round(s.window / ts))])
    return milliseconds(hits[0], ts) if hits.size else None


def _collisions(
    rt: Realtime,
    d: Designed,
    s: CollideSettings,
    runs: Runs,
    obs: str,
    result: ObserverResult,
    progress: Progress,
    plants: Replays | None = None,
    check: Run | None = None,
) -> dict[str, list[float | None]]:
    """The delays of the filtered steps per cut-off (the first event's traces kept for the figure);
    ``plants``: as observer_item's (default: every run in closed loop, as the study's pushes);
    ``check``: the check run, with rt's states where the steps start (_from_check; default: every
    run from the design run's end)."""
    plants = Replays(record=False) if plants is None else plants
    n, ts = rt.dof, rt.sample_period
    delays: dict[str, list[float | None]] = {}
    for cutoff in s.cutoffs:
        progress(f"{obs}: collisions low-passed at {cutoff:g} Hz")
        found: list[float | None] = []
        for e in s.events:
            held = step_hold(s.hold, cutoff)
            ext = filtered_step(len(runs.collided.time), n, ts, s.joint - 1, e, held, s.amplitude, cutoff)
            ke = int(round(e / ts))
            end = ke + max(int(round(s.window / ts)), int(s.window / ts))  # the last sample read
            motion = until(runs.collided, end)
            run = _from_check(rt, d.learned, check, motion, pushed_from(ext), runs, plants, tau_ext=ext[: end + 1])
            found.append(_first_hit(run.out, ke, s, ts))
            if e == s.events[0]:
                sl = slice(ke - int(0.1 / ts), ke + int(s.window / ts))
                result.runs[(obs, cutoff)] = (
                    run.out["r"][sl, s.joint - 1],
                    ext[sl, s.joint - 1],
                    threshold_along(window(run.out, sl), d.thresholds)[:, s.joint - 1],
                )
        delays[f"{cutoff:g}"] = found
    return delays


def _leaves(s: CollideSettings, runs: Runs, n: int, ts: float) -> tuple[int, ...]:
    """The samples where the collision runs (_collisions) and the impacts leave the check run."""
    k = len(runs.collided.time)
    steps = {
        pushed_from(filtered_step(k, n, ts, s.joint - 1, e, step_hold(s.hold, c), s.amplitude, c))
        for c in s.cutoffs
        for e in s.events
    }
    contacts = {contact_samples(i.contact, ts)[0] for i in runs.impacts}
    return tuple(sorted(at for at in steps | contacts if at < k))


def _impact_delays(
    rt: Realtime,
    d: Designed,
    s: CollideSettings,
    runs: Runs,
    robot: Robot,
    result: ObserverResult,
    plants: Replays,
    check: Run | None = None,
    loop: str = "",
) -> dict[str, float | None]:
    """The delays of the Hunt-Crossley impacts (their traces kept for the figure, keyed by the
    impact's figure_label and ``loop``, which names a loop of the observer's own); ``check``: as
    _collisions'."""
    ts = rt.sample_period
    dyn = load(robot)
    out: dict[str, float | None] = {}
    for impact in runs.impacts:
        contact = impact.contact
        ke = int(round(contact.start / ts))
        end = ke + max(int(round(s.window / ts)), int(round(0.15 / ts)))  # the last sample read
        at = contact_samples(contact, ts)[0]
        run = _from_check(rt, d.learned, check, until(runs.collided, end), at, runs, plants, contact=contact)
        out[impact.label] = _first_hit(run.out, ke, s, ts)
        sl = slice(ke - int(round(0.02 / ts)), ke + int(round(0.15 / ts)))
        q = run.log.extra["q_true"][sl]
        normal = np.array(contact.normal)
        result.impacts[impact.figure_label + loop] = (
            (np.arange(sl.start, sl.stop) - ke) * ts * 1e3,
            tip_force_along(q, run.log.extra["tau_ext_true"][sl], dyn.tip_jacobian, normal),
            tip_force_along(q, run.out["r"][sl], dyn.tip_jacobian, normal),
            threshold_ratio(run.out["r"][sl], threshold_along(window(run.out, sl), d.thresholds)),
        )
    return out


def observer_item(
    source: RobotSource,
    s: CollideSettings,
    obs: str,
    runs: Runs,
    progress: Progress = lambda _: None,
    more: Callable[[Realtime, Designed], dict[str, Any]] | None = None,
    plants: Replays | None = None,
) -> ObserverResult:
    """One observer's threshold design, false alarms, collisions and impacts: a pure work item (any
    executor, any machine; the pipeline is built from the description's text). ``more``: further
    runs on the designed pipeline (the study's pushes, host_tools.studies.collide_study), its keys
    added to the entry after the others (which it leaves as they are). ``plants``: the runs of
    observers fed alike before it, replayed where its commands are theirs (feed_item; default: every
    run in closed loop)."""
    plants = Replays(record=False) if plants is None else plants
    entry = ENTRIES[obs]
    runs_model = runs.nominal(entry)
    model = "description" if runs_model is runs else "identified"
    runs = runs_model
    result = ObserverResult({}, np.zeros(0), {}, {})
    progress(f"{obs}: collision-free motion (threshold design)")
    robot = source.robot()
    rt = _pipeline(robot, entry, s, runs.model)
    left = calibrated(rt, robot, entry, s, runs.design.q[0])  # the runs start at rest there
    kp, kd = kalman_loop_gains(rt.config)
    loop = ""  # the figure's panels: the shared loop's impacts, or (named) its own loop's
    if not (np.array_equal(rt.config["ctl.kp"], kp) and np.array_equal(rt.config["ctl.kd"], kd)):
        # its loop is not the one the impacts were placed on (paper_setups.LOOP_GAINS: an IMU-fed loop
        # keeps the gains a coarse encoder's Kalman-fed one lowers): placed on its own loop
        runs = replace(runs, impacts=_impacts(robot, runs.collided, runs.model, runs.true, s, entry))
        loop = f", the {entry.estimator} loop's own"
    d = _design(rt, s, runs, Sensors(ImuSensors(seed=s.seed)) if entry.imu else None, plants, runs.least)
    th, k0 = d.thresholds, runs.k0
    progress(f"{obs}: false alarms on the check motion")
    # rt's states (and the IMUs' chain) where the collision runs leave the check run
    leave = _leaves(s, runs, rt.dof, rt.sample_period)
    check = _after(rt, d.learned, runs.test, runs.true, plants, keep=leave)
    out_test = check.out
    level = threshold_along(out_test, th)
    result.free_ratio = threshold_ratio(out_test["r"][k0:], level[k0:])
    false_alarms = rising_edges(any_above(out_test)[k0:])
    delays = _collisions(rt, d, s, runs, obs, result, progress, plants, check)
    progress(f"{obs}: Hunt-Crossley impacts")
    impact_delays = _impact_delays(rt, d, s, runs, robot, result, plants, check, loop)
    detected = [x for v in delays.values() for x in v if x is not None]
    check = np.abs(out_test["r"][k0:]) / level[k0:]
    result.entry = {
        "threshold": th.threshold.tolist(),
        "threshold_shape": s.shape,
        # every part of the level: a static design's kv and ka are 0, its ks the level at rest's (coulomb_floor)
        **{key: th.config()[f"det.{key}"].tolist() for key in ("kv", "ka", "ks", "vs")},
        "threshold_mean": level[k0:].mean(axis=0).tolist(),
        "margin": th.margin,
        "held_out_worst_ratio": float(th.held_out.max()),
        "max_collision_free_residual": d.free.max(axis=0).tolist(),
        "check_ratio": check.max(axis=0).tolist(),
        "max_check_residual": np.abs(out_test["r"][k0:]).max(axis=0).tolist(),
        "delay_ms": {
            c: (float(np.median([x for x in v if x is not None])) if any(x is not None for x in v) else None)
            for c, v in delays.items()
        },
        "delays_ms": delays,
        "median_delay_ms": float(np.median(detected)) if detected else None,
        "impact_delay_ms": impact_delays,
        # each impact this observer's loop met (an identified model's loop, an IMU-fed loop with gains
        # of its own: at other speeds than the draw's shared impacts) by the target speed it stands for
        "impact_targets": {i.label: i.target for i in runs.impacts},
        "false_alarms": false_alarms,
        "missed": sum(x is None for v in delays.values() for x in v) + sum(x is None for x in impact_delays.values()),
        "events": len(s.cutoffs) * len(s.events) + len(runs.impacts),
        "qd_qdd": entry.qd_qdd,
        # the IMUs' standstill calibration: what it left of each axis' bias (gyroscopes rad/s, then
        # accelerometers m/s^2), None without IMUs or where the set-up does not calibrate
        "imu_calibration_error": left,
        "model": model,
        "closed_loop": d.loop.entry(),
    }
    if more is not None:
        result.entry.update(more(rt, d))
    return result
