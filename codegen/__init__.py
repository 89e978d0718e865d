"""manipgen code generator: robot description -> symbolic dynamics -> allocation-free C."""

from codegen.arithmetic import pin

pin()  # before any codegen or host_tools module imports numpy (codegen.arithmetic)

__version__ = "0.1.0"
