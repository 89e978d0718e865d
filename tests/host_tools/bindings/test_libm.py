"""The C library's fingerprint (host_tools.bindings.libm): it changes exactly when the compiled code's
sin and cos do.

glibc picks its sin/cos kernels per CPU at load time (FMA or SSE2); GLIBC_TUNABLES can mask the FMA
and AVX2 features from it, which is how a CPU without them runs. Under that mask, on a glibc machine
whose CPU has FMA, the generated code's results change in the last bit (0.069 % of the values of sin
and cos measured on glibc 2.36), so the fingerprint must change too; where nothing can differ (no FMA,
or another C library that ignores the variable) both must stay the same. Either way the test
asserts that the fingerprint and the compiled code agree on whether the arithmetic moved."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np

from codegen.arithmetic import cpu_flags
from host_tools.bindings.compiled import load
from host_tools.bindings.libm import libm_fingerprint

MASK = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX"}  # glibc's SSE2 kernels, as on a CPU without FMA

# the fingerprint, and the bits of the generated forward kinematics (sin and cos of every joint
# through MG_SIN/MG_COS, the C library's in the host build) at 20,000 fixed configurations
PROBE = """
import hashlib
import numpy as np
from host_tools.bindings.compiled import load
from host_tools.bindings.libm import libm_digests, libm_fingerprint
dyn = load("kuka_iiwa14")
q = np.random.default_rng(7).uniform(-3.0, 3.0, (20000, 7))
h = hashlib.sha256(b"".join(dyn.tip_pose(x).tobytes() for x in q)).hexdigest()[:16]
d = libm_digests()
print(libm_fingerprint(), h, d["sin"] + d["cos"] + d["sincos"])
"""


@cache
def _probe(masked: bool) -> tuple[str, str, str]:
    """(fingerprint, hash of the compiled code's values, the sin/cos/sincos digests) in a fresh
    process, with or without MASK."""
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}  # the kernels glibc picks here
    env.update(MASK if masked else {})
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=Path(__file__).parents[3],
    ).stdout.split()
    return out[0], out[1], out[2]


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    """Fixed probes, no state: a second process on the same machine gets the same 16 hex digits."""
    here = libm_fingerprint()
    assert len(here) == 16 and int(here, 16) >= 0
    if "GLIBC_TUNABLES" not in os.environ:
        assert _probe(False)[0] == here


def test_the_fingerprint_moves_with_the_compiled_codes_sin_and_cos() -> None:
    plain, masked = _probe(False), _probe(True)
    code_moved = plain[1] != masked[1]
    fingerprint_moved = plain[0] != masked[0]
    assert fingerprint_moved == code_moved, (plain, masked)
    # the forward kinematics calls sin and cos (sincos) only: their digests move with it, whatever
    # exp, tanh and pow do
    assert (plain[2] != masked[2]) == code_moved
    # On glibc with an FMA CPU the mask selects other kernels: both must move (the case that made
    # docs/cluster.md's "a CPU with FMA computes what one without does" wrong before).
    if platform.libc_ver()[0] == "glibc" and "fma" in cpu_flags():
        assert code_moved and fingerprint_moved
    # and in this process (unless it runs under a mask of its own, as docs/cluster.md's recipe for
    # mixed clusters sets) the fingerprint is the unmasked one
    if "GLIBC_TUNABLES" not in os.environ:
        assert libm_fingerprint() == plain[0]


def test_the_probe_sees_the_generated_code() -> None:
    """The probe's hash is of values the generated code computed: it matches a direct call here."""
    dyn = load("kuka_iiwa14")
    q = np.random.default_rng(7).uniform(-3.0, 3.0, (20000, 7))
    h = hashlib.sha256(b"".join(dyn.tip_pose(x).tobytes() for x in q)).hexdigest()[:16]
    assert _probe(False)[1] == h
