"""The arithmetic every machine shares (host_tools/__init__.py, README "Reproducible figures")."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import host_tools


def _runtime(env: dict[str, str], first: str = "host_tools") -> dict[str, Any]:
    """A fresh interpreter that imports ``first``, then numpy: numpy's AVX-512 tier and OpenBLAS's kernels."""
    code = (
        f"import json, {first}, numpy\n"
        "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
        "from threadpoolctl import threadpool_info\n"
        "print(json.dumps({'v4': f['X86_V4'], 'blas': [i.get('architecture') for i in threadpool_info()]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return dict(json.loads(out.stdout))


def test_the_suite_itself_runs_pinned() -> None:
    """numpy was loaded after host_tools pinned it (tests/conftest.py imports host_tools first): on an
    AVX-512 machine its AVX-512 tier is off in this very process."""
    from numpy._core._multiarray_umath import __cpu_features__

    flags = host_tools.cpu_flags()
    if {"avx2", "fma", "avx512f"} <= flags and os.environ.get("MANIPGEN_NATIVE_ARITHMETIC") != "1":
        assert not __cpu_features__["X86_V4"]
    assert np.sin(np.float64(1.0)) == np.sin(1.0)  # numpy loaded and usable


def test_pinned_unless_the_user_says_otherwise() -> None:
    """A fresh interpreter importing host_tools: on an AVX2 + FMA machine OpenBLAS runs Haswell
    kernels and numpy no AVX-512 loop; the user's own variables win; MANIPGEN_NATIVE_ARITHMETIC=1
    leaves the machine's choice."""
    flags = host_tools.cpu_flags()
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    pinned = _runtime(base)
    if {"avx2", "fma"} <= flags:
        assert pinned["v4"] is False
        assert all(str(a).lower() == "haswell" for a in pinned["blas"]), pinned
    native = _runtime(dict(base, MANIPGEN_NATIVE_ARITHMETIC="1"))
    assert native["v4"] is ("avx512f" in flags and "avx512bw" in flags and "avx512dq" in flags and "avx512vl" in flags)
    own = _runtime(dict(base, OPENBLAS_CORETYPE="Sandybridge"))
    assert all(str(a).lower() == "sandybridge" for a in own["blas"]), own


def test_importing_codegen_first_pins_too() -> None:
    """A program that imports the generator (codegen.model.description loads numpy) before host_tools is
    pinned as well: the bench scripts did so and ran the machine's AVX-512 kernels on this very
    Sapphire Rapids machine, unlike every command (2026-11-30: bench/imu_limits.py's exact-qd row
    0.158 N m unpinned, 0.282 pinned)."""
    flags = host_tools.cpu_flags()
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    got = _runtime(base, first="codegen.model.description")
    if {"avx2", "fma"} <= flags:
        assert got["v4"] is False
        assert all(str(a).lower() == "haswell" for a in got["blas"]), got


HEAVY = {"numpy", "scipy", "casadi", "sympy", "pinocchio", "matplotlib", "pybullet", "cffi"}
OURS = {"codegen", "host_tools", "tests"}


def _programs() -> list[Path]:
    """The scripts people run as programs: bench/*.py, robots/*.py and the peers' modules run with python -m."""
    root = Path(__file__).resolve().parents[2]
    return (
        sorted(root.glob("bench/*.py"))
        + sorted(root.glob("robots/*.py"))
        + sorted(p for p in root.glob("tests/peers/*.py") if not p.name.startswith(("test_", "conftest", "__init__")))
    )


def _first_imports(path: Path) -> tuple[int | None, int | None]:
    """The line of the module's first top-level import of a numerical library, and of codegen or host_tools."""
    heavy = ours = None
    for node in ast.parse(path.read_text()).body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        tops = {n.split(".")[0] for n in names}
        if heavy is None and tops & HEAVY:
            heavy = node.lineno
        if ours is None and tops & OURS:
            ours = node.lineno
    return heavy, ours


@pytest.mark.parametrize("path", _programs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_program_pins_before_numpy_loads(path: Path) -> None:
    """A bench script or peer program imports codegen or host_tools before any numerical library
    (top level, in order), so that its figures are the pinned arithmetic's: the docs quote them.
    Programs run with python -m tests.peers... are pinned by tests/__init__.py as well, which must import
    codegen itself (an import statement, not words in its docstring)."""
    heavy, ours = _first_imports(path)
    if path.parent.name == "peers":
        assert _first_imports(path.parents[1] / "__init__.py")[1] is not None, "tests/__init__.py does not pin"
    assert heavy is None or (ours is not None and ours < heavy), (path, heavy, ours)
