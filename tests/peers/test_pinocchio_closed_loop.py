"""The closed-loop model of output-error identification (<robot>_oesim) against the same loop built
on Pinocchio (tests/peers/pinocchio_closed_loop.py): ur5, its description's parameters, the pid
pipeline's default gains, 3 s of a Liu et al.-like motion."""

from __future__ import annotations

import numpy as np

from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import RobotSource
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.closed_loop import ClosedLoopModel, Loop

from .pinocchio_closed_loop import simulate_ur5


def test_closed_loop_model_against_pinocchio() -> None:
    rt = load_rt("ur5", estimator="findiff", observer="none", controller="pid")
    loop = Loop.from_rt(rt)
    source = RobotSource.of("ur5")
    robot = source.robot()
    traj = generated_trajectory(robot, 3.0, rt.sample_period, seed=4)
    model = ClosedLoopModel(source)
    ours = model.simulate(model.ident.true_base(), loop, traj.q, traj.qd, traj.q[0], traj.qd[0])
    q, tau, _ = simulate_ur5(robot, loop, traj.q, traj.qd, traj.q[0], traj.qd[0], rt.sample_period)
    assert np.abs(ours.q - traj.q).max() > 1e-3  # a real closed loop, not the reference
    assert np.abs(ours.q - q).max() < 1e-10
    assert np.abs(ours.tau - tau).max() < 1e-7 * np.abs(tau).max()
