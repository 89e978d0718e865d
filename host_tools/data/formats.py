"""Every log file the tools read, one loader for all of them: ``read_log(path, robot)`` -> a ``LogFile``
(the Log of ``robot`` and the timing report of its stamps). identify, thresholds, evaluate --log and
import-log all read through it, so they take the same files:

- the project's NPZ log (docs/realtime.md; host_tools.data.logs);
- a Liu et al. MATLAB run (``.mat``: host_tools.data.mat_logs);
- a ROS bag: a ROS 2 bag folder with metadata.yaml, or a .bag, .db3 or .mcap file (its only
  JointState topic unless ``topic`` names one; host_tools.data.ros_bags);
- a CSV (``.csv``: time, q, [qd,] tau per row; host_tools.data.csvdata).

Bags and CSVs whose stamps are not uniform at the robot's sample period are resampled onto it
(host_tools.data.timing); the stamps as recorded stay in the log (``recorded_time``,
``recorded_repeats``) so that the input checks judge gaps and repeated samples where the
information is. Every error is one line naming the file (and the field).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.checks import recorded_repeats, with_start_position
from host_tools.data.logs import Log, LogError, check_chain
from host_tools.data.measured import encoders
from host_tools.data.timing import Timing

if TYPE_CHECKING:
    from host_tools.data.csvdata import Samples


@dataclass(frozen=True)
class LogFile:
    path: str  # as given
    log: Log
    timing: Timing  # the stamps as recorded (before resampling, where resampled)
    notes: tuple[str, ...] = ()  # what the format adds to the report (a bag's rounding, a .mat's delay)
    # a CSV's or a bag's positions, torques (and velocities) at the sample instants, as the file gives
    # them (identify fits these; the log's counts are them rounded to the encoders)
    samples: Samples | None = None

    def lines(self) -> list[str]:
        """The timing report and the format's notes, one line each."""
        return self.timing.lines() + list(self.notes)


def read_log(
    path: str | Path,
    robot: Robot,
    *,
    topic: str | None = None,
    command_topic: str | None = None,
    start_position: Sequence[float] | np.ndarray | None = None,
) -> LogFile:
    """A log file of any format the tools take, as a Log of ``robot``; ``topic`` and
    ``command_topic`` choose a ROS bag's topics; ``start_position`` (rad or m per joint at the first
    sample) is stored in the log (host_tools.data.checks.with_start_position; the read moves by whole
    counter spans to start there), and a CSV's or a bag's own positions (``samples``) move with it."""
    from host_tools.data.csvdata import read_csv
    from host_tools.data.mat_logs import read_mat
    from host_tools.data.ros_bags import is_bag, read_bag

    p = Path(path)
    bag = is_bag(p)
    if (topic or command_topic) and not bag:  # a usage error whatever the file holds
        raise LogError(f"{path}: --topic and --command-topic belong to ROS bags (.bag, .db3, .mcap)")
    if not p.exists():  # one wording for every format (a path without a suffix may name a ROS 2 bag's folder)
        raise LogError(f"{path}: no such file" + (" or folder" if not p.suffix else ""))
    if bag:
        f = read_bag(p, robot, topic=topic, command_topic=command_topic)
    elif p.is_dir():
        raise LogError(f"{path}: a folder, but not a ROS 2 bag (no metadata.yaml in it)")
    elif p.suffix.lower() == ".mat":
        f = read_mat(p, robot)
    elif p.suffix.lower() == ".csv":
        f = read_csv(p, robot)
    else:
        f = _read_npz(p, robot)
    f = replace(f, path=str(path))
    if start_position is not None:
        before = f.log.encoder_offset if f.log.encoder_offset is not None else encoders(robot)[1]
        f = replace(f, log=with_start_position(f.log, robot, start_position))
        if f.samples is not None and f.log.encoder_offset is not None:
            # the stated start moves the read by whole counter spans (start_offsets): a CSV's or a
            # bag's own positions, which identify fits, move with it
            f = replace(f, samples=replace(f.samples, q=f.samples.q + (f.log.encoder_offset - before)))
    return f


def _read_npz(path: Path, robot: Robot) -> LogFile:
    log = Log.load(path)
    check_chain(log, robot, str(path))
    if "start_position" in log.extra:  # import-log --start-position: the read's offsets follow it
        log = with_start_position(log, robot, log.extra["start_position"])
    resampled = "recorded_time" in log.extra  # an imported bag's or CSV's: its stamps before resampling
    stamps = log.extra["recorded_time"] if resampled else log.time
    repeated = int(np.sum(recorded_repeats(log)))
    timing = Timing.of("samples of the log", stamps, repeated, log.sample_period, len(log), resampled)
    return LogFile(str(path), log, timing)
