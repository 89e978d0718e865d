"""Host-side tools: the generated C loaded through cffi, and the tools built on it."""

from .compiled import CompiledDynamics, load

__all__ = ["CompiledDynamics", "load"]
