"""The closed loop in C (host_tools.bindings.loopback): tracking against a derived bound, determinism,
model error, replay of its log through the same step, the collision scenario, trajectories."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.logs import Log
from host_tools.data.trajectories import generated_trajectory, liu_test_trajectory, trapezoid_trajectory


@pytest.fixture(scope="module")
def lwa():
    return load_rt("schunk_lwa4p", estimator="kalman", sample_period=0.001)


def _fine(rt):
    rt.config["det.threshold"] = 1e9
    rt.config["enc.cpr"] = 2.0**30  # near-exact positions
    rt.config.redesign(q_var=1e7)  # fast filter: near-exact velocity
    return rt


def test_tracking_with_near_exact_velocity_is_within_the_zoh_bound(lwa) -> None:
    """Computed torque with a perfect model and (near) exact state: what is left is the torque held
    over a sample, an acceleration error of about T/2 q_d''' (and T/2 Kd q_d'' from the estimate's
    half-sample lag), so |e| <= T/2 (max|q_d'''| + Kd max|q_d''|) / Kp per joint. The generated
    trajectory's acceleration jumps (trapezoid), so max|q_d'''| is the largest jump over T there:
    the bound then covers the jump's transient, Delta q_d'' / (2 Kp)."""
    rt = _fine(lwa)
    ts = rt.sample_period
    traj = generated_trajectory(load_robot("schunk_lwa4p"), 20.0, ts)
    run = simulate(rt, traj)
    err = np.max(np.abs(run.log.q_des - run.log.extra["q_true"]), axis=0)
    jerk = np.gradient(traj.qdd, ts, axis=0)
    bound = ts / 2 * (np.max(np.abs(jerk), axis=0) + 13.0 * np.max(np.abs(traj.qdd), axis=0)) / 100.0
    assert np.all(err <= bound), (err, bound)
    assert np.max(np.abs(run.out["qd_hat"] - run.log.extra["qd_true"])) < 1e-3


def test_same_inputs_same_run_and_the_log_replays_through_the_step(lwa, tmp_path: Path) -> None:
    rt = lwa
    rt.config["det.threshold"] = 1e9
    traj = generated_trajectory(load_robot("schunk_lwa4p"), 3.0, rt.sample_period, seed=3)
    valid = np.random.default_rng(0).random(traj.q.shape) > 0.05
    a = simulate(rt, traj, valid=valid)
    b = simulate(rt, traj, valid=valid)
    for key in a.out:
        assert np.array_equal(a.out[key], b.out[key])
    log = Log.load(a.log.save(tmp_path / "run.npz"))
    rt.reset()
    replay = rt.run(log)
    for key in ("q", "qd_hat", "r", "tau_cmd", "faults"):
        assert np.array_equal(replay[key], a.out[key]), key


def test_model_error_degrades_tracking_and_shows_in_the_residual(lwa) -> None:
    rt = _fine(lwa)
    traj = generated_trajectory(load_robot("schunk_lwa4p"), 6.0, rt.sample_period, seed=1)
    nominal = simulate(rt, traj)
    true = np.array(rt.manifest["standard_parameters"]) * 1.10  # +10 %: Birjandi & Haddadin eq. 22's study
    wrong = simulate(rt, traj, true_params=true)
    assert wrong.ise_tracking.sum() > 5 * nominal.ise_tracking.sum()
    assert np.max(np.abs(wrong.out["r"])) > 10 * np.max(np.abs(nominal.out["r"]))


def test_collision_scenario_detects_and_isolates() -> None:
    from host_tools.studies.scenarios import collision

    r = collision(load_robot("kuka_iiwa14"), duration=6.0, onset=3.0)
    assert not r.false_alarm
    delay = r.delay_ms
    assert r.detected_s is not None and delay is not None and 0 < delay < 150
    loaded = np.max(np.abs(r.hit.log.extra["tau_ext_true"]), axis=0) > r.thresholds
    assert r.link == 1 + np.flatnonzero(loaded)[-1]
    k = int(round(r.detected_s / r.hit.log.sample_period))
    assert np.allclose(r.hit.out["q_d"][k + 1 :], r.hit.out["q_hat"][k])  # stop: hold q_col


def test_trajectories() -> None:
    t = liu_test_trajectory()
    assert t.q.shape == (24250, 6) and abs(t.duration - 96.996) < 1e-9
    assert t.resample(0.008).q.shape == (12125, 6)
    same = t.resample(0.004)  # the spline passes through the recorded samples
    assert np.allclose(same.q, t.q, rtol=0, atol=1e-9)
    assert np.max(np.abs(t.qd)) < 1.4 and np.max(np.abs(t.qd)) > 1.3  # Liu et al. Fig. 4: |qd_d| <= ~1.36 rad/s
    for name in ("kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2"):
        robot = load_robot(name)
        g = generated_trajectory(robot, 12.0, 0.001, seed=2)
        vmax = np.array([j.limits.qd if np.isfinite(j.limits.qd) else 1.0 for j in robot.joints])
        amax = np.array([j.limits.qdd if np.isfinite(j.limits.qdd) else 2.0 for j in robot.joints])
        assert np.all(np.max(np.abs(g.qd), axis=0) <= 0.5 * vmax + 1e-12)
        assert np.all(np.max(np.abs(g.qdd), axis=0) <= 0.5 * amax + 1e-12)  # acceleration limits too
        assert np.all(np.max(np.abs(np.diff(g.qd, axis=0)), axis=0) <= 0.5 * amax * 0.001 * (1 + 1e-6))
        lo = np.array([j.limits.q_min for j in robot.joints])
        hi = np.array([j.limits.q_max for j in robot.joints])
        assert np.all(g.q >= lo) and np.all(g.q <= hi)
        assert np.max(np.abs(np.gradient(g.q, 0.001, axis=0) - g.qd)) < 5e-3  # consistent derivatives
        assert np.max(np.abs(np.gradient(g.qd, 0.001, axis=0) - g.qdd)[5:-5]) < 2.0  # (qdd may jump)


def test_trapezoid_for_the_switch_on_test() -> None:
    robot = load_robot("planar2")  # qdd limit 20 rad/s^2
    tr = trapezoid_trajectory(robot, 0.3, 0.001, cruise=2.0)
    assert abs(tr.duration - (2 * 0.3 / 20 + 2.0)) < 1e-3
    assert np.allclose(tr.qd[np.abs(tr.time - 1.0) < 0.5], 0.3) and np.allclose(tr.qd[[0, -1]], 0.0, atol=1e-12)
    assert np.allclose(tr.q[-1] - tr.q[0], 0.3 * (2.0 + 0.015), atol=1e-9)  # travel = v (cruise + t_acc)
    assert np.allclose(np.cumsum(tr.qd[:-1], axis=0)[-1] * 0.001, tr.q[-1] - tr.q[0], atol=2e-3)


def test_actuation_delay_holds_the_command_back(lwa) -> None:
    """The command of sample k acts over sample k + delay: the applied torque is the command series
    shifted by delay (zero before), and a delay costs tracking (phase lag in the loop)."""
    rt = _fine(lwa)
    traj = generated_trajectory(load_robot("schunk_lwa4p"), 3.0, rt.sample_period)
    runs = {d: simulate(rt, traj, delay=d) for d in (0, 3)}
    applied, cmd = runs[3].log.extra["tau_cmd"], runs[3].out["tau_cmd"]
    assert np.array_equal(runs[0].log.tau[1:], runs[0].out["tau_cmd"][:-1])  # in.tau = last applied
    assert np.array_equal(runs[3].log.tau[4:], cmd[:-4]) and not np.any(runs[3].log.tau[:4])
    assert applied.shape == cmd.shape
    assert runs[3].ise_tracking.sum() > 1.5 * runs[0].ise_tracking.sum()
    for bad in (-1, 17):
        with pytest.raises(ValueError, match="delay"):
            simulate(rt, traj, delay=bad)


def test_encoder_model_is_the_inverse_of_the_read() -> None:
    """rt.encoder_counts (the loopback's sensor) against the closed form floor((q - o) g d cpr / 2 pi),
    and the pipeline reads those counts back to q within one count, for gear, direction, offset."""
    rt = load_rt("planar2", estimator="findiff", observer="none", controller="none")
    rt.config["enc.cpr"], rt.config["enc.gear"] = [4096.0, 1000.0], [1.0, 50.0]
    rt.config["enc.direction"], rt.config["enc.offset"] = [-1.0, 1.0], [0.25, -0.1]
    rng = np.random.default_rng(5)
    q = rng.uniform(-3, 3, (50, 2))
    counts, motor = rt.encoder_counts(q)
    expected = np.floor((q - [0.25, -0.1]) * [1.0, 50.0] * [-1.0, 1.0] * np.array([4096.0, 1000.0]) / (2 * np.pi))
    assert np.array_equal(counts, expected.astype(np.int64)) and not np.any(motor)
    for k in range(len(q)):
        rt.reset()
        back = rt.step(counts[k])["q"]
        assert np.all(np.abs(back - q[k]) <= 2 * np.pi / (np.array([4096.0, 1000.0]) * [1.0, 50.0]) + 1e-12)
    with pytest.raises(ValueError, match="2 joints"):
        rt.encoder_counts(np.zeros(3))


def test_the_plant_starts_where_asked() -> None:
    """q0/qd0 reach the C (regression: a temporary buffer was freed before the call)."""
    rt = load_rt("planar2", estimator="findiff", observer="none")
    tr = trapezoid_trajectory(load_robot("planar2"), 0.3, rt.sample_period, cruise=4.0)
    run = simulate(rt, tr)
    assert np.array_equal(run.log.extra["q_true"][0], tr.q[0]) and np.all(tr.q[0] < -0.5)
    run = simulate(rt, tr, q0=np.array([0.1, -0.2]), qd0=np.array([0.3, 0.0]))
    assert np.array_equal(run.log.extra["q_true"][0], [0.1, -0.2]) and run.log.extra["qd_true"][0][0] == 0.3


@pytest.mark.parametrize("robot", ["kuka_iiwa14", "ur5", "franka_panda", "schunk_lwa4p"])
def test_demo_motion_tracks_within_a_hundredth_of_a_radian(robot: str) -> None:
    """issue 23: the demo's motion (8 s, the generated trajectory) on each robot's default pipeline,
    before the push at 4 s: max |q_d - q| <= 0.01 rad on every joint for 0.5 s <= t < 4 s. The
    friction fed forward at the desired velocity (controllers.py) makes it; compensated at the
    estimate the iiwa's wrist stuck and lagged by 0.35 rad. Not only the iiwa: arms whose
    descriptions were never tuned for it (measured 1e-4..3e-3 rad)."""
    rt = load_rt(robot)
    rt.config["det.threshold"] = 1e9  # no detection: the free motion
    run = simulate(rt, generated_trajectory(load_robot(robot), 8.0, rt.sample_period))
    t = run.log.time
    window = (t >= 0.5) & (t < 4.0)
    error = np.abs(run.log.q_des - run.log.extra["q_true"])[window].max(axis=0)
    assert np.all(error <= 0.01), error


def test_a_step_given_from_outside_runs_the_same_loop() -> None:
    """simulate(step=...) drives <robot>_loopback_with: a step that is the pipeline's own, called
    through Python, gives the same run bit for bit; what the step raises ends the run and surfaces."""
    rt = load_rt("planar2")
    traj = generated_trajectory(load_robot("planar2"), 0.5, rt.sample_period)
    here = simulate(rt, traj)
    other = load_rt("planar2")
    calls = []

    def step(c_in, c_out) -> None:  # the same step, on another instance, through the callback
        calls.append(1)
        other.lib.planar2_rt_step(other._rt, c_in, c_out)

    other.reset()
    other._sync()
    via = simulate(rt, traj, step=step)
    assert len(calls) == len(traj.time)
    assert np.array_equal(via.log.extra["q_true"], here.log.extra["q_true"])
    assert np.array_equal(via.out["tau_cmd"], here.out["tau_cmd"])

    def broken(c_in, c_out) -> None:
        if c_in.q_des[0] != traj.q[0, 0]:
            raise ConnectionError("the board went away")

    with pytest.raises(ConnectionError, match="went away"):
        simulate(rt, traj, step=broken)


def test_a_run_reports_its_progress_and_stays_the_same_run() -> None:
    """simulate(progress=...) (identify --synthetic's simulation lines) is told (done, total) every
    PROGRESS_SAMPLES samples and at the last, and the run is the one without it, bit for bit."""
    from host_tools.bindings.loopback import PROGRESS_SAMPLES

    rt = load_rt("planar2")
    traj = generated_trajectory(load_robot("planar2"), 2.5, rt.sample_period)
    k = len(traj.time)
    here = simulate(rt, traj)
    seen: list[tuple[int, int]] = []
    counted = simulate(rt, traj, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(d, k) for d in range(PROGRESS_SAMPLES, k, PROGRESS_SAMPLES)] + [(k, k)]
    for name in ("counts", "tau", "q_des"):
        assert np.array_equal(getattr(counted.log, name), getattr(here.log, name)), name
    assert set(counted.log.extra) == set(here.log.extra)
    for name, values in here.log.extra.items():
        assert np.array_equal(counted.log.extra[name], values), name
    assert set(counted.out) == set(here.out)
    for name, values in here.out.items():
        assert np.array_equal(counted.out[name], values), name


def test_the_c_keeper_keeps_what_the_step_read_and_the_states_before_it() -> None:
    """simulate's ``record`` and ``keep`` (<robot>_loopback_keeping, in C) keep the bytes a Python
    step sees: each sample's input after the step and rt's state before the step of the kept samples
    (given twice and out of order: each once); the run is the one without them, bit for bit; around a
    step given from outside, the keeper records what that step read."""
    rt = load_rt("planar2")
    traj = generated_trajectory(load_robot("planar2"), 0.5, rt.sample_period)
    size = rt.ffi.sizeof("planar2_rt_input_t")
    keep = (200, 0, 7, 200, len(traj.time) - 1)
    seen: list[bytes] = []
    states: dict[int, bytes] = {}

    def step(c_in, c_out) -> None:  # rt's own step through Python, kept as the keeper keeps it
        if len(seen) in keep:
            states[len(seen)] = rt.snapshot()
        rt.lib.planar2_rt_step(rt._rt, c_in, c_out)
        seen.append(bytes(rt.ffi.buffer(c_in, size)))

    here = simulate(rt, traj, step=step)
    kept = simulate(rt, traj, record=True, keep=keep)
    assert kept.inputs is not None and kept.inputs.tobytes() == b"".join(seen)
    assert kept.states == states and sorted(states) == sorted(set(keep))
    for name, values in here.out.items():
        assert np.array_equal(kept.out[name], values), name
    assert np.array_equal(kept.log.extra["q_true"], here.log.extra["q_true"])
    seen.clear()
    around = simulate(rt, traj, step=step, record=True)
    assert around.inputs is not None and around.inputs.tobytes() == b"".join(seen) == kept.inputs.tobytes()
