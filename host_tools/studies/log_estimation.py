"""The generated velocity estimators over a recorded encoder stream (#11 item 3; Liu et al. §IV on its
own LWA-4P runs).

Every estimator's pipeline (the same generated C as the controller's) replays the log's counts,
validity and torque (model-based observers use it); its q-dot estimate is scored by the ISE
(Liu et al. eq. 5, per joint, (rad/s)^2 s) against Liu et al.'s offline ground truth: the positions
low-pass filtered by a 7th-order FIR (window method, Hamming: MATLAB's designfilt 'lowpassfir',
FilterOrder 7, CutoffFrequency 26 Hz at 250 Hz) forwards and backwards (filtfilt, MATLAB's edge
padding of 3 x 7 = 21 samples), then central differences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks import findiff, kalman, linhg, nlhg, slimod
from codegen.blocks.options import EstimatorChoice, estimator_choice, parse_estimator
from host_tools.bindings.source import RobotSource
from host_tools.data.logs import RECORDED_PREFIX, REQUIRED, Log, recorded_for
from host_tools.studies.evaluate import (
    ESTIMATORS,
    EstimatorRequest,
    Setup,
    default_spec,
    own_setup,
    pipeline,
    variant,
)

FIR_ORDER = 7
CUTOFF_HZ = 26.0
# the recording controllers' own estimators: Liu et al.'s runs are named for them
RECORDED = {  # Liu et al.'s logged ones
    "FinDiff": estimator_choice(findiff.FINDIFF.name, {}),
    "MovAv": estimator_choice(findiff.MOVAV.name, {"p": 3}),
}
# Experiment 1's recorded outputs of the paper's estimators (host_tools.data.mat_logs keeps dq_<Name>
# as qd_recorded_<name>): which estimator each one is
RECORDED_OUTPUTS = {
    "findiff": findiff.FINDIFF.name,
    "movav": findiff.MOVAV.name,
    "kalman": kalman.SPEC.name,
    "linhg": linhg.SPEC.name,
    "nnlhg": nlhg.SPEC.name,
    "slimod": slimod.SPEC.name,
}
# the recorded estimators started from a zero state at their switch-on (a findiff's first output is
# q / T), and so do ours here: compared, and scored, from this long after it, as Liu et al.'s own
# evaluation of Experiment 1 leaves the start-up out. Within it the 4-digit rounding of Table 8's
# gains still shows (the Kalman filter's start-up transient, 0.05 rad/s on joint 5, dies out with
# its slowest pole, e^-1 in about 30 ms at 250 Hz)
SETTLE_S = 1.0


def ground_truth_velocity(q: np.ndarray, sample_period: float) -> np.ndarray:
    """Liu et al.'s offline reference velocity of positions ``q`` (K, n)."""
    import scipy.signal  # here: 1.2 s to import, which every command importing this module would pay

    b = scipy.signal.firwin(FIR_ORDER + 1, CUTOFF_HZ, fs=1.0 / sample_period, window="hamming")
    smooth = scipy.signal.filtfilt(b, [1.0], q, axis=0, padlen=3 * FIR_ORDER)
    return np.gradient(smooth, sample_period, axis=0)


def setup_of(log: Log, gains: str, source: RobotSource) -> Setup:
    """The evaluation set-up the log was recorded in (encoder resolution, rate) on the robot
    ``source`` describes: its coarsest link-side resolution (a motor encoder counts gear_ratio
    times finer at the link; a joint without an encoder, as in most URDFs, has the generated C's
    default), not one cpr that every joint must share."""
    robot = source.robot()
    if robot.c_name != log.robot:
        raise ValueError(f"the log is of robot {recorded_for(log)!r}, the description is of {robot.name!r}")
    return Setup(
        source,
        resolution_mdeg=own_setup(robot)[0],  # the coarsest link-side resolution, as evaluate without --log
        rate_hz=1.0 / log.sample_period,
        gains="paper" if gains == "paper" else "default",
    )


@dataclass(frozen=True)
class Estimate:
    name: str
    spec: str  # the generated variant (integer gains in the name)
    qd_hat: np.ndarray  # (K, n), zero before ``start`` (not run there)
    ise: np.ndarray  # (n,) (rad/s)^2 s, from sample ``scored``
    start: int = 0  # the sample the estimator was switched on at
    scored: int = 0  # the first sample the ISE (and the recorded comparison) counts
    truth: np.ndarray | None = None  # (K, n) the ground truth velocity


def recorded_outputs(log: Log) -> dict[str, np.ndarray]:
    """The log's recorded estimator outputs by estimator name (empty for most logs)."""
    return {
        RECORDED_OUTPUTS[k.removeprefix(RECORDED_PREFIX)]: np.asarray(v, float)
        for k, v in log.extra.items()
        if k.startswith(RECORDED_PREFIX) and k.removeprefix(RECORDED_PREFIX) in RECORDED_OUTPUTS
    }


def switch_on(log: Log) -> int:
    """The sample the recorded estimators were switched on at (their first non-zero output), 0
    without recorded outputs: the generated ones replay from there, as the recording ran."""
    starts = [int(np.argmax(np.any(v != 0, axis=1))) for v in recorded_outputs(log).values() if np.any(v != 0)]
    return min(starts) if starts else 0


def from_zero_state(log: Log, k: int) -> Log:
    """The log from sample ``k`` on, after one sample at the encoders' zero (counts 0, no torque):
    the estimators' start-up on that sample leaves them in the zero state, which is how the recorded
    ones were switched on (x = 0; a finite difference's first output q / T)."""
    cut = {f: np.concatenate([np.zeros_like(getattr(log, f)[:1]), getattr(log, f)[k:]]) for f in REQUIRED}
    cut["valid"][0] = True
    cut["time"][0] = log.time[k] - log.sample_period
    for f in ("q_des", "qd_des", "qdd_des"):
        cut[f][0] = getattr(log, f)[k]
    return replace(
        log,
        time=cut["time"],
        counts=cut["counts"],
        valid=cut["valid"],
        tau=cut["tau"],
        q_des=cut["q_des"],
        qd_des=cut["qd_des"],
        qdd_des=cut["qdd_des"],
        extra={},
    )


def tuned(folder: Path, name: str) -> tuple[EstimatorChoice, Path | None]:
    """The estimator variant and config file a `manipgen evaluate --tune --out FOLDER` chose."""
    doc = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    entry = doc["estimators"].get(name)
    if entry is None:
        raise ValueError(f"{folder / 'evaluation.json'}: estimators.{name}: not evaluated there")
    if not doc["setup"].get("tuned"):
        raise ValueError(f"{folder / 'evaluation.json'}: setup.tuned: not a --tune run")
    gains = entry["gains"]
    config = folder / gains["config_file"] if "config_file" in gains else None
    return parse_estimator(str(gains["estimator"])), config


def estimate(log: Log, request: EstimatorRequest, source: RobotSource, gains: str = "default") -> Estimate:
    """One estimator over the log of the robot ``source`` describes: ``gains`` default (the
    description's / design defaults), paper (Liu et al.'s Table 4/7/8 gains for the set-up) or a folder
    of `manipgen evaluate --tune --out`."""
    setup = setup_of(log, gains, source)
    config = None
    name = request.label
    if request.given is not None:  # a variant with its options, as given
        spec = request.given
    elif gains in ("default", "paper"):
        spec = variant(setup, name) if gains == "paper" else default_spec(name)
    else:
        spec, config = tuned(Path(gains), name)
    rt = pipeline(setup, spec)
    if config is not None:
        rt.config.load(config)
    out = rt.run(log)
    truth = ground_truth_velocity(out["q"], log.sample_period)  # the generated encoder read's q
    start = switch_on(log)
    qd_hat = out["qd_hat"]
    if start:  # replayed from the recorded estimators' switch-on, a fresh instance in the zero state
        rt.reset()
        qd_hat = np.zeros_like(qd_hat)
        qd_hat[start:] = rt.run(from_zero_state(log, start))["qd_hat"][1:]
    scored = start + int(round(SETTLE_S / log.sample_period)) if start else 0
    err = (qd_hat - truth)[scored:]
    return Estimate(name, spec.label, qd_hat, np.sum(err * err, axis=0) * log.sample_period, start, scored, truth)


def recorded_comparison(log: Log, e: Estimate) -> dict[str, Any] | None:
    """The recorded output of estimator ``e.name`` against ``e`` and the ground truth, both from
    ``e.scored``: {ise (the recording's), max_abs_difference (ours - recorded), from_s}; None when
    the log holds no such recording."""
    rec = recorded_outputs(log).get(e.name.partition(":")[0])
    if rec is None or e.truth is None:
        return None
    k = e.scored
    err = (rec - e.truth)[k:]
    return {
        "ise": float(np.sum(err * err) * log.sample_period),
        "max_abs_difference": float(np.max(np.abs(e.qd_hat[k:] - rec[k:]))),
        "max_abs_difference_per_axis": [float(v) for v in np.max(np.abs(e.qd_hat[k:] - rec[k:]), axis=0)],
        "from_s": float(log.time[k]),
    }


def estimate_all(
    log: Log, source: RobotSource, gains: str = "default", requests: tuple[EstimatorRequest, ...] = ESTIMATORS
) -> list[Estimate]:
    return [estimate(log, r, source, gains) for r in requests]


def recorded_match(log: Log, spec: EstimatorChoice, source: RobotSource, skip: int = 3) -> dict[str, Any]:
    """How the generated ``spec`` compares with the estimate the recording controller logged
    (``qd_hat_logged``), after ``skip`` start-up samples: equal samples and the largest difference."""
    if "qd_hat_logged" not in log.extra:
        raise ValueError("the log has no qd_hat_logged (import a Liu et al. run with manipgen import-log)")
    setup = setup_of(log, "default", source)
    rt = pipeline(setup, spec)
    mine = rt.run(log)["qd_hat"][skip:]
    theirs = np.asarray(log.extra["qd_hat_logged"])[skip:]
    return {
        "estimator": spec.label,
        "samples": int(mine.size),
        "equal": int(np.sum(mine == theirs)),
        "max_abs_difference": float(np.max(np.abs(mine - theirs))),
    }


def recorded_estimator(log: Log, source: RobotSource) -> dict[str, Any] | None:
    """Which of Liu et al.'s recording estimators (findiff, movav p = 3) the log's qd_hat_logged is:
    the one the generated C reproduces sample for sample, with the comparison; None if neither."""
    if "qd_hat_logged" not in log.extra:
        return None
    for spec in RECORDED.values():
        match = recorded_match(log, spec, source)
        if match["equal"] == match["samples"]:
            return match
    return None


def report(
    runs: dict[str, Log],
    source: RobotSource,
    gains: tuple[str, ...] = ("default",),
    requests: tuple[EstimatorRequest, ...] = ESTIMATORS,
) -> tuple[dict[str, Any], dict[str, dict[str, list[Estimate]]]]:
    """The JSON document (ISE per run, gain set and estimator; the recorded estimator reproduced)
    and the estimates themselves (for figures)."""
    doc: dict[str, Any] = {
        "ground_truth": f"FIR order {FIR_ORDER}, Hamming window, {CUTOFF_HZ:g} Hz, filtfilt, "
        "central differences (Liu et al.'s offline reference)",
        "ise_unit": "(rad/s)^2 s",
        "runs": {},
    }
    estimates: dict[str, dict[str, list[Estimate]]] = {}
    for run, log in runs.items():
        entry: dict[str, Any] = {
            "robot": log.robot,
            "samples": len(log.time),
            "sample_period": log.sample_period,
            "recorded_estimator": recorded_estimator(log, source),
            "gains": {},
        }
        estimates[run] = {}
        for g in gains:
            est = estimate_all(log, source, g, requests)
            estimates[run][g] = est
            entry["gains"][g] = {}
            for e in est:
                item: dict[str, Any] = {
                    "estimator": e.spec,
                    "ise": float(e.ise.sum()),
                    "per_axis": [float(v) for v in e.ise],
                }
                recorded = recorded_comparison(log, e)
                if recorded is not None:
                    item["recorded"] = recorded
                entry["gains"][g][e.name] = item
            if est and est[0].start:
                entry["switch_on_s"] = float(log.time[est[0].start])
                entry["ise_from_s"] = float(log.time[est[0].scored])
        doc["runs"][run] = entry
    return doc, estimates
