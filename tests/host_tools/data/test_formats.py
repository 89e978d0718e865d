"""One loader for every command (host_tools.data.formats, #44 item 3): import-log, identify, thresholds
and evaluate --log each take a CSV with jittered stamps (a loopback run of planar2, its values at
the nominal instants), resampled as a bag; import-log's JSON carries the timing report and its text
summary keeps the joint names apart; a file of no known format is one line naming it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.cli import main
from host_tools.data.formats import read_log
from host_tools.data.logs import Log, LogError
from host_tools.data.trajectories import generated_trajectory


@pytest.fixture(scope="module")
def jittered_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6 s collision-free loopback run of planar2 (a fifth of its speed limits: no drive clips) as
    a CSV (time, q, tau), the stamps off the 1 ms grid by up to +-0.1 ms and one row lost (a 2 ms
    step: a gap)."""
    rt = load_rt("planar2")
    robot = load_robot("planar2")
    log = simulate(rt, generated_trajectory(robot, 6.0, rt.sample_period, seed=3, speed=0.2)).log
    q = log.counts * (2 * np.pi / 16384)
    rng = np.random.default_rng(5)
    t = log.time + np.round(rng.uniform(-1e-4, 1e-4, len(log.time)), 7)
    t[0] = 0.0
    kept = np.arange(len(t)) != 3000
    path = tmp_path_factory.mktemp("csv") / "run.csv"
    table = np.column_stack([t, q, log.tau])[kept]
    np.savetxt(path, table, delimiter=",", header="time,q1,q2,tau1,tau2", comments="", fmt="%.17g")
    return path


def test_import_log_takes_a_csv_and_reports_its_timing(
    jittered_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.npz"
    assert main(["import-log", str(jittered_csv), "--robot", "planar2", "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    timing = doc["timing"]
    assert timing["stamps"] == 6000 and timing["resampled"] and timing["gaps"] == 1
    assert timing["samples"] == doc["samples"] == len(read_log(out, load_robot("planar2")).log)
    assert 0.9e-3 < timing["median_period"] < 1.1e-3 and timing["jitter_max"] <= 2e-4
    gap = doc["checks"]
    assert len(gap) == 1 and gap[0]["kind"] == "gap" and gap[0]["samples"] == doc["flagged_samples"]
    assert gap[0]["samples"] in (2, 3)
    assert 2.9985 <= gap[0]["t0"] < gap[0]["t1"] <= 3.0015
    assert f"manipgen: check: {jittered_csv}: gap: whole arm" in captured.err


def test_an_imported_csv_keeps_tau_sampled_and_only_as_a_boolean(jittered_csv: Path, tmp_path: Path) -> None:
    """import-log's NPZ of a CSV says its tau was measured at the sample instants (``tau_sampled``);
    an NPZ whose tau_sampled is no boolean (the string "False": bool() of it is true) is refused."""
    robot = load_robot("planar2")
    path = read_log(jittered_csv, robot).log.save(tmp_path / "run.npz")
    assert read_log(path, robot).log.extra["tau_sampled"].dtype == np.bool_
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(tmp_path / "bad.npz", **{**arrays, "tau_sampled": np.array("False")})
    with pytest.raises(LogError, match=r"bad.npz: tau_sampled: must be a boolean"):
        read_log(tmp_path / "bad.npz", robot)


def test_identify_thresholds_and_evaluate_take_a_csv(jittered_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = str(jittered_csv)
    assert main(["identify", "planar2", csv, "--validate", csv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["kind"] for c in doc["checks"]] == ["gap", "gap"] and doc["flagged_left_out"]
    assert main(["thresholds", "planar2", csv, "--check", csv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["threshold"]) == 2 and [c["kind"] for c in doc["checks"]] == ["gap", "gap"]
    assert main(["evaluate", "planar2", "--log", csv, "--estimators", "findiff", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["kind"] for c in doc["runs"]["run"]["checks"]] == ["gap"]


def test_evaluate_keeps_logs_of_one_stem_apart(
    jittered_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same run as a CSV and an NPZ (one stem) are two runs of the report, each with its own
    checks, named by their file names; a log given twice is refused in one line."""
    robot = load_robot("planar2")
    npz = read_log(jittered_csv, robot).log.save(tmp_path / f"{jittered_csv.stem}.npz")
    assert npz.stem == jittered_csv.stem
    assert main(["evaluate", "planar2", "--log", str(jittered_csv), str(npz), "--estimators", "findiff", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["runs"]) == sorted([jittered_csv.name, npz.name])
    assert [c["kind"] for c in doc["runs"][jittered_csv.name]["checks"]] == ["gap"]
    assert main(["evaluate", "planar2", "--log", str(npz), str(npz)]) == 2
    assert f"manipgen: error: --log {npz}: given twice" in capsys.readouterr().err


def test_the_summary_keeps_long_joint_names_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    robot = load_robot("ur5")  # shoulder_pan_joint, shoulder_lift_joint, ...: 11-19 characters
    t = np.arange(200) * 1e-3
    q = 0.3 * np.sin(np.outer(t, np.arange(1, 7)))
    path = tmp_path / "ur5.csv"
    np.savetxt(path, np.column_stack([t, q, 10 * q]), delimiter=",", header="h", comments="")
    assert main(["import-log", str(path), "--robot", "ur5", "--out", str(tmp_path / "ur5.npz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    joint = next(ln for ln in lines if ln.startswith("joint "))
    assert joint.split()[1:] == [j.name for j in robot.joints]
    rms = next(ln for ln in lines if ln.startswith("tau RMS N m "))
    assert len(rms.removeprefix("tau RMS N m").split()) == 6 and len(rms) == len(joint)
    assert any(ln.startswith("stamps      200 rows of ur5.csv") for ln in lines)


def test_import_log_says_whether_the_log_records_a_velocity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV with qd columns: import-log's JSON says so and the summary gives their RMS per joint
    (the velocity identify's --velocity recorded / auto reads); without them it says none is recorded."""
    t = np.arange(200) * 1e-3
    q = 0.3 * np.sin(np.outer(t, [1.0, 2.0]))
    qd = 0.3 * np.cos(np.outer(t, [1.0, 2.0])) * [1.0, 2.0]
    tables = {"with": (np.column_stack([t, q, qd, 10 * q]), "time,q1,q2,qd1,qd2,tau1,tau2")}
    tables["without"] = (np.column_stack([t, q, 10 * q]), "time,q1,q2,tau1,tau2")
    for name, (table, header) in tables.items():
        path = tmp_path / f"{name}.csv"
        np.savetxt(path, table, delimiter=",", header=header, comments="", fmt="%.17g")
        args = ["import-log", str(path), "--robot", "planar2", "--out", str(tmp_path / f"{name}.npz")]
        assert main([*args, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["recorded_velocity"] is (name == "with")
        assert main(args) == 0
        lines = capsys.readouterr().out.splitlines()
        said = next(ln for ln in lines if ln.startswith("velocity    "))
        rms = [ln.removeprefix("qd RMS rad/s").split() for ln in lines if ln.startswith("qd RMS rad/s ")]
        if name == "with":
            assert said.startswith("velocity    recorded")
            assert [float(v) for v in rms[0]] == pytest.approx(
                np.sqrt(np.mean(qd**2, axis=0)), abs=5e-4
            )  # printed to 3 decimals
        else:
            assert said.startswith("velocity    none recorded") and not rms


@pytest.mark.parametrize("name", ["run.csv", "run.npz", "run.mat", "run.bag", "run.mcap", "run"])
def test_a_missing_log_is_one_line_alike_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = tmp_path / name
    expected = f"{path}: no such file" + (" or folder" if name == "run" else "")
    with pytest.raises(LogError) as err:
        read_log(path, load_robot("planar2"))
    assert str(err.value) == expected
    for args in (["thresholds", "planar2", str(path)], ["identify", "planar2", str(path)]):
        assert main(args) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == f"manipgen: error: {expected}"
    if name == "run.npz":  # the NPZ reader that `manipgen elastic` calls directly says the same
        with pytest.raises(LogError, match=f"^{re.escape(expected)}$"):
            Log.load(path)


def test_a_file_of_no_known_format_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.txt"
    path.write_text("not a log\n")
    with pytest.raises(LogError, match=r"run.txt: not a log: .* or a CSV \(.csv\)"):
        read_log(path, load_robot("planar2"))
    for args in (["thresholds", "planar2", str(path)], ["evaluate", "planar2", "--log", str(path)]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path.name) in err[0] and "Traceback" not in err[0], err


@pytest.mark.parametrize("cut", ["directory", "member"])
def test_a_damaged_npz_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: str) -> None:
    """An NPZ cut short (a copy interrupted: the zip directory at its end is gone) or with a damaged
    member (a byte of compressed data changed: zlib or the CRC refuses it) is one line naming the file."""
    t = np.arange(50) * 1e-3
    path = tmp_path / "good.npz"
    np.savez_compressed(path, time=t, q=np.sin(t))
    data = bytearray(path.read_bytes())
    if cut == "directory":
        data = data[: len(data) // 2]
    else:
        data[60] ^= 0xFF  # inside the first member's compressed data (its local header is 30 + name bytes)
    bad = tmp_path / "run.npz"
    bad.write_bytes(bytes(data))
    with pytest.raises(LogError, match=r"run.npz: cannot read as NPZ"):
        read_log(bad, load_robot("planar2"))
    for args in (["thresholds", "planar2", str(bad)], ["import-log", str(bad), "--robot", "planar2"]):
        assert main(args + ["--out", str(tmp_path / "o")] if args[0] == "import-log" else args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and bad.name in err[0] and "Traceback" not in err[0], err


def test_a_logs_set_up_takes_the_link_side_resolution(tmp_path: Path) -> None:
    """evaluate --log's set-up reads the arm's coarsest link-side encoder resolution, as evaluate
    without --log does: a URDF without encoders (the generated C's default cpr; it was refused as
    'the joints' encoders differ ([] cpr)') and the iiwa's motor encoders (65536 cpr x gear 160 at
    the link, not 65536 at the link)."""
    from codegen.blocks.encoder import DEFAULT_CPR
    from host_tools.bindings.source import RobotSource
    from host_tools.data.logs import Log
    from host_tools.studies.log_estimation import setup_of
    from tests.codegen.model.test_urdf import tree_urdf

    urdf = tmp_path / "tree.urdf"
    urdf.write_text(tree_urdf())
    for spec, tip, counts_per_link_turn in (
        (str(urdf), "tool", DEFAULT_CPR),
        ("kuka_iiwa14", None, 65536 * load_robot("kuka_iiwa14").joints[0].gear_ratio),
    ):
        source = RobotSource.of(spec, base_link="base" if tip else None, tip_link=tip)
        robot = source.robot()
        n = len(robot.joints)
        zeros = np.zeros((1, n))
        log = Log(robot.c_name, 0.002, np.zeros(1), zeros, zeros, zeros, zeros, zeros, zeros)
        setup = setup_of(log, "default", source)
        assert setup.resolution_mdeg == pytest.approx(360000.0 / counts_per_link_turn, rel=1e-15), spec
        assert setup.rate_hz == 500.0
