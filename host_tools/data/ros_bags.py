"""ROS bags (ROS 1 ``.bag``; ROS 2 sqlite3 ``.db3`` and MCAP ``.mcap``) -> the log format, read with
the maintained ``rosbags`` library (no ROS installation).

What a bag gives and how it becomes a Log of ``robot``:

- ``sensor_msgs/msg/JointState`` on one topic (default: the bag's only JointState topic), mapped to
  the description's joints BY NAME (``robot.joints[i].name``; other names in the message are
  ignored, a missing one is an error naming it and the names present);
- time: each message's header stamp (the bag's receive time where the stamp is zero), made
  relative to the first stamp; out-of-order stamps are sorted, duplicated stamps dropped (the first
  received kept); then resampled to ``robot.sample_period`` on a uniform grid from the first stamp
  by linear interpolation (a bag at 500 Hz resampled to 1 kHz is legitimate: the timing report says
  what the bag had, nothing is refused for it);
- position -> counts through the robot's encoder as the generated read takes them,
  ``round((q - offset) * direction * gear / (2 pi / cpr))`` (gear: the gear ratio of a motor-side
  encoder, 1 on the link side; no encoder declared: 65536 counts per turn), after the
  interpolation: the log's quantisation is the encoder's, whatever the bag recorded (positions need
  not lie on the encoder grid; the report gives the largest rounding);
- effort -> ``tau`` (the measured joint torque, N m or N, linearly interpolated); velocity, when
  every message has one per name -> the extra ``qd_hat_logged``;
- ``command_topic`` (optional): the commanded torque, ``JointState`` effort (by name, header stamps)
  or ``std_msgs/msg/Float64MultiArray`` (n values in the description's joint order, the bag's
  receive times) -> the extra ``tau_cmd``, held from one command to the next (zero-order hold; the
  first command before it arrives). ``tau`` stays the measured effort;
- no desired trajectory is in a bag: ``q_des`` is the measured position (interpolated, before the
  rounding), ``qd_des`` and ``qdd_des`` its central differences (``np.gradient``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks.encoder import link_counts_per_turn
from codegen.model.robot import Robot
from host_tools.data.logs import Log, LogError

JOINT_STATE = "sensor_msgs/msg/JointState"
MULTI_ARRAY = "std_msgs/msg/Float64MultiArray"
STORAGE_SUFFIXES = (".db3", ".mcap")  # ROS 2 storage files (rosbags spells the suffixes this way)
BAG_SUFFIXES = (".bag",) + STORAGE_SUFFIXES
GAP = 1.5  # a stamp step longer than GAP sample periods is a gap
MAX_VALUES = 30_000_000  # samples x joints of one resampled log (about 240 MB per array)
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


@dataclass(frozen=True)
class BagTiming:
    """The stamps of the JointState topic as recorded (before resampling). Times in s."""

    messages: int  # JointState messages on the topic
    receive_time: int  # of them stamped with the bag's receive time (header stamp zero)
    duplicates: int  # dropped: the same stamp as an earlier message (the first received is kept)
    out_of_order: int  # steps back in time in the order received (the stamps are sorted)
    mean_period: float  # (last - first) / (kept messages - 1)
    jitter_std: float  # standard deviation of the stamp steps
    jitter_max: float  # max |step - sample_period|
    gaps: int  # steps longer than GAP sample periods
    longest_step: float


@dataclass(frozen=True)
class BagReport:
    path: Path  # what was read (a storage file's bag folder when it has one)
    topic: str
    command_topic: str | None
    timing: BagTiming
    sample_period: float
    samples: int  # of the resampled log
    start_stamp: int  # ns: the first stamp, the log's time 0
    resolution: np.ndarray  # (n,) rad (m) per count: the log's quantisation, the encoder's
    rounding: float  # largest |position in counts - nearest count| before the rounding
    velocity: bool  # qd_hat_logged kept

    def lines(self) -> list[str]:
        """The timing report, one line each (messages, rate, jitter, gaps, duplicates)."""
        t, ts = self.timing, self.sample_period
        resolution = ", ".join(f"{r:.4g}" for r in dict.fromkeys(self.resolution.tolist()))
        received = (
            f"; {t.receive_time} stamped with the bag's receive time (zero header stamp)" if t.receive_time else ""
        )
        return [
            f"messages    {t.messages} on {self.topic}{received}",
            f"rate        {1.0 / t.mean_period:.6g} Hz (mean period {t.mean_period * 1e3:.6g} ms); "
            f"resampled to {self.samples} samples every {ts * 1e3:g} ms",
            f"jitter      std {t.jitter_std * 1e3:.3g} ms, max |dt - Ts| {t.jitter_max * 1e3:.3g} ms",
            f"gaps        {t.gaps} (dt > {GAP:g} Ts), longest dt {t.longest_step * 1e3:.6g} ms",
            f"duplicates  {t.duplicates} dropped (the first kept); {t.out_of_order} out of order (sorted)",
            f"positions   rounded to the encoders' counts ({resolution} per count; up to {self.rounding:.3g} counts)",
            "q_des       the measured positions (a bag has no desired trajectory)",
        ]


@dataclass(frozen=True)
class BagImport:
    log: Log
    report: BagReport


@dataclass
class _Stream:
    """One topic's messages in the order received: stamps (ns) and values (N, n) per field."""

    stamps: np.ndarray  # int64 ns: header stamp, or receive time where the stamp is zero
    receive_time: int
    values: dict[str, np.ndarray]


def import_bag(path: str | Path, robot: Robot, *, topic: str | None = None, command_topic: str | None = None) -> Log:
    """A ROS bag as a Log of ``robot`` (see the module's docstring); read_bag also gives the report."""
    return read_bag(path, robot, topic=topic, command_topic=command_topic).log


def read_bag(
    path: str | Path, robot: Robot, *, topic: str | None = None, command_topic: str | None = None
) -> BagImport:
    """A ROS bag as a Log of ``robot`` and the report of its timing (see the module's docstring)."""
    path = Path(path)
    rpc, offset, direction = _encoders(robot)
    names = [j.name for j in robot.joints]
    joint_states, commands, chosen = _read(path, names, topic, command_topic)
    ts = robot.sample_period
    keep, timing = _clean(joint_states.stamps, ts, joint_states.receive_time)
    if len(keep) < 3:
        raise LogError(f"{path}: {chosen}: {len(keep)} distinct stamps; at least 3 are needed")
    stamps = joint_states.stamps[keep]
    start = int(stamps[0])
    rel = (stamps - start).astype(np.float64)  # exact: integer ns below 2**53 (104 days)
    period = ts * 1e9
    if abs(period - round(period)) < 1e-6:
        period = float(round(period))  # integer ns: grid points that fall on stamps hit them exactly
    k = int(np.floor(rel[-1] / period + 1e-9)) + 1
    n = robot.dof
    if k < 3:
        raise LogError(f"{path}: {chosen}: the stamps span {rel[-1] / 1e9:g} s: fewer than 3 samples of {ts:g} s")
    if k * n > MAX_VALUES:
        raise LogError(
            f"{path}: {chosen}: the stamps span {rel[-1] / 1e9:g} s: {k} samples of {ts:g} s, more than "
            f"{MAX_VALUES // n} (cut the bag first)"
        )
    grid = np.arange(k) * period

    def resample(a: np.ndarray) -> np.ndarray:
        return np.stack([np.interp(grid, rel, a[keep, j]) for j in range(n)], axis=1)

    q = resample(joint_states.values["position"])
    raw = (q - offset) * direction / rpc
    if not np.all(np.abs(raw) < 2.0**62):
        raise LogError(f"{path}: {chosen}: positions beyond the encoders' int64 counts")
    counts = np.round(raw)
    qd_des = np.gradient(q, ts, axis=0)
    extra: dict[str, np.ndarray] = {}
    if "velocity" in joint_states.values:
        extra["qd_hat_logged"] = resample(joint_states.values["velocity"])
    if commands is not None:
        extra["tau_cmd"] = _hold(commands, start, grid)
    log = Log(
        robot=robot.c_name,
        sample_period=ts,
        time=grid / 1e9,
        counts=counts.astype(np.int64),
        valid=np.ones((k, n), dtype=bool),
        tau=resample(joint_states.values["effort"]),
        q_des=q,
        qd_des=qd_des,
        qdd_des=np.gradient(qd_des, ts, axis=0),
        extra=extra,
    )
    log.check(str(path))
    report = BagReport(
        path=_reader_path(path),
        topic=chosen,
        command_topic=command_topic,
        timing=timing,
        sample_period=ts,
        samples=k,
        start_stamp=start,
        resolution=rpc,
        rounding=float(np.max(np.abs(raw - counts))),
        velocity="velocity" in joint_states.values,
    )
    return BagImport(log, report)


def _encoders(robot: Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: the joint's rad (m) per count, offset and direction of its encoder as the generated
    read takes it (q = count 2 pi / cpr direction / gear + offset; gear 1 on the link side; no
    encoder declared: 65536 counts per turn on the link side)."""
    offset = [j.encoder.offset if j.encoder is not None else 0.0 for j in robot.joints]
    direction = [float(j.encoder.direction) if j.encoder is not None else 1.0 for j in robot.joints]
    return 2 * np.pi / np.array(link_counts_per_turn(robot)), np.array(offset), np.array(direction)


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

    source = _reader_path(path)
    if not source.exists():
        raise LogError(f"{path}: no such file or folder")
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


def _clean(stamps: np.ndarray, ts: float, receive_time: int) -> tuple[np.ndarray, BagTiming]:
    """Indices of the messages to use, in time order (sorted; of equal stamps the first received),
    and the timing report of what was recorded."""
    out_of_order = int(np.sum(np.diff(stamps) < 0))
    order = np.argsort(stamps, kind="stable")
    first = np.concatenate([[True], np.diff(stamps[order]) > 0])
    keep = order[first]
    steps = np.diff(stamps[keep]) / 1e9
    if len(steps) == 0:
        steps = np.zeros(1)
    timing = BagTiming(
        messages=len(stamps),
        receive_time=receive_time,
        duplicates=int(np.sum(~first)),
        out_of_order=out_of_order,
        mean_period=float(np.mean(steps)) if np.any(steps) else float("inf"),
        jitter_std=float(np.std(steps)),
        jitter_max=float(np.max(np.abs(steps - ts))),
        gaps=int(np.sum(steps > GAP * ts)),
        longest_step=float(np.max(steps)),
    )
    return keep, timing


def _hold(commands: _Stream, start: int, grid: np.ndarray) -> np.ndarray:
    """The command in force at each grid point (ns from ``start``): the last one stamped at or
    before it (the first before any)."""
    keep, _ = _clean(commands.stamps, 1.0, 0)
    rel = (commands.stamps[keep] - start).astype(np.float64)
    at = np.clip(np.searchsorted(rel, grid, side="right") - 1, 0, None)
    return np.asarray(commands.values["effort"][keep][at], dtype=float)
