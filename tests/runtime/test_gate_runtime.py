"""runtime/manipgen_rt.h's decisions of the step through cffi: readiness and numeric faults
(mg_all_set, mg_gate, mg_gate_outputs: the contract <robot>_rt.h states under "Numeric faults"), and
the model-adaptive observer's restart and hold (mg_adapt_restart, mg_adapt_hold: as
codegen.blocks.adaptive documents them), each against the rule written out here."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from host_tools.bindings.build import build_runtime

NONE, INPUT, NUMERIC = 0, 1, 2
RESTART, ZERO_POSITION, WAIT = 1, 2, 4
PRELUDE = f"""
#include <math.h>
#include <stdint.h>
#define MG_REAL double
#define MG_FABS fabs
#define MG_FAULT_NONE {NONE}U  /* out.fault's codes, as <robot>_rt.h defines them before the runtime */
#define MG_FAULT_INPUT {INPUT}U
#define MG_FAULT_NUMERIC {NUMERIC}U
"""
EPILOGUE = f"""
int do_flags(void) {{ return MG_DO_RESTART == {RESTART} && MG_DO_ZERO_POSITION == {ZERO_POSITION}
                             && MG_DO_WAIT == {WAIT}; }}
"""
DECLARATIONS = """
int do_flags(void);
unsigned mg_all_set(const uint8_t *flags, int n, unsigned all);
unsigned mg_gate(unsigned started, int inputs_ok, unsigned config_fault, int position_ok, uint8_t *fault,
                 uint8_t *ready);
unsigned mg_gate_outputs(int outputs_ok, uint8_t *fault, uint8_t *ready);
int mg_adapt_restart(int n, unsigned first, unsigned reset, const double *r, double *pending);
int mg_adapt_hold(int n, unsigned collision, const uint8_t *above, const double *level, const double *r,
                  double suspect, int32_t suspect_hold, unsigned reset, int32_t *held, int *firm);
"""


@pytest.fixture(scope="module")
def rt() -> Any:
    return build_runtime("manipgen_rt.h", DECLARATIONS, PRELUDE, EPILOGUE)


def test_the_action_flags_are_distinct_bits(rt: Any) -> None:
    assert rt.lib.do_flags() == 1


@pytest.mark.parametrize("flags", [[1, 1, 1], [1, 0, 1], [0, 0, 0], [0, 1, 1], [1, 1, 0]])
def test_all_set_is_the_and_of_the_flags(rt: Any, flags: list[int]) -> None:
    a = rt.ffi.new("uint8_t[]", flags)
    assert rt.lib.mg_all_set(a, len(flags), 1) == int(all(flags))
    assert rt.lib.mg_all_set(a, len(flags), 0) == 0  # a chain's earlier arrays


GATE_CASES = list(itertools.product((0, 1), repeat=4))


@pytest.mark.parametrize(("started", "inputs_ok", "config_fault", "position_ok"), GATE_CASES)
def test_gate_follows_the_headers_contract(
    rt: Any, started: int, inputs_ok: int, config_fault: int, position_ok: int
) -> None:
    """A bad input is MG_FAULT_INPUT (it wins over the rest); else a non-finite config or position
    is MG_FAULT_NUMERIC. A fault restarts the blocks, reports q = 0 if the position is not finite and
    waits; a step without every encoder's first sample waits without a fault."""
    fault, ready = rt.ffi.new("uint8_t *", 9), rt.ffi.new("uint8_t *", 9)
    act = rt.lib.mg_gate(started, inputs_ok, config_fault, position_ok, fault, ready)
    want_fault = INPUT if not inputs_ok else (NUMERIC if (config_fault or not position_ok) else NONE)
    assert fault[0] == want_fault
    assert ready[0] == int(bool(started) and want_fault == NONE)
    want = (RESTART if want_fault else 0) | (ZERO_POSITION if want_fault and not position_ok else 0)
    assert act == want | (WAIT if not ready[0] else 0)


def test_gate_outputs_faults_and_waits_only_on_a_non_finite_output(rt: Any) -> None:
    fault, ready = rt.ffi.new("uint8_t *", NONE), rt.ffi.new("uint8_t *", 1)
    assert rt.lib.mg_gate_outputs(1, fault, ready) == 0 and (fault[0], ready[0]) == (NONE, 1)
    assert rt.lib.mg_gate_outputs(0, fault, ready) == RESTART | WAIT and (fault[0], ready[0]) == (NUMERIC, 0)


def _reals(rt: Any, values: list[float]) -> Any:
    return rt.ffi.new("double[]", values)


@pytest.mark.parametrize(("first", "reset"), list(itertools.product((0, 1), repeat=2)))
def test_adapt_restart_at_the_first_sample_and_at_reset(rt: Any, first: int, reset: int) -> None:
    r = _reals(rt, [0.5, -2.0, 3.0])
    assert rt.lib.mg_adapt_restart(3, first, reset, r, rt.ffi.NULL) == int(first or reset)


def test_adapt_restart_with_low_passes_carries_a_non_finite_residual_to_the_next_sample(rt: Any) -> None:
    """The integral form: a non-finite r restarts now and asks the next sample to restart too (the
    low-passes start again); that request is consumed once."""
    pending = rt.ffi.new("double *", 0.0)
    assert rt.lib.mg_adapt_restart(3, 0, 0, _reals(rt, [0.5, math.nan, 1.0]), pending) == 1
    assert pending[0] == 1.0
    assert rt.lib.mg_adapt_restart(3, 0, 0, _reals(rt, [0.5, 0.1, 1.0]), pending) == 1
    assert pending[0] == 0.0
    assert rt.lib.mg_adapt_restart(3, 0, 0, _reals(rt, [0.5, 0.1, math.inf]), pending) == 1
    assert rt.lib.mg_adapt_restart(3, 0, 0, _reals(rt, [0.5, 0.1, 1.0]), pending) == 1
    assert rt.lib.mg_adapt_restart(3, 0, 0, _reals(rt, [0.5, 0.1, 1.0]), pending) == 0


class _Hold:
    """mg_adapt_hold over a sequence of samples (3 joints, thresholds 2, 4 and 0: the last not detecting)."""

    def __init__(self, rt: Any, suspect: float, suspect_hold: int) -> None:
        self.rt, self.suspect, self.suspect_hold = rt, suspect, suspect_hold
        self.held, self.firm = rt.ffi.new("int32_t *", 0), rt.ffi.new("int *", 0)
        self.level = _reals(rt, [2.0, 4.0, 0.0])

    def __call__(self, r: list[float], collision: int = 0, above: tuple[int, ...] = (0, 0, 0), reset: int = 0) -> int:
        a = self.rt.ffi.new("uint8_t[]", list(above))
        return int(
            self.rt.lib.mg_adapt_hold(
                3, collision, a, self.level, _reals(self.rt, r), self.suspect, self.suspect_hold, reset,
                self.held, self.firm,
            )
        )  # fmt: skip


def test_adapt_hold_is_firm_on_a_collision_or_a_joint_above(rt: Any) -> None:
    h = _Hold(rt, 0.5, 3)
    assert h([0.0, 0.0, 0.0], collision=1) == 1 and h.firm[0] == 1
    assert h([0.0, 0.0, 0.0], above=(0, 1, 0)) == 1 and h.firm[0] == 1
    assert h([0.0, 0.0, 0.0]) == 0 and h.firm[0] == 0


def test_adapt_hold_at_the_suspect_level_lasts_suspect_hold_samples(rt: Any) -> None:
    """|r| above suspect x threshold on some detecting joint holds for suspect_hold samples at a
    time, then adapts until r falls below that level; a joint without a threshold never holds."""
    h = _Hold(rt, 0.5, 3)
    assert [h([1.5, 0.0, 0.0]) for _ in range(5)] == [1, 1, 1, 0, 0]
    assert h.firm[0] == 0 and h.held[0] == 3
    assert h([0.9, 1.9, 0.0]) == 0 and h.held[0] == 0  # below 1 and 2: armed again
    assert h([0.0, 2.1, 0.0]) == 1  # joint 2 above 0.5 x 4
    assert h([0.0, 0.0, 1e6]) == 0  # the third joint has no threshold
    h([0.0, 2.1, 0.0])
    assert h([0.0, 2.1, 0.0], reset=1) == 0 and h.held[0] == 0  # in.reset arms it again


def test_adapt_hold_at_suspect_one_is_only_above_the_threshold(rt: Any) -> None:
    h = _Hold(rt, 1.0, 3)
    assert h([1.99, 3.99, 0.0]) == 0
    assert h([2.01, 0.0, 0.0]) == 1


def test_mg_all_set_takes_every_flag_not_only_the_first(rt: Any) -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        flags = [int(v) for v in rng.integers(0, 2, 7)]
        assert rt.lib.mg_all_set(rt.ffi.new("uint8_t[]", flags), 7, 1) == int(all(flags))
