"""Host-side tools: the generated C loaded through cffi, and the tools built on it.

The exports are imported on first use, so that ``manipgen`` (host_tools.console) starts without
numpy, casadi and sympy and can answer Ctrl-C during their import with one line.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The arithmetic every machine shares (README, "Reproducible figures"). numpy's AVX-512 loops
# (sin, cos, exp, ...) and OpenBLAS's AVX-512 kernels round differently from their AVX2 versions, and
# a closed loop with Coulomb friction or an IPOPT path carries such last bits into printed figures:
# on a Sapphire Rapids machine `reproduce birjandi --quick` picked a 0.1 m/s impact instant where AVX2
# machines pick 0.0996, and planar2's adaptive_momentum_measured raised a false alarm (2026-11-29).
# So, on an x86 machine with AVX2 and FMA, numpy dispatches at most its AVX2 tier and OpenBLAS runs
# its Haswell kernels: the same loops on every such machine, AVX-512 or not, Intel or AMD. Both are
# read when numpy loads, so this runs before anything here imports it; the user's own setting of
# either variable wins, and MANIPGEN_NATIVE_ARITHMETIC=1 leaves both to the machine.
_NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"


def cpu_flags() -> set[str]:
    """The processor's flags in /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def _pin_arithmetic() -> None:
    if os.environ.get("MANIPGEN_NATIVE_ARITHMETIC") == "1" or "numpy" in sys.modules:
        return
    flags = cpu_flags()
    if {"avx2", "fma"} <= flags:
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
        if "avx512f" in flags:
            os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", _NO_AVX512)


_pin_arithmetic()

if TYPE_CHECKING:
    from host_tools.bindings.compiled import CompiledDynamics, load
    from host_tools.bindings.rt import Realtime, load_rt
    from host_tools.data.logs import Log

__all__ = ["CompiledDynamics", "Log", "Realtime", "cpu_flags", "load", "load_rt"]
_HOME = {
    "CompiledDynamics": "bindings.compiled",
    "load": "bindings.compiled",
    "Log": "data.logs",
    "Realtime": "bindings.rt",
    "load_rt": "bindings.rt",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'host_tools' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
