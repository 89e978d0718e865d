"""Elastic arms in the real-time pipeline and the loopback (issue #9, Kirchhoff (2011) §3.2, §5.2-5.3):
the elastic plant against an independent integration, the motor-side estimator, the tau_el momentum
observer, the state-feedback controller, C = numpy reference, float builds, the §5.3 collision test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from codegen.blocks.options import RtOptions, estimator_choice, realtime_defaults
from codegen.blocks.pipeline import build_pipeline
from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import simulate
from host_tools.data.trajectories import Trajectory
from host_tools.studies.elastic_collision import ScenarioSettings, scenario
from tests.codegen.blocks.helpers import fresh_rt, reference, reference_outputs, worst_rel_err
from tests.tooling import ROOT

ROBOT = "biorob4"


def _still(rt, seconds: float, q0: np.ndarray) -> Trajectory:
    t = np.arange(int(round(seconds / rt.sample_period))) * rt.sample_period
    z = np.zeros((len(t), rt.dof))
    return Trajectory("still", t, z + q0, z, z)


def test_elastic_plant_matches_an_independent_integration() -> None:
    """No controller: the arm released off its rest state swings on its springs. The C loopback's RK4
    state equals scipy's adaptive integration of the generated elastic forward dynamics."""
    rt = fresh_rt(ROBOT, "ewlr", "momentum", "none")
    dyn = load(ROBOT)
    q0 = np.array([0.2, 0.9, -0.4, 0.3])
    th0 = q0 + np.array([0.0, 0.05, -0.03, 0.02])  # springs deflected: the arm oscillates
    n = 4

    def f(_t: float, x: np.ndarray) -> np.ndarray:
        qdd, thdd = dyn.elastic_forward_dynamics(x[:n], x[n : 2 * n], x[2 * n : 3 * n], x[3 * n :], np.zeros(n))
        return np.concatenate([x[n : 2 * n], qdd, x[3 * n :], thdd])

    errors = []
    for substeps in (8, 32):
        run = simulate(rt, _still(rt, 1.0, q0), theta0=th0, thetad0=np.zeros(4), substeps=substeps)
        t = run.log.time
        sol = solve_ivp(
            f,
            (0, t[-1]),
            np.concatenate([q0, np.zeros(n), th0, np.zeros(n)]),
            t_eval=t,
            rtol=1e-12,
            atol=1e-13,
            method="DOP853",
        )
        ex = run.log.extra
        errors.append(
            max(np.max(np.abs(ex["q_true"] - sol.y[:n].T)), np.max(np.abs(ex["theta_true"] - sol.y[2 * n : 3 * n].T)))
        )
    # RK4: a quarter of the step, 4^4 = 256 times less error (the reference's own error is < 1e-11)
    assert errors[0] < 1e-7 and errors[1] < errors[0] / 100, errors
    assert np.max(np.abs(ex["q_true"][-1] - q0)) > 1e-2  # it did move
    # no command: the log's motor torque is zero; the motor encoders read theta
    assert np.all(run.log.tau == 0)
    counts, motor = rt.encoder_counts(ex["q_true"][-1], ex["theta_true"][-1])
    assert np.array_equal(motor, run.log.extra["motor_counts"][-1])


def test_rest_state_holds_still_and_the_observer_reads_zero() -> None:
    """Started at Kirchhoff (2011) eq. 3.28's rest motor positions and held there by the controller (whose
    gravity compensation is the rest torque), the arm stays put and the tau_el residual stays at the
    quantisation level."""
    rt = fresh_rt(ROBOT, "ewlr:n=10,lam=0.8", "momentum", "state_feedback")
    q0 = np.array([0.3, 0.6, -0.5, 0.4])
    run = simulate(rt, _still(rt, 2.0, q0))
    assert np.max(np.abs(run.log.extra["q_true"] - q0)) < 1e-4
    # one count of the 18-bit link encoder through EWLR's slope and K_O = 25: a few 0.01 N m
    assert np.max(np.abs(run.out["r"])) < 0.05
    # without the controller the motors are not held: the arm sags
    free = simulate(fresh_rt(ROBOT, "ewlr:n=10,lam=0.8", "momentum", "none"), _still(rt, 0.5, q0))
    assert np.max(np.abs(free.log.extra["q_true"] - q0)) > 0.05


def test_tau_el_observer_recovers_an_external_torque() -> None:
    """A 1.5 N m step on joint 3 during tracking: r_3 converges to it as a first-order lag with
    time constant 1/K_O (eq. 5.9); the other joints' residuals stay at their floor (exact model)."""
    rt = fresh_rt(ROBOT, "ewlr", "momentum", "state_feedback")
    rt.config["det.threshold"] = [1e6] * 4
    ts = rt.sample_period
    t = np.arange(int(3.0 / ts)) * ts
    q = np.tile([0.0, 0.8, -0.6, 0.5], (len(t), 1))
    q[:, 1] += 0.2 * np.sin(2 * np.pi * 0.5 * t)
    qd = np.zeros_like(q)
    qd[:, 1] = 0.2 * 2 * np.pi * 0.5 * np.cos(2 * np.pi * 0.5 * t)
    qdd = np.zeros_like(q)
    qdd[:, 1] = -0.2 * (2 * np.pi * 0.5) ** 2 * np.sin(2 * np.pi * 0.5 * t)
    ext = np.zeros_like(q)
    k0 = int(1.5 / ts)
    ext[k0:, 2] = 1.5
    run = simulate(rt, Trajectory("sine", t, q, qd, qdd), tau_ext=ext)
    r = run.out["r"]
    k_o = float(rt.config["obs.k_o"][2])
    settled = slice(k0 + int(5 / k_o / ts), None)  # five time constants on
    assert np.max(np.abs(r[settled, 2] - 1.5)) < 0.05
    # one time constant after the step: 1 - e^-1 of it (the lag of eq. 5.9)
    assert r[k0 + int(round(1 / k_o / ts)), 2] == pytest.approx(1.5 * (1 - np.exp(-1)), rel=0.08)
    assert np.max(np.abs(r[200:k0])) < 0.1  # before the step: nothing
    assert np.max(np.abs(r[k0:, [0, 1, 3]])) < 0.1  # and only joint 3 sees it


def test_motor_estimator_follows_the_motor() -> None:
    """The motor-side twin of the link estimator (EWLR, Kirchhoff (2011) §5.3) on the motor encoders; lost
    samples counted per channel. The state-feedback controller tracks a slow motion (no dynamic
    feed-forward, as in Kirchhoff (2011) §3.2.4: the soft springs let it lag faster ones)."""
    rt = fresh_rt(ROBOT, "ewlr:n=10,lam=0.8", "momentum", "state_feedback")
    rt.config["det.threshold"] = [1e6] * 4  # the burst's held position is no collision to react to
    ts = rt.sample_period
    t = np.arange(int(4.0 / ts)) * ts
    w = 2 * np.pi * 0.25
    q = np.tile([0.1, 0.7, -0.4, 0.3], (len(t), 1)) + (0.3 * (1 - np.cos(w * t)))[:, None]
    qd = np.tile(0.3 * w * np.sin(w * t)[:, None], (1, 4))
    qdd = np.tile(0.3 * w * w * np.cos(w * t)[:, None], (1, 4))
    valid = np.ones((len(t), 4), np.uint8)
    valid[1000:1010, 1] = 0  # a burst of lost samples on joint 2
    run = simulate(rt, Trajectory("sine", t, q, qd, qdd), valid=valid)
    ex = run.log.extra
    err = np.abs(run.out["thetad_hat"] - ex["thetad_true"])
    err[1000:1030] = 0  # the burst holds theta: no slope to see
    assert np.max(err[200:]) < 0.1 * np.max(np.abs(ex["thetad_true"]))
    pos = np.abs(run.out["theta_hat"] - ex["theta_true"])
    assert np.max(pos[1000:1010, 1]) > 1e-3 > np.max(np.delete(pos, np.s_[1000:1010], axis=0))  # held, then back
    assert int(run.out["motor_faults"][-1, 1]) == 10 and int(run.out["faults"][-1, 1]) == 10
    assert np.max(np.abs(ex["q_true"] - q)) < np.radians(3)


def test_rest_state_formula_is_a_static_equilibrium() -> None:
    """theta = q + A q + K^-1 (I + A)^-T g(q) (eq. 3.28): the springs hold the links (zero
    acceleration) and the motors feel no net torque but the spring's."""
    dyn = load(ROBOT)
    q = np.array([-0.4, 1.1, 0.7, -0.9])
    th, thd = dyn.motor_rest(q, np.zeros(4))
    qdd, thdd = dyn.elastic_forward_dynamics(q, np.zeros(4), th, thd, dyn.elastic_torque(q, np.zeros(4), th, thd))
    assert np.max(np.abs(qdd)) < 1e-10 and np.max(np.abs(thdd)) < 1e-10
    # a 1 mrad error in theta would accelerate the links by far more
    qdd_off, _ = dyn.elastic_forward_dynamics(
        q, np.zeros(4), th + 1e-3, thd, dyn.elastic_torque(q, np.zeros(4), th, thd)
    )
    assert np.max(np.abs(qdd_off)) > 1e-2


@pytest.mark.parametrize("estimator", ["ewlr:n=10,lam=0.8", "kalman", "findiff", "linhg"])
def test_elastic_pipeline_matches_reference(estimator: str) -> None:
    """C against the numpy reference along a closed-loop run's inputs (both encoder channels, lost
    samples): free-running, every output within 1e-9 normwise."""
    rt = fresh_rt(ROBOT, estimator, "momentum", "state_feedback")
    rt.config["det.threshold"] = [1e6] * 4
    ts = rt.sample_period
    t = np.arange(3000) * ts
    q = np.tile([0.0, 0.8, -0.6, 0.5], (len(t), 1)) + 0.25 * np.sin(2 * np.pi * 0.8 * t)[:, None]
    qd = np.tile(0.25 * 2 * np.pi * 0.8 * np.cos(2 * np.pi * 0.8 * t)[:, None], (1, 4))
    valid = (np.random.default_rng(3).random((len(t), 4)) > 0.05).astype(np.uint8)
    valid[:5] = 1
    run = simulate(rt, Trajectory("sine", t, q, qd, np.zeros_like(q)), valid=valid)
    ins = run.log.inputs()
    ins["motor_valid"][:3] = 0  # the motor channel late: the pipeline waits for it
    ins["motor_valid"][1500:1503, 2] = 0  # and a short loss on it alone
    ref = reference(ROBOT, estimator, "momentum", "state_feedback")
    ref.set_config({"det.threshold": [1e6] * 4})
    c = fresh_rt(ROBOT, estimator, "momentum", "state_feedback")
    c.config["det.threshold"] = [1e6] * 4
    out = c.run(ins)
    expected = reference_outputs(ref, [{key: v[k] for key, v in ins.items()} for k in range(len(t))])
    worst = {name: worst_rel_err(out[name], v) for name, v in expected.items()}
    assert max(worst.values()) <= 1e-9, worst
    assert worst.keys() >= {"theta_hat", "thetad_hat", "r", "tau_cmd"}


def test_elastic_pipeline_choices_are_checked() -> None:
    robot = load_robot(ROBOT)
    for opts, field in (
        (RtOptions(controller="computed_torque"), "realtime.controller"),
        (RtOptions(observer="adaptive", controller="state_feedback"), "realtime.observer"),
        (RtOptions(estimator=estimator_choice("nlhg", {}), controller="state_feedback"), "realtime.estimator"),
    ):
        with pytest.raises(DescriptionError) as err:
            build_pipeline(robot, opts)
        assert field in str(err.value) and "biorob4.yaml" in str(err.value)
    with pytest.raises(DescriptionError, match="series-elastic"):
        build_pipeline(load_robot("planar2"), RtOptions(controller="state_feedback"))
    # an elastic arm's default controller commands motor torques
    assert realtime_defaults(robot).options.controller == "state_feedback"


def test_kirchhoffs_collision_scenario() -> None:
    """§5.3: joint 2 swung 120 degrees from vertical onto an obstacle at the height of l1; threshold
    0.1 N m. The motion alone stays below it; the contact is detected within a few samples at the
    tip's link; without reaction the residual stays at the pressing torque (Fig. 5.5 a), with the
    reflex it falls back to nothing and the arm leaves the obstacle (Fig. 5.5 b)."""
    res = scenario(load_robot(ROBOT), ScenarioSettings())
    assert not res["free_false_alarm"] and max(res["free_max_abs_r"]) < 0.1
    for name in ("no_reaction", "reaction"):
        d = res[name]
        assert d["contact_sample"] > 0 and 0 <= d["delay_ms"] <= 5.0
        assert d["link"] == 4
    assert res["no_reaction"]["in_contact_at_end"] and abs(res["no_reaction"]["r_end"]) > 5.0
    # the residual tracks the true contact torque while pressing, sign included
    assert res["no_reaction"]["r_end"] == pytest.approx(res["no_reaction"]["contact_torque_end"], rel=0.02)
    assert not res["reaction"]["in_contact_at_end"]
    assert res["reaction"]["r_1s_after_detection"] < 0.02 * res["no_reaction"]["r_1s_after_detection"]


def test_the_pipeline_waits_for_both_encoders() -> None:
    """Motor encoders late by 3 samples: nothing runs (no command, no residual) until both channels
    of every joint have delivered; then the arm is held as if they had been there from the start."""
    rt = fresh_rt(ROBOT, "ewlr:n=10,lam=0.8", "momentum", "state_feedback")
    q0 = np.array([0.3, 0.6, -0.5, 0.4])
    counts, motor = rt.encoder_counts(q0, load(ROBOT).motor_rest(q0, np.zeros(4))[0])
    k = 400
    motor_valid = np.ones((k, 4), np.uint8)
    motor_valid[:3] = 0
    out = rt.run(
        {
            "counts": np.tile(counts, (k, 1)),
            "valid": np.ones((k, 4), np.uint8),
            "motor_counts": np.tile(motor, (k, 1)),
            "motor_valid": motor_valid,
            "tau": np.zeros((k, 4)),
            "q_des": np.tile(q0, (k, 1)),
            "qd_des": np.zeros((k, 4)),
            "qdd_des": np.zeros((k, 4)),
        }
    )
    assert list(out["ready"][:4]) == [0, 0, 0, 1]
    assert np.all(out["tau_cmd"][:3] == 0) and np.all(out["r"][:3] == 0)
    assert np.max(np.abs(out["r"])) < 0.05 and not out["collision"].any()
    assert np.max(np.abs(out["tau_cmd"][3:] - out["tau_cmd"][-1])) < 0.5  # no kick at the start


def test_an_elastic_arm_needs_its_motor_encoders(tmp_path: Path) -> None:
    import yaml

    root = ROOT
    doc = yaml.safe_load((root / "robots" / "biorob4.yaml").read_text())
    del doc["joints"][3]["elastic"]["motor_encoder"]
    path = tmp_path / "biorob4.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(DescriptionError, match=r"joints\[3\]\.elastic\.motor_encoder"):
        build_pipeline(load_robot(str(path)), realtime_defaults(load_robot(str(path))).options)


def test_the_controller_takes_the_identified_springs() -> None:
    """ctl.k_e is run-time: at rest at q_d the command moves by K_theta (theta_d' - theta_d), with
    theta_d = (I + A) q_d + K^-1 (I + A)^-T g(q_d) (the rest state of the compiled description)."""
    q0 = np.array([0.3, 0.6, -0.5, 0.4])
    dyn = load(ROBOT)
    theta, _ = dyn.motor_rest(q0, np.zeros(4))
    a = np.eye(4) + np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, -0.5, 0]])
    k = np.array([50.0, 50.0, 30.0, 15.0])
    g_m = k * (theta - a @ q0)  # (I + A)^-T g(q0)
    outs = []
    for scale in (1.0, 2.0):
        rt = fresh_rt(ROBOT, "ewlr:n=10,lam=0.8", "momentum", "state_feedback")
        rt.config["ctl.k_e"] = scale * k
        counts, motor = rt.encoder_counts(q0, theta)
        outs.append(rt.step(counts=counts, motor_counts=motor, motor_valid=np.ones(4), q_des=q0))
    shift = outs[1]["tau_cmd"] - outs[0]["tau_cmd"]
    expected = np.asarray(rt.config["ctl.k_theta"]) * (g_m / (2 * k) - g_m / k)
    assert np.allclose(shift, expected, rtol=1e-9, atol=1e-12) and np.max(np.abs(expected)) > 1.0
