"""The `manipgen` command line: generate, info (--json), convert, clean errors (no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manipgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "host_tools.cli", *args], cwd=cwd,
                          capture_output=True, text=True)


def test_info_json() -> None:
    r = manipgen("info", "kuka_iiwa14", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["dof"], info["n_standard"], info["n_base"]) == (7, 84, 57)
    first = info["base_parameters"][0]
    assert set(first) == {"name", "expression", "value"}
    assert first["name"] == "ZZ1R" and first["expression"] == "ZZ1 + YY2"


def test_generate_float_into_a_folder(tmp_path: Path) -> None:
    r = manipgen("generate", "planar2", "--out", str(tmp_path / "p2"), "--precision", "float")
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "p2" / "planar2_dynamics.h").read_text()
    assert "typedef float planar2_real_t;" in header
    assert json.loads((tmp_path / "p2" / "manifest.json").read_text())["options"]["precision"] == "float"


def test_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\njoints:\n  - {type: revolute, mdh: {alpha: 0, a: 0, theta: 0, d: 0},\n"
                   "     link: {mass: -2}}\n")
    r = manipgen("generate", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == f"manipgen: error: {bad}:4: joints[0].link.mass: mass must be positive, got -2"
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    r = manipgen("demo", "planar2", "--out", str(tmp_path), "--states", "50")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and (tmp_path / "planar2" / "libplanar2.a").is_file()
