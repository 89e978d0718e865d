"""The closed loop of output-error identification written independently of manipgen's C: the UR5
URDF in Pinocchio (aba; armature = rotor inertia), friction FV qd + FC tanh(qd / v) and the pid step
(findiff velocity, gravity compensation by computeGeneralizedGravity, saturation) in numpy, classic
RK4 once per sample under the held torque. Used by test_pinocchio_closed_loop and as the peer of
bench/bench_output_error.py."""

from __future__ import annotations

import time
from typing import Any

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np
import pinocchio as pin

from host_tools.studies.pinocchio_models import ur_model


def simulate_ur5(
    robot: Any, loop: Any, q_des: np.ndarray, qd_des: np.ndarray, q0: np.ndarray, qd0: np.ndarray, ts: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """(q (K, n), tau held over each sample (K, n), seconds) for manipgen's Robot ``robot`` (its IA,
    FV, FC, tanh scale) and Loop ``loop`` (kp, kd, tau_max; ki must be 0)."""
    if np.any(np.asarray(loop.ki) != 0):
        raise ValueError("the peer models a PD (ki = 0)")
    pm = ur_model("ur5")
    pd = pm.createData()
    pm.armature = np.array([j.IA for j in robot.joints])
    fv = np.array([j.FV for j in robot.joints])
    fc = np.array([j.FC for j in robot.joints])
    v = np.array([robot.coulomb.scale(i) for i in range(robot.dof)])
    q, qd = np.array(q0, float), np.array(qd0, float)
    qp = q.copy()
    qs, taus = np.zeros_like(q_des), np.zeros_like(q_des)
    t0 = time.perf_counter()

    def acc(x: np.ndarray, xd: np.ndarray, u: np.ndarray) -> np.ndarray:
        return pin.aba(pm, pd, x, xd, u - fv * xd - fc * np.tanh(xd / v))

    for k in range(len(q_des)):
        qs[k] = q
        u = loop.kp * (q_des[k] - q) + loop.kd * (qd_des[k] - (q - qp) / ts) + pin.computeGeneralizedGravity(pm, pd, q)
        u = np.clip(u, -loop.tau_max, loop.tau_max) * loop.drive_gain
        taus[k] = u
        qp = q.copy()
        k1q, k1v = qd, acc(q, qd, u)
        k2q, k2v = qd + ts / 2 * k1v, acc(q + ts / 2 * k1q, qd + ts / 2 * k1v, u)
        k3q, k3v = qd + ts / 2 * k2v, acc(q + ts / 2 * k2q, qd + ts / 2 * k2v, u)
        k4q, k4v = qd + ts * k3v, acc(q + ts * k3q, qd + ts * k3v, u)
        q = q + ts / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + ts / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return qs, taus, time.perf_counter() - t0
