"""CSV logs (host_tools.data.csvdata, #44 item 3): a hand-built CSV of planar2 with jittered stamps,
one 8 ms gap and 5 rows recorded twice is resampled like a bag -- the timing report's rate, jitter
and gap against figures computed here from the written stamps, the gap and the repeats found by the
input checks with the samples they spoil, the same arrays from the CSV, from its NPZ and from a ROS
bag of the same messages; a steady 500 Hz CSV for the 1 kHz robot has no gaps; errors in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.data.checks import check_log
from host_tools.data.csvdata import read_csv
from host_tools.data.formats import LogFile, read_log
from host_tools.data.logs import Log, LogError
from host_tools.data.timing import GAP

PLANAR2 = load_robot("planar2")  # 1 ms, link-side encoders of 16384 counts per turn
GAP_AT = 1000  # the row after which 7 rows are lost: one step of 8 ms
REPEATED = (300, 700, 1500, 2000, 2500)  # rows (of the file) that repeat the row before


def hand_built(seed: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stamps (integer us: what the CSV states exactly), positions and torques (R, 2) of a 3 s run:
    1 kHz with stamps off their nominal instants by up to +-0.1 ms (the first, the last and those either
    side of the gap, on them), rows 1001-1007 lost, the rows REPEATED copies of the row before."""
    rng = np.random.default_rng(seed)
    k = np.arange(3000)
    jitter = rng.integers(-100, 101, len(k))
    jitter[[0, GAP_AT, GAP_AT + 8, -1]] = 0
    stamps_us = k * 1000 + jitter
    t = stamps_us / 1e6
    q = np.column_stack([0.8 * np.sin(2 * np.pi * 0.5 * t), 0.5 * np.cos(2 * np.pi * 0.7 * t)])
    tau = np.column_stack([3 * np.sin(2 * np.pi * 0.5 * t + 1), np.cos(2 * np.pi * 0.3 * t)])
    tau += rng.normal(0, 0.01, tau.shape)
    kept = (k <= GAP_AT) | (k >= GAP_AT + 8)
    stamps_us, q, tau = stamps_us[kept], q[kept], tau[kept]
    for r in REPEATED:
        q[r], tau[r] = q[r - 1], tau[r - 1]
    return stamps_us, q, tau


def write_csv(path: Path, stamps_us: np.ndarray, *columns: np.ndarray) -> Path:
    table = np.column_stack([stamps_us / 1e6, *columns])
    np.savetxt(path, table, delimiter=",", header="time,q1,q2,tau1,tau2", comments="", fmt="%.17g")
    return path


@pytest.fixture(scope="module")
def irregular(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogFile, np.ndarray, np.ndarray, np.ndarray]:
    stamps_us, q, tau = hand_built()
    path = write_csv(tmp_path_factory.mktemp("csv") / "irregular.csv", stamps_us, q, tau)
    return read_csv(path, PLANAR2), stamps_us, q, tau


def test_the_timing_report_of_a_jittered_csv(irregular: tuple[LogFile, np.ndarray, np.ndarray, np.ndarray]) -> None:
    f, stamps_us, _, _ = irregular
    steps = np.diff(stamps_us) / 1e6  # s; the rows are in order, every stamp distinct
    median = float(np.median(steps))
    regular = np.delete(steps, GAP_AT)  # the jitter: of the steps that are not the gap
    t = f.timing
    assert (t.stamps, t.duplicates, t.out_of_order, t.repeated) == (2993, 0, 0, 5)
    assert t.resampled and t.samples == int(stamps_us[-1] // 1000) + 1 == len(f.log)
    assert t.mean_period == pytest.approx((stamps_us[-1] - stamps_us[0]) / 1e6 / 2992, rel=1e-12)
    assert 1.0 / t.mean_period == pytest.approx(1000 * 2992 / 2999, rel=1e-3)  # 7 rows lost in 3 s
    assert t.median_period == pytest.approx(median, rel=1e-12)
    assert median == 1e-3 and t.jitter_std == pytest.approx(float(np.std(regular)), rel=1e-9)
    assert t.jitter_max == pytest.approx(float(np.max(np.abs(regular - median))), rel=1e-9)
    assert 0.15e-3 < t.jitter_max <= 0.2e-3  # two stamps off by up to 0.1 ms each
    assert t.gaps == int(np.sum(steps > GAP * median)) == 1
    assert t.longest_step == pytest.approx(0.008, abs=1e-12)
    lines = f.lines()
    assert lines[3].startswith("gaps        1 ") and "longest dt 8 ms" in lines[3]
    assert lines[5].startswith("repeats     5 ") and "resampled to 3000 samples every 1 ms" in lines[1]
    doc = t.as_json()
    assert doc["gaps"] == 1 and doc["repeated"] == 5 and doc["rate_hz"] == pytest.approx(1.0 / t.mean_period)


def test_the_gap_and_the_repeats_are_found_where_they_spoil_the_log(
    irregular: tuple[LogFile, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """The gap flags the grid samples from the stamp before it to the one after (interpolated across
    it); a repeated row, those between the rows either side of it (interpolated from a stale value)."""
    f, stamps_us, _, _ = irregular
    grid_us = np.arange(len(f.log)) * 1000  # the first stamp is on its nominal instant: t = 0
    assert np.allclose(f.log.time, grid_us / 1e6, rtol=0, atol=1e-12)
    checks = check_log(f.log, PLANAR2, "irregular.csv")
    found = [(c.kind, c.first, c.last) for c in checks.findings]
    before, after = stamps_us[GAP_AT], stamps_us[GAP_AT + 1]
    gap = np.flatnonzero((grid_us >= before) & (grid_us <= after))
    assert (before, after, gap[0], gap[-1]) == (1_000_000, 1_008_000, 1000, 1008)
    want = [("gap", 1000, 1008)]
    for r in REPEATED:
        between = np.flatnonzero((grid_us > stamps_us[r - 1]) & (grid_us < stamps_us[r + 1]))
        want.append(("repeat", int(between[0]), int(between[-1])))
    assert found == want
    g = checks.findings[0]
    assert (g.t0, g.t1, g.samples) == (pytest.approx(1.0), pytest.approx(1.008), 9)
    assert "8 ms" in g.detail and "t = 1..1.008 s as recorded" in g.detail
    assert all("1 recorded row identical" in c.detail for c in checks.findings[1:])
    assert int(np.sum(checks.flagged)) == sum(b - a + 1 for _, a, b in want)


def test_csv_npz_and_bag_give_the_same_resampled_log(
    irregular: tuple[LogFile, np.ndarray, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    """The CSV's columns interpolated here onto the grid, rounded to the encoder's counts; its NPZ
    read back (the stamps as recorded kept: the same findings); a ROS bag of the same messages."""
    from tests.host_tools.data.test_ros_bags import START, State, write_bag

    f, stamps_us, q, tau = irregular
    grid = np.arange(len(f.log)) * 1e-3
    t = stamps_us / 1e6
    q_grid = np.column_stack([np.interp(grid, t, q[:, j]) for j in range(2)])
    tau_grid = np.column_stack([np.interp(grid, t, tau[:, j]) for j in range(2)])
    assert np.allclose(f.log.q_des, q_grid, rtol=0, atol=1e-12)
    assert np.allclose(f.log.tau, tau_grid, rtol=0, atol=1e-12)
    assert np.array_equal(f.log.counts, np.round(q_grid / (2 * np.pi / 16384)).astype(np.int64))
    assert f.samples is not None and np.array_equal(f.samples.q, f.log.q_des)
    npz = read_log(f.log.save(tmp_path / "irregular.npz"), PLANAR2)
    bag = write_bag(
        tmp_path / "irregular",
        "mcap",
        [
            (
                "/joint_states",
                START + int(s) * 1000,
                State(START + int(s) * 1000, ["shoulder", "elbow"], a, np.zeros(0), b),
            )
            for s, a, b in zip(stamps_us, q, tau)
        ],
    )
    from_bag = read_log(bag, PLANAR2)
    for other in (npz, from_bag):
        for name in ("time", "counts", "tau", "q_des", "qd_des", "qdd_des"):
            assert np.array_equal(getattr(other.log, name), getattr(f.log, name)), name
        for name in ("recorded_time", "recorded_repeats"):
            assert np.array_equal(other.log.extra[name], f.log.extra[name]), name
        a, b = check_log(other.log, PLANAR2, "x"), check_log(f.log, PLANAR2, "x")
        assert a.as_json() == b.as_json() and np.array_equal(a.flagged, b.flagged)
    assert (npz.timing.gaps, npz.timing.repeated, from_bag.timing.gaps, from_bag.timing.repeated) == (1, 5, 1, 5)
    assert from_bag.timing.as_json()["jitter_max"] == pytest.approx(f.timing.jitter_max, rel=1e-9)


def test_a_steady_500_hz_csv_for_a_1_khz_robot_has_no_gaps(tmp_path: Path) -> None:
    stamps_us = np.arange(1500) * 2000  # 3 s at 500 Hz, planar2 runs at 1 kHz
    t = stamps_us / 1e6
    q = np.column_stack([np.sin(t), np.cos(t)])
    tau = np.column_stack([np.sin(3 * t), np.cos(2 * t)])
    f = read_log(write_csv(tmp_path / "500hz.csv", stamps_us, q, tau), PLANAR2)
    assert (f.timing.gaps, f.timing.median_period, f.timing.jitter_max) == (0, pytest.approx(2e-3), pytest.approx(0))
    assert f.timing.resampled and len(f.log) == 2999 and f.log.sample_period == 1e-3
    assert [c.kind for c in check_log(f.log, PLANAR2).findings] == []
    # the same CSV at 1 kHz on the robot's grid is taken as it is
    uniform = read_log(
        write_csv(tmp_path / "1khz.csv", np.arange(3000) * 1000, q.repeat(2, 0), tau.repeat(2, 0)), PLANAR2
    )
    assert not uniform.timing.resampled and "recorded_time" not in uniform.log.extra


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("t,q1,q2\n0,1,2\n", "3 columns; a 2-joint robot needs 1 + 2 x 2 = 5"),
        ("t,q1,q2,tau1,tau2\n0,1,2,3,4\n0.001,1,2,3,4\n", "2 samples; need at least 3"),
        (
            "t,q1,q2,tau1,tau2\n0,1,2,3,4\n0.001,1,nan,3,4\n0.002,1,2,3,4\n",
            "bad.csv line 3, column 3 'q2': nan is not finite",
        ),
        ("t,q1,q2,tau1,tau2\n0,1,2,3,4\n0,1,2,3,4\n0,1,2,3,5\n", "time: 1 distinct stamps; at least 3"),
        ("t,q1,q2,tau1,tau2\n0,1,2,3,x\n", "bad.csv line 2, column 5 'tau2': 'x' is not a number"),
    ],
)
def test_csv_errors_name_the_file_in_one_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(LogError) as err:
        read_log(path, PLANAR2)
    assert str(path) in str(err.value) and needle in str(err.value) and "\n" not in str(err.value), err.value


def test_a_missing_csv_is_named_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "missing.csv"
    with pytest.raises(LogError, match=r"missing\.csv: no such file$"):
        read_log(path, PLANAR2)


def test_a_recorded_velocity_column_is_kept(tmp_path: Path) -> None:
    t = np.arange(100) * 1e-3
    q = np.column_stack([np.sin(t), t])
    qd = np.column_stack([np.cos(t), np.ones_like(t)])
    path = tmp_path / "qd.csv"
    np.savetxt(path, np.column_stack([t, q, qd, q]), delimiter=",", header="t,q1,q2,qd1,qd2,tau1,tau2", comments="")
    log: Log = read_log(path, PLANAR2).log
    assert np.array_equal(log.extra["qd_hat_logged"], qd) and np.array_equal(log.tau, q)


ROWS = "0,1,2,3,4\n0.001,1,2,3,4\n0.002,1,2,3,4\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        # line 1 the header, line 3 a comment, line 5 blank: numbered as an editor shows the file
        (
            "t,q1,q2,tau1,tau2\n0,1,2,3,4\n# note\n0.001,1,2,3,4\n\n0.002,1,2,3,x\n",
            "line 6, column 5 'tau2': 'x' is not a number",
        ),
        (
            "t,q1,q2,tau1,tau2\n0,1,2,3,4\n# note\n0.001,1,2,3,4\n\n0.002,1,nan,3,4\n",
            "line 6, column 3 'q2': nan is not finite",
        ),
        ("t,q1,q2,tau1,tau2\n0,1,2,3,4\n0.001,1,2,3\n0.002,1,2,3,4\n", "line 3: 4 values; line 2 has 5"),
    ],
)
def test_csv_errors_name_the_line_of_the_file(tmp_path: Path, text: str, needle: str) -> None:
    """#44: every row error names the file's 1-based line (header and comments counted), as
    "PATH line N: ..." (numpy's loadtxt said "row 498" for line 500, the NaN check "data row 699")."""
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(LogError) as err:
        read_log(path, PLANAR2)
    assert str(err.value) == f"{path} {needle}" or str(err.value).startswith(f"{path} {needle}"), err.value
    assert "row" not in str(err.value), err.value


def test_a_csv_at_line_500_is_named_so(tmp_path: Path) -> None:
    lines = ["time,q1,q2,tau1,tau2"] + [f"{k * 1e-3:.3f},1,2,3,4" for k in range(800)]
    lines[499] = lines[499].replace(",3,", ",abc,")
    lines[699] = lines[699].replace(",3,", ",nan,")
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError, match=r"log\.csv line 500, column 4 'tau1': 'abc' is not a number$"):
        read_log(path, PLANAR2)
    lines[499] = lines[498].replace("0.497", "0.498")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError, match=r"log\.csv line 700, column 4 'tau1': nan is not finite$"):
        read_log(path, PLANAR2)


def _columns(names: str) -> str:
    return names + "\n" + ROWS


def test_joint_named_columns_are_read_by_name(tmp_path: Path) -> None:
    """Columns named q_<joint>, qd_<joint>, tau_<joint> (as `record --hostile` writes them) are taken
    by the joint they name, in any order; the same numbers in the description's order read alike."""
    t = np.arange(50) * 1e-3
    q = np.column_stack([np.sin(t), t])
    qd = np.column_stack([np.cos(t), np.ones_like(t)])
    tau = np.column_stack([3 + t, 4 - t])
    ours = tmp_path / "ours.csv"
    theirs = tmp_path / "theirs.csv"
    np.savetxt(
        ours,
        np.column_stack([t, q, qd, tau]),
        delimiter=",",
        comments="",
        header="time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,tau_shoulder,tau_elbow",
    )
    shuffled = np.column_stack([t, tau[:, 1], q[:, 1], qd[:, 1], tau[:, 0], q[:, 0], qd[:, 0]])
    np.savetxt(
        theirs,
        shuffled,
        delimiter=",",
        comments="",
        header="time,tau_elbow,q_elbow,qd_elbow,tau_shoulder,q_shoulder,qd_shoulder",
    )
    # the same shuffled columns as a spreadsheet writes them: a byte-order mark, quoted names, spaces
    quoted = tmp_path / "quoted.csv"
    names = ("time", "tau_elbow", "q_elbow", "qd_elbow", "tau_shoulder", "q_shoulder", "qd_shoulder")
    rows = theirs.read_text().split("\n", 1)[1]
    quoted.write_text("\ufeff" + ", ".join(f'"{x}"' for x in names) + "\n" + rows, encoding="utf-8")
    a, b, c = read_log(ours, PLANAR2), read_log(theirs, PLANAR2), read_log(quoted, PLANAR2)
    assert a.samples is not None and b.samples is not None and b.samples.qd is not None
    assert np.array_equal(a.samples.q, q) and np.array_equal(b.samples.q, q)
    assert np.array_equal(b.samples.tau, tau) and np.array_equal(b.samples.qd, qd)
    assert c.samples is not None and np.array_equal(c.samples.q, q) and np.array_equal(c.samples.tau, tau)
    for name in ("time", "counts", "tau"):
        assert np.array_equal(getattr(a.log, name), getattr(b.log, name)), name
    # the byte-order mark is no part of the first name: an error in the time column names 'time'
    bad = tmp_path / "bad.csv"
    bad.write_text("\ufeff" + ", ".join(f'"{x}"' for x in names) + "\nx" + rows, encoding="utf-8")
    with pytest.raises(LogError, match=r"bad.csv line 2, column 1 'time': "):
        read_log(bad, PLANAR2)
    # every field quoted, numbers too (some loggers and spreadsheets write them so), with or without a
    # space after the commas (loadtxt's quotechar takes only the first): the same numbers
    lines = rows.strip().split("\n")
    for sep in (",", ", "):
        quoted_all = tmp_path / "every.csv"
        body = "\n".join(sep.join(f'"{v}"' for v in r.split(",")) for r in lines)
        quoted_all.write_text(sep.join(f'"{x}"' for x in names) + "\n" + body + "\n")
        d = read_log(quoted_all, PLANAR2).samples
        assert d is not None and d.qd is not None and np.array_equal(d.q, q) and np.array_equal(d.qd, qd), sep
    # a decimal comma inside the quotes is no number: one error naming the line and the column
    comma = tmp_path / "comma.csv"
    first = lines[0].split(",")
    first[2] = first[2].replace(".", ",")
    comma.write_text(",".join(names) + "\n" + ",".join(f'"{v}"' for v in first) + "\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(LogError, match=r"comma.csv line 2, column 3 'q_elbow': '-?\d+,\d+(e[-+]\d+)?' is not a number"):
        read_log(comma, PLANAR2)


@pytest.mark.parametrize(
    ("header", "needle"),
    [
        (
            "time,q_shoulder,q_wrist,tau_shoulder,tau_elbow",
            "line 1, column 3 'q_wrist': planar2 has no joint 'wrist' (its joints: shoulder, elbow)",
        ),
        (
            "time,q_shoulder,q_shoulder,tau_shoulder,tau_elbow",
            "line 1, column 3 'q_shoulder': joint 'shoulder' named twice (column 2 too)",
        ),
        (
            "time,q_shoulder,q_elbow,qd_shoulder,qd_elbow",
            "line 1: no column tau_shoulder (the columns name joints: each of planar2's joints once as q_, tau_)",
        ),
        (
            "time,q_shoulder,q2,tau_shoulder,tau_elbow",
            "line 1, column 3 'q2': the other columns name joints (q_<joint>, qd_<joint>, tau_<joint>): "
            "name every column so, or none",
        ),
        ("time,q1,q2,q3,tau1", "line 1, column 4 'q3': a 2-joint robot's column 4 is tau1 (time, q1..q2, tau1..tau2)"),
        ("time,q2,q1,tau1,tau2", "line 1, column 2 'q2': a 2-joint robot's column 2 is q1 (time, q1..q2, tau1..tau2)"),
        ("time,q1,q2,tau1", "line 1: the header names 4 columns, the rows have 5"),
    ],
)
def test_a_header_that_does_not_fit_the_robot_is_one_error(tmp_path: Path, header: str, needle: str) -> None:
    """#44: a header naming a joint the robot does not have, a joint twice or not at all, or numbered
    columns out of the documented order, is refused in one line naming the file and the column."""
    path = tmp_path / "log.csv"
    path.write_text(_columns(header))
    with pytest.raises(LogError) as err:
        read_log(path, PLANAR2)
    assert str(err.value) == f"{path} {needle}", err.value


def test_a_named_header_one_column_short_names_the_missing_column(tmp_path: Path) -> None:
    """#44 (a reviewer's finding, 2026-12-01): a log with velocities whose header names joints but
    lacks one column has a width no layout has (6 for planar2's 5 or 7): the error names the missing
    column, as for a header of a valid width, not only the column count."""
    path = tmp_path / "short.csv"
    rows = "\n".join(",".join(f"{0.001 * k + c:.3f}" for c in range(6)) for k in range(5))
    path.write_text("time,q_shoulder,q_elbow,qd_shoulder,qd_elbow,tau_shoulder\n" + rows + "\n")
    with pytest.raises(LogError) as err:
        read_log(path, PLANAR2)
    assert str(err.value) == (
        f"{path} line 1: no column tau_elbow (the columns name joints: each of planar2's joints once as q_, qd_, tau_)"
    ), err.value


def test_a_3_joint_csv_is_not_read_as_q_qd_tau_of_a_2_joint_robot(tmp_path: Path) -> None:
    """time, q1..q3, tau1..tau3 has 7 columns: the count of a 2-joint robot's time, q, qd, tau."""
    path = tmp_path / "log.csv"
    path.write_text("time,q1,q2,q3,tau1,tau2,tau3\n" + "".join(f"{k / 1000},1,2,3,4,5,6\n" for k in range(3)))
    with pytest.raises(
        LogError,
        match=r"column 4 'q3': a 2-joint robot's column 4 is qd1 \(time, q1\.\.q2, qd1\.\.qd2, tau1\.\.tau2\)$",
    ):
        read_log(path, PLANAR2)


@pytest.mark.parametrize(
    "header",
    ["time,q0,q1,tau0,tau1", "t,pos_a,pos_b,eff_a,eff_b", "# time,q1,q2,tau1,tau2", "time,q_1,q_2,tau_1,tau_2", "h"],
)
def test_free_and_numbered_headers_in_the_documented_order_are_read(tmp_path: Path, header: str) -> None:
    path = tmp_path / "log.csv"
    path.write_text(_columns(header))
    assert len(read_log(path, PLANAR2).log) == 3


def test_a_stated_start_position_moves_the_csvs_own_positions_as_the_read(tmp_path: Path) -> None:
    """`--start-position` on a CSV: the stated start moves the counts' read by whole counter spans
    (host_tools.data.checks.start_offsets: it says which turn of a wrapping counter the run began
    in), and identify fits the CSV's own positions: they move by the same spans, so both agree. A
    start within half a span of the first row moves nothing. Tolerances: the read is the positions
    rounded to counts (half a count), plus the rounding of q + span in double (span x 2^-52)."""
    from host_tools.data.checks import counter_span, log_positions

    t = np.arange(200) * 1e-3
    q = np.column_stack([0.1 * np.sin(3 * t), 0.05 * t])
    tau = np.column_stack([np.cos(t), 2 + t])
    csv = tmp_path / "run.csv"
    np.savetxt(csv, np.column_stack([t, q, tau]), delimiter=",", comments="", header="time,q1,q2,tau1,tau2")
    span = counter_span(PLANAR2)
    near = read_log(csv, PLANAR2, start_position=q[0] + [0.01, -0.02])
    assert near.samples is not None and np.array_equal(near.samples.q, q)
    turns = np.array([1.0, -1.0])
    f = read_log(csv, PLANAR2, start_position=q[0] + turns * span + [0.01, -0.02])
    assert f.samples is not None
    rounding = np.max(span) * 2.0**-52
    assert np.max(np.abs(f.samples.q - (q + turns * span))) <= rounding
    count = 2 * np.pi / 16384  # rad: planar2's encoders
    read = log_positions(PLANAR2, f.log, f.log.encoder_offset)
    assert np.max(np.abs(read - f.samples.q)) <= count / 2 + 2 * rounding
