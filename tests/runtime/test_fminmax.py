"""runtime/manipgen_linalg.h MG_FMAX, MG_FMIN (and their float forms) through cffi: inline, with C99's
results (a NaN argument gives the other) and the second argument on a tie of +0 and -0, bit for bit
the C library's wherever C99 specifies the result, over every pair of a grid of signed zeros,
infinities, NaN, subnormals and ordinary values. (A tie of +0 and -0 C99 leaves to the library:
glibc's x86-64 fmax, the bundled figures' host, and newlib's give the second argument too.)"""

from __future__ import annotations

import itertools
import math
from types import ModuleType

import numpy as np
import pytest

from host_tools.bindings.build import build_runtime

PRELUDE = "#include <math.h>\n#define MG_REAL double\n#define MG_SQRT sqrt\n"
EPILOGUE = """
double inline_max(double x, double y) { return MG_FMAX(x, y); }
double inline_min(double x, double y) { return MG_FMIN(x, y); }
float inline_maxf(float x, float y) { return MG_FMAXF(x, y); }
float inline_minf(float x, float y) { return MG_FMINF(x, y); }
double lib_max(double x, double y) { return fmax(x, y); }
double lib_min(double x, double y) { return fmin(x, y); }
float lib_maxf(float x, float y) { return fmaxf(x, y); }
float lib_minf(float x, float y) { return fminf(x, y); }
"""
DECLARATIONS = "".join(
    f"{t} {k}_{m}{s}({t} x, {t} y);"
    for t, s in (("double", ""), ("float", "f"))
    for k in ("inline", "lib")
    for m in ("max", "min")
)
VALUES = (0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 5e-324, -5e-324, 1e-40, 3e38, -3e38, 1e300, math.inf, -math.inf, math.nan)


@pytest.fixture(scope="module")
def lib() -> ModuleType:
    return build_runtime("manipgen_linalg.h", DECLARATIONS, PRELUDE, EPILOGUE).lib


def _bits(v: float | np.floating, real: type) -> bytes:
    return np.array(v, dtype=real).tobytes()


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("suffix,real", [("", np.float64), ("f", np.float32)])
def test_inline_fmax_fmin_follow_c99_and_the_second_argument_on_a_tie(
    lib: ModuleType, fn: str, suffix: str, real: type
) -> None:
    ours = getattr(lib, f"inline_{fn}{suffix}")
    for x, y in itertools.product(VALUES, VALUES):
        got = real(ours(x, y))
        with np.errstate(over="ignore"):  # 1e300 as a float: inf, as the C call's argument
            xr, yr = real(x), real(y)
        if np.isnan(xr) or np.isnan(yr):  # C99 F.9.9.2: the other argument (NaN if both are)
            want = yr if np.isnan(xr) else xr
        elif xr == yr:
            want = yr  # a tie (+0 and -0 among them): the second
        else:
            want = max(xr, yr) if fn == "max" else min(xr, yr)
        assert _bits(got, real) == _bits(want, real) or (np.isnan(got) and np.isnan(want)), (fn, x, y, got, want)


@pytest.mark.parametrize("name", ["max", "min", "maxf", "minf"])
def test_inline_fmax_fmin_are_the_c_library_bit_for_bit(lib: ModuleType, name: str) -> None:
    real = np.float32 if name.endswith("f") else np.float64
    ours, theirs = getattr(lib, f"inline_{name}"), getattr(lib, f"lib_{name}")
    for x, y in itertools.product(VALUES, VALUES):
        if x == 0 and y == 0 and math.copysign(1, x) != math.copysign(1, y):
            continue  # +0 against -0: the library's choice (C99 F.9.9.2 leaves it open)
        a, b = real(ours(x, y)), real(theirs(x, y))
        assert _bits(a, real) == _bits(b, real) or (np.isnan(a) and np.isnan(b)), (name, x, y, a, b)
