"""The input checks of a log (host_tools.data.checks, #24): each on a small synthetic log that shows
the defect (found: the right kind, joint, interval and samples) beside the look-alikes that are not
one (a rest below the extreme, a velocity reversal, a short dwell, a clean run); Liu et al.'s
Experiment 1 as the real case; `import-log --json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from codegen.model.description import load_robot
from codegen.model.robot import Robot
from host_tools.cli import main
from host_tools.data.checks import (
    MIN_PLATEAU,
    OFF_FACTOR,
    SETTLE,
    TIMING_LONG,
    TIMING_SETTLE_DESIGN,
    TIMING_SETTLE_FIT,
    TIMING_SHARE,
    LogChecks,
    check_log,
    encoder_offsets,
    require_absolute_positions,
    start_offsets,
    with_settling,
    with_start_position,
)
from host_tools.data.logs import Log, LogError
from tests.tooling import ROOT

DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", ROOT.parent / "shared" / "data")) / "lwa4p"
PLANAR2 = load_robot("planar2")  # 1 ms, link-side 16384-count encoders, limits.tau 60 / 20 N m


def fabricate(robot: Robot, seconds: float, seed: int = 0) -> tuple[Log, np.ndarray]:
    """A clean closed-loop run: q_des a sum of sines per joint (no rest), q = q_des minus a tracking
    error proportional to the desired acceleration (0.2-1 mrad) on the encoder grid, tau a smooth
    torque plus noise. Returns the log and its true positions."""
    ts = robot.sample_period
    t = np.arange(int(round(seconds / ts))) * ts
    n = robot.dof
    w = 2 * np.pi * np.array([0.5, 0.7, 0.3, 0.9, 0.4, 0.6])[:n]
    q_des = 0.6 * np.sin(np.outer(t, w) + 0.3) + 0.2 * np.sin(np.outer(t, 2.3 * w))
    qd_des = np.gradient(q_des, ts, axis=0)
    qdd_des = np.gradient(qd_des, ts, axis=0)
    q = q_des - 1e-4 * qdd_des
    rpc = 2 * np.pi / np.array([j.encoder.cpr for j in robot.joints if j.encoder is not None])
    counts = np.round(q / rpc).astype(np.int64)
    rng = np.random.default_rng(seed)
    tau = 5 * np.sin(np.outer(t, w) + 1.0) + 2 * qdd_des / np.max(np.abs(qdd_des)) + rng.normal(0, 0.05, q.shape)
    log = Log(robot.c_name, ts, t, counts, np.ones(q.shape, bool), tau, q_des, qd_des, qdd_des)
    return log, counts * rpc


def window(log: Log, t0: float, t1: float) -> np.ndarray:
    return (log.time >= t0 - 1e-9) & (log.time <= t1 + 1e-9)


def test_a_clean_run_has_no_findings() -> None:
    log, _ = fabricate(PLANAR2, 6.0)
    checks = check_log(log, PLANAR2, "clean.npz")
    assert checks.findings == [] and not np.any(checks.flagged) and checks.lines() == []
    # the tracking error's peak against its bound: the clean run is far from it
    assert max(checks.bounds["off_trajectory_worst_ratio"]) < 0.5


def test_saturation_is_a_plateau_at_the_extreme_not_a_rest() -> None:
    log, _ = fabricate(PLANAR2, 6.0)
    clip = float(np.max(log.tau[:, 0])) * 0.9  # the drive clips joint 1 from above
    log.tau[:, 0] = np.minimum(log.tau[:, 0], clip)
    # joint 2 rests at a constant torque for 0.5 s, well inside its range: not a clip
    rest = window(log, 2.0, 2.5)
    log.tau[rest, 1] = 1.234
    checks = check_log(log, PLANAR2, "clip.npz")
    sat = [f for f in checks.findings if f.kind == "saturation"]
    assert {f.joint for f in sat} == {1}
    at = np.flatnonzero(log.tau[:, 0] == clip)
    runs = np.split(at, np.flatnonzero(np.diff(at) > 1) + 1)
    # the noise touches the clip for a sample or two where the torque crosses it: no plateau
    plateaus = [r for r in runs if len(r) >= MIN_PLATEAU]
    assert [(f.first, f.last) for f in sat] == [(r[0], r[-1]) for r in plateaus] and len(plateaus) >= 1
    assert sum(f.samples for f in sat) > 0.85 * len(at)
    assert all(f.t0 == log.time[f.first] and f.t1 == log.time[f.last] for f in sat)
    assert not np.any(checks.flagged[rest])
    # the run's extreme reached for 2 samples only (a smooth peak of coarse data) is no plateau
    log2, _ = fabricate(PLANAR2, 6.0)
    k = int(np.argmax(log2.tau[:, 0]))
    log2.tau[k + 1, 0] = log2.tau[k, 0]
    assert check_log(log2, PLANAR2).findings == []


def test_a_coarsely_logged_torque_has_no_plateaus() -> None:
    """A drive current logged in coarse steps (0.01 N m, no noise; 0.05 N m with the run's noise):
    every peak sits on one logged value for several samples, but no longer than a smooth peak of
    that curvature stays within one step -- no saturation finding (the one-sample second
    differences are 0 almost everywhere there; the check's curvature comes from longer lags)."""
    for step, noisy in ((0.01, False), (0.05, True)):
        log, _ = fabricate(PLANAR2, 6.0)
        smooth = 5 * np.sin(np.outer(log.time, [np.pi, 0.7 * np.pi]) + 1.0)
        log.tau[:] = np.round((log.tau if noisy else smooth) / step) * step
        assert [f for f in check_log(log, PLANAR2, "coarse.npz").findings if f.kind == "saturation"] == []


def test_limits_of_the_description() -> None:
    log, _ = fabricate(PLANAR2, 3.0)
    over = window(log, 1.0, 1.1)
    log.tau[over, 1] = -20.0 - 0.01 * np.arange(np.sum(over))  # at and over limits.tau (20 N m), negative
    log.extra["tau_saturated"] = np.zeros(log.tau.shape, bool)
    log.extra["tau_saturated"][window(log, 2.0, 2.0199), 0] = True  # the importer's current limit
    found = [(f.kind, f.joint, f.samples) for f in check_log(log, PLANAR2).findings if f.kind == "limit"]
    assert sorted(found) == [("limit", 1, 20), ("limit", 2, 101)]


def test_off_trajectory_against_a_bound_from_the_run() -> None:
    log, _ = fabricate(PLANAR2, 6.0)
    away = window(log, 3.0, 4.0)
    log.counts[away, 1] += int(0.3 / (2 * np.pi / 16384))  # 0.3 rad away (the arm pushed off)
    checks = check_log(log, PLANAR2, "push.npz")
    off = [f for f in checks.findings if f.kind == "off_trajectory"]
    assert [(f.joint, f.t0, f.t1, f.samples) for f in off] == [(2, 3.0, 4.0, 1001)]
    assert checks.bounds["off_trajectory_bound"][1] < 0.3
    # the bound is OFF_FACTOR x the median tracking error, 1e-4 qdd_des here: a tracking error
    # growing a few times where the motion is sharp stays under it
    log2, _ = fabricate(PLANAR2, 6.0)
    assert np.all(OFF_FACTOR * np.median(np.abs(1e-4 * log2.qdd_des), axis=0) > 4 * 1e-4 * np.max(np.abs(log2.qdd_des)))


def test_time_stamps_that_jump_repeat_or_go_back() -> None:
    log, _ = fabricate(PLANAR2, 2.0)
    t = log.time.copy()
    t[500:] += 0.01  # a 10-sample gap after sample 499
    t[1000] = t[999]  # a repeat
    t[1500] = t[1499] - 0.0005  # back, then on
    log.time = t
    checks = check_log(log, PLANAR2, "stamps.npz")
    found = [(f.kind, f.joint, f.first, f.last, f.samples) for f in checks.findings]
    # a jump alone is a gap; the step after a repeat or a step back is longer: one finding each,
    # over both steps
    assert found == [("gap", None, 499, 500, 2), ("time", None, 999, 1001, 3), ("time", None, 1499, 1501, 3)]
    assert "jump" in checks.findings[0].detail and "repeat" in checks.findings[1].detail
    assert "go back" in checks.findings[2].detail
    assert int(np.sum(checks.flagged)) == 8


def test_standstill_of_the_whole_arm_not_a_reversal_or_a_dwell() -> None:
    log, _ = fabricate(PLANAR2, 10.0)
    still = window(log, 2.0, 5.0)  # 3 s: the whole arm stands still (q_des too)
    dwell = window(log, 7.0, 8.0)  # 1 s: a dwell between moves
    for m in (still, dwell):
        first = np.flatnonzero(m)[0]
        log.counts[m] = log.counts[first]
        log.q_des[m] = log.q_des[first]
        log.qd_des[m] = 0.0
    checks = check_log(log, PLANAR2, "rest.npz")
    rest = [f for f in checks.findings if f.kind == "standstill"]
    assert len(rest) == 1 and rest[0].joint is None
    # the window's half-width (0.05 s) blurs either edge; the stretch itself is flagged whole
    assert 1.95 <= rest[0].t0 <= 2.06 and 4.94 <= rest[0].t1 <= 5.05
    assert np.all(checks.flagged[window(log, 2.06, 4.94)]) and not np.any(checks.flagged[dwell])
    # the sines reverse several times a second: single near-rest samples, never flagged
    assert not np.any(checks.flagged[window(log, 0.0, 1.9)])
    assert [f.kind for f in checks.findings] == ["standstill"]


def planar2_16(tmp_path: Path) -> Path:
    """planar2 with 16-bit motor-side counters of 4096 counts per turn behind 100:1: a counter spans
    65536 / 409600 of a turn, 57.6 deg, of the joint's 360 deg."""
    text = (ROOT / "robots" / "planar2.yaml").read_text()
    text = text.replace("gear_ratio: 1.0", "gear_ratio: 100.0").replace(
        "encoder: {cpr: 16384, side: link, bits: 32, signed: true}",
        "encoder: {cpr: 4096, side: motor, bits: 16, signed: true}",
    )
    path = tmp_path / "planar2_16.yaml"
    path.write_text(text)
    return path


def test_a_wrapping_counter_is_refused_unless_the_start_is_stated(tmp_path: Path) -> None:
    from host_tools.bindings.rt import load_rt

    path = planar2_16(tmp_path)
    robot = load_robot(path)
    with pytest.raises(LogError) as err:
        require_absolute_positions(robot, None)
    line = str(err.value)
    assert "\n" not in line and "joint 1 (shoulder)" in line and "joint 2 (elbow)" in line and "57.6 deg" in line
    assert "bits: 32" in line and "offset" in line and "--start-position" in line
    # the counts as the loopback's sensor gives them (unwrapped int64); the generated read takes the
    # first value's low 16 bits as absolute: 1.2 rad reads as 1.2 - 57.6 deg
    rt = load_rt(robot, estimator="findiff", observer="none", controller="none")
    q = np.array([[0.3, 1.2], [0.31, 1.21], [0.33, 1.25]])
    counts = rt.encoder_counts(q)[0]
    log = Log(
        robot.c_name,
        0.001,
        np.arange(3) * 0.001,
        counts,
        np.ones((3, 2), bool),
        np.zeros((3, 2)),
        q,
        np.zeros((3, 2)),
        np.zeros((3, 2)),
    )
    with pytest.raises(LogError):
        check_log(log, robot)
    read = rt.run(log)["q"]
    assert read[0, 1] == pytest.approx(1.2 - np.radians(57.6), abs=1e-4)
    # stated roughly (within half a span), the start position sets the offset by whole spans
    log = with_start_position(log, robot, [0.25, 1.3])
    offsets = encoder_offsets(robot, log)
    assert offsets is not None and offsets == pytest.approx([0.0, np.radians(57.6)], abs=1e-12)
    assert start_offsets(robot, counts[0], q[0]) == pytest.approx(offsets, abs=1e-12)
    # a log with a stated start runs through the generated read with those offsets (every command
    # replays logs by Realtime.run), the config's own kept
    rt.reset()
    assert rt.run(log)["q"] == pytest.approx(q, abs=2 * np.pi / 409600)
    assert np.all(rt.config["enc.offset"] == 0)
    assert check_log(log, robot).findings == []
    # import-log's NPZ keeps the start position; loading it restores the offsets
    from host_tools.data.formats import read_log

    log.save(tmp_path / "started.npz")
    loaded = read_log(tmp_path / "started.npz", robot).log
    assert loaded.encoder_offset is not None and loaded.encoder_offset == pytest.approx(offsets, abs=0)
    rt.reset()
    assert rt.run(loaded)["q"] == pytest.approx(q, abs=2 * np.pi / 409600)


def test_a_csv_is_checked_as_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """identify's DATA.csv (time, q, tau) is checked as any log (its positions are the measured ones:
    no departure from them); the findings are in identify's JSON and left out."""
    from host_tools.data.formats import read_log

    log, q = fabricate(PLANAR2, 12.0, seed=3)
    tau = log.tau.copy()
    clip = (log.time >= 6.0) & (log.time < 7.0)
    tau[clip, 0] = np.max(tau[:, 0]) + 1.0  # held at its new extreme for 1 s
    path, clean = tmp_path / "run.csv", tmp_path / "clean.csv"
    header = "t," + ",".join(f"q{i + 1}" for i in range(2)) + "," + ",".join(f"tau{i + 1}" for i in range(2))
    np.savetxt(path, np.column_stack([log.time, q, tau]), delimiter=",", header=header, comments="")
    np.savetxt(clean, np.column_stack([log.time, q, log.tau]), delimiter=",", header=header, comments="")
    found = check_log(read_log(path, PLANAR2).log, PLANAR2, "run.csv")
    kinds = [(f.kind, f.joint) for f in found.findings]
    assert kinds == [("saturation", 1)], kinds
    assert found.findings[0].t0 == pytest.approx(6.0) and found.findings[0].samples == int(np.sum(clip))
    assert check_log(read_log(clean, PLANAR2).log, PLANAR2).findings == []
    assert main(["identify", "planar2", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [(c["kind"], c["joint"], c["source"]) for c in doc["checks"]] == [("saturation", 1, str(path))]
    assert doc["flagged_samples"]["data"] == int(np.sum(clip)) and doc["flagged_left_out"]
    assert f"manipgen: check: {path}: saturation: joint 1" in captured.err


def lwa4p_mat(path: Path, clip: bool, stamps: bool) -> None:
    """A Liu et al.-format run of schunk_lwa4p (4 ms, 1 mdeg), 8 s: with ``clip`` joints 1-3's
    current sits at +-9000 mA (below the 11 A limit) from t = 5 s while the arm stops and q_d moves
    on; with ``stamps`` one stamp repeats."""
    ts, k = 0.004, 2000
    t = 7.012 + np.arange(k) * ts
    q_d = 0.3 * np.sin(2 * np.pi * 0.4 * np.outer(t, np.arange(1, 7) / 3))
    q = np.round((q_d - 0.002 * np.sin(2 * np.pi * 0.4 * np.outer(t, np.ones(6)))) * 360000 / (2 * np.pi))
    i_c = 4000 * np.cos(2 * np.pi * 0.4 * np.outer(t, np.arange(1, 7) / 3))
    i_c += np.random.default_rng(1).normal(0, 20, i_c.shape)
    i_c[:, 4:] /= 4  # joints 5-6: 4 A drives
    if clip:
        late = t >= t[0] + 5.0
        i_c[late, :3] = np.array([9000.0, -9000.0, 9000.0])
        q[late] = q[np.argmax(late)]
        q_d[late] = q_d[np.argmax(late)] + np.outer(t[late] - t[np.argmax(late)], [1.0, 0, 1.0, 0, 0, 0])
    if stamps:
        t[1000] = t[999]
    data = {"time": t, "q": q * 2 * np.pi / 360000, "q_d": q_d, "I_c": i_c, "dq_hat": np.zeros_like(q)}
    scipy.io.savemat(str(path), data)


def test_import_log_json_reports_the_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mat, out = tmp_path / "clipped.mat", tmp_path / "clipped.npz"
    lwa4p_mat(mat, clip=True, stamps=True)
    assert main(["import-log", str(mat), "--robot", "schunk_lwa4p", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["robot"] == "schunk_lwa4p" and doc["samples"] == 1998 and doc["sample_period"] == 0.004
    assert len(doc["tau_rms"]) == 6 and doc["at_current_limit"] == [0] * 6  # 9000 mA < the 11 A limit
    kinds = sorted((c["kind"], c["joint"]) for c in doc["checks"])
    assert kinds == sorted(
        [("saturation", 1), ("saturation", 2), ("saturation", 3), ("off_trajectory", 1), ("off_trajectory", 3)]
        + [("time", None), ("standstill", None)]
    )
    for c in doc["checks"]:
        assert set(c) <= {"kind", "joint", "t0", "t1", "samples", "detail"}
        if c["kind"] == "saturation":
            # the log's torque is I_c two samples earlier: the clip from t = 12.012 s + 8 ms to the end (15.008 s)
            assert c["t0"] == pytest.approx(12.020) and c["t1"] == pytest.approx(15.008) and c["samples"] == 748
    assert Log.load(out).tau.shape == (1998, 6)
    # without --json: one line per finding naming the file
    assert main(["import-log", str(mat), "--robot", "schunk_lwa4p", "--out", str(out)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("check: ")]
    assert len(lines) == 7 and all(str(mat) in ln for ln in lines)
    # a clean run
    lwa4p_mat(mat, clip=False, stamps=False)
    assert main(["import-log", str(mat), "--robot", "schunk_lwa4p", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"] == []


def test_import_log_refuses_a_wrapping_counter_without_start_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Counts that wrap need the start stated; a CSV's (or a bag's) positions are absolute: they state it."""
    path = planar2_16(tmp_path)
    robot = load_robot(path)
    log, q = fabricate(robot, 3.0)
    log.save(tmp_path / "x.npz")
    args = ["import-log", str(tmp_path / "x.npz"), "--robot", str(path), "--out", str(tmp_path / "y.npz")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "joint 1 (shoulder)" in err and "--start-position" in err
    assert not (tmp_path / "y.npz").exists()
    assert main([*args, "--start-position", "0.1"]) == 2
    assert "--start-position" in capsys.readouterr().err
    csv = tmp_path / "x.csv"
    np.savetxt(csv, np.column_stack([log.time, q + 1.2, log.tau]), delimiter=",", header="t,q1,q2,t1,t2", comments="")
    assert main(["import-log", str(csv), "--robot", str(path), "--out", str(tmp_path / "y.npz")]) == 0, (
        capsys.readouterr().err
    )
    imported = Log.load(tmp_path / "y.npz")
    assert imported.extra["start_position"] == pytest.approx(q[0] + 1.2, abs=0)


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, Path]:
    runs = {
        n: DATA / f
        for n, f in (
            ("exp1", "Experiment1_data.mat"),
            ("findiff", "4ms_FinDiff_run1.mat"),
            ("movav", "4ms_MovAv_run1.mat"),
        )
    }
    if not all(p.is_file() for p in runs.values()):
        message = f"Liu et al.'s LWA-4P runs are not in {DATA}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return runs


def test_experiment1_clipping_and_departure(shared_runs: dict[str, Path]) -> None:
    from host_tools.data.mat_logs import import_mat

    robot = load_robot("schunk_lwa4p")
    checks = check_log(import_mat(shared_runs["exp1"], robot), robot, "exp1")
    by = {(f.kind, f.joint): f for f in checks.findings}
    assert len(by) == len(checks.findings)
    # I_c at exactly +-9000 mA for 938/916/944 samples of the file (and joint 5 at 1410 mA for
    # 876): the log's torque is I_c two samples earlier, its last two samples are not in the log
    for joint, samples, t0 in ((1, 936, 31.260), (2, 914, 31.348), (3, 942, 31.236), (5, 874, 31.508)):
        f = by["saturation", joint]
        assert (f.samples, f.t1) == (samples, 35.0) and f.t0 == pytest.approx(t0)
    for joint in (1, 3):
        f = by["off_trajectory", joint]
        assert 31.3 < f.t0 < 31.5 and f.t1 == 35.0 and f.samples > 850
    assert by["standstill", None].t0 == pytest.approx(31.188)  # q stops while q_d moves on
    assert set(by) == {("saturation", j) for j in (1, 2, 3, 5)} | {("off_trajectory", 1), ("off_trajectory", 3)} | {
        ("standstill", None)
    }
    assert not np.any(checks.flagged[import_mat(shared_runs["exp1"], robot).time < 31.18])
    for run in ("findiff", "movav"):
        clean = check_log(import_mat(shared_runs[run], robot), robot, run)
        assert clean.findings == []
        assert max(clean.bounds["off_trajectory_worst_ratio"]) < 0.35  # 0.31 / 0.33 measured


def test_positions_in_degrees_stop_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log whose positions were written in degrees (0.8 rad -> 46 'rad', planar2's limits are +-pi)
    stops the commands in one line naming the joint, its range and the limits, with "degrees?";
    --beyond-limits takes it as it is; a stated start position in degrees is refused the same way.
    A run inside its limits (by any margin under 5 % of the range) passes."""
    log, _ = fabricate(PLANAR2, 3.0)
    ok = tmp_path / "rad.npz"
    log.save(ok)
    assert check_log(log, PLANAR2, "rad.npz").findings == []
    deg = Log(
        PLANAR2.c_name,
        log.sample_period,
        log.time,
        np.round(np.degrees(log.counts)).astype(np.int64),
        log.valid,
        log.tau,
        np.degrees(log.q_des),
        np.degrees(log.qd_des),
        np.degrees(log.qdd_des),
    )
    bad = tmp_path / "deg.npz"
    deg.save(bad)
    with pytest.raises(LogError, match=r"deg.npz: joint 1 \(shoulder\): positions .* outside its limits .* degrees\?"):
        check_log(deg, PLANAR2, "deg.npz")
    assert check_log(deg, PLANAR2, "deg.npz", beyond_limits=True).source == "deg.npz"
    for args in (
        ["import-log", str(bad), "--robot", "planar2", "--out", str(tmp_path / "x.npz")],
        ["thresholds", "planar2", str(bad)],
        ["evaluate", "planar2", "--log", str(bad)],
        ["identify", "planar2", str(bad)],
        ["import-log", str(ok), "--robot", "planar2", "--out", str(tmp_path / "y.npz"), "--start-position", "90,10"],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        errors = [ln for ln in err.splitlines() if ln.startswith("manipgen: error:")]  # beside progress lines
        assert len(errors) == 1 and "degrees?" in errors[0] and "Traceback" not in err, err
    assert (
        main(["import-log", str(bad), "--robot", "planar2", "--out", str(tmp_path / "z.npz"), "--beyond-limits"]) == 0
    )


def test_a_log_of_another_chain_of_the_same_name_is_refused(tmp_path: Path) -> None:
    """A log records the joints of the chain it was recorded for; a description of the same name with
    other joints (a URDF's right arm after its left: both "talos") refuses it in one line."""
    from host_tools.data.formats import read_log

    log, _ = fabricate(PLANAR2, 1.0)
    log.extra["joint_names"] = np.array(["shoulder", "elbow"])
    log.save(tmp_path / "ours.npz")
    assert read_log(tmp_path / "ours.npz", PLANAR2).log.robot == "planar2"
    log.extra["joint_names"] = np.array(["right_shoulder", "right_elbow"])
    log.save(tmp_path / "right.npz")
    with pytest.raises(LogError, match=r"right.npz: joint_names: .*right_shoulder, right_elbow.* has shoulder, elbow"):
        read_log(tmp_path / "right.npz", PLANAR2)


def test_target_replays_no_log_of_another_chain(tmp_path: Path) -> None:
    """`target run --input` reads a log through the same chain check as the other tools: another
    chain of the same name is refused in one line before anything is replayed (it ran through the
    left arm's C without a word)."""
    from host_tools.bindings.rt import load_rt
    from host_tools.target.cortex_m import recorded_inputs

    rt = load_rt("planar2")
    log, _ = fabricate(PLANAR2, 1.0)
    log.extra["joint_names"] = np.array(["shoulder", "elbow"])
    log.save(tmp_path / "ours.npz")
    inputs, source = recorded_inputs(PLANAR2, rt, rt, tmp_path / "ours.npz", None, tmp_path)
    assert len(inputs) == len(log) and source == str(tmp_path / "ours.npz")
    log.extra["joint_names"] = np.array(["right_shoulder", "right_elbow"])
    log.save(tmp_path / "right.npz")
    with pytest.raises(LogError, match=r"right.npz: joint_names: .*right_shoulder, right_elbow.* has shoulder, elbow"):
        recorded_inputs(PLANAR2, rt, rt, tmp_path / "right.npz", None, tmp_path)


def test_evaluate_names_the_users_description_not_the_caches_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """evaluate --log loads the description through the cache (RobotSource); a log of another chain
    is refused naming the file the user gave, not the cache's copy of it."""
    mine = tmp_path / "arm.yaml"
    mine.write_text((ROOT / "robots" / "planar2.yaml").read_text())
    log, _ = fabricate(PLANAR2, 1.0)
    log.extra["joint_names"] = np.array(["right_shoulder", "right_elbow"])
    log.save(tmp_path / "right.npz")
    assert main(["evaluate", str(mine), "--log", str(tmp_path / "right.npz")]) == 2
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("manipgen: error:")]
    assert len(errors) == 1 and f"{mine} has shoulder, elbow" in errors[0], errors
    assert "descriptions" not in errors[0], errors


def test_a_log_of_another_version_of_the_description_is_one_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log records its description's hash (the model as text, not the file's bytes): read with the
    same model (even from a file with other bytes) it says nothing, read with a re-identified one (FV1
    changed) one notice line naming the log, not a refusal; a log of before the hash says nothing; a
    log of another chain stays a one-line refusal."""
    from host_tools.data.logs import description_hash, fingerprint

    text = (ROOT / "robots" / "planar2.yaml").read_text()
    (tmp_path / "same.yaml").write_text("# the same model, other bytes\n" + text)
    assert text.count("FV: 0.1\n") == 1
    (tmp_path / "reidentified.yaml").write_text(text.replace("FV: 0.1\n", "FV: 0.12\n"))
    same, reidentified = load_robot(str(tmp_path / "same.yaml")), load_robot(str(tmp_path / "reidentified.yaml"))
    assert same.digest != PLANAR2.digest and description_hash(same) == description_hash(PLANAR2)
    log, _ = fabricate(PLANAR2, 1.0)
    old = Log(
        **{f: getattr(log, f) for f in ("robot", "sample_period", "time", "counts", "valid", "tau")},
        q_des=log.q_des,
        qd_des=log.qd_des,
        qdd_des=log.qdd_des,
    )
    old.save(tmp_path / "old.npz")
    log.extra.update(fingerprint(PLANAR2))
    log.save(tmp_path / "run.npz")

    def notices(robot: str, name: str) -> list[str]:
        assert main(["import-log", str(tmp_path / name), "--robot", robot, "--out", str(tmp_path / "x.npz")]) == 0
        return [ln for ln in capsys.readouterr().err.splitlines() if "description_hash" in ln]

    assert notices("planar2", "run.npz") == [] and notices(str(tmp_path / "same.yaml"), "run.npz") == []
    assert notices(str(tmp_path / "reidentified.yaml"), "old.npz") == []
    found = notices(str(tmp_path / "reidentified.yaml"), "run.npz")
    assert len(found) == 1 and "run.npz" in found[0] and "warning" in found[0], found
    assert description_hash(reidentified) in found[0]
    log.extra["joint_names"] = np.array(["right_shoulder", "right_elbow"])
    log.save(tmp_path / "right.npz")
    assert (
        main(["import-log", str(tmp_path / "right.npz"), "--robot", "planar2", "--out", str(tmp_path / "y.npz")]) == 2
    )
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and "right.npz: joint_names:" in errors[0], errors


def test_imported_and_recorded_logs_carry_their_chain(tmp_path: Path, shared_runs: dict[str, Path]) -> None:
    robot = load_robot("schunk_lwa4p")
    assert (
        main(
            [
                "import-log",
                str(shared_runs["movav"]),
                "--robot",
                "schunk_lwa4p",
                "--out",
                str(tmp_path / "a.npz"),
            ]
        )
        == 0
    )
    saved = Log.load(tmp_path / "a.npz")
    assert [str(v) for v in saved.extra["joint_names"]] == [j.name for j in robot.joints]


def test_the_settling_mask_is_as_long_as_the_log() -> None:
    """with_settling: the flagged samples and those within 0.5 s, one per sample of the log, a log
    shorter than the 1 s window too (numpy's convolve gave the window's length: `thresholds` on a
    0.8 s log said "exclude: expected a (800,) mask of samples, got shape (1001,)")."""
    for k in (3, 800, 1000, 1001, 5000):
        flagged = np.zeros(k, bool)
        flagged[k // 2] = True
        mask = with_settling(flagged, 1e-3)
        assert mask.shape == (k,)
        near = np.abs(np.arange(k) - k // 2) <= 500
        np.testing.assert_array_equal(mask, near)
    assert not with_settling(np.zeros(800, bool), 1e-3).any()


def test_timing_findings_are_left_out_with_less_settling() -> None:
    """LogChecks.left_out: around a finding of the arm's (a clipped drive) SETTLE either side is left
    out; around a timing finding (a gap, stamps that repeat) the use's settling (TIMING_SETTLE_FIT
    for identify, TIMING_SETTLE_DESIGN for the threshold design), and where such findings are dense
    at most TIMING_SHARE of the distance to the neighbour on each side, so that the samples mid-way
    between them stay, while a lone one far from a cluster keeps the whole settling; a sample both
    kinds flag is the arm's. Distances are counted in samples of the 1 ms log from the nearest
    sample of each finding."""
    log, _ = fabricate(PLANAR2, 6.0)
    t = log.time.copy()
    t[1500:] += 0.01  # a gap after sample 1499
    t[4000] = t[3999]  # a repeated stamp
    log.time = t
    clip = float(np.max(log.tau[:, 0])) * 0.9
    log.tau[:, 0] = np.minimum(log.tau[:, 0], clip)
    k = np.arange(len(log))

    def near(checks: LogChecks, kinds: set[str]) -> np.ndarray:
        """Each sample's distance (samples) to the nearest sample of a finding of these kinds."""
        d = np.full(len(log), np.inf)
        for f in checks.findings:
            if f.kind in kinds:
                d = np.minimum(d, np.maximum(0, np.maximum(f.first - k, k - f.last)))
        return d

    checks = check_log(log, PLANAR2, "both.npz")
    assert {"gap", "time", "saturation"} <= {f.kind for f in checks.findings}, checks.lines()
    arm, timing = near(checks, {"saturation"}), near(checks, {"gap", "time"})
    settle, fit, design = (round(x / 1e-3) for x in (SETTLE, TIMING_SETTLE_FIT, TIMING_SETTLE_DESIGN))
    assert 0 < design < fit <= settle  # two timing findings in 6 s: far apart, each use's whole settling
    np.testing.assert_array_equal(checks.left_out(1e-3, TIMING_SETTLE_FIT), (arm <= settle) | (timing <= fit))
    np.testing.assert_array_equal(checks.left_out(1e-3, TIMING_SETTLE_DESIGN), (arm <= settle) | (timing <= design))
    np.testing.assert_array_equal(checks.timing, (timing == 0) & (arm > 0))
    # a stamp that repeats every 40 ms for 2 s, and a lone gap 2.5 s from them: the cluster's windows
    # are a quarter of the run's mean spacing (larger than the 38 ms between two), so the cluster goes
    # whole; the lone gap keeps the use's whole settling
    dense = log.time.copy()
    dense[500:2500:40] = dense[499:2499:40]
    dense[5000:] += 0.003
    log.time = dense
    checks = check_log(log, PLANAR2, "dense.npz")
    spans = sorted((f.first, f.last) for f in checks.findings if f.kind in ("gap", "time"))
    *spans, lone = spans
    assert lone[0] > 4900, checks.lines()
    cluster = [x for x in spans if x[1] < 2500]
    assert len(cluster) == 50, checks.lines()  # 500, 540, ..., 2460
    mean = 6.0 / (len(spans) + 1)  # s
    free = near(checks, {"saturation"}) > settle  # the clipped drive's own 0.5 s aside
    for use in (TIMING_SETTLE_FIT, TIMING_SETTLE_DESIGN):
        out = checks.left_out(1e-3, use)
        w = round(min(use, TIMING_SHARE * mean) / 1e-3)
        assert 2 * w > 38 and out[cluster[0][0] : cluster[-1][1] + 1].all()
        w = round(use / 1e-3)  # the cluster's first has no neighbour before it: the whole settling
        start = max(cluster[0][0] - w, 0)
        assert out[start : cluster[0][0]].all() and (start == 0 or not out[start - 1] or not free[start - 1])
        assert out[lone[0] - w : lone[1] + w + 1].all()
        assert not out[lone[0] - w - 1] or not free[lone[0] - w - 1]
        assert not out[lone[1] + w + 1] or not free[lone[1] + w + 1]


def test_a_repeated_row_is_a_timing_finding_a_long_gap_and_an_overlap_are_the_arms() -> None:
    """LogChecks.timing: a repeated row (every recorded value equal to the row before, at a new
    stamp) is a timing finding, TIMING_SETTLE_DESIGN either side for the design; a gap longer than TIMING_LONG (its
    interpolation bends the motion the filters see) and a gap inside a finding of the arm's are the
    arm's: SETTLE either side. (The review of c95b630.)"""
    log, _ = fabricate(PLANAR2, 8.0)
    clip = float(np.max(log.tau[:, 0])) * 0.9
    log.tau[:, 0] = np.minimum(log.tau[:, 0], clip)
    sat = [f for f in check_log(log, PLANAR2, "sat.npz").findings if f.kind == "saturation"][0]
    for name in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des"):
        getattr(log, name)[2500] = getattr(log, name)[2499]  # a repeated row
    t = log.time.copy()
    mid = (sat.first + sat.last) // 2
    t[mid:] += 0.005  # a short gap inside the saturation
    t[6000:] += 0.05  # a long gap
    log.time = t
    checks = check_log(log, PLANAR2, "all.npz")
    by_kind = {f.kind: f for f in checks.findings if f.kind != "gap"}
    gaps = sorted((f for f in checks.findings if f.kind == "gap"), key=lambda f: f.first)
    assert "repeat" in by_kind and len(gaps) == 2, checks.lines()
    rep, short, long = by_kind["repeat"], gaps[0], gaps[1]
    assert short.t1 - short.t0 <= TIMING_LONG < long.t1 - long.t0
    assert checks.timing is not None
    expected = np.zeros(len(log), bool)
    expected[rep.first : rep.last + 1] = True
    np.testing.assert_array_equal(checks.timing, expected)  # the short gap is the saturation's
    out = checks.left_out(1e-3, TIMING_SETTLE_DESIGN)
    settle, lone = round(SETTLE / 1e-3), round(TIMING_SETTLE_DESIGN / 1e-3)
    assert out[long.first - settle] and out[long.last + settle] and not out[long.last + settle + 1]
    assert (
        out[rep.first - lone]
        and out[rep.last + lone]
        and not out[rep.first - lone - 1]
        and not out[rep.last + lone + 1]
    )


def test_a_clock_stepping_back_is_the_arms_finding_however_its_stamps_run() -> None:
    """A log taken row by row whose clock steps back by 2 s: the 'time' finding's t1 lies before its
    t0, and its length is |t1 - t0| = 2 s, above TIMING_LONG: the arm's (SETTLE either side), not a
    timing finding with a quarter of the neighbours' distance. A step back of one period (a swapped
    pair of stamps, |t1 - t0| of a few ms) stays a timing finding."""
    for back, timing in ((2.0, False), (0.002, True)):
        log, _ = fabricate(PLANAR2, 8.0)
        t = log.time.copy()
        t[4000:] -= back + 1e-3  # row 4000 is stamped `back` before row 3999
        log.time = t
        (found,) = [f for f in check_log(log, PLANAR2, "back.npz").findings if f.kind == "time"]
        assert found.t1 < found.t0 and found.first <= 3999 < 4000 <= found.last
        assert found.timing is timing


def test_identify_leaves_out_settle_around_a_lone_timing_finding() -> None:
    """identify (InputChecks.left_out) leaves out SETTLE either side of a lone short gap, as around a
    finding of the arm's (TIMING_SETTLE_FIT: its friction-shape choices took what the filters spread
    of a defect), not the design's TIMING_SETTLE_DESIGN; --keep-flagged leaves out nothing."""
    from host_tools.identification.input_checks import InputChecks

    log, _ = fabricate(PLANAR2, 6.0)
    t = log.time.copy()
    t[3000:] += 0.005  # a gap after sample 2999
    log.time = t
    checks = check_log(log, PLANAR2, "gap.npz")
    assert [f.kind for f in checks.findings] == ["gap"] and checks.findings[0].timing, checks.lines()
    settle = round(SETTLE / 1e-3)
    expected = np.zeros(len(log), bool)
    expected[2999 - settle : 3001 + settle] = True  # the stamps either side of the jump and SETTLE
    np.testing.assert_array_equal(InputChecks(checks).left_out(checks, 1e-3), expected)
    assert InputChecks(checks, keep_flagged=True).left_out(checks, 1e-3) is None


def test_long_timing_findings_are_the_arms_and_do_not_narrow_the_others() -> None:
    """Gaps just over TIMING_LONG (26 ms) are the arm's: SETTLE either side, and they are no timing
    finding's neighbours, so a lone repeated row still gets TIMING_SETTLE_DESIGN either side."""
    log, _ = fabricate(PLANAR2, 8.0)
    for name in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des"):
        getattr(log, name)[3250] = getattr(log, name)[3249]  # a repeated row at 3.25 s
    t = log.time.copy()
    for k in range(4000, 6200, 200):  # 11 gaps of 26 ms between 4 and 6 s, the first 0.75 s after it
        t[k:] += 0.025
    log.time = t
    checks = check_log(log, PLANAR2, "long.npz")
    gaps = [f for f in checks.findings if f.kind == "gap"]
    (rep,) = [f for f in checks.findings if f.kind == "repeat"]
    assert len(gaps) == 11 and all(TIMING_LONG < f.t1 - f.t0 < 2 * TIMING_LONG for f in gaps), checks.lines()
    assert rep.timing and not any(f.timing for f in gaps)
    assert TIMING_SHARE * (gaps[0].first - rep.last) * 1e-3 < TIMING_SETTLE_DESIGN  # as a neighbour it would bite
    out = checks.left_out(1e-3, TIMING_SETTLE_DESIGN)
    design, settle = round(TIMING_SETTLE_DESIGN / 1e-3), round(SETTLE / 1e-3)
    lone = out[: gaps[0].first - settle]
    assert lone.sum() == rep.samples + 2 * design and lone[rep.first - design] and lone[rep.last + design]
    assert out[gaps[0].first - settle] and not out[gaps[0].first - settle - 1]
    assert out[gaps[-1].last + settle] and not out[gaps[-1].last + settle + 1]


def test_dense_timing_findings_leave_at_most_half_the_run() -> None:
    """A stamp that repeats every 40 ms (6 s, no finding of the arm's): at most TIMING_SHARE (a
    quarter) of the run's mean spacing of them on each side of each (it is larger than the 38 ms
    between two), so between the first and the last the samples mid-way between two stay and about
    half goes, and beyond them the use's whole settling (docs/real-data.md, "Timing findings"), for
    either use."""
    log, _ = fabricate(PLANAR2, 6.0)
    t = log.time.copy()
    t[500:5500:40] = t[499:5499:40]
    log.time = t
    checks = check_log(log, PLANAR2, "dense.npz")
    assert all(f.timing for f in checks.findings) and len(checks.findings) > 100, checks.lines()
    own = sum(f.samples for f in checks.findings)
    first, last = min(f.first for f in checks.findings), max(f.last for f in checks.findings)
    inner = last - first + 1
    spans = sorted((f.first, f.last) for f in checks.findings)
    w_mean = round(TIMING_SHARE * 6.0 / len(spans) / 1e-3)  # samples
    for use in (TIMING_SETTLE_FIT, TIMING_SETTLE_DESIGN):
        out = checks.left_out(1e-3, use)
        expected = own + 2 * w_mean * (len(spans) - 1)  # the windows between the first and the last
        assert abs(out[first : last + 1].sum() - expected) <= len(spans), (out[first : last + 1].sum(), expected)
        assert out[first : last + 1].sum() < 0.7 * inner  # the samples mid-way between two stay
        assert not any(out[b + (a - b) // 2] for (_, b), (a, _) in zip(spans, spans[1:]))
        w = round(use / 1e-3)
        outer = min(first, w) + min(len(log) - 1 - last, w)  # the outer sides: the whole settling
        assert out.sum() - out[first : last + 1].sum() == outer
