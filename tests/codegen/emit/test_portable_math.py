"""manipgen_linalg.h's own sin and cos in double (every build) and its portable exp, tanh and float
functions (MANIPGEN_PORTABLE_MATH, what `manipgen target pil` builds host and target with): accurate
against mpmath, exact at special values, the sin and cos table's entries correctly rounded, and the
generated code calls them through MG_SIN, ... so one define switches host and target alike."""

from __future__ import annotations

import math
import re
import struct

import cffi
import mpmath
import numpy as np
import pytest

from tests.tooling import ROOT

mpmath.mp.prec = 120

HEADER = ROOT / "runtime" / "manipgen_linalg.h"
SOURCE = """
#include <math.h>
#define MG_REAL double
#define MG_SQRT sqrt
#define MANIPGEN_PORTABLE_MATH
#include "manipgen_linalg.h"
double p_sin(double x) { return MG_SIN(x); }
double p_cos(double x) { return MG_COS(x); }
double p_exp(double x) { return MG_EXP(x); }
double p_tanh(double x) { return MG_TANH(x); }
float p_sinf(float x) { return MG_SINF(x); }
float p_cosf(float x) { return MG_COSF(x); }
float p_expf(float x) { return MG_EXPF(x); }
float p_tanhf(float x) { return MG_TANHF(x); }
"""
NAMES = ("sin", "cos", "exp", "tanh")


def _compile(tmp_path_factory: pytest.TempPathFactory, name: str, source: str, cdef: str) -> object:
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    out = tmp_path_factory.mktemp("pm")
    ffi.set_source(
        name,
        source,
        include_dirs=[str(ROOT / "runtime")],
        extra_compile_args=[
            "-std=c99",
            "-O2",
            "-ffp-contract=off",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wdouble-promotion",
        ],
        libraries=["m"],
    )
    path = ffi.compile(tmpdir=str(out))
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lib


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> object:
    cdef = "".join(f"double p_{n}(double); float p_{n}f(float);" for n in NAMES)
    return _compile(tmp_path_factory, "_mg_portable_math", SOURCE, cdef)


@pytest.fixture(scope="module")
def default_lib(tmp_path_factory: pytest.TempPathFactory) -> object:
    """sin and cos in double as the default build (no MANIPGEN_PORTABLE_MATH) compiles them."""
    source = SOURCE.replace("#define MANIPGEN_PORTABLE_MATH\n", "").split("double p_exp")[0]
    return _compile(tmp_path_factory, "_mg_default_math", source, "double p_sin(double); double p_cos(double);")


def ulp_error(got: float, exact: mpmath.mpf, dtype: type) -> float:
    """|got - exact| in units of the last place of the exact value rounded to dtype."""
    e = dtype(float(exact))
    return float(abs(mpmath.mpf(float(got)) - exact) / float(np.spacing(np.abs(e))))


def samples(name: str, dtype: type, rng: np.random.Generator) -> np.ndarray:
    if name in ("sin", "cos"):  # joint angles, several turns, next to the zeros, tiny, large (to 1e6 / 5000)
        big = 1e6 if dtype is np.float64 else 5e3
        near = rng.integers(-6, 7, 2000) * (np.pi / 2) + rng.uniform(-0.075, 0.075, 2000)
        zeros = np.arange(-8, 9) * (np.pi / 2)  # the doubles nearest to them: sin, cos as small as 1e-16
        parts = [rng.uniform(-10, 10, 4000), near, zeros, np.nextafter(zeros, 10.0), rng.uniform(-big, big, 500)]
        parts.append(rng.uniform(-1e-4, 1e-4, 300))
    elif name == "exp":
        top = 700.0 if dtype is np.float64 else 88.0
        parts = [rng.uniform(-top, top, 1500), rng.uniform(-1, 1, 1500)]
    else:
        parts = [rng.uniform(-25, 25, 1500), rng.uniform(-1e-3, 1e-3, 500), rng.uniform(-1, 1, 1000)]
    return np.concatenate(parts).astype(dtype)


# double: within 2 ulp, float: within 3 ulp of the true value (the header's stated accuracy). sin and
# cos in double come closest to it next to their zeros, where the result is as small as half the
# table's entry and the roundings of r, sin r, the product and the sums each count at its size:
# 1.79 (sin) and 1.85 (cos) ulp at worst over 120,000 arguments within 0.075 of a multiple of pi/2
# (2026-12-01); the samples here include such arguments.
@pytest.mark.parametrize("dtype,limit", [(np.float64, 2.0), (np.float32, 3.0)])
@pytest.mark.parametrize("name", NAMES)
def test_accurate_against_mpmath(lib: object, name: str, dtype: type, limit: float) -> None:
    fn = getattr(lib, f"p_{name}" + ("f" if dtype is np.float32 else ""))
    ref = getattr(mpmath, name)
    worst = max(
        ulp_error(fn(float(x)), ref(mpmath.mpf(float(x))), dtype)
        for x in samples(name, dtype, np.random.default_rng(3))
    )
    assert worst <= limit, worst


# The header's bound for |x| < 1e6: 2 ulp plus 1.1e-27, the reduction's absolute error (pi/64 carried to
# 115 bits: |k| < 2.1e7 times its rest, below 2.5e-28; the roundings of k MG_PIO64_LO and of the last
# difference, below 4e-28 each). It shows only where sin or cos is tiny: at the doubles nearest to
# n pi/2 (n <= 28, |x| < 45, within 2 ulp alone; beyond, 1985 ulp = 2.4e-29 measured at 642615.92).
def test_next_to_the_zeros_up_to_1e6(lib: object) -> None:
    rng = np.random.default_rng(17)
    ns = [*range(1, 29), *rng.integers(29, 636_000, 300).tolist(), 204_551, 409_102]
    with mpmath.workprec(300):
        for n in ns:
            x = float(mpmath.mpf(n) * mpmath.pi / 2)
            for name in ("sin", "cos"):
                exact = getattr(mpmath, name)(mpmath.mpf(x))
                err = float(abs(mpmath.mpf(getattr(lib, f"p_{name}")(x)) - exact))
                units = 2.0 * float(np.spacing(abs(float(exact))))
                assert err <= units + (0.0 if n <= 28 else 1.1e-27), (name, n, x, err, units)


def test_sin_of_minus_zero_is_plus_zero(lib: object) -> None:
    """Stated in the header: the C library's sin(-0) is -0, this one's +0. A zero's sign shows only
    through atan2, copysign or a division by it; the generated code calls neither function."""
    f = {name: getattr(lib, f"p_{name}") for name in ("sin", "cos")}
    assert math.copysign(1.0, f["sin"](-0.0)) == 1.0 and f["cos"](-0.0) == 1.0


@pytest.mark.parametrize("suffix", ["", "f"])
def test_special_values(lib: object, suffix: str) -> None:
    f = {n: getattr(lib, f"p_{n}{suffix}") for n in NAMES}
    assert f["sin"](0.0) == 0.0 and f["cos"](0.0) == 1.0 and f["exp"](0.0) == 1.0 and f["tanh"](0.0) == 0.0
    assert f["exp"](1000.0) == math.inf and f["exp"](-1000.0) == 0.0
    assert f["tanh"](50.0) == 1.0 and f["tanh"](-50.0) == -1.0
    for n in NAMES:
        assert math.isnan(f[n](math.nan)), n
    assert math.isnan(f["sin"](math.inf)) and math.isnan(f["cos"](-math.inf))


def test_sin_and_cos_are_the_same_in_every_build(lib: object, default_lib: object) -> None:
    """Double sin and cos are manipgen_linalg.h's own with or without MANIPGEN_PORTABLE_MATH (the
    C library's are not called): the same bits at every probe."""
    xs = samples("sin", np.float64, np.random.default_rng(5))
    for name in ("sin", "cos"):
        a, b = getattr(lib, f"p_{name}"), getattr(default_lib, f"p_{name}")
        assert all(struct.pack("<d", a(float(x))) == struct.pack("<d", b(float(x))) for x in xs), name


def _defined(name: str) -> float:
    match = re.search(rf"#define {name} (\S+)", HEADER.read_text())
    assert match, name
    return float(match.group(1))


def test_the_sin_and_cos_table_is_correctly_rounded() -> None:
    """Each row: sin(k pi/64) rounded to double, what that rounding left (rounded), the same of cos,
    for k = 0 .. 127, against mpmath at 200 bits; the reduction's constants: pi/64 in two 28-bit
    parts and a rounded rest, so that k times either part is exact for |k| < 2^25."""
    text = HEADER.read_text()
    body = text[text.index("table[128][4] = {") :]
    body = body[body.index("\n") : body.index("};")]
    rows = [[float(v) for v in row.split(",")] for row in re.findall(r"\{([^{}]*)\}", body)]
    assert len(rows) == 128
    with mpmath.workprec(200):
        for k, row in enumerate(rows):
            s, c = mpmath.sinpi(mpmath.mpf(k) / 64), mpmath.cospi(mpmath.mpf(k) / 64)
            assert row == [float(s), float(s - float(s)), float(c), float(c - float(c))], k
        hi, mid, lo = (_defined(f"MG_PIO64_{part}") for part in ("HI", "MID", "LO"))
        for part in (hi, mid):
            assert math.frexp(part)[0] * 2**28 == int(math.frexp(part)[0] * 2**28)
        assert abs(mpmath.mpf(hi) + mid + lo - mpmath.pi / 64) < 1e-34
        assert _defined("MG_64_OVER_PI") == float(64 / mpmath.pi)
        assert _defined("MG_ROUND_SHIFT") == 1.5 * 2**52


def test_generated_code_calls_the_switchable_names() -> None:
    """The firmware's sin/cos go through MG_SIN/MG_COS (manipgen_linalg.h's own), never straight to libm."""
    rt_c = (ROOT / "generated" / "kuka_iiwa14" / "kuka_iiwa14_dynamics.c").read_text()
    assert "MG_SIN(" in rt_c and "MG_COS(" in rt_c
    assert " sin(" not in rt_c and " cos(" not in rt_c
