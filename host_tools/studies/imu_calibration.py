"""The simulated IMUs' standstill calibration, as a user commissions an IMU-fed pipeline (issue #46).

Before collide's runs the arm rests at its first pose; each IMU axis' mean reading over
CALIBRATION_S, less what the description's model reads at rest at the pose the encoders report,
is the bias estimate written into the estimator's ``est.gyro_bias`` / ``est.acc_bias``
(ImuSensors.calibration: the same sensor chain as the loopback's, its noise a stream of its own).
Without it the estimator meets the sensors' drift (up to 5 mg per axis) with only its joint-space
corrections (codegen.blocks.imu, step 4): one IMU at the tip sees planar2's q-ddot 1 through l1 sin q2,
so near the stretched pose 5 mg became rad/s^2 in the fused q-ddot and tenths of a rad/s in the
fused q-dot for seconds (docs/collision.md, "The IMUs calibrated at rest").
"""

from __future__ import annotations

from functools import lru_cache

import casadi as cs
import numpy as np

from codegen.blocks import imu as imu_block
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.imu import readings_function
from host_tools.bindings.imu_sensors import ImuSensors
from host_tools.bindings.rt import Realtime

# s at rest: the noise's mean is then d sqrt(f_s / 2) / sqrt(f_s s) = d / sqrt(2 s), 1.0e-3 m/s^2 for
# the BMI055's accelerometer (150 ug/sqrt(Hz)), a fiftieth of the 5 mg (4.9e-2 m/s^2) drift it
# calibrates; not fitted to any run
CALIBRATION_S = 1.0


@lru_cache(maxsize=8)
def _readings(robot: Robot, tip: bool) -> cs.Function:
    """The IMUs' exact readings (q, qd, qdd) -> (gyro, acc) of the imu estimator's placement."""
    return readings_function(Dynamics(robot), imu_block.placements(robot, tip))


def encoder_pose(rt: Realtime, q: np.ndarray) -> np.ndarray:
    """The pose ``rt``'s encoders report with the arm at ``q``: the loopback's counts (its sensor model,
    the floor of the real-valued count: Realtime.encoder_counts) read back as the generated encoder
    read does, count 2 pi / cpr direction / gear + offset (a link-side encoder: gear 1)."""
    counts, _ = rt.encoder_counts(q)
    cpr, gear, direction, offset = (
        np.asarray(rt.config[f"enc.{f}"], float) for f in ("cpr", "gear", "direction", "offset")
    )
    return np.asarray(counts, float) * (2 * np.pi / cpr) * direction / gear + offset


def calibrate(rt: Realtime, robot: Robot, tip: bool, sensors: ImuSensors, rest: np.ndarray) -> np.ndarray:
    """Set ``rt``'s est.gyro_bias and est.acc_bias from a standstill calibration of ``sensors`` with
    the arm at ``rest`` (the one IMU at the tip frame with ``tip``, else the description's); return
    what it leaves of each axis' bias, the estimate less the sensors' own (6 m,: gyroscopes, then
    accelerometers), which only a simulation knows."""
    fn = _readings(robot, tip)
    zero = np.zeros(robot.dof)
    exact = np.concatenate([np.ravel(np.asarray(v, float)) for v in fn(rest, zero, zero)])
    known = np.concatenate([np.ravel(np.asarray(v, float)) for v in fn(encoder_pose(rt, rest), zero, zero)])
    bias = sensors.calibration(exact, known, rt.sample_period, CALIBRATION_S)
    m = bias.size // 6
    rt.config["est.gyro_bias"] = bias[: 3 * m].reshape(m, 3)
    rt.config["est.acc_bias"] = bias[3 * m :].reshape(m, 3)
    return bias - sensors.biases(m)
