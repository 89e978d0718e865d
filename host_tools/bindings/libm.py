"""The C library's arithmetic under the host build: a fingerprint of the ``sin``, ``cos``, ``exp``,
``tanh`` and ``pow`` (and their float forms) that the compiled pipelines and plants call (``pow``: the
loopback's Hunt-Crossley contact force).

The generated C is byte-identical everywhere and the host build compiles it with
``-ffp-contract=off``, but that flag does not reach into ``libm``. glibc picks its kernels per CPU
at load time: on a CPU with FMA its ``sin`` and ``cos`` are the ``__sin_fma`` family, elsewhere the
SSE2 ones, and the two differ in the last bit on some arguments (glibc 2.36 on this project's
machine: 27,408 of 40,000,000 values of ``sin`` and ``cos`` for |x| < 4, 0.069 %, each by 1 ulp,
comparing a run with ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX``). In a closed loop one
last-bit torque difference can reach an encoder count boundary and the runs part (docs/target.md,
docs/collision.md "Figures that hung on the last bits"), so two nodes whose ``libm`` differ do not
compute the same study. A study item carries this fingerprint and a worker whose own differs
refuses it (host_tools.studies.study.run_task; docs/cluster.md).

Python's ``math.sin`` (and ``exp``, ``tanh``, ``pow``) is the C library's function the cffi modules
of the same process link (``-lm``), resolved the same way; the float forms are called through
ctypes. The probes are drawn once, by numpy's PCG64 (the same numbers on every machine), where the
generated code evaluates these functions: joint angles, the arguments of exponential and smooth
friction terms, and a contact's depth (the base, to 2) raised to its exponent (0.5-3). 20,000 of
each: with the rate above, sin and cos alone make two different kernels agree on all of them with
probability about exp(-27).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import math
import struct
from collections.abc import Callable
from functools import cache
from typing import cast

import numpy as np

PROBES = 20_000
# (name, range of the arguments): where the generated code calls each
_RANGES = (("sin", 4.0), ("cos", 4.0), ("exp", 20.0), ("tanh", 6.0))


def _probes() -> dict[str, list[float]]:
    rng = np.random.default_rng(20261201)
    out = {name: rng.uniform(-span, span, PROBES).tolist() for name, span in _RANGES}
    out["pow"] = rng.uniform(0.0, 2.0, PROBES).tolist()
    out["pow_exponent"] = rng.uniform(0.5, 3.0, PROBES).tolist()
    return out


def _float_functions() -> dict[str, Callable[[float], float]]:
    """The C library's sinf, cosf, expf and tanhf, or none where no ``libm`` can be loaded by name."""
    path = ctypes.util.find_library("m")
    if path is None:
        return {}
    lib = ctypes.CDLL(path)
    out = {}
    for name, _ in _RANGES:
        f = getattr(lib, name + "f")
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
        out[name] = f
    return out


def _powf() -> Callable[[float, float], float] | None:
    path = ctypes.util.find_library("m")
    if path is None:
        return None
    f = ctypes.CDLL(path).powf
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    return cast(Callable[[float, float], float], f)


@cache
def libm_fingerprint() -> str:
    """16 hex digits of the C library's double and float sin, cos, exp, tanh and pow on fixed probes."""
    h = hashlib.sha256()
    probes = _probes()
    double: dict[str, Callable[[float], float]] = {"sin": math.sin, "cos": math.cos, "exp": math.exp, "tanh": math.tanh}
    for name, f in double.items():
        xs = probes[name]
        h.update(name.encode() + struct.pack(f"<{len(xs)}d", *map(f, xs)))
    base, exponent = probes["pow"], probes["pow_exponent"]
    h.update(b"pow" + struct.pack(f"<{PROBES}d", *map(math.pow, base, exponent)))
    for name, g in _float_functions().items():
        xs = np.asarray(probes[name], np.float32).tolist()
        h.update(name.encode() + b"f" + struct.pack(f"<{len(xs)}f", *map(g, xs)))
    powf = _powf()
    if powf is not None:
        b32, e32 = (np.asarray(v, np.float32).tolist() for v in (base, exponent))
        h.update(b"powf" + struct.pack(f"<{PROBES}f", *map(powf, b32, e32)))
    return h.hexdigest()[:16]
