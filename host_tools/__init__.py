"""Host-side tools: the generated C loaded through cffi, and the tools built on it."""

from .compiled import CompiledDynamics, load
from .logs import Log
from .rt import Realtime, load_rt

__all__ = ["CompiledDynamics", "Log", "Realtime", "load", "load_rt"]
