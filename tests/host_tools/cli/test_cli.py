"""The `manipgen` command line: generate, info (--json), convert, clean errors (no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tooling import ROOT, cli_in_process


def manipgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "host_tools.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_info_json() -> None:
    r = manipgen("info", "kuka_iiwa14", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["dof"], info["n_standard"], info["n_base"]) == (7, 84, 57)
    first = info["base_parameters"][0]
    assert set(first) == {"name", "expression", "value"}
    assert first["name"] == "ZZ1R" and first["expression"] == "ZZ1 + YY2"
    # the length symbols of the expressions, with their values (Xu et al. 2020 Table 2: d3 = 0.42, d5 = 0.4 m)
    assert info["lengths_m"] == {"d3": 0.42, "d5": 0.4}
    assert all(any(n in b["expression"] for b in info["base_parameters"]) for n in info["lengths_m"])
    text = manipgen("info", "kuka_iiwa14").stdout.splitlines()[-1]
    assert text == "lengths in the expressions (MDH a_i, d_i; magnitudes, m): d3 = 0.42, d5 = 0.4"


def test_generate_float_into_a_folder(tmp_path: Path) -> None:
    r = manipgen("generate", "planar2", "--out", str(tmp_path / "p2"), "--precision", "float")
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "p2" / "planar2_dynamics.h").read_text()
    assert "typedef float planar2_real_t;" in header
    assert json.loads((tmp_path / "p2" / "manifest.json").read_text())["options"]["precision"] == "float"


def test_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\njoints:\n  - {type: revolute, mdh: {alpha: 0, a: 0, theta: 0, d: 0},\n     link: {mass: -2}}\n"
    )
    r = cli_in_process(capsys, "generate", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == f"manipgen: error: {bad}:4: joints[0].link.mass: mass must be positive, got -2"
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    r = manipgen("demo", "planar2", "--out", str(tmp_path), "--states", "50")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and (tmp_path / "libplanar2.a").is_file()  # --out: the folder itself


def test_elastic_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`manipgen elastic collide` writes its JSON and figure; the rigid commands send an elastic arm
    there (collide with Birjandi & Haddadin's settings; with the defaults it runs Kirchhoff's scenario
    itself, test_collide.py), and the elastic ones refuse a rigid arm -- one line each, exit 2."""
    r = manipgen("elastic", "collide", "biorob4", "--out", str(tmp_path / "el"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reaction"]["detection_sample"] > doc["reaction"]["contact_sample"] > 0
    assert (tmp_path / "el" / "elastic_collision.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "el" / "elastic_collision.json").read_text())["no_reaction"]["link"] == 4
    r = manipgen("elastic", "collide", "biorob4")  # without --json: a summary, not the document
    assert r.returncode == 0 and r.stdout.startswith("obstacle-free motion") and "{" not in r.stdout, r.stdout
    assert "detected after" in r.stdout and "link 4" in r.stdout
    for args, words in (
        (("elastic", "identify", "planar2"), "no series-elastic drives"),
        (("elastic", "collide", "planar2"), "needs an elastic arm"),
        (("collide", "biorob4", "--seed", "2"), "manipgen elastic collide"),  # with the defaults it runs it
        (("identify", "biorob4", "--synthetic"), "manipgen elastic identify"),
        (("elastic", "identify", "biorob4", "--periods", "1"), "--periods must be >= 2"),
        (("elastic", "identify", "biorob4", "--load", "x.npz"), "need all four"),
        (("excite", "planar2", "--stage", "actuator"), "no series-elastic drives"),
    ):
        r = cli_in_process(capsys, *args)  # the refusals in this process: 7 interpreters' start-up saved
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_excite_designs_the_actuator_stage(tmp_path: Path) -> None:
    r = manipgen(
        "excite",
        "biorob4",
        "--stage",
        "actuator",
        "--harmonics",
        "2",
        "--grid",
        "20",
        "--starts",
        "1",
        "--max-iter",
        "20",
        "--base-frequency",
        "0.2",
        "--objective",
        "logdet",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    from codegen.model.description import load_robot
    from host_tools.identification.excitation import Excitation, regressor_cond, stage_regressor

    doc = json.loads((tmp_path / "excitation.json").read_text())
    exc = Excitation.load(tmp_path / "excitation.json")
    robot = load_robot("biorob4")
    assert exc.stage == "actuator" and "cond(Y_m)" in r.stdout
    # the reported cond is the actuator regressor's, not the links'
    assert doc["cond"] == regressor_cond(robot, exc, 500.0, *stage_regressor(robot, "actuator"))
    assert doc["cond"] != regressor_cond(robot, exc, 500.0)


def test_sample_period_option_is_checked_like_the_descriptions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sample-period in milliseconds by mistake: 5 is refused in one usage line, 0.5 generates with
    one warning (the description's own sample_period gets the same two checks)."""
    r = cli_in_process(capsys, "generate", "planar2", "--sample-period", "5", "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (
        r.stderr.strip().splitlines()[-1].endswith("argument --sample-period: must be in seconds, 1e-06 to 1 s, got 5")
    )
    assert not (tmp_path / "a").exists()
    r = manipgen("generate", "planar2", "--sample-period", "0.5", "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines() == [
        "manipgen: warning: command line: --sample-period: 0.5 s is outside the usual 1e-05 to 0.1 s of a joint "
        "controller (seconds, not milliseconds?)"
    ]


def test_a_warning_of_the_description_is_printed_once(tmp_path: Path) -> None:
    """`info` loads the description more than once; its notice (a finger off the chain locked) shows once."""
    from tests.codegen.model.test_urdf import tree_urdf

    urdf = tmp_path / "tree.urdf"
    urdf.write_text(tree_urdf())
    r = manipgen("info", str(urdf), "--base-link", "base", "--tip-link", "tool")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("manipgen: warning: ") and "locked" in lines[0], lines


def test_the_default_folder_is_not_taken_from_another_description(tmp_path: Path) -> None:
    """out/<name> is named after the robot's name only: a second description of the same name (a URDF's
    right arm after its left) is refused in one line naming both; the same description edited
    regenerates; --force replaces."""
    planar = (ROOT / "robots" / "planar2.yaml").read_text()
    (tmp_path / "planar2.yaml").write_text(planar)
    (tmp_path / "other.yaml").write_text(planar)  # name: planar2, the same joints, another file
    assert manipgen("generate", "planar2.yaml", cwd=tmp_path).returncode == 0
    first = (tmp_path / "out" / "planar2" / "manifest.json").read_bytes()
    r = manipgen("generate", "other.yaml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "out/planar2: holds the C of another description (planar2.yaml" in lines[0], lines
    assert "not of other.yaml" in lines[0] and "--force" in lines[0]
    assert (tmp_path / "out" / "planar2" / "manifest.json").read_bytes() == first
    (tmp_path / "planar2.yaml").write_text(planar.replace("sample_period: 0.001", "sample_period: 0.002"))
    assert manipgen("generate", "planar2.yaml", cwd=tmp_path).returncode == 0
    assert manipgen("generate", "other.yaml", "--force", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "out" / "planar2" / "manifest.json").read_text())["description"] == "other.yaml"


def test_evaluate_takes_a_urdf_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """evaluate (like collide and the other commands) takes the URDF chain flags: a URDF with a finger
    off the arm has two leaves, so the tip is chosen with --tip-link."""
    from tests.codegen.model.test_urdf import tree_urdf

    urdf = tmp_path / "tree.urdf"
    urdf.write_text(tree_urdf())
    r = cli_in_process(capsys, "evaluate", str(urdf), "--estimators", "findiff", "--json")
    assert r.returncode == 2 and "tip" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = manipgen(
        "evaluate", str(urdf), "--base-link", "base", "--tip-link", "tool", "--estimators", "findiff", "--json"
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["setup"]["robot"] == "tree" and len(doc["estimators"]["findiff"]["per_axis"]["ise_velocity"]) == 2
    # identify takes them too: past the chain, to the (missing) log
    r = cli_in_process(capsys, "identify", str(urdf), str(tmp_path / "run.npz"), "--tip-link", "tool")
    assert r.returncode == 2 and "run.npz: no such file" in r.stderr and "--tip-link" not in r.stderr, r.stderr
    # the log may also follow the options (argparse alone took it for an unrecognized argument)
    r = cli_in_process(capsys, "identify", str(urdf), "--tip-link", "tool", str(tmp_path / "run.npz"))
    assert r.returncode == 2 and "run.npz: no such file" in r.stderr and "unrecognized" not in r.stderr, r.stderr
    r = cli_in_process(capsys, "identify", str(urdf), "--tip-link", "tool", "run.npz", "more.npz")
    assert r.returncode == 2 and "unrecognized arguments: more.npz" in r.stderr, r.stderr  # one DATA only


def test_a_robot_given_as_a_yaml_path_is_named_as_its_description_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#44: a description whose name is over 12 characters gets a hashed C prefix (planar2_long_name ->
    planar2_b57e: its generated symbols, files and cache folders). record's summary and the errors
    for a log of another robot name the description ('planar2_long_name'), never that prefix."""
    import numpy as np

    from codegen.model.description import load_robot
    from host_tools.data.logs import Log
    from host_tools.identification.input_checks import check_inputs

    yaml = tmp_path / "planar2_long.yaml"
    yaml.write_text(
        (ROOT / "robots" / "planar2.yaml").read_text().replace("\nname: planar2\n", "\nname: planar2_long_name\n")
    )
    robot = load_robot(yaml)
    assert robot.name == "planar2_long_name" and robot.c_name == "planar2_b57e"
    run = tmp_path / "run.npz"
    r = cli_in_process(capsys, "record", str(yaml), "--duration", "5", "--out", str(run))
    assert r.returncode == 0 and "of planar2_long_name (" in r.stdout, r.stdout
    assert f"Next: manipgen thresholds {yaml} {run}" in r.stdout and "b57e" not in r.stdout + r.stderr
    zeros = np.zeros((3, 2))
    other = Log(
        "planar2", 1e-3, np.arange(3) * 1e-3, zeros.astype(np.int64), np.ones((3, 2), bool), zeros, zeros, zeros, zeros
    )
    other_path = other.save(tmp_path / "planar2.npz")
    for command in (
        ["import-log", str(other_path), "--robot", str(yaml), "--out", str(tmp_path / "x.npz")],
        ["identify", str(yaml), str(other_path)],
    ):
        r = cli_in_process(capsys, *command)
        assert r.returncode != 0 and "the log is of planar2, not planar2_long_name" in r.stderr, r.stderr
        assert "b57e" not in r.stderr, r.stderr
    with pytest.raises(ValueError, match=r"the log is of robot 'planar2', not 'planar2_long_name'$"):
        check_inputs(robot, other, None, None)
    # the other way: the long-named description's log read with planar2 names that description, not
    # its C name (the log records the name beside the C name)
    r = cli_in_process(capsys, "thresholds", "planar2", str(run))
    assert r.returncode != 0 and "the log is of planar2_long_name, not planar2" in r.stderr, r.stderr
    assert "b57e" not in r.stderr, r.stderr
