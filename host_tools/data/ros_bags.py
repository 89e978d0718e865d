"""ROS bags (ROS 1 ``.bag``; ROS 2 sqlite3 ``.db3`` and MCAP ``.mcap``) -> the log format, read with
the maintained ``rosbags`` library (no ROS installation).

What a bag gives and how it becomes a Log of ``robot``:

- ``sensor_msgs/msg/JointState`` on one topic (default: the bag's only JointState topic), mapped to
  the description's joints BY NAME (``robot.joints[i].name``; other names in the message are
  ignored, a missing one is an error naming it and the names present);
- time: each message's header stamp (the bag's receive time where the stamp is zero), made
  relative to the first stamp; out-of-order stamps are sorted, duplicated stamps dropped (the first
  received kept); then resampled to ``robot.sample_period`` on a uniform grid from the first stamp
  by linear interpolation (host_tools.data.timing: a bag at 500 Hz resampled to 1 kHz is
  legitimate: the timing report says what the bag had, nothing is refused for it); the stamps kept
  and the messages identical to the one before (position, velocity, effort) stay in the log
  (``recorded_time``, ``recorded_repeats``) for the input checks;
- position -> counts, effort -> ``tau`` (the measured joint torque at the stamp, N m or N:
  ``tau_sampled``), velocity, when every message has one per name -> the extra ``qd_hat_logged``,
  all interpolated, then as host_tools.data.measured makes a Log of measured positions (counts
  rounded after the interpolation; ``q_des`` the measured position: a bag has no desired
  trajectory); identify fits the interpolated positions, efforts and velocities themselves
  (``LogFile.samples``, as a CSV's), not the counts;
- ``command_topic`` (optional): the commanded torque, ``JointState`` effort (by name, header stamps)
  or ``std_msgs/msg/Float64MultiArray`` (n values in the description's joint order, the bag's
  receive times) -> the extra ``tau_cmd``, held from one command to the next (zero-order hold; the
  first command before it arrives). ``tau`` stays the measured effort.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.csvdata import Samples
from host_tools.data.formats import LogFile
from host_tools.data.logs import LogError
from host_tools.data.measured import encoders, measured_log
from host_tools.data.timing import Timing, interpolate, ordered, repeated_rows, uniform_grid

JOINT_STATE = "sensor_msgs/msg/JointState"
MULTI_ARRAY = "std_msgs/msg/Float64MultiArray"
STORAGE_SUFFIXES = (".db3", ".mcap")  # ROS 2 storage files (rosbags spells the suffixes this way)
BAG_SUFFIXES = (".bag",) + STORAGE_SUFFIXES
NAMES_SHOWN = 12  # of a message's joint names in an error


def is_bag(path: str | Path) -> bool:
    """A ROS 2 bag folder (with metadata.yaml) or a .bag, .db3 or .mcap file."""
    p = Path(path)
    return p.suffix in BAG_SUFFIXES or (p.is_dir() and (p / "metadata.yaml").is_file())


def _reader_path(path: Path) -> Path:
    """What rosbags opens: a ROS 2 storage file inside its bag folder -> the folder (its metadata
    lists the whole recording, split files included); a lone storage file or anything else as is."""
    if path.suffix in STORAGE_SUFFIXES and (path.parent / "metadata.yaml").is_file():
        return path.parent
    return path


@dataclass
class _Stream:
    """One topic's messages in the order received: stamps (ns) and values (N, n) per field."""

    stamps: np.ndarray  # int64 ns: header stamp, or receive time where the stamp is zero
    receive_time: int
    values: dict[str, np.ndarray]


def read_bag(path: str | Path, robot: Robot, *, topic: str | None = None, command_topic: str | None = None) -> LogFile:
    """A ROS bag as a Log of ``robot`` and the timing report of its stamps (see the module's docstring)."""
    path = Path(path)
    names = [j.name for j in robot.joints]
    joint_states, commands, chosen = _read(path, names, topic, command_topic)
    where = f"{path}: {chosen}"
    keep = ordered(joint_states.stamps)
    if len(keep) < 3:
        raise LogError(f"{where}: {len(keep)} distinct stamps; at least 3 are needed")
    stamps = joint_states.stamps[keep]
    start = int(stamps[0])
    rel = (stamps - start).astype(np.float64)  # exact: integer ns below 2**53 (104 days)
    grid = uniform_grid(rel, robot.sample_period, robot.dof, where)
    values = {f: v[keep] for f, v in joint_states.values.items()}
    extra = {
        "recorded_time": rel / 1e9,
        "recorded_repeats": repeated_rows(rel, list(values.values())),
    }
    if "velocity" in values:
        extra["qd_hat_logged"] = interpolate(grid, rel, values["velocity"])
    if commands is not None:
        extra["tau_cmd"] = _hold(commands, start, grid)
    q, effort = interpolate(grid, rel, values["position"]), interpolate(grid, rel, values["effort"])
    log, rounding = measured_log(robot, grid / 1e9, q, effort, where, extra)
    timing = Timing.of(
        f"messages on {chosen}",
        joint_states.stamps,
        int(np.sum(extra["recorded_repeats"])),
        robot.sample_period,
        len(log),
        True,
        1e-9,
        joint_states.receive_time,
    )
    resolution = ", ".join(f"{r:.4g}" for r in dict.fromkeys(encoders(robot)[0].tolist()))
    notes = (
        f"read        {_reader_path(path)}: time 0 at stamp {start // 10**9}.{start % 10**9:09d} s"
        + (f"; commands from {command_topic} (tau_cmd)" if command_topic else ""),
        f"positions   rounded to the encoders' counts ({resolution} per count; up to {rounding:.3g} counts)",
        "q_des       the measured positions (a bag has no desired trajectory)",
    )
    # identify fits the bag's own positions and efforts at the sample instants, as a CSV's (Samples)
    samples = Samples(robot.sample_period, q, effort, extra.get("qd_hat_logged"))
    return LogFile(str(path), log, timing, notes, samples)


def _shown(names: Iterable[str]) -> str:
    names = list(names)
    more = f", ... ({len(names)} in all)" if len(names) > NAMES_SHOWN else ""
    return ", ".join(repr(x) for x in names[:NAMES_SHOWN]) + more


def _read(
    path: Path, names: list[str], topic: str | None, command_topic: str | None
) -> tuple[_Stream, _Stream | None, str]:
    """The chosen JointState topic's messages (and the command topic's) from the bag."""
    try:
        return _read_bag(path, names, topic, command_topic)
    except LogError:
        raise
    except Exception as exc:  # a third-party parser on an untrusted file: any failure there is "cannot read"
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise LogError(f"{path}: cannot read as a ROS bag ({text[:200]})") from None


def _read_bag(
    path: Path, names: list[str], topic: str | None, command_topic: str | None
) -> tuple[_Stream, _Stream | None, str]:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    source = _reader_path(path)  # it exists: read_log refuses a missing path first
    # a bag without message definitions (sqlite3 storage before Iron): the standard types (Humble)
    with AnyReader([source], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        infos = reader.topics
        types = {name: info.msgtype or "" for name, info in infos.items()}
        states = sorted(t for t, m in types.items() if m == JOINT_STATE)
        if topic is None:
            if len(states) != 1:
                found = f"{len(states)}: {', '.join(states)}" if states else f"none (topics: {_shown(sorted(types))})"
                raise LogError(f"{path}: JointState topics ({JOINT_STATE}): {found}; choose one with --topic")
            topic = states[0]
        checks: list[tuple[str | None, tuple[str, ...]]] = [
            (topic, (JOINT_STATE,)),
            (command_topic, (JOINT_STATE, MULTI_ARRAY)),
        ]
        for name, accepted in checks:
            if name is None:
                continue
            if name not in types:
                raise LogError(f"{path}: {name}: no such topic (JointState topics: {', '.join(states) or 'none'})")
            if types[name] not in accepted:
                raise LogError(f"{path}: {name}: a {types[name]}, not {' or '.join(accepted)}")
        topics = {topic: _Topic(path, topic, types[topic], names, infos[topic].msgcount, measured=True)}
        if command_topic is not None:
            topics[command_topic] = _Topic(
                path, command_topic, types[command_topic], names, infos[command_topic].msgcount, measured=False
            )
        connections = [c for c in reader.connections if c.topic in topics]
        for connection, received, data in reader.messages(connections=connections):
            topics[connection.topic].add(reader.deserialize(data, connection.msgtype), received)
    commands = topics[command_topic].stream() if command_topic is not None else None
    return topics[topic].stream(), commands, topic


class _Topic:
    """One topic's messages as received -> stamps (ns) and (N, n) values in the description's joint
    order. JointState: by name, header stamps; position, effort and (when every message has it)
    velocity if ``measured``, else the effort alone (commands). Float64MultiArray: n values in the
    description's order, received times (no header)."""

    def __init__(self, path: Path, topic: str, msgtype: str, names: list[str], expected: int, measured: bool):
        self.path, self.topic, self.names = path, topic, names
        self.array = msgtype == MULTI_ARRAY
        self.fields = ("position", "effort") if measured and not self.array else ("effort",)
        size = max(expected, 16)  # the bag's count for the topic: arrays filled in place, grown if it was short
        self.stamps = np.zeros(size, np.int64)
        self.received = np.zeros(size, np.int64)
        self.values = {f: np.empty((size, len(names))) for f in self.fields + ("velocity",)}
        self.velocity = measured and not self.array
        self.count = 0
        self.order: dict[tuple[str, ...], np.ndarray] = {}

    def add(self, msg: Any, received: int) -> None:
        i = self.count
        if i == len(self.stamps):
            self.stamps, self.received = np.resize(self.stamps, 2 * i), np.resize(self.received, 2 * i)
            self.values = {f: np.resize(v, (2 * i, v.shape[1])) for f, v in self.values.items()}
        self.received[i] = received
        self.count += 1
        if self.array:
            a = np.asarray(msg.data, dtype=float)
            if a.shape != (len(self.names),):
                raise LogError(
                    f"{self.path}: {self.topic}: message {i}: {a.size} values; the robot has {len(self.names)} "
                    "joints (the description's order)"
                )
            self.values["effort"][i] = a
            return
        self.stamps[i] = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
        key = tuple(msg.name)
        take = self.order.get(key)
        if take is None:
            index = {name: m for m, name in reversed(list(enumerate(key)))}  # the first of a repeated name
            missing = [x for x in self.names if x not in index]
            if missing:
                raise LogError(
                    f"{self.path}: {self.topic}: no joint{'s' * (len(missing) > 1)} "
                    f"{', '.join(repr(x) for x in missing)} in the JointState names (present: {_shown(key) or 'none'})"
                )
            take = self.order[key] = np.array([index[x] for x in self.names])
        for f in self.fields:
            a = np.asarray(getattr(msg, f), dtype=float)
            if len(a) != len(key):
                what = "no" if len(a) == 0 else f"{len(a)} values of"
                raise LogError(f"{self.path}: {self.topic}: message {i}: {what} {f} for {len(key)} joint names")
            self.values[f][i] = a[take]
        if self.velocity:
            a = np.asarray(msg.velocity, dtype=float)
            self.velocity = len(a) == len(key)
            if self.velocity:
                self.values["velocity"][i] = a[take]

    def stream(self) -> _Stream:
        k = self.count
        if k == 0:
            raise LogError(f"{self.path}: {self.topic}: no messages")
        values = {f: v[:k] for f, v in self.values.items()}
        for f in self.fields:
            bad = ~np.all(np.isfinite(values[f]), axis=0)
            if np.any(bad):
                joints = [x for x, b in zip(self.names, bad) if b]
                raise LogError(f"{self.path}: {self.topic}: {f}: NaN or inf for joints {', '.join(joints)}")
        if not (self.velocity and np.all(np.isfinite(values["velocity"]))):
            del values["velocity"]
        zero = self.stamps[:k] == 0  # no stamp (or no header): the bag's receive time
        return _Stream(np.where(zero, self.received[:k], self.stamps[:k]), int(np.sum(zero)), values)


def _hold(commands: _Stream, start: int, grid: np.ndarray) -> np.ndarray:
    """The command in force at each grid point (ns from ``start``): the last one stamped at or
    before it (the first before any)."""
    keep = ordered(commands.stamps)
    rel = (commands.stamps[keep] - start).astype(np.float64)
    at = np.clip(np.searchsorted(rel, grid, side="right") - 1, 0, None)
    return np.asarray(commands.values["effort"][keep][at], dtype=float)
