"""The C library's arithmetic under the host build: a fingerprint of the ``sin``, ``cos``,
``sincos``, ``exp``, ``tanh`` and ``pow`` (and their float forms) on fixed probes.

The generated C is byte-identical everywhere and the host build compiles it with
``-ffp-contract=off``, but that flag does not reach into ``libm``. glibc picks its kernels per CPU
at load time: on a CPU with FMA its ``sin`` and ``cos`` are the ``__sin_fma`` family, elsewhere the
SSE2 ones, and the two differ in the last bit on some arguments (glibc 2.36 on this project's
machine: 27,408 of 40,000,000 values of ``sin`` and ``cos`` for |x| < 4, 0.069 %, each by 1 ulp,
comparing a run with ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX``; ``exp``, ``tanh`` and
``pow`` move as well). In a closed loop one last-bit torque difference can reach an encoder count
boundary and the runs part (docs/target.md, docs/collision.md "Figures that hung on the last
bits"), so two nodes whose ``libm`` differ do not compute the same study. A study item carries this
fingerprint and a worker whose own differs refuses it (host_tools.studies.study.run_task;
docs/cluster.md).

Since 2026-12-01 the generated code's ``sin`` and ``cos`` in double are manipgen_linalg.h's own
(the same bits on every CPU): what the compiled pipelines and plants still take from the C library
is ``exp`` and ``tanh`` (friction terms), ``pow`` (the loopback's Hunt-Crossley contact force) and
the float forms. ``sin``, ``cos`` and ``sincos`` stay in the fingerprint: CasADi's own numeric
evaluation in Python (an excitation's design, identification's regressors) and the excitation C
call the C library's.

The functions are called through ctypes from the C library the process has loaded (the one the
cffi modules of the same process link with ``-lm``, resolved the same way). The probes are drawn
once, by numpy's PCG64 (the same numbers on every machine), where the generated code evaluates
these functions: joint angles, the arguments of exponential and smooth friction terms, and a
contact's depth (the base, to 2) raised to its exponent (0.5-3). 20,000 of each: with the rate
above, sin and cos alone make two different kernels agree on all of them with probability about
exp(-27).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import struct
from functools import cache

import numpy as np

PROBES = 20_000
# (name, range of the arguments): where the generated code calls each (sincos: sin's arguments)
_RANGES = (("sin", 4.0), ("cos", 4.0), ("exp", 20.0), ("tanh", 6.0))
_TYPES = {"": (ctypes.c_double, "d"), "f": (ctypes.c_float, "f")}


def _probes() -> dict[str, list[float]]:
    rng = np.random.default_rng(20261201)
    out = {name: rng.uniform(-span, span, PROBES).tolist() for name, span in _RANGES}
    out["pow"] = rng.uniform(0.0, 2.0, PROBES).tolist()
    out["pow_exponent"] = rng.uniform(0.5, 3.0, PROBES).tolist()
    return out


def _as_float(xs: list[float]) -> list[float]:
    """The probes rounded to float: the float functions' arguments, exact in either type."""
    return list(np.asarray(xs, np.float32).tolist())


def _library() -> ctypes.CDLL:
    """The C math library by name, or the process's own symbols where no name is found (CPython
    links libm, so its functions are there; the same on every node of one kind)."""
    return ctypes.CDLL(ctypes.util.find_library("m"))


@cache
def libm_digests() -> dict[str, str]:
    """Per function (``sin``, ``sinf``, ``sincos``, ...): a digest of its values on the probes."""
    lib, probes = _library(), _probes()
    out = {}
    for suffix, (ctype, code) in _TYPES.items():
        values = _as_float if suffix else list
        for name, _ in _RANGES:
            f = getattr(lib, name + suffix)
            f.restype, f.argtypes = ctype, [ctype]
            out[name + suffix] = struct.pack(f"<{PROBES}{code}", *map(f, values(probes[name])))
        p = getattr(lib, "pow" + suffix)
        p.restype, p.argtypes = ctype, [ctype, ctype]
        out["pow" + suffix] = struct.pack(
            f"<{PROBES}{code}", *map(p, values(probes["pow"]), values(probes["pow_exponent"]))
        )
        sc = getattr(lib, "sincos" + suffix)
        sc.restype, sc.argtypes = None, [ctype, ctypes.POINTER(ctype), ctypes.POINTER(ctype)]
        s, c = ctype(), ctype()
        both = []
        for x in values(probes["sin"]):
            sc(x, ctypes.byref(s), ctypes.byref(c))
            both += [s.value, c.value]
        out["sincos" + suffix] = struct.pack(f"<{2 * PROBES}{code}", *both)
    return {name: hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:16] for name, data in out.items()}


@cache
def libm_fingerprint() -> str:
    """16 hex digits of the C library's double and float sin, cos, sincos, exp, tanh and pow on fixed probes."""
    digests = libm_digests()
    return hashlib.sha256(" ".join(f"{k}={digests[k]}" for k in sorted(digests)).encode()).hexdigest()[:16]
