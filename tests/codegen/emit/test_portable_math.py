"""manipgen_linalg.h's portable sin, cos, exp and tanh (MANIPGEN_PORTABLE_MATH, what `manipgen target
pil` builds host and target with): accurate against mpmath, exact at special values, and the
generated code calls them through MG_SIN, ... so one define switches host and target alike."""

from __future__ import annotations

import math

import cffi
import mpmath
import numpy as np
import pytest

from tests.tooling import ROOT

mpmath.mp.prec = 120

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


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> object:
    ffi = cffi.FFI()
    ffi.cdef("".join(f"double p_{n}(double); float p_{n}f(float);" for n in NAMES))
    out = tmp_path_factory.mktemp("pm")
    ffi.set_source(
        "_mg_portable_math",
        SOURCE,
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

    spec = importlib.util.spec_from_file_location("_mg_portable_math", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lib


def ulp_error(got: float, exact: mpmath.mpf, dtype: type) -> float:
    """|got - exact| in units of the last place of the exact value rounded to dtype."""
    e = dtype(float(exact))
    return float(abs(mpmath.mpf(float(got)) - exact) / float(np.spacing(np.abs(e))))


def samples(name: str, dtype: type, rng: np.random.Generator) -> np.ndarray:
    if name in ("sin", "cos"):  # joint angles, several turns, tiny, and large (to 1e6 / 5000)
        big = 1e6 if dtype is np.float64 else 5e3
        parts = [rng.uniform(-10, 10, 4000), rng.uniform(-big, big, 500), rng.uniform(-1e-4, 1e-4, 300)]
    elif name == "exp":
        top = 700.0 if dtype is np.float64 else 88.0
        parts = [rng.uniform(-top, top, 1500), rng.uniform(-1, 1, 1500)]
    else:
        parts = [rng.uniform(-25, 25, 1500), rng.uniform(-1e-3, 1e-3, 500), rng.uniform(-1, 1, 1000)]
    return np.concatenate(parts).astype(dtype)


# double: within 2 ulp, float: within 3 ulp of the true value (the header's stated accuracy)
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


@pytest.mark.parametrize("suffix", ["", "f"])
def test_special_values(lib: object, suffix: str) -> None:
    f = {n: getattr(lib, f"p_{n}{suffix}") for n in NAMES}
    assert f["sin"](0.0) == 0.0 and f["cos"](0.0) == 1.0 and f["exp"](0.0) == 1.0 and f["tanh"](0.0) == 0.0
    assert f["exp"](1000.0) == math.inf and f["exp"](-1000.0) == 0.0
    assert f["tanh"](50.0) == 1.0 and f["tanh"](-50.0) == -1.0
    for n in NAMES:
        assert math.isnan(f[n](math.nan)), n
    assert math.isnan(f["sin"](math.inf)) and math.isnan(f["cos"](-math.inf))


def test_generated_code_calls_the_switchable_names() -> None:
    """The firmware's sin/cos go through MG_SIN/MG_COS (C library by default), never straight to libm."""
    rt_c = (ROOT / "generated" / "kuka_iiwa14" / "kuka_iiwa14_dynamics.c").read_text()
    assert "MG_SIN(" in rt_c and "MG_COS(" in rt_c
    assert " sin(" not in rt_c and " cos(" not in rt_c
