"""Shared helpers of the real-time tests: loading pipelines once per process, comparing outputs."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from host_tools.bindings.rt import Realtime, load_rt, rt_options
from tests.oracles import RtReference

ESTIMATORS = (
    "findiff",
    "movav:p=3",
    "lsf:n=4,p=1",
    "lsf:n=6,p=2",
    "bde:n=2",
    "tse:n=3",
    "ewlr:n=8,lam=0.8",
    "kalman",
    "kalman:tustin=1",
    "linhg",
    "nlhg",
    "slimod",
    "imu",
    "imu:tip=1",
)
STEP_KEYS = ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des")


@cache
def _folder_rt(robot: str, estimator: str, observer: str, controller: str, constant: bool, precision: str) -> str:
    return str(load_rt(robot, estimator, observer, controller, constant, precision).folder)  # type: ignore[arg-type]


def fresh_rt(
    robot: str,
    estimator: str = "kalman",
    observer: str = "momentum",
    controller: str = "computed_torque",
    constant: bool = False,
    precision: str = "double",
) -> Realtime:
    """A new instance (own state) of a cached build."""
    return Realtime(_folder_rt(robot, estimator, observer, controller, constant, precision))


def reference(
    robot: str,
    estimator: str = "kalman",
    observer: str = "momentum",
    controller: str = "computed_torque",
    constant: bool = False,
) -> RtReference:
    return RtReference(robot, rt_options(estimator, observer, controller, constant))


def rel_err(c: Any, r: Any) -> float:
    """Normwise error with an absolute floor of 1 (per output vector)."""
    c, r = np.asarray(c, float), np.asarray(r, float)
    return float(np.max(np.abs(c - r)) / max(1.0, float(np.max(np.abs(r)))))


def worst_rel_err(c: Any, r: Any) -> float:
    """The largest rel_err(c[k], r[k]) over the samples k (the first axis), in one pass: the same
    figures as rel_err sample by sample (max and abs are exact), except that a NaN error is the
    result here (Python's max() of a running float dropped it)."""
    c, r = np.asarray(c, float), np.asarray(r, float)
    k = len(r)
    diff = np.abs(c.reshape(k, -1) - r.reshape(k, -1)).max(axis=1)
    return float(np.max(diff / np.maximum(1.0, np.abs(r.reshape(k, -1)).max(axis=1))))


def reference_outputs(ref: RtReference, steps: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The reference stepped through ``steps`` (one dict of inputs per sample): each output stacked
    over the samples."""
    outs = [ref.step(s) for s in steps]
    return {name: np.array([o[name] for o in outs]) for name in outs[0]}


def at(inputs: dict[str, np.ndarray], k: int) -> dict[str, Any]:
    return {key: inputs[key][k] for key in STEP_KEYS if key in inputs}


def only_steps(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: inputs[key] for key in STEP_KEYS if key in inputs}


def worst_from_identical_states(rt: Realtime, ref: RtReference, ins: dict[str, np.ndarray], k: int) -> float:
    """C and reference stepped from identical states (the reference loads the C state first) over
    the first k samples: the worst rel_err over all outputs."""
    worst = 0.0
    for i in range(k):
        ref.load_state(rt)
        o = ref.step(at(ins, i))
        c = rt.step(**at(ins, i))
        worst = max(worst, max(rel_err(c[name], v) for name, v in o.items()))
    return worst


def step_by_step(
    rt: Realtime, ref: RtReference, ins: dict[str, np.ndarray], reset: np.ndarray
) -> tuple[float, np.ndarray]:
    """C and reference from identical states at every sample (the reference loads the C state first):
    (worst rel_err over all outputs, (K, 2) array of (collision, link) per sample)."""
    fired, worst = [], 0.0
    for k in range(len(reset)):
        step_in = dict(at(ins, k), reset=reset[k])
        ref.load_state(rt)
        o = ref.step(step_in)
        c = rt.step(**step_in)
        worst = max(worst, max(rel_err(c[name], v) for name, v in o.items()))
        fired.append((int(c["collision"]), int(c["link"])))
    return worst, np.array(fired)
