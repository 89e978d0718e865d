"""`manipgen verify` (host_tools.studies.verify): every bundled robot and two URDFs of
example-robot-data that are not bundled pass; a converted table given the wrong convention fails
against Pinocchio built from the URDF it came from; a folder that differs from its description, or
does not build, fails; the identities see a broken rnea."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from codegen.model.export import robot_to_yaml
from host_tools.bindings.compiled import CompiledDynamics, generator_files, load
from host_tools.cli import main
from host_tools.studies.identities import identity_checks
from host_tools.studies.pinocchio_models import example_robot_data_dir
from host_tools.studies.verify import verify
from tests.tooling import ROOT

BUNDLED = ("kuka_iiwa14", "schunk_lwa4p", "planar2", "franka_panda", "ur5", "biorob4")
STATES = 300  # the CLI's default is 1000; 300 keeps the suite short and still finds a wrong model


def urdf(relative: str) -> Path:
    return example_robot_data_dir() / relative


UR10 = "ur_description/urdf/ur10_robot.urdf"
Z1 = "z1_description/urdf/z1.urdf"
# rpy 1.5708 (near, not at, pi/2): real regrouping coefficients of 1e-12; a cut at 1e-10 left
# Y_b beta 5e-11 off rnea (codegen.symbolic.params.ZERO)
XARM7 = "xarm_description/urdf/xarm7.urdf"


def report_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["verify", *args, "--states", str(STATES), "--json"])
    return rc, json.loads(capsys.readouterr().out)


def failed(doc: dict) -> list[str]:
    return [c["check"] for c in doc["checks"] if not c["pass"]]


@pytest.mark.parametrize("robot", BUNDLED)
def test_bundled_robot_passes(robot: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = report_of([robot], capsys)
    assert rc == 0 and doc["pass"], failed(doc)
    names = [c["check"] for c in doc["checks"]]
    for expected in ("strict build", "no heap", "energy balance", "rnea = Pinocchio", "tip Jacobian = Pinocchio"):
        assert expected in names


@pytest.mark.parametrize(
    ("relative", "base", "tip"), [(UR10, "base_link", "tool0"), (Z1, None, None), (XARM7, None, None)]
)
def test_urdf_not_bundled_passes(relative: str, base: str | None, tip: str | None, capsys) -> None:
    chain = [a for flag, v in (("--base-link", base), ("--tip-link", tip)) if v for a in (flag, v)]
    rc, doc = report_of([str(urdf(relative)), *chain], capsys)
    assert rc == 0 and doc["pass"], failed(doc)
    assert "URDF parser" in doc["reference"]


def test_converted_table_against_its_urdf_and_with_the_wrong_convention(tmp_path: Path, capsys) -> None:
    """UR10: URDF -> MDH table (convert --convention mdh); the table passes against Pinocchio's model
    of the URDF; relabelled `dh` it is another robot, and verify says so (exit 1)."""
    source = urdf(UR10)
    table = tmp_path / "ur10_mdh.yaml"
    table.write_text(robot_to_yaml(load_robot(source, "base_link", "tool0"), convention="mdh"))
    chain = ["--reference", str(source), "--base-link", "base_link", "--tip-link", "tool0"]
    rc, doc = report_of([str(table), *chain], capsys)
    assert rc == 0 and doc["pass"], failed(doc)
    assert "rigid bodies" in doc["reference"]  # URDF has no IA/FV/FC: zeroed on our side
    wrong = tmp_path / "ur10_dh.yaml"
    wrong.write_text(table.read_text().replace("convention: mdh", "convention: dh").replace("mdh: {", "dh: {"))
    assert load_robot(wrong).convention == "dh"
    rc, doc = report_of([str(wrong), *chain], capsys)
    assert rc == 1 and not doc["pass"]
    bad = failed(doc)
    assert "rnea = Pinocchio" in bad and "tip pose = Pinocchio" in bad
    # the identities hold for any consistent model: the wrong table is a consistent other robot
    assert not {"forward_dynamics(rnea) = qdd", "energy balance", "Y_b beta = rnea"} & set(bad)


def test_folder_regenerated_and_compared(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "planar2"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    rc, doc = report_of([str(folder)], capsys)
    assert rc == 0 and doc["checks"][0]["check"] == "folder = a fresh generation", failed(doc)
    # a built folder with a user's file and a demo's log (files manipgen records) still passes
    (folder / "planar2_dynamics.o").write_bytes(b"\x7fELF")
    (folder / "notes.txt").write_text("mine")
    (folder / "collision_log.npz").write_bytes(b"PK")
    rc, doc = report_of([str(folder)], capsys)
    assert rc == 0, failed(doc)
    c_file = folder / "planar2_dynamics.c"
    c_file.write_text(c_file.read_text().replace("/* ", "/*  ", 1))  # a harmless edit still differs
    rc, doc = report_of([str(folder)], capsys)
    assert rc == 1 and failed(doc) == ["folder = a fresh generation"]
    assert "planar2_dynamics.c: differs" in doc["checks"][0]["detail"]
    (folder / "host" / "planar2_loopback.c").write_text("int broken = ;\n")
    rc, doc = report_of([str(folder)], capsys)
    assert rc == 1 and "strict build" in failed(doc)
    assert "the folder did not build: no numeric checks" in doc["notes"]


def test_folder_of_another_description(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "gen"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    other = tmp_path / "planar2.yaml"
    other.write_text((ROOT / "robots" / "planar2.yaml").read_text().replace("mass: 2.0", "mass: 2.25", 1))
    assert other.read_text() != (ROOT / "robots" / "planar2.yaml").read_text()
    rc, doc = report_of([str(folder), "--description", str(other)], capsys)
    assert rc == 1 and "folder = a fresh generation" in failed(doc)
    assert "another description" in doc["checks"][0]["detail"]


def test_folder_errors_are_one_line(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "old"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["options"]["rt_options"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("manipgen: error:") and "rt_options" in err and "manipgen generate" in err
    manifest["options"]["rt_options"] = {}
    manifest["description"] = "my_arm.yaml"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", str(folder)]) == 2
    assert "--description PATH" in capsys.readouterr().err


def test_the_build_cache_follows_the_generator() -> None:
    """A changed codegen module must regenerate cached folders (it once hashed host_tools/codegen,
    which does not exist, and verify ran a stale folder)."""
    import codegen.symbolic.params

    files = generator_files()
    assert Path(codegen.symbolic.params.__file__).resolve() in files
    assert any(p.suffix == ".j2" for p in files) and any(p.suffix == ".h" for p in files)


class _Skewed(CompiledDynamics):
    """rnea with an extra velocity-squared term that M and fdyn do not know of."""

    def rnea(self, q, qd, qdd, params=None):
        return super().rnea(q, qd, qdd, params) + 1e-6 * qd * np.abs(qd)


def test_identities_see_an_inconsistent_rnea() -> None:
    folder = load("planar2").folder
    good = {c.name: c for c in identity_checks(CompiledDynamics(folder), 100)}
    assert all(c.ok for c in good.values())
    bad = {c.name: c for c in identity_checks(_Skewed(folder), 100)}
    # a 1e-6 N m term (the torques are ~10 N m): 1e-7 relative, 4 orders above the bounds
    for name in ("forward_dynamics(rnea) = qdd", "Y_b beta = rnea", "energy balance"):
        assert not bad[name].ok, name
    assert bad["M = M^T"].ok and bad["M positive definite"].ok


def test_verify_without_pinocchio_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pinocchio(name: str, *args, **kwargs):
        if name == "pinocchio":
            raise ImportError("no pinocchio")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pinocchio)
    report = verify(load_robot("planar2"), states=50)
    assert report.ok
    assert not any("Pinocchio" in c.name for c in report.checks)
    assert any("manipgen[verify]" in note for note in report.notes)
