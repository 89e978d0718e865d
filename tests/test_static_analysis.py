"""Static analysis of every kind of C manipgen generates (issue #10 item 3): cppcheck with its
warning, style, performance and portability checks finds nothing -- the committed generated/
folders, the pipelines they do not show (float, the adaptive and direct observers, the
model-based estimators, PID, constant parameters, an elastic arm in float), the excitation C and
the output-error simulator. No suppressions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codegen.blocks.options import RtOptions, parse_estimator
from codegen.description import load_robot
from codegen.emit import generate
from tests.tooling import require_tool

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted(p.name for p in (ROOT / "generated").iterdir() if p.is_dir())
CPPCHECK = ["--enable=warning,style,performance,portability", "--std=c99", "--error-exitcode=1", "--inline-suppr",
            "--quiet"]
VARIANTS = {
    "biorob4-float": ("biorob4", "float", RtOptions(estimator=parse_estimator("ewlr:n=10,lam=0.8"),
                                                    controller="state_feedback")),
    "iiwa-adaptive-float": ("kuka_iiwa14", "float", RtOptions(estimator=parse_estimator("kalman"), observer="adaptive")),
    "iiwa-direct-measured": ("kuka_iiwa14", "double", RtOptions(estimator=parse_estimator("kalman"),
                                                                observer="direct_measured")),
    "lwa4p-slimod": ("schunk_lwa4p", "double", RtOptions(estimator=parse_estimator("slimod"))),
    "lwa4p-nlhg-pid": ("schunk_lwa4p", "double", RtOptions(estimator=parse_estimator("nlhg"), controller="pid")),
    "planar2-lsf-constant": ("planar2", "double", RtOptions(estimator=parse_estimator("lsf:n=6,p=2"),
                                                            constant_params=True)),
}


def cppcheck(folder: Path) -> None:
    tool = require_tool("cppcheck")
    sources = sorted(folder.glob("*.c")) + sorted(folder.glob("*.h"))
    assert sources, folder
    r = subprocess.run([tool, *CPPCHECK, str(folder)], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), f"cppcheck on {folder}:\n{r.stderr}"


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_folders_are_clean(name: str) -> None:
    cppcheck(ROOT / "generated" / name)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_other_pipelines_are_clean(variant: str, tmp_path: Path) -> None:
    robot, precision, options = VARIANTS[variant]
    generate(load_robot(robot), precision, options).write(tmp_path / robot)  # type: ignore[arg-type]
    cppcheck(tmp_path / robot)


def test_excitation_and_output_error_c_are_clean(tmp_path: Path) -> None:
    from codegen.emit_excitation import excitation_files
    from host_tools.closed_loop import oesim_folder
    from host_tools.excite import random_excitation

    robot = load_robot("ur5")
    exc = random_excitation(robot, 1)
    out = tmp_path / "excitation"
    out.mkdir()
    for name, text in excitation_files(robot.c_name, robot.name, exc.a, exc.b, exc.q0, exc.base_frequency,
                                       robot.sample_period).items():
        (out / name).write_text(text)
    cppcheck(out)
    cppcheck(oesim_folder("ur5"))
