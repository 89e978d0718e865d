"""What link-mounted IMUs read (Birjandi & Haddadin §III-c and §V, its refs [1, 2]): the gyroscope the angular
velocity of its link, the accelerometer the specific force a - g at its point, both in the sensor's
own axes, as CasADi expressions of q, qd, qdd.

One formula serves both sides: the loopback's simulated sensors evaluate it, and the ``imu``
estimator (codegen.blocks.imu) takes its Jacobians, which are exact because the readings are linear
in qd (gyroscope) and in qdd (accelerometer):

  gyro_s = R_s^T sum_{j <= i, revolute} z_j qd_j
  acc_s  = R_s^T (J_v(q) qdd + d/dt(J_v(q)) qd - g),   J_v = d p_s / d q

with (R_s, p_s) the sensor frame in the base frame and z_j the joint axes (base frame).
"""

from __future__ import annotations

import casadi as cs
import numpy as np
from casadi import SX

from codegen.model import spatial
from codegen.model.robot import Imu, Robot, as_tuple

from .dynamics import Dynamics


def tip_imu(robot: Robot) -> Imu:
    """One IMU at the tip frame (Birjandi & Haddadin's online set-up: one IMU on the end effector)."""
    last = robot.joints[-1]
    return Imu("tip", robot.dof - 1, as_tuple(spatial.snapped(last.post_matrix @ robot.tip_matrix)))


def sensor_pose(dyn: Dynamics, imu: Imu) -> tuple[SX, SX]:
    """(R_s, p_s): the sensor frame in the base frame."""
    r, p = dyn.base_poses[imu.link]
    pose = np.array(imu.pose)
    return cs.mtimes(r, cs.DM(pose[:3, :3])), p + cs.mtimes(r, cs.DM(pose[:3, 3]))


def readings(dyn: Dynamics, imus: tuple[Imu, ...]) -> tuple[SX, SX]:
    """(gyro, acc), each 3m: every IMU's three axes in turn (rad/s; m/s^2, gravity included as an
    accelerometer reads it: at rest it reads -g in sensor axes, +9.81 upwards)."""
    q, qd, qdd = dyn.q, dyn.qd, dyn.qdd
    g = cs.DM(np.asarray(dyn.robot.gravity, float))
    gyro, acc = [], []
    for imu in imus:
        rs, ps = sensor_pose(dyn, imu)
        omega = SX.zeros(3)
        for j in range(imu.link + 1):
            if dyn.robot.joints[j].type == "revolute":
                omega += dyn.base_poses[j][0][:, 2] * qd[j]
        jv = cs.jacobian(ps, q)
        v = cs.mtimes(jv, qd)
        a = cs.mtimes(jv, qdd) + cs.mtimes(cs.jacobian(v, q), qd)
        gyro.append(cs.mtimes(rs.T, omega))
        acc.append(cs.mtimes(rs.T, a - g))
    return cs.vertcat(*gyro), cs.vertcat(*acc)


def readings_function(dyn: Dynamics, imus: tuple[Imu, ...]) -> cs.Function:
    """imu_readings(q, qd, qdd) -> (gyro, acc): the simulated sensors' exact values (the loopback)."""
    gyro, acc = readings(dyn, imus)
    return cs.Function("imu_readings", [dyn.q, dyn.qd, dyn.qdd], [gyro, acc], ["q", "qd", "qdd"], ["gyro", "acc"])
