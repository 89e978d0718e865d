"""collide's plant runs simulated once per feed and replayed through the other observers' pipelines
(host_tools.bindings.loopback.replay, Replays; issue #46): bit for bit the closed loop where the
observer does not feed back, the closed loop itself where it does. planar2, short settings."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from host_tools.bindings.imu_sensors import ImuSensors
from host_tools.bindings.loopback import Replays, contact_samples, replay, simulate
from host_tools.bindings.source import RobotSource
from host_tools.studies import collide
from host_tools.studies.collide import (
    CollideSettings,
    Learned,
    Runs,
    _pipeline,
    feed_item,
    feeds,
    filtered_step,
    observer_item,
    pushed_from,
    shared_runs,
)
from host_tools.studies.collide_defaults import ENTRIES
from host_tools.studies.thresholds import design_from_outputs, holds

SOURCE = RobotSource.of("planar2")
# one collision per kind, two design motions: every kind of run collide makes, few of them
SETTINGS = CollideSettings(design_motions=2, cutoffs=(10.0,), events=(6.0,), impact_speeds=(0.25,))


@pytest.fixture(scope="module")
def runs() -> Runs:
    return shared_runs(SOURCE.robot(), SETTINGS)


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """The same fields, bit for bit (tobytes: NaN equal to NaN, -0 not equal to +0)."""
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes()
        for k in a
    )


def test_an_observer_replayed_on_another_ones_run_is_its_closed_loop_bit_for_bit(runs: Runs) -> None:
    """The momentum pipeline records a run with a collision; the adaptive observer (Kalman-fed, its
    adaptation held on its thresholds) and the direct method with exact motion replay it: their
    outputs (residual, detections, state after) are those of their own closed loops, bit for bit."""
    robot = SOURCE.robot()
    ts = robot.sample_period
    ext = filtered_step(len(runs.test.time), robot.dof, ts, 0, 6.0, 0.3, 5.0, 10.0)
    kw: dict[str, Any] = {"true_params": runs.true, "tau_ext": ext}
    # the recorder reads the plant's exact motion too (qd_meas, qdd_meas): the others read a subset
    recorder = _pipeline(robot, ENTRIES["direct_measured"], SETTINGS, runs.model)
    recorded = simulate(recorder, runs.test, record=True, **kw)
    assert recorded.inputs is not None and len(recorded.inputs) == len(runs.test.time)
    for name in ("adaptive", "momentum", "adaptive_measured"):
        rt = _pipeline(robot, ENTRIES[name], SETTINGS, runs.model)
        rt.config["det.threshold"] = 0.2  # detections happen (and must be the same)
        closed = simulate(rt, runs.test, **kw)
        state = rt.snapshot()
        again = replay(rt, recorded)
        assert again is not None, name
        assert same(again.out, closed.out) and rt.snapshot() == state, name
        assert np.any(closed.out["above"]), name  # the comparison covers detections
        assert same(again.log.extra, closed.log.extra) and same(again.log.inputs(), closed.log.inputs()), name


def test_a_reaction_to_the_detection_is_not_replayed(runs: Runs) -> None:
    """With a stop reaction the detection changes the commands: replay refuses (its state left as it
    was), and Replays runs that observer in closed loop, as simulate would."""
    robot = SOURCE.robot()
    ext = filtered_step(len(runs.test.time), robot.dof, robot.sample_period, 0, 6.0, 0.3, 5.0, 10.0)
    kw: dict[str, Any] = {"true_params": runs.true, "tau_ext": ext}
    plants = Replays()
    plants.simulate(_pipeline(robot, ENTRIES["adaptive"], SETTINGS, runs.model), runs.test, **kw)
    rt = _pipeline(robot, ENTRIES["momentum"], SETTINGS, runs.model)
    # above the momentum residual of the motion (its designed threshold is 2.7 N m on joint 1), below
    # the 5 N m collision's
    rt.config["det.threshold"] = 3.0
    rt.config["det.reaction"] = 1  # MG_REACTION_STOP
    rt.reset()
    state = rt.snapshot()
    assert replay(rt, next(iter(plants.runs.values()))) is None and rt.snapshot() == state
    got = plants.simulate(rt, runs.test, **kw)
    assert plants.replayed == 0 and plants.simulated == 2
    assert np.argmax(got.out["collision"] != 0) * robot.sample_period >= 6.0  # it reacted to the collision
    assert same(got.out, simulate(rt, runs.test, **kw).out)


def test_collide_with_replays_is_collide_in_closed_loop(runs: Runs, monkeypatch: pytest.MonkeyPatch) -> None:
    """feed_item (one plant run per feed, the rest replayed) gives every observer's entry, traces and
    impact traces exactly as observer_item in closed loop; the replays did happen."""
    names = ("momentum", "adaptive", "direct_measured", "adaptive_measured")
    s = replace(SETTINGS, observers=names)
    # one feed (the Kalman filter's), the observers reading the plant's exact motion first
    group = ("direct_measured", "adaptive_measured", "momentum", "adaptive")
    assert feeds(names) == [group]
    made: list[Replays] = []

    class Counted(Replays):
        def __init__(self, record: bool = True) -> None:
            super().__init__(record)
            made.append(self)

    monkeypatch.setattr(collide, "Replays", Counted)
    replayed = dict(zip(group, feed_item(SOURCE, s, group, runs)))
    monkeypatch.undo()
    # per observer: the design run, the check motion, one collision, one impact: one plant for all
    # four observers (a model-adaptive one, which holds its adaptation, designs a second time on
    # its own design run replayed: collide._design, not through Replays), 4 runs simulated, 3 x 4 replayed
    assert len(made) == 1 and (made[0].simulated, made[0].replayed) == (4, 12)
    for name in names:
        closed = observer_item(SOURCE, s, name, runs)
        got = replayed[name]
        assert got.entry == closed.entry, name
        assert same({"r": got.free_ratio}, {"r": closed.free_ratio}), name
        for run, traces in closed.runs.items():
            assert all(a.tobytes() == b.tobytes() for a, b in zip(got.runs[run], traces)), (name, run)
        for label, impact in closed.impacts.items():
            assert all(a.tobytes() == b.tobytes() for a, b in zip(got.impacts[label], impact)), (name, label)


@pytest.mark.parametrize("name", ["adaptive", "adaptive_momentum_imu", "adaptive_imu"])
def test_the_second_design_pass_is_the_first_run_with_its_thresholds_acting(runs: Runs, name: str) -> None:
    """A model-adaptive observer that holds its adaptation is designed twice on the same run: the
    second pass (collide._design: the first run's design samples replayed from its state where they
    start) is that run's closed loop from there with the first thresholds acting on the hold --
    the plant continued from the same sample (an IMU-fed one with the same sensors' noise and chain)
    -- bit for bit: the designed thresholds, the |r| designed on, where the run ends. The hold's
    suspect level lowered (0.2 of the threshold for one sample, not 0.5 for 100), so that it acts in
    the second pass on each feed."""
    settings = SETTINGS
    robot = SOURCE.robot()
    entry = ENTRIES[name]
    sensors = ImuSensors(seed=SETTINGS.seed) if entry.imu else None
    rt = _pipeline(robot, entry, SETTINGS, runs.model)
    assert holds(rt)
    rt.config["obs.suspect"], rt.config["obs.suspect_hold"] = 0.2, 1
    before = {key: np.array(rt.config[key], copy=True) for key in rt.config.keys() if key.startswith("det.")}
    d = collide._design(rt, settings, runs, collide.Sensors(sensors) if sensors else None, Replays(), runs.least)
    # the same two passes in closed loop on the same pipeline (its state holds a pointer to its
    # config): the first from reset, the second continuing it at k
    k = runs.k_design
    for key, value in before.items():
        rt.config[key] = value
    seen = None if sensors is None else replace(sensors, noise_seed=1)  # the first run's sequence (Sensors.next)
    first = simulate(rt, runs.design, true_params=runs.true, imu=seen, keep=(k,))
    designed = design_from_outputs(
        first.out, k, rt.sample_period, blocks=settings.design_motions, static=True, target=settings.target,
        static_vs=float(rt.config["det.vs"][0]), least=runs.least, at_rest=runs.at_rest,
    )  # fmt: skip
    for key, value in designed.config().items():
        rt.config[key] = value
    rt.config["det.debounce"] = 1e6
    rt.restore(first.states[k])
    extra = first.log.extra
    kw: dict[str, Any] = {}
    if seen is not None:
        m = rt.input_dtype["imu_gyro"].shape[0]
        noise = seen.noise(len(runs.design.time), m, rt.sample_period)[k:]
        kw = {"imu": seen, "imu_noise": noise, "imu_chain": first.imu_states[k]}
    second = simulate(
        rt, collide.after_sample(runs.design, k), true_params=runs.true, reset=False,
        q0=extra["q_true"][k], qd0=extra["qd_true"][k], tau0=first.log.tau[k], **kw,
    )  # fmt: skip
    assert np.any(second.out["r"] != first.out["r"][k:])  # the hold acted: the passes differ
    again = design_from_outputs(
        second.out, 0, rt.sample_period, blocks=settings.design_motions, static=True, target=settings.target,
        static_vs=float(rt.config["det.vs"][0]), least=runs.least, at_rest=runs.at_rest,
    )  # fmt: skip
    assert same(d.thresholds.config(), again.config())
    assert d.free.tobytes() == np.abs(second.out["r"]).tobytes()
    assert d.learned.state == rt.snapshot() and d.learned.q.tobytes() == second.log.extra["q_true"][-1].tobytes()


@pytest.mark.parametrize("name", ["adaptive", "adaptive_momentum_imu"])
def test_a_second_design_pass_that_cannot_be_replayed_is_the_closed_loop_continued(
    runs: Runs, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the second pass's commands would differ from the first run's (a numeric fault that
    restarts the pipeline in one pass only, a controller that reads the observer), replay gives
    None and the pass is the closed loop continued at the design samples' first sample, the IMUs'
    noise and chain continued: here, where the commands do not differ, the replayed pass bit for
    bit (thresholds, |r|, the state at the end, the plant's)."""
    robot = SOURCE.robot()
    entry = ENTRIES[name]
    got = {}
    for how in ("replayed", "closed loop"):
        if how == "closed loop":
            monkeypatch.setattr(collide, "replay", lambda *_a, **_k: None)  # what replay gives for other commands
        rt = _pipeline(robot, entry, SETTINGS, runs.model)
        rt.config["obs.suspect"], rt.config["obs.suspect_hold"] = 0.2, 1  # the hold acts
        imu = collide.Sensors(ImuSensors(seed=SETTINGS.seed)) if entry.imu else None
        got[how] = collide._design(rt, SETTINGS, runs, imu, Replays(record=False), runs.least)
        assert np.all(np.asarray(rt.config["det.debounce"]) < 1e6)  # the debounce restored
    a, b = got["replayed"], got["closed loop"]
    assert same(a.thresholds.config(), b.thresholds.config()) and a.free.tobytes() == b.free.tobytes()
    assert a.learned.q.tobytes() == b.learned.q.tobytes() and a.learned.tau.tobytes() == b.learned.tau.tobytes()
    assert len(a.learned.state) == len(b.learned.state)


def test_a_collision_run_continued_from_the_check_run_is_the_whole_run(runs: Runs) -> None:
    """A collision run leaves the check run where its push starts (collide._from_check): the check
    run's first samples, then a run from the pipeline's and the plant's state there, is the whole run
    from the design run's end bit for bit -- outputs, log, the pipeline's state after -- for a
    filtered step and an impact, in closed loop and replayed through another observer's run (the
    exact-motion recorder reads q-ddot under the last sample's torque: the continued run's tau0)."""
    robot = SOURCE.robot()
    n, ts = robot.dof, robot.sample_period
    ext = filtered_step(len(runs.test.time), n, ts, 0, 6.0, 0.3, 5.0, 10.0)
    end = int(round(6.5 / ts))
    contact = runs.impacts[0].contact
    cases: dict[str, tuple[dict[str, Any], int | None]] = {
        "step": ({"tau_ext": ext[: end + 1]}, pushed_from(ext)),
        "impact": ({"contact": contact}, None),
    }
    plants = Replays()
    for name in ("direct_measured", "adaptive_measured", "adaptive"):  # the first records, the others replay
        rt = _pipeline(robot, ENTRIES[name], SETTINGS, runs.model)
        rt.config["det.threshold"] = 0.2  # detections happen (and must be the same)
        warm = simulate(rt, collide.until(runs.design, 2000), true_params=runs.true)
        extra = warm.log.extra
        learned = Learned(rt.snapshot(), extra["q_true"][-1], extra["qd_true"][-1], extra["tau_cmd"][-1])
        leave = collide._leaves(SETTINGS, runs, n, ts)
        check = collide._after(rt, learned, runs.test, runs.true, plants, keep=leave)
        for kind, (kw, at) in cases.items():
            at = contact_samples(contact, ts)[0] if at is None else at
            assert at in check.states and at > 0, (name, kind)
            motion = collide.until(runs.test, end if kind == "step" else at + 500)
            branched = collide._from_check(rt, learned, check, motion, at, runs, plants, **kw)
            after = rt.snapshot()
            whole = collide._after(rt, learned, motion, runs.true, Replays(record=False), **kw)
            assert same(branched.out, whole.out) and rt.snapshot() == after, (name, kind)
            assert same(branched.log.extra, whole.log.extra), (name, kind)
            assert same(branched.log.inputs(), whole.log.inputs()), (name, kind)
            assert np.array_equal(branched.log.time, whole.log.time), (name, kind)
            assert np.any(whole.out["above"][at:]), (name, kind)  # the push is seen: the tail is compared
    assert plants.replayed >= 6  # the check runs and the continued runs of the two later observers


def test_an_imu_fed_collision_run_continued_from_the_check_run_is_the_whole_run_with_its_noise(runs: Runs) -> None:
    """An IMU-fed observer's collision run leaves the check run where its push starts, keeping the
    check run's IMU noise up to there and drawing its own after it (the sensors' filters and the
    joint rates they difference continued from the check run's): it is the whole run from the design
    run's end with that noise sequence, bit for bit -- outputs, log, inputs, the pipeline's state
    after -- for a filtered step and an impact."""
    robot = SOURCE.robot()
    n, ts = robot.dof, robot.sample_period
    ext = filtered_step(len(runs.test.time), n, ts, 0, 6.0, 0.3, 5.0, 10.0)
    end = int(round(6.5 / ts))
    contact = runs.impacts[0].contact
    rt = _pipeline(robot, ENTRIES["adaptive_imu"], SETTINGS, runs.model)
    rt.config["det.threshold"] = 0.2  # detections happen (and must be the same)
    sensors = collide.Sensors(ImuSensors(seed=3))
    warm = simulate(rt, collide.until(runs.design, 2000), true_params=runs.true, imu=sensors.next())
    extra = warm.log.extra
    learned = Learned(rt.snapshot(), extra["q_true"][-1], extra["qd_true"][-1], extra["tau_cmd"][-1], sensors)
    check = collide._after(
        rt, learned, runs.test, runs.true, Replays(record=False), keep=collide._leaves(SETTINGS, runs, n, ts)
    )
    seen = ImuSensors(seed=3, noise_seed=sensors.runs)  # the check run's noise sequence
    m = rt.input_dtype["imu_gyro"].shape[0]
    for kind, kw, at in (
        ("step", {"tau_ext": ext[: end + 1]}, pushed_from(ext)),
        ("impact", {"contact": contact}, contact_samples(contact, ts)[0]),
    ):
        assert at in check.imu_states and at > 0, kind
        motion = collide.until(runs.test, end if kind == "step" else at + 500)
        branched = collide._from_check(rt, learned, check, motion, at, runs, Replays(record=False), **kw)
        after = rt.snapshot()
        own = ImuSensors(seed=3, noise_seed=sensors.runs)  # the run's own sequence (drawn by _from_check)
        assert own != seen, kind
        k = len(motion.time)
        noise = np.concatenate([seen.noise(k, m, ts)[:at], own.noise(k, m, ts)[at:]])
        rt.restore(learned.state)
        whole = simulate(
            rt,
            motion,
            true_params=runs.true,
            reset=False,
            q0=learned.q,
            qd0=learned.qd,
            tau0=learned.tau,
            imu=own,
            imu_noise=noise,
            **kw,
        )
        assert same(branched.out, whole.out) and rt.snapshot() == after, kind
        assert same(branched.log.extra, whole.log.extra), kind
        assert same(branched.log.inputs(), whole.log.inputs()), kind
        assert np.any(whole.out["above"][at:]), kind  # the push is seen: the tail is compared


def test_a_push_before_the_sample_the_run_leaves_at_is_refused(runs: Runs) -> None:
    """The check run holds no push: a run that pushes before it leaves it cannot be continued from it."""
    robot = SOURCE.robot()
    rt = _pipeline(robot, ENTRIES["momentum"], SETTINGS, runs.model)
    learned = Learned(rt.snapshot(), runs.test.q[0], runs.test.qd[0], np.zeros(robot.dof))
    check = collide._after(rt, learned, runs.test, runs.true, Replays(record=False), keep=(3000,))
    ext = filtered_step(len(runs.test.time), robot.dof, robot.sample_period, 0, 2.0, 0.3, 5.0, 10.0)
    with pytest.raises(ValueError, match="before sample 3000"):
        collide._from_check(rt, learned, check, runs.test, 3000, runs, Replays(record=False), tau_ext=ext)
