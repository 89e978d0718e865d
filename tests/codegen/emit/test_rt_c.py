"""Every estimator/observer/controller combination builds -Werror clean in double and float on gcc
and clang, without heap or mutable globals; the float build calls only float math."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codegen.blocks.options import RtOptions, parse_estimator
from codegen.emit.generate import generate
from codegen.model.description import load_robot
from tests.tooling import require_tool

STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wvla", "-Werror"]
HEAP = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "alloca"}
ESTIMATORS = (
    "findiff",
    "movav:p=3",
    "lsf:n=6,p=2",
    "bde:n=3",
    "tse:n=3",
    "ewlr:n=8,lam=0.8",
    "kalman",
    "linhg",
    "nlhg",
    "slimod",
    "imu",
    "imu:tip=1",
)
DOUBLE_MATH = {"sin", "cos", "tan", "sqrt", "tanh", "exp", "log", "pow", "fabs", "fmin", "fmax", "sincos", "floor"}


def _undefined(obj: Path) -> set[str]:
    r = subprocess.run([require_tool("nm"), "-u", str(obj)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in r.stdout.splitlines() if line.split()}


def _mutable(obj: Path) -> list[str]:
    r = subprocess.run([require_tool("nm"), "--defined-only", str(obj)], capture_output=True, text=True, check=True)
    return [line for line in r.stdout.splitlines() if len(line.split()) >= 3 and line.split()[1] in "DdBbCGgSs"]


@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_every_estimator_builds_strict(estimator: str, precision: str, tmp_path: Path) -> None:
    controller = "pid" if estimator in ("bde:n=3", "slimod") else "computed_torque"
    opts = RtOptions(parse_estimator(estimator), "momentum", controller, constant_params=estimator == "nlhg")
    folder = tmp_path / "gen"
    generate(load_robot("planar2"), precision, opts).write(folder)  # type: ignore[arg-type]
    extra = ["-Wdouble-promotion"] if precision == "float" else []
    for cc in ("gcc", "clang"):
        require_tool(cc)
        obj = tmp_path / f"{cc}.o"
        r = subprocess.run(
            [cc, *STRICT, *extra, "-c", str(folder / "planar2_rt.c"), "-o", str(obj)], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        undefined = _undefined(obj)
        assert not undefined & HEAP
        assert not _mutable(obj)
        if precision == "float":
            assert not undefined & DOUBLE_MATH, undefined
