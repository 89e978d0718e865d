"""runtime/manipgen_rt.h mg_count_real through cffi: an unwrapped count as a real through a 32-bit
conversion where it fits (MG_COUNT_32, the default on 32-bit targets: one instruction where a 64-bit
conversion is a library call), with the bits of the 64-bit conversion, in float and double, for
counts at and beyond the 32-bit limits and where the real cannot hold every integer."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from host_tools.bindings.build import build_runtime

PRELUDE = """
#include <math.h>
#include <stdint.h>
#define MG_COUNT_32 1
#define MG_FABS {fabs}
#define MG_REAL {real}
#define MG_FAULT_NONE 0U  /* out.fault's codes, as <robot>_rt.h defines them before the runtime */
#define MG_FAULT_INPUT 1U
#define MG_FAULT_NUMERIC 2U
"""
EPILOGUE = """
{real} count_fast(int64_t c) {{ return mg_count_real(c); }}
{real} count_plain(int64_t c) {{ return ({real})c; }}
"""
DECLARATIONS = "{real} count_fast(int64_t c); {real} count_plain(int64_t c);"


@pytest.fixture(scope="module", params=["float", "double"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    real = request.param
    fabs = "fabsf" if real == "float" else "fabs"
    return build_runtime(
        "manipgen_rt.h",
        DECLARATIONS.format(real=real),
        PRELUDE.format(real=real, fabs=fabs),
        EPILOGUE.format(real=real),
    ).lib


def test_the_32_bit_path_has_the_bits_of_the_64_bit_conversion(lib: ModuleType) -> None:
    lo, hi = -(2**31), 2**31 - 1
    edges = [0, 1, -1, 2**24 + 1, -(2**24 + 1), 2**53 + 1, -(2**53 + 1), 2**63 - 1, -(2**63)]
    edges += [b + d for b in (lo, hi) for d in (-2, -1, 0, 1, 2)]  # both sides of the 32-bit limits
    rng = np.random.default_rng(5)
    counts = edges + [int(c) for c in rng.integers(lo, hi, 2000)] + [int(c) for c in rng.integers(-(2**62), 2**62, 200)]
    wrong = [c for c in counts if np.float64(lib.count_fast(c)).tobytes() != np.float64(lib.count_plain(c)).tobytes()]
    assert not wrong, wrong[:5]
    assert lib.count_fast(hi + 1) > 0 > lib.count_fast(lo - 1)  # not wrapped through a 32-bit cast
