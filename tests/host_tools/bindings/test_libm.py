"""The C library's fingerprint (host_tools.bindings.libm): it changes exactly when the compiled code's
arithmetic through the C library does, and the generated code's sin and cos, manipgen_linalg.h's
own, do not change with it.

glibc picks its kernels per CPU at load time (FMA or SSE2); GLIBC_TUNABLES can mask the FMA and AVX2
features from it, which is how a CPU without them runs. Under that mask, on a glibc machine whose CPU
has FMA, glibc's sin and cos change in the last bit (0.069 % of their values measured on glibc 2.36),
and so do its exp, tanh and pow: the fingerprint must change, the generated forward kinematics (sin
and cos only) must not, and a generated function that calls tanh (the UR5's smooth Coulomb friction)
moves with the fingerprint. Where nothing can differ (no FMA, or another C library that ignores the
variable) nothing moves; the tests assert the agreement either way."""

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

# the fingerprint, the bits of the generated forward kinematics (sin and cos of every joint through
# MG_SIN/MG_COS, manipgen_linalg.h's own) at 20,000 fixed configurations, the C library's sin, cos
# and sincos digests, the bits of the UR5's generated friction (tanh through MG_TANH, the C
# library's in the host build) at 20,000 velocities (qd / 0.02 within +-5: tanh's whole range), and
# the C library's tanh digest
PROBE = """
import hashlib
import numpy as np
from host_tools.bindings.compiled import load
from host_tools.bindings.libm import libm_digests, libm_fingerprint
dyn = load("kuka_iiwa14")
q = np.random.default_rng(7).uniform(-3.0, 3.0, (20000, 7))
h = hashlib.sha256(b"".join(dyn.tip_pose(x).tobytes() for x in q)).hexdigest()[:16]
ur5 = load("ur5")
qd = np.random.default_rng(8).uniform(-0.1, 0.1, (20000, 6))
hf = hashlib.sha256(b"".join(ur5.friction(x).tobytes() for x in qd)).hexdigest()[:16]
d = libm_digests()
print(libm_fingerprint(), h, d["sin"] + d["cos"] + d["sincos"], hf, d["tanh"])
"""


@cache
def _probe(masked: bool) -> tuple[str, str, str, str, str]:
    """(fingerprint, hash of the compiled kinematics' values, the C library's sin/cos/sincos
    digests, hash of the compiled friction's values, its tanh digest) in a fresh process, with or
    without MASK."""
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
    return out[0], out[1], out[2], out[3], out[4]


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    """Fixed probes, no state: a second process on the same machine gets the same 16 hex digits."""
    here = libm_fingerprint()
    assert len(here) == 16 and int(here, 16) >= 0
    if "GLIBC_TUNABLES" not in os.environ:
        assert _probe(False)[0] == here


def test_the_generated_sin_and_cos_do_not_move_with_the_c_library() -> None:
    plain, masked = _probe(False), _probe(True)
    assert plain[1] == masked[1], (plain, masked)
    # on glibc with an FMA CPU the mask does select other kernels: the C library's sin and cos moved
    # (so the test above compared two kernels, not one twice)
    if platform.libc_ver()[0] == "glibc" and "fma" in cpu_flags():
        assert plain[2] != masked[2]


def test_the_fingerprint_moves_with_the_compiled_codes_tanh() -> None:
    plain, masked = _probe(False), _probe(True)
    code_moved = plain[3] != masked[3]
    assert (plain[0] != masked[0]) == code_moved, (plain, masked)
    # the friction calls tanh only: its digest moves with it, whatever exp and pow do
    assert (plain[4] != masked[4]) == code_moved
    if platform.libc_ver()[0] == "glibc" and "fma" in cpu_flags():
        assert code_moved
    # and in this process (unless it runs under a mask of its own, as docs/cluster.md's recipe for
    # mixed clusters sets) the fingerprint is the unmasked one
    if "GLIBC_TUNABLES" not in os.environ:
        assert libm_fingerprint() == plain[0]


def test_the_probe_sees_the_generated_code() -> None:
    """The probe's hashes are of values the generated code computed: they match direct calls here."""
    dyn = load("kuka_iiwa14")
    q = np.random.default_rng(7).uniform(-3.0, 3.0, (20000, 7))
    h = hashlib.sha256(b"".join(dyn.tip_pose(x).tobytes() for x in q)).hexdigest()[:16]
    ur5 = load("ur5")
    qd = np.random.default_rng(8).uniform(-0.1, 0.1, (20000, 6))
    hf = hashlib.sha256(b"".join(ur5.friction(x).tobytes() for x in qd)).hexdigest()[:16]
    assert _probe(False)[1] == h and _probe(False)[3] == hf
