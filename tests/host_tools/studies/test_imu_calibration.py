"""The simulated IMUs' standstill calibration (host_tools.studies.imu_calibration, issue #46): what it
finds of the sensors' drawn biases, where collide runs it, and the failure it removes."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.blocks.imu import G0
from host_tools.bindings.imu_sensors import ImuSensors
from host_tools.bindings.loopback import Replays
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import RobotSource
from host_tools.studies import collide
from host_tools.studies.collide_defaults import ENTRIES
from host_tools.studies.imu_calibration import CALIBRATION_S, calibrate, encoder_pose

COUNT = 2 * np.pi / 16384  # planar2's link-side radians per count (robots/planar2.yaml)


@pytest.mark.parametrize("tip", [False, True])
def test_a_standstill_calibration_finds_the_accelerometers_drawn_biases(tip: bool) -> None:
    """planar2 at rest at a pose 0.05 count above the encoders' grid on each joint, the BMI055 chain
    with biases drawn up to 5 mg (0.049 m/s^2) per axis: the estimate is each drawn accelerometer bias
    within what one second at rest can know, derived here: the noise's mean, d sqrt(f_s / 2) /
    sqrt(K) = 150 ug/sqrt(Hz) x 9.807 / sqrt(2 x 1 s) = 1.04e-3 m/s^2 (the low-pass's gain at 0 Hz is
    1), 5 standard deviations 5.2e-3; plus gravity's reading error at the pose the encoders report,
    0.05 count below the arm's on each joint: the sensor frame turned by at most the sum over the
    joints before it, g x 2 x 0.05 x 3.8e-4 rad = 3.8e-4; the converter's step (9.6e-3) is dithered by
    a noise 2.6 steps wide. 5.6e-3 in all, against drawn biases of up to 4.9e-2: a sign, a frame or an
    axis order wrong would not pass."""
    robot = RobotSource.of("planar2").robot()
    rt = load_rt(robot, "imu:tip=1" if tip else "imu", "none", "computed_torque")
    sensors = ImuSensors(seed=11)
    rest = np.round(np.array([0.3, -1.1]) / COUNT) * COUNT + 0.05 * COUNT
    left = calibrate(rt, robot, tip, sensors, rest)
    m = left.size // 6
    drawn = sensors.biases(m)[3 * m :]
    acc = np.asarray(rt.config["est.acc_bias"], float).ravel()
    noise = 5 * 150e-6 * G0 / np.sqrt(2 * CALIBRATION_S)
    bound = noise + 9.81 * 2 * 0.05 * COUNT
    assert np.max(np.abs(acc - drawn)) <= bound, (acc, drawn, bound)
    np.testing.assert_allclose(left[3 * m :], acc - drawn, rtol=0, atol=1e-15)
    assert np.max(np.abs(drawn)) > 4 * bound  # the drawn biases are there to be found
    # planar axes: the readings out of the plane (acc z) see no gravity and no motion
    assert np.all(np.abs(acc - drawn)[2::3] <= noise)


def test_the_pose_calibrated_at_is_the_one_the_pipeline_reads() -> None:
    """The model's reading is taken at the pose the pipeline's encoders report: the loopback's counts
    (the floor of the real-valued count) read back by the generated encoder block. Just below a count
    (-1e-16 rad) that is a whole count below the arm (rounding would give the count above); the
    pipeline's own first sample says the same."""
    robot = RobotSource.of("planar2").robot()
    rt = load_rt(robot, "imu", "none", "none")
    for rest in (np.array([-1e-16, 1e-16]), np.array([0.3 + 0.37 * COUNT, -1.1 - 0.93 * COUNT])):
        counts, _ = rt.encoder_counts(rest)
        read = rt.step(counts=counts)["q"]
        np.testing.assert_array_equal(encoder_pose(rt, rest), read)
    assert encoder_pose(rt, np.array([-1e-16, 1e-16]))[0] == pytest.approx(-COUNT, rel=1e-12)


def test_collide_calibrates_where_its_set_up_says_and_the_papers_does_not() -> None:
    robot = RobotSource.of("planar2").robot()
    model = robot.standard_parameters()
    rest = np.array([0.0, 0.0])
    for setup, calibrated in (("collide", True), ("birjandi", False)):
        s = collide.CollideSettings(setup=setup, seed=4)
        for name in ("adaptive_imu", "adaptive_imu_tip"):
            rt = collide._pipeline(robot, ENTRIES[name], s, model)
            left = collide.calibrated(rt, robot, ENTRIES[name], s, rest)
            acc = np.asarray(rt.config["est.acc_bias"], float)
            assert (left is not None) == calibrated and bool(np.any(acc != 0)) == calibrated, (setup, name)
        rt = collide._pipeline(robot, ENTRIES["adaptive"], s, model)
        assert collide.calibrated(rt, robot, ENTRIES["adaptive"], s, rest) is None  # no IMUs


def test_calibrated_the_tip_imu_no_longer_drags_the_fused_rate() -> None:
    """The failure the calibration removes (docs/collision.md, "The IMUs calibrated at rest"): planar2
    draw 70 of collide, its design motions in closed loop with one IMU at the tip. Uncalibrated, the
    sensors' drift (up to 5 mg) seen through l1 sin q2 near the stretched pose went into the fused
    q-ddot and dragged the fused q-dot 0.2-0.33 rad/s off for seconds: its RMS error 12x the
    encoder-only Kalman filter's (measured 0.0259 against 0.0022 rad/s). Calibrated at rest it is
    the Kalman filter's (measured 0.0025, 1.14x). Bounds: calibrated at most 1.5x the Kalman's (the tip's
    gyroscope sees one combination of the rates; the RMS over 100 s of errors correlated over about
    0.1 s is known to about 1 / sqrt(2 x 1000) = 2 %), uncalibrated at least 4x (so the run shows the
    failure)."""
    robot = RobotSource.of("planar2").robot()
    s = collide.CollideSettings(seed=70, observers=("adaptive_imu_tip",))
    runs = collide.shared_runs(robot, s, identify=False)
    rms = {}
    for name, calibrated in (("adaptive", False), ("adaptive_imu_tip", False), ("adaptive_imu_tip", True)):
        entry = ENTRIES[name]
        rt = collide._pipeline(robot, entry, s, runs.model)
        if calibrated:
            collide.calibrated(rt, robot, entry, s, runs.design.q[0])
        sensors = ImuSensors(seed=s.seed) if entry.imu else None
        run = Replays(record=False).simulate(rt, runs.design, true_params=runs.true, imu=sensors)
        err = (np.asarray(run.out["qd_hat"]) - run.log.extra["qd_true"])[runs.k_design :]
        rms[(name, calibrated)] = float(np.sqrt(np.mean(err**2)))
    kalman = rms[("adaptive", False)]
    assert rms[("adaptive_imu_tip", True)] <= 1.5 * kalman, rms
    assert rms[("adaptive_imu_tip", False)] >= 4 * kalman, rms
