"""runtime/manipgen_rt.h's counter unwrapping (mg_counter_mask, mg_unwrap) and threshold bookkeeping
(mg_detect) through cffi, each against its rule written out here (Python integers for the counters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from host_tools.bindings.build import build_runtime

PRELUDE = """
#include <math.h>
#include <stdint.h>
#define MG_REAL double
#define MG_FABS fabs
#define MG_FAULT_NONE 0U  /* out.fault's codes, as <robot>_rt.h defines them before the runtime */
#define MG_FAULT_INPUT 1U
#define MG_FAULT_NUMERIC 2U
"""
DECLARATIONS = """
uint32_t mg_counter_mask(unsigned bits);
void mg_unwrap(uint32_t raw, uint32_t mask, unsigned is_signed, uint8_t *started, uint32_t *last, int64_t *total);
int mg_detect(int n, const double *r, const double *level, double release, const int32_t *debounce, uint8_t *above,
              int32_t *count, int32_t *highest);
"""


@pytest.fixture(scope="module")
def rt() -> Any:
    return build_runtime("manipgen_rt.h", DECLARATIONS, PRELUDE, "")


@pytest.mark.parametrize(
    ("bits", "mask"), [(2, 3), (12, 4095), (31, 2**31 - 1), (32, 2**32 - 1), (0, 2**32 - 1), (33, 2**32 - 1)]
)
def test_counter_mask_is_two_to_the_bits_minus_one_and_32_bits_outside_2_to_32(rt: Any, bits: int, mask: int) -> None:
    assert rt.lib.mg_counter_mask(bits) == mask


@pytest.mark.parametrize("bits", [4, 12, 16, 32])
@pytest.mark.parametrize("is_signed", [0, 1])
def test_unwrap_follows_any_number_of_wraps_of_steps_below_half_a_range(rt: Any, bits: int, is_signed: int) -> None:
    """A position walking up and down across many counter wraps, in steps below half the range: the
    64-bit count is the true count, whose low bits the counter shows; the first sample is the counter's
    value (read as two's complement if signed)."""
    mask, half = 2**bits - 1, 2 ** (bits - 1)
    rng = np.random.default_rng(bits + is_signed)
    start = int(rng.integers(0, 2**bits))
    first = start - 2**bits if is_signed and start >= half else start
    steps = rng.integers(-(half - 1), half, size=400)
    steps[100:200] = half - 1  # a run up, many wraps
    steps[200:300] = -(half - 1)  # and down again
    started, last, total = rt.ffi.new("uint8_t *", 0), rt.ffi.new("uint32_t *", 0), rt.ffi.new("int64_t *", 0)
    truth = first
    rt.lib.mg_unwrap(start, rt.lib.mg_counter_mask(bits), is_signed, started, last, total)
    assert started[0] == 1 and total[0] == truth
    for d in steps:
        truth += int(d)
        rt.lib.mg_unwrap(truth & 0xFFFFFFFF, rt.lib.mg_counter_mask(bits), is_signed, started, last, total)
        assert total[0] == truth and last[0] == truth & mask


class _Detect:
    """mg_detect over a sequence of samples (3 joints, thresholds 1, 2 and 0: the last not detecting)."""

    def __init__(self, rt: Any, release: float, debounce: list[int]) -> None:
        self.rt, self.release = rt, release
        self.level = rt.ffi.new("double[]", [1.0, 2.0, 0.0])
        self.debounce = rt.ffi.new("int32_t[]", debounce)
        self.above, self.count = rt.ffi.new("uint8_t[]", 3), rt.ffi.new("int32_t[]", 3)
        self.highest = rt.ffi.new("int32_t *", -1)

    def __call__(self, r: list[float]) -> int:
        return int(
            self.rt.lib.mg_detect(
                3, self.rt.ffi.new("double[]", r), self.level, self.release, self.debounce, self.above, self.count,
                self.highest,
            )
        )  # fmt: skip


def test_detect_hysteresis_enters_above_the_level_and_leaves_below_release_times_it(rt: Any) -> None:
    d = _Detect(rt, 0.5, [1, 1, 1])
    assert d([1.0, 0.0, 0.0]) == 0 and d.above[0] == 0  # at the level: not above
    assert d([-1.01, 0.0, 0.0]) == 1 and d.above[0] == 1 and d.highest[0] == 1
    assert d([0.6, 0.0, 0.0]) == 1 and d.above[0] == 1  # above 0.5 x 1: still above
    assert d([0.5, 0.0, 0.0]) == 0 and d.above[0] == 0 and d.highest[0] == 0  # at release x level: out
    assert d([0.0, 0.0, 1e9]) == 0  # the joint without a threshold never detects
    assert d([1.5, 2.5, 0.0]) == 1 and d.highest[0] == 2  # the highest joint above


def test_detect_debounce_counts_consecutive_samples_above(rt: Any) -> None:
    """debounce 3 on joint 1, 0 (counts as 1) on joint 2: joint 1 fires on its third consecutive
    sample above, and a sample below starts its count again."""
    d = _Detect(rt, 1.0, [3, 0, 1])
    assert [d([1.5, 0.0, 0.0]) for _ in range(3)] == [0, 0, 1] and d.count[0] == 3
    d([0.0, 0.0, 0.0])
    assert d.count[0] == 0
    assert [d([1.5, 0.0, 0.0]), d([0.2, 0.0, 0.0]), d([1.5, 0.0, 0.0])] == [0, 0, 0]
    assert d([0.0, 2.5, 0.0]) == 1  # debounce 0 counts as 1
