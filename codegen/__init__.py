"""manipgen code generator: robot description -> symbolic dynamics -> allocation-free C."""

__version__ = "0.1.0"
