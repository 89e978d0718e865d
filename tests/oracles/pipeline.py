"""The pipeline's oracle: ``<robot>_rt_step`` of templates/rt.c.j2 in numpy -- the encoder, then
readiness (every joint's first valid sample), the numeric faults (a non-finite or huge input, a
non-finite position or config, a non-finite result) and their restart, the outputs a waiting step
zeroes, then the blocks in order, each by its oracle (``ORACLES``)."""

from __future__ import annotations

import numpy as np

from codegen.blocks.base import Block
from codegen.blocks.pipeline import INPUT_LIMIT, Pipeline
from tests.oracles.base import ORACLES, Data, Oracle, evaluate


def default_config(pipe: Pipeline) -> Data:
    return {f"cfg.{b.kind}.{x.name}": x.default_array() for b in pipe.blocks for x in b.config}


def new_data(pipe: Pipeline, config: Data | None = None) -> Data:
    """A fresh instance: every binding zero, the config given (or the default), derived values set."""
    d: Data = {k: f.zeros() for k, f in pipe.fields().items()}
    d.update({k: np.array(v, copy=True) for k, v in (config or default_config(pipe)).items()})
    d["loc.first"] = np.array(1)
    configure(pipe, d)
    return d


def configure(pipe: Pipeline, d: Data) -> None:
    """``<robot>_rt_configure``: each block's derived state from the config, the counters' masks
    (runtime mg_counter_mask: 2^bits - 1, bits outside 2..32 read as 32) and the thresholds'
    standstill flag (some ks is not 0)."""
    for b in pipe.blocks:
        if b.derive is not None:
            evaluate(b.derive, d)
    for prefix in ("", "motor_"):
        if f"st.enc.{prefix}mask" in d:
            bits = d[f"cfg.enc.{prefix}bits"].astype(np.int64)
            width = np.where((bits < 2) | (bits > 32), 32, bits)
            d[f"st.enc.{prefix}mask"] = ((np.int64(1) << width) - 1).astype(np.uint32)
    if "st.det.standstill" in d:
        d["st.det.standstill"] = np.array(int(np.any(d["cfg.det.ks"] != 0)), dtype=np.uint8)


def oracle(block: Block) -> Oracle | None:
    """The block's oracle; None for the run-time model parameters (derived at configuration only)."""
    if block.kind == "model":
        return None
    if block.name not in ORACLES:
        raise KeyError(f"no oracle registered for the {block.kind} block {block.name!r} (tests.oracles.ORACLES)")
    return ORACLES[block.name]


def step(pipe: Pipeline, d: Data) -> None:
    """One sample (d: inputs set, state carried over)."""
    for k in ("out.q_d", "out.qd_d", "out.qdd_d"):
        d[k] = d["in." + k[4:].replace("_d", "_des")].astype(float).copy()
    for b in pipe.blocks:
        run = oracle(b)
        if run is not None:
            run(d, b, pipe.ctx)
        if b.kind == "est" and pipe.shared is not None:  # cos and sin of q_hat, shared by the blocks after it
            evaluate(pipe.shared, d)
        if b.kind == "enc":
            started = d["st.enc.started"] != 0
            if pipe.block("mest") is not None:  # the motor-side estimator reads theta
                started &= d["st.enc.motor_started"] != 0
            d["out.ready"] = np.array(int(np.all(started)), dtype=np.uint8)
            d["out.fault"] = np.array(0 if all_finite(pipe, d, "in.", INPUT_LIMIT) else 1, dtype=np.uint8)
            positions = ("out.q", "out.theta") if pipe.robot.elastic else ("out.q",)
            encoders_finite = all(bool(np.all(np.isfinite(d[k]))) for k in positions)
            if not d["out.fault"] and not (encoders_finite and all_finite(pipe, d, "cfg.")):
                d["out.fault"] = np.array(2, dtype=np.uint8)
            if d["out.fault"]:
                restart(pipe, d)
                d["out.ready"] = np.array(0, dtype=np.uint8)
                if not encoders_finite:
                    for k in positions:
                        d[k] = d[k] * 0
            if not d["out.ready"]:
                zero_waiting(pipe, d)
                return
    d["loc.first"] = np.array(0)
    if not all_finite(pipe, d, "out."):
        restart(pipe, d)
        d["out.fault"] = np.array(2, dtype=np.uint8)
        d["out.ready"] = np.array(0, dtype=np.uint8)
        zero_waiting(pipe, d)


def zero_waiting(pipe: Pipeline, d: Data) -> None:
    for name in pipe.waiting_outputs:
        d["out." + name] = d["out." + name] * 0


def all_finite(pipe: Pipeline, d: Data, prefix: str, limit: float = np.inf) -> bool:
    """The numeric-fault test of the step: every real ``in.``, ``out.`` or ``cfg.`` value finite
    (and within +-limit). ``|v| <= limit`` is false for NaN, and for inf when the limit is finite."""
    values = [np.ravel(d[k]) for k in _real_keys(pipe, prefix) if k in d]
    if not values:
        return True
    v = np.concatenate(values)
    return bool(np.all(np.abs(v) <= limit) and np.all(np.isfinite(v)))


_REAL_KEYS: dict[tuple[int, str], tuple[str, ...]] = {}


def _real_keys(pipe: Pipeline, prefix: str) -> tuple[str, ...]:
    """The real fields of a space, once per pipeline (the oracle asks at every sample)."""
    key = (id(pipe), prefix)
    if key not in _REAL_KEYS:
        _REAL_KEYS[key] = tuple(k for k, f in pipe.fields().items() if k.startswith(prefix) and f.ctype == "real")
    return _REAL_KEYS[key]


def restart(pipe: Pipeline, d: Data) -> None:
    """A numeric fault's restart: block states as after init, the config and encoders kept."""
    fresh = new_data(pipe, {k: v for k, v in d.items() if k.startswith("cfg.")})
    for k, v in fresh.items():
        if (k.startswith("st.") and not k.startswith("st.enc.")) or k.startswith("loc."):
            d[k] = v
