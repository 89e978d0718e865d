"""The arithmetic every machine shares (host_tools/__init__.py, README "Reproducible figures")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

import host_tools


def _runtime(env: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, host_tools, numpy\n"
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
