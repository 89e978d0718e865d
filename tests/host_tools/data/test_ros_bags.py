"""ROS bags -> the log format (#23 item 4): a loopback run of planar2 written with rosbags' own
writers as a ROS 1 bag, a ROS 2 sqlite3 bag and a ROS 2 MCAP bag, read back by `import-log` /
load_log: on the sample grid the log is the NPZ's (counts exact, torques to 1e-12), its effort
taken as measured at the stamps (the same identified parameters as a CSV of the same rows); with
jittered stamps within the linear interpolation's bound; the timing report's counts; the errors (a
missing joint, two JointState topics, ...)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.cli import main
from host_tools.data.formats import read_log
from host_tools.data.logs import Log, LogError
from host_tools.data.ros_bags import read_bag
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.pipeline import IdentSettings, identify, torque_at_samples

FORMATS = ("ros1", "sqlite3", "mcap")
START = 1_700_000_000 * 10**9  # ns: an epoch stamp, as a real recording has
TS_NS = 1_000_000  # planar2's sample period, ns
JS = "sensor_msgs/msg/JointState"
ARRAY = "std_msgs/msg/Float64MultiArray"


@dataclass
class State:
    """One JointState message (names in any order, extra names allowed)."""

    stamp: int
    names: list[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class Values:
    """One Float64MultiArray message."""

    data: np.ndarray


def write_bag(where: Path, fmt: str, records: Sequence[tuple[str, int, State | Values]]) -> Path:
    """(topic, receive time ns, message) in that order as a bag of ``fmt``; returns what to open: the
    ROS 1 file or the ROS 2 bag folder."""
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2
    from rosbags.typesys import Stores, get_typestore

    ros1 = fmt == "ros1"
    store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    types: dict[str, Any] = dict(store.types)
    header_fields = {f.name for f in dataclasses.fields(types["std_msgs/msg/Header"])}

    def message(rec: State | Values) -> Any:
        if isinstance(rec, Values):
            layout = types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
            return types[ARRAY](layout=layout, data=np.asarray(rec.data, float))
        stamp = types["builtin_interfaces/msg/Time"](sec=rec.stamp // 10**9, nanosec=rec.stamp % 10**9)
        header = types["std_msgs/msg/Header"](
            stamp=stamp, frame_id="base", **({"seq": 0} if "seq" in header_fields else {})
        )
        return types[JS](header=header, name=rec.names, position=rec.position, velocity=rec.velocity, effort=rec.effort)

    path = where.with_suffix(".bag") if ros1 else where
    writer: Any = (
        Writer1(path)
        if ros1
        else Writer2(path, version=9, storage_plugin=StoragePlugin.MCAP if fmt == "mcap" else StoragePlugin.SQLITE3)
    )
    connections: dict[str, Any] = {}
    with writer:
        for topic, received, rec in records:
            msgtype = ARRAY if isinstance(rec, Values) else JS
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=store)
            msg = message(rec)
            data = store.serialize_ros1(msg, msgtype) if ros1 else store.serialize_cdr(msg, msgtype)
            writer.write(connections[topic], received, data)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Log, Path]:
    """A 3 s loopback run of planar2 (the identification needs 2 s of a recorded run), saved as NPZ."""
    rt = load_rt("planar2")
    traj = generated_trajectory(load_robot("planar2"), 3.0, rt.sample_period, seed=3)
    log = simulate(rt, traj).log
    path = log.save(tmp_path_factory.mktemp("npz") / "run.npz")
    return Log.load(path), path


def positions(log: Log) -> np.ndarray:
    """The exact positions of the log's counts (planar2: offset 0, direction +1)."""
    robot = load_robot("planar2")
    rpc = np.array([2 * np.pi / j.encoder.cpr for j in robot.joints if j.encoder is not None])
    return log.counts * rpc


def states(log: Log, stamps: np.ndarray) -> list[tuple[str, int, State | Values]]:
    """The log as JointState messages (names reordered, an extra joint) and its tau_cmd as
    Float64MultiArray commands, at ``stamps`` (received at the nominal times)."""
    q = positions(log)
    qd = log.extra["qd_true"]
    records: list[tuple[str, int, State | Values]] = []
    for k, stamp in enumerate(stamps):
        received = START + k * TS_NS
        names = ["elbow", "gripper", "shoulder"]
        records.append(
            (
                "/joint_states",
                received,
                State(
                    int(stamp),
                    names,
                    np.array([q[k, 1], 0.5, q[k, 0]]),
                    np.array([qd[k, 1], 0.0, qd[k, 0]]),
                    np.array([log.tau[k, 1], -1.0, log.tau[k, 0]]),
                ),
            )
        )
        records.append(("/effort_cmd", received, Values(log.extra["tau_cmd"][k])))
    return records


def nominal(log: Log) -> np.ndarray:
    return START + np.round(log.time * 1e9).astype(np.int64)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_bag_on_the_sample_grid_is_the_npz_log(
    fmt: str, run: tuple[Log, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, npz = run
    bag = write_bag(tmp_path / "run", fmt, states(log, nominal(log)))
    robot = load_robot("planar2")
    got = read_bag(bag, robot, command_topic="/effort_cmd")
    b = got.log
    assert len(b) == len(log)
    assert np.array_equal(b.counts, log.counts)
    assert np.max(np.abs(b.tau - log.tau)) <= 1e-12
    assert np.allclose(b.time, log.time, rtol=0, atol=1e-12)
    assert np.array_equal(b.extra["qd_hat_logged"], log.extra["qd_true"])
    assert np.array_equal(b.extra["tau_cmd"], log.extra["tau_cmd"])
    assert np.array_equal(b.q_des, positions(log))
    t = got.timing
    assert (t.stamps, t.duplicates, t.out_of_order, t.gaps, t.receive_time, t.repeated) == (len(log), 0, 0, 0, 0, 0)
    assert t.mean_period == pytest.approx(1e-3, rel=1e-12) and t.jitter_max < 1e-12

    # identify and thresholds take the bag itself: a ROS 2 storage file too (its folder is read)
    for path in [bag] + (
        [] if fmt == "ros1" else [next(bag.glob("*.db3")) if fmt == "sqlite3" else next(bag.glob("*.mcap"))]
    ):
        assert np.array_equal(read_log(path, robot).log.counts, log.counts)
    # A bag's effort is measured at its stamp (a JointState's), not held over the sample before as the
    # NPZ's tau: the log says so, and identification takes it as it is. identify fits the bag's own
    # positions, efforts and velocities, as it fits a CSV of the same rows: the same parameters by both
    # routes (the rows are written with repr, exact; the stamps lie on the grid, so neither route
    # interpolates anything but the identity: 1e-12 is rounding in the fit alone).
    got = read_log(bag, robot)
    assert bool(got.log.extra["tau_sampled"]) and "tau_sampled" not in log.extra
    assert np.array_equal(torque_at_samples(got.log), got.log.tau)
    imported = Log.load(got.log.save(tmp_path / "imported.npz"))  # what import-log writes keeps it
    assert np.array_equal(torque_at_samples(imported), got.log.tau)
    assert np.array_equal(torque_at_samples(log)[:-1], (log.tau[:-1] + log.tau[1:]) / 2)
    assert got.samples is not None and np.max(np.abs(got.samples.q - positions(log))) <= 1e-12
    csv = tmp_path / "run.csv"
    rows = np.column_stack([log.time, positions(log), log.extra["qd_true"], log.tau])
    header = "time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,tau_shoulder,tau_elbow\n"
    csv.write_text(header + "".join(",".join(repr(float(v)) for v in r) + "\n" for r in rows))
    settings = IdentSettings()
    from_file = read_log(csv, robot).samples
    assert from_file is not None
    from_csv, _, _ = identify(robot, from_file, None, settings)
    from_bag, _, _ = identify(robot, got.samples, None, settings)
    a, c = from_csv.base.values, from_bag.base.values
    assert np.max(np.abs(a - c)) <= 1e-12 * np.max(np.abs(a))
    if fmt == "ros1":  # the whole CLI path once: the same thresholds from the bag as from the NPZ
        import json

        assert main(["thresholds", "planar2", str(npz), "--json"]) == 0
        want = json.loads(capsys.readouterr().out)
        assert main(["thresholds", "planar2", str(bag), "--json"]) == 0
        have = json.loads(capsys.readouterr().out)
        # the same findings and design, each naming its own file
        for doc, path in ((want, npz), (have, bag)):
            assert all(c.pop("source") == str(path) for c in doc["checks"])
            assert doc.pop("data") == [str(path)]
        assert have == want and have["samples"] > 0


def test_jittered_stamps_stay_within_the_interpolation_bound(run: tuple[Log, Path], tmp_path: Path) -> None:
    """Stamps off the grid by e_k, uniform in +-Ts/10; the values are the log's at the nominal
    instants. The grid starts at the first stamp: t_k = s_0 + k Ts, and s_k = k Ts + e_k, so
    t_k - s_k = e_0 - e_k (|.| <= 2 E, E = max|e| = Ts/10 < Ts/4). Then t_k lies in [s_{k-1}, s_{k+1}] and
    the interpolant there is the line through (s_k, y_k) on [s_{k-1}, s_k] or [s_k, s_{k+1}], whose
    slope is at most max(|y_k - y_{k-1}|, |y_{k+1} - y_k|) / (Ts - 2 E) (two stamps at least Ts - 2 E
    apart). So

        |y_bag(t_k) - y_k| <= |e_0 - e_k| * max(|dy_{k-1}|, |dy_k|) / (Ts - 2 E),

    the "max|jitter| x max|dy/dt|" of the textbook, per sample, with the discrete slope. For the
    positions y = counts (the written positions are exact counts); rounding the interpolated count
    adds at most half a count. Each side also gets 1e-9 of the value for floating point."""
    log, _ = run
    rng = np.random.default_rng(7)
    e = np.round(rng.uniform(-TS_NS / 10, TS_NS / 10, len(log))).astype(np.int64)
    bag = write_bag(tmp_path / "jitter", "mcap", states(log, nominal(log) + e))
    b = read_bag(bag, load_robot("planar2")).log
    k = len(b)
    assert k in (len(log) - 1, len(log))
    big_e = np.max(np.abs(e)) / 1e9
    ts = 1e-3
    d = np.abs(e[0] - e[:k]) / 1e9

    def bound(y: np.ndarray) -> np.ndarray:
        dy = np.abs(np.diff(y, axis=0))
        step = np.maximum(np.vstack([dy[:1], dy]), np.vstack([dy, dy[-1:]]))[:k]
        return d[:, None] * step / (ts - 2 * big_e)

    count_err = np.abs(b.counts - log.counts[:k])
    count_bound = bound(log.counts.astype(float)) + 0.5 + 1e-9
    tau_err = np.abs(b.tau - log.tau[:k])
    tau_bound = bound(log.tau) + 1e-9 * (1 + np.abs(log.tau[:k]))
    assert np.all(count_err <= count_bound), np.max(count_err - count_bound)
    assert np.all(tau_err <= tau_bound), np.max(tau_err - tau_bound)
    assert np.max(count_err) >= 1 and np.max(tau_err) > 0  # the jitter did move something
    print(
        f"jitter max {big_e * 1e3:.3f} ms: counts error max {np.max(count_err)} (bound max "
        f"{np.max(count_bound):.2f}); tau error max {np.max(tau_err):.4g} N m (bound max {np.max(tau_bound):.4g})"
    )


def test_duplicates_gaps_out_of_order_and_zero_stamps_are_counted(tmp_path: Path) -> None:
    names = ["shoulder", "elbow"]

    def js(stamp: int, value: float) -> State:
        return State(stamp, names, np.array([value, -value]), np.zeros(0), np.array([2 * value, 1.0]))

    # received when stamped (the readers give the messages in the order received), except:
    records: list[tuple[str, int, State | Values]] = []
    for k in range(100):
        s = START + k * TS_NS
        if 40 <= k < 44:  # lost: a gap of 5 Ts
            continue
        records.append(("/joint_states", s, js(s, 0.001 * k)))
        if k in (10, 20):  # the same stamp again, received 1 ns later, other values: dropped
            records.append(("/joint_states", s + 1, js(s, 9.0)))

    def index(k: int) -> int:
        return next(i for i, r in enumerate(records) if isinstance(r[2], State) and r[2].stamp == START + k * TS_NS)

    i60 = index(60)
    (t60, r60, m60), (t61, r61, m61) = records[i60], records[i60 + 1]
    records[i60], records[i60 + 1] = (t60, r60, m61), (t61, r61, m60)  # stamp 61 received before stamp 60
    topic, received, state = records[index(70)]
    assert isinstance(state, State)
    records[index(70)] = (topic, received, dataclasses.replace(state, stamp=0))  # no stamp: the receive time
    bag = write_bag(tmp_path / "holes", "sqlite3", records)
    got = read_bag(bag, load_robot("planar2"))
    t = got.timing
    assert t.stamps == 96 + 2
    assert (t.duplicates, t.out_of_order, t.gaps, t.receive_time) == (2, 1, 1, 1)
    assert t.longest_step == pytest.approx(5e-3)
    assert len(got.log) == 100
    assert "qd_hat_logged" not in got.log.extra  # the messages had no velocity
    # the first of the duplicates kept; the gap interpolated; the received stamp used
    rpc = 2 * np.pi / 16384
    assert np.allclose(got.log.q_des[:, 0], 0.001 * np.arange(100), atol=1e-12)
    assert np.array_equal(got.log.counts[:, 0], np.round(0.001 * np.arange(100) / rpc))
    assert np.allclose(got.log.tau[:, 0], 0.002 * np.arange(100), atol=1e-12)
    lines = got.lines()
    assert [x.split()[0] for x in lines[:6]] == ["stamps", "rate", "jitter", "gaps", "duplicates", "repeats"]
    assert "98 messages on /joint_states; 1 stamped with the bag's receive time" in lines[0]
    assert "2 dropped" in lines[4] and "1 out of order" in lines[4] and lines[3].startswith("gaps        1 ")


def test_missing_joint_names_the_bag_topic_and_the_names(tmp_path: Path) -> None:
    msg = State(START, ["shoulder", "wrist"], np.zeros(2), np.zeros(0), np.zeros(2))
    bag = write_bag(tmp_path / "wrong", "mcap", [("/arm/joint_states", START + k, msg) for k in range(3)])
    with pytest.raises(LogError) as err:
        read_bag(bag, load_robot("planar2"))
    text = str(err.value)
    assert str(bag) in text and "/arm/joint_states" in text and "'elbow'" in text
    assert "present: 'shoulder', 'wrist'" in text


def test_two_joint_state_topics_need_a_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ["shoulder", "elbow"]
    records: list[tuple[str, int, State | Values]] = []
    for k in range(5):
        s = START + k * TS_NS
        records.append(("/left/joint_states", s, State(s, names, np.full(2, 0.1 * k), np.zeros(0), np.ones(2))))
        records.append(("/right/joint_states", s, State(s, names, np.full(2, -0.1 * k), np.zeros(0), np.ones(2))))
    bag = write_bag(tmp_path / "two", "ros1", records)
    robot = load_robot("planar2")
    with pytest.raises(LogError, match="JointState topics .*: 2: /left/joint_states, /right/joint_states; choose"):
        read_bag(bag, robot)
    assert read_bag(bag, robot, topic="/right/joint_states").log.q_des[-1, 0] == pytest.approx(-0.4)
    out = tmp_path / "two.npz"
    assert main(["import-log", str(bag), "--robot", "planar2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("manipgen: error: ") and "/left/joint_states" in err[0]
    assert not out.exists()
    for topic, fragment in (("/nope", "no such topic"), ("/left/joint_states", "belong to ROS bags")):
        target = bag if fragment == "no such topic" else tmp_path / "run.mat"
        assert main(["import-log", str(target), "--robot", "planar2", "--out", str(out), "--topic", topic]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and fragment in err[0], err


def test_import_log_prints_the_timing_report(
    run: tuple[Log, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = run
    bag = write_bag(tmp_path / "cli", "sqlite3", states(log, nominal(log)))
    out = tmp_path / "cli.npz"
    args = ["import-log", str(bag), "--robot", "planar2", "--out", str(out), "--topic", "/joint_states"]
    assert main(args + ["--command-topic", "/effort_cmd"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [x.split()[0] for x in lines]
    for head in ("stamps", "rate", "jitter", "gaps", "duplicates", "repeats", "joint", "tau"):
        assert head in heads, lines
    assert "3001 messages on /joint_states" in lines[1] and "1000 Hz" in lines[2]
    saved = Log.load(out)
    assert np.array_equal(saved.counts, log.counts) and "tau_cmd" in saved.extra


@pytest.mark.parametrize("fmt", FORMATS)
def test_too_few_messages_and_nan_effort_are_refused(fmt: str, tmp_path: Path) -> None:
    names = ["shoulder", "elbow"]
    two = [("/js", START + k, State(START + k, names, np.zeros(2), np.zeros(0), np.zeros(2))) for k in range(2)]
    robot = load_robot("planar2")
    with pytest.raises(LogError, match="2 distinct stamps; at least 3"):
        read_bag(write_bag(tmp_path / "two", fmt, list(two)), robot)
    nan = [
        ("/js", START + k * TS_NS, State(START + k * TS_NS, names, np.zeros(2), np.zeros(0), np.array([0.0, np.nan])))
        for k in range(5)
    ]
    with pytest.raises(LogError, match="effort: NaN or inf for joints elbow"):
        read_bag(write_bag(tmp_path / "nan", fmt, nan), robot)


def test_motor_side_encoders_read_back_within_half_a_count(tmp_path: Path) -> None:
    """ur5's encoders sit on the motors (65536 counts per motor turn, gear 101): the counts are the
    motor encoder's, and the generated encoder read gives the bag's positions back to half a count."""
    from host_tools.identification.pipeline import positions as read_positions

    robot = load_robot("ur5")
    names = [j.name for j in robot.joints]
    t = np.arange(200) * TS_NS
    q = 0.5 * np.sin(np.outer(t / 1e9, np.arange(1, 7))) + 0.1
    records: list[tuple[str, int, State | Values]] = [
        (
            "/joint_states",
            START + int(s),
            State(START + int(s), names[::-1], q[k, ::-1].copy(), np.zeros(0), np.zeros(6)),
        )
        for k, s in enumerate(t)
    ]
    got = read_bag(write_bag(tmp_path / "ur5", "mcap", records), robot)
    resolution = 2 * np.pi / (65536 * 101)
    from host_tools.data.measured import encoders

    assert np.allclose(encoders(robot)[0], resolution, rtol=1e-12)
    assert f"{resolution:.4g} per count" in got.lines()[-2]
    assert np.max(np.abs(read_positions(robot, got.log) - q)) <= resolution / 2 * (1 + 1e-9)


def test_import_log_takes_a_urdf_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ROS user's robot is a URDF: import-log takes the same chain flags as generate (the UR10 of
    example-robot-data, a tree: without --tip-link the loader asks for it)."""
    from host_tools.cli import main
    from host_tools.studies.pinocchio_models import ur_urdf_path

    urdf = str(ur_urdf_path("ur10"))
    robot = load_robot(urdf, base_link="base_link", tip_link="tool0")
    names = [j.name for j in robot.joints]
    t = np.arange(50) * TS_NS
    q = 0.3 * np.sin(np.outer(t / 1e9, np.arange(1, 7)))
    records: list[tuple[str, int, State | Values]] = [
        ("/joint_states", START + int(s), State(START + int(s), names, q[k].copy(), np.zeros(0), np.ones(6)))
        for k, s in enumerate(t)
    ]
    bag = write_bag(tmp_path / "ur10", "sqlite3", records)
    out = tmp_path / "ur10.npz"
    assert main(["import-log", str(bag), "--robot", urdf, "--out", str(out)]) == 2
    assert "--tip-link" in capsys.readouterr().err
    chain = ["--base-link", "base_link", "--tip-link", "tool0"]
    assert main(["import-log", str(bag), "--robot", urdf, *chain, "--out", str(out)]) == 0
    assert Log.load(out).robot == robot.c_name == "ur10"
