"""Measured joint positions and torques on the sample grid (a ROS bag's, a CSV's) -> a Log of the robot.

- position -> counts through the robot's encoders as the generated read takes them,
  ``round((q - offset) * direction * gear / (2 pi / cpr))`` (gear: the gear ratio of a motor-side
  encoder, 1 on the link side; no encoder declared: 65536 counts per turn): the log's quantisation
  is the encoder's, whatever the recording had (positions need not lie on the encoder grid; the
  largest rounding is returned);
- measured torque -> ``tau``; a recorded velocity -> the extra ``qd_hat_logged``;
- no desired trajectory is recorded: ``q_des`` is the measured position (before the rounding),
  ``qd_des`` and ``qdd_des`` its central differences (``np.gradient``);
- the positions are absolute: where an encoder counter wraps within a joint's travel, the first
  sample's positions are stored as the log's start position (host_tools.data.checks.with_start_position).
"""

from __future__ import annotations

import numpy as np

from codegen.blocks.encoder import link_counts_per_turn
from codegen.model.robot import Robot
from host_tools.data.checks import with_start_position, wrapping_joints
from host_tools.data.logs import Log, LogError, fingerprint


def encoders(robot: Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: the joint's rad (m) per count, offset and direction of its encoder as the generated
    read takes it (q = count 2 pi / cpr direction / gear + offset; gear 1 on the link side; no
    encoder declared: 65536 counts per turn on the link side)."""
    offset = [j.encoder.offset if j.encoder is not None else 0.0 for j in robot.joints]
    direction = [float(j.encoder.direction) if j.encoder is not None else 1.0 for j in robot.joints]
    return 2 * np.pi / np.array(link_counts_per_turn(robot)), np.array(offset), np.array(direction)


def measured_log(
    robot: Robot, time: np.ndarray, q: np.ndarray, tau: np.ndarray, where: str, extra: dict[str, np.ndarray]
) -> tuple[Log, float]:
    """The Log of positions ``q`` and torques ``tau`` (K, n) at ``time`` (K,) s, every sample valid,
    with ``extra`` arrays; and the largest rounding of a position to its count (counts). ``tau`` is
    what was measured at those instants (a bag's effort, a CSV's tau), not a torque held over the
    sample before: the log says so (``tau_sampled``), so identification takes it as it is."""
    rpc, offset, direction = encoders(robot)
    raw = (q - offset) * direction / rpc
    if not np.all(np.abs(raw) < 2.0**62):
        raise LogError(f"{where}: positions beyond the encoders' int64 counts")
    counts = np.round(raw)
    ts = robot.sample_period
    qd_des = np.gradient(q, ts, axis=0)
    log = Log(
        robot=robot.c_name,
        sample_period=ts,
        time=time,
        counts=counts.astype(np.int64),
        valid=np.ones(q.shape, dtype=bool),
        tau=tau,
        q_des=q,
        qd_des=qd_des,
        qdd_des=np.gradient(qd_des, ts, axis=0),
        extra={**extra, "tau_sampled": np.array(True), **fingerprint(robot)},
    )
    log.check(where)
    if wrapping_joints(robot):
        log = with_start_position(log, robot, q[0])
    return log, float(np.max(np.abs(raw - counts)))
