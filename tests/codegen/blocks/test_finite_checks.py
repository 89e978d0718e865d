"""The step's numeric-fault checks (runtime/manipgen_rt.h mg_bounded, mg_finite_sum; the generated
_rt_inputs_finite, _rt_config_finite, _rt_position_finite): every non-finite value, in every element
and every real field, is caught, and an input is caught exactly beyond +-<ROBOT>_RT_INPUT_LIMIT.

Each test first sums the elements (of the inputs' magnitudes: within the limit; of the positions and
outputs: finite) and tests each element only when that sum does not pass; both paths are exercised.

The values the header documents: out.fault is MG_FAULT_INPUT (1) for an input that is not finite or
beyond the limit, MG_FAULT_NUMERIC (2) for a non-finite config value or encoder position."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.blocks.pipeline import INPUT_LIMIT
from tests.codegen.blocks.helpers import fresh_rt

ROBOT = "planar2"  # 2 joints: every element of every field stays cheap to visit
FAULT_INPUT, FAULT_NUMERIC = 1, 2


@pytest.mark.parametrize("precision", ["double", "float"])
def test_every_bad_input_element_is_a_fault_and_the_limit_itself_is_not(precision: str) -> None:
    rt = fresh_rt(ROBOT, precision=precision)
    real = rt.input_dtype["tau"].base.type
    limit = real(INPUT_LIMIT)
    beyond = np.nextafter(limit, real(np.inf))  # the first value of this precision past the limit
    bad = [np.nan, np.inf, -np.inf, beyond, -beyond]
    fields = [f for f in ("tau", "q_des", "qd_des", "qdd_des") if f in (rt.input_dtype.names or ())]
    cases = [(f, j, v) for f in fields for j in range(rt.dof) for v in [*bad, limit, -limit]]
    a = rt.inputs(2 * len(cases) + 1)
    for k, (f, j, v) in enumerate(cases):
        a[f][2 * k + 1, j] = v  # one value per odd sample, a clean one between
    fault = rt.run_inputs(a)["fault"]
    want = np.zeros(len(a), np.uint8)
    want[1::2] = [0 if abs(v) == limit else FAULT_INPUT for _, _, v in cases]
    assert np.array_equal(fault, want), [
        (c, fault[2 * k + 1]) for k, c in enumerate(cases) if fault[2 * k + 1] != want[2 * k + 1]
    ]


@pytest.mark.parametrize("precision", ["double", "float"])
def test_every_non_finite_config_element_is_a_numeric_fault(precision: str) -> None:
    """Written into the C config directly (the host's RtConfig refuses them): each real element of
    every config field in turn, as NaN, +inf and -inf; the config restored after each."""
    rt = fresh_rt(ROBOT, precision=precision)
    real = rt.input_dtype["tau"].base.type
    keys = [k for k in rt.config.keys() if np.asarray(rt.config[k]).dtype == np.dtype(real)]
    assert len(keys) > 5
    visited = 0
    for key in keys:
        kind, name = key.split(".")
        saved = np.array(rt.config[key], copy=True)
        for i in range(saved.size):
            for v in (np.nan, np.inf, -np.inf):
                raw = saved.copy().reshape(-1)
                raw[i] = v
                rt.config._s[kind][name] = raw.reshape(saved.shape)  # the C struct, as RtConfig writes it
                assert rt.step(np.zeros(rt.dof, np.int64))["fault"] == FAULT_NUMERIC, (key, i, v)
                rt.config._s[kind][name] = saved
                assert rt.step(np.zeros(rt.dof, np.int64))["fault"] == 0, (key, i, v)
                visited += 1
    assert visited == 3 * sum(np.asarray(rt.config[k]).size for k in keys)


def test_an_overflowing_encoder_position_is_a_numeric_fault() -> None:
    """Finite config, finite counts, but q = direction x counts x 2 pi / (cpr x gear) overflows to
    +-inf: the position check (mg_finite_sum on out.q) raises MG_FAULT_NUMERIC."""
    rt = fresh_rt(ROBOT)
    np.asarray(rt.config["enc.direction"])[...] = 1e308  # past RtConfig's check, as a raw write
    with np.errstate(over="ignore"):
        q = (1e6 * 2 * np.pi / np.asarray(rt.config["enc.cpr"])) * 1e308 / np.asarray(rt.config["enc.gear"])
    assert np.all(np.isinf(q))  # the encoder's own formula overflows on every joint
    assert rt.step(np.full(rt.dof, 1_000_000, np.int64))["fault"] == FAULT_NUMERIC


@pytest.mark.parametrize("precision", ["double", "float"])
def test_inputs_all_at_the_limit_are_no_fault(precision: str) -> None:
    """Every input at +-limit: the sum of their magnitudes exceeds the limit, so the step's fast test
    (the sum within the limit) cannot accept them and mg_bounded's element test decides: no fault;
    one of them past the limit beside them: a fault."""
    rt = fresh_rt(ROBOT, precision=precision)
    real = rt.input_dtype["tau"].base.type
    limit = real(INPUT_LIMIT)
    fields = [f for f in ("tau", "q_des", "qd_des", "qdd_des") if f in (rt.input_dtype.names or ())]
    a = rt.inputs(3)
    for k, f in enumerate(fields):
        a[f][:] = limit if k % 2 else -limit
    a["tau"][2, 0] = np.nextafter(limit, real(np.inf))
    assert rt.run_inputs(a)["fault"].tolist() == [0, 0, FAULT_INPUT]


@pytest.mark.parametrize("precision", ["double", "float"])
def test_finite_positions_and_outputs_whose_sum_overflows_are_no_fault(precision: str) -> None:
    """Finite positions of about 0.75 x the largest finite value on every joint: their plain sum (the
    position and output tests' fast path) overflows, and the element test must keep them. The first
    sample's outputs are then all finite (q_hat = q, the Kalman filter's start; qd_hat = qdd_hat = 0;
    the residual starts at 0; kp = 0, so computed torque's position term is 0 x -q_hat = 0): no fault,
    and q_hat is q (a fault would zero q_hat, a failed position test q as well)."""
    rt = fresh_rt(ROBOT, precision=precision)
    real = rt.input_dtype["tau"].base.type
    counts = 1_000_000
    rpc = 2 * np.pi / np.asarray(rt.config["enc.cpr"], dtype=float)
    gear = np.asarray(rt.config["enc.gear"], dtype=float)
    target = 0.75 * float(np.finfo(real).max)
    np.asarray(rt.config["enc.direction"])[...] = target * gear / (counts * rpc)  # raw: past RtConfig's check
    np.asarray(rt.config["ctl.kp"])[...] = 0.0
    out = rt.step(np.full(rt.dof, counts, np.int64))
    q = np.asarray(out["q"], dtype=float)
    assert np.all(np.isfinite(q)) and np.all(q > 0.5 * float(np.finfo(real).max))  # their sum overflows
    with np.errstate(over="ignore"):
        assert np.isinf(np.sum(q.astype(real)))
    assert out["fault"] == 0
    assert np.array_equal(np.asarray(out["q_hat"]), np.asarray(out["q"]))
