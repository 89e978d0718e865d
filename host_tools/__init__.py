"""Host-side tools: the generated C loaded through cffi, and the tools built on it.

The exports are imported on first use, so that ``manipgen`` (host_tools.console) starts without
numpy, casadi and sympy and can answer Ctrl-C during their import with one line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The arithmetic every machine shares (README, "Reproducible figures"): codegen.arithmetic pins numpy's
# and OpenBLAS's x86 kernels when the codegen package is imported, which this import does before anything
# here can import numpy
from codegen.arithmetic import cpu_flags

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
