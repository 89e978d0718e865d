"""The arithmetic every machine shares (README, "Reproducible figures"): which x86 kernels numpy and
OpenBLAS run. A module of its own with no import beyond the standard library, so that importing the
codegen package (codegen/__init__.py) pins them before numpy can load."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# numpy's AVX-512 loops
# (sin, cos, exp, ...) and OpenBLAS's AVX-512 kernels round differently from their AVX2 versions, and
# a closed loop with Coulomb friction or an IPOPT path carries such last bits into printed figures:
# on a Sapphire Rapids machine `reproduce birjandi --quick` picked a 0.1 m/s impact instant where AVX2
# machines pick 0.0996, and planar2's adaptive_momentum_measured raised a false alarm (2026-11-29).
# So, on an x86 machine with AVX2 and FMA, numpy dispatches at most its AVX2 tier and OpenBLAS runs
# its Haswell kernels: the same loops on every such machine, AVX-512 or not, Intel or AMD. Both are
# read when numpy loads, so codegen/__init__.py runs this before anything in codegen or host_tools
# imports numpy (host_tools imports codegen first; so do bench/ and tests/ programs); the user's own
# setting of either variable wins, and MANIPGEN_NATIVE_ARITHMETIC=1 leaves both to the machine.
_NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"


def cpu_flags() -> set[str]:
    """The processor's flags in /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def pin() -> None:
    """Pin numpy's and OpenBLAS's x86 kernels (above), unless numpy is loaded already or the user chose."""
    if os.environ.get("MANIPGEN_NATIVE_ARITHMETIC") == "1" or "numpy" in sys.modules:
        return
    flags = cpu_flags()
    if {"avx2", "fma"} <= flags:
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
        if "avx512f" in flags:
            os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", _NO_AVX512)
