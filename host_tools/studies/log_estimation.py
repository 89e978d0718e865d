"""The generated velocity estimators over a recorded encoder stream (#11 item 3; seed 000 §IV on its
own LWA-4P runs).

Every estimator's pipeline (the same generated C as the controller's) replays the log's counts,
validity and torque (model-based observers use it); its q-dot estimate is scored by the ISE
(seed 000 eq. 5, per joint, (rad/s)^2 s) against seed 000's offline ground truth: the positions
low-pass filtered by a 7th-order FIR (window method, Hamming: MATLAB's designfilt 'lowpassfir',
FilterOrder 7, CutoffFrequency 26 Hz at 250 Hz) forwards and backwards (filtfilt, MATLAB's edge
padding of 3 x 7 = 21 samples), then central differences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.signal

from codegen.blocks import findiff
from codegen.model.description import load_robot
from host_tools.data.logs import Log
from host_tools.studies.evaluate import ESTIMATORS, Setup, default_spec, pipeline, variant

FIR_ORDER = 7
CUTOFF_HZ = 26.0
# the recording controllers' own estimators: seed 000's runs are named for them
RECORDED = {"FinDiff": findiff.FINDIFF.name, "MovAv": f"{findiff.MOVAV.name}:p=3"}  # seed 000's logged ones


def ground_truth_velocity(q: np.ndarray, sample_period: float) -> np.ndarray:
    """Seed 000's offline reference velocity of positions ``q`` (K, n)."""
    b = scipy.signal.firwin(FIR_ORDER + 1, CUTOFF_HZ, fs=1.0 / sample_period, window="hamming")
    smooth = scipy.signal.filtfilt(b, [1.0], q, axis=0, padlen=3 * FIR_ORDER)
    return np.gradient(smooth, sample_period, axis=0)


def setup_of(log: Log, gains: str) -> Setup:
    """The evaluation set-up the log was recorded in (encoder resolution, rate)."""
    robot = load_robot(log.robot)
    cpr = {j.encoder.cpr for j in robot.joints if j.encoder is not None}
    if len(cpr) != 1:
        raise ValueError(f"{robot.name}: the joints' encoders differ ({sorted(cpr)} cpr): one resolution is needed")
    return Setup(
        robot=log.robot,
        resolution_mdeg=360000.0 / cpr.pop(),
        rate_hz=1.0 / log.sample_period,
        gains="paper" if gains == "paper" else "default",
    )


@dataclass(frozen=True)
class Estimate:
    name: str
    spec: str  # the generated variant (integer gains in the name)
    qd_hat: np.ndarray  # (K, n)
    ise: np.ndarray  # (n,) (rad/s)^2 s


def tuned(folder: Path, name: str) -> tuple[str, Path | None]:
    """The estimator variant and config file a `manipgen evaluate --tune --out FOLDER` chose."""
    doc = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    entry = doc["estimators"].get(name)
    if entry is None:
        raise ValueError(f"{folder / 'evaluation.json'}: estimators.{name}: not evaluated there")
    if not doc["setup"].get("tuned"):
        raise ValueError(f"{folder / 'evaluation.json'}: setup.tuned: not a --tune run")
    gains = entry["gains"]
    config = folder / gains["config_file"] if "config_file" in gains else None
    return str(gains["estimator"]), config


def estimate(log: Log, name: str, gains: str = "default") -> Estimate:
    """One estimator over the log: ``gains`` default (the description's / design defaults), paper
    (seed 000's Table 4/7/8 gains for the set-up) or a folder of `manipgen evaluate --tune --out`."""
    setup = setup_of(log, gains)
    config = None
    if gains in ("default", "paper"):
        spec = variant(setup, name) if gains == "paper" else default_spec(name)
    else:
        spec, config = tuned(Path(gains), name)
    rt = pipeline(setup, spec)
    if config is not None:
        rt.config.load(config)
    out = rt.run(log)
    truth = ground_truth_velocity(out["q"], log.sample_period)  # the generated encoder read's q
    err = out["qd_hat"] - truth
    return Estimate(name, spec, out["qd_hat"], np.sum(err * err, axis=0) * log.sample_period)


def estimate_all(log: Log, gains: str = "default", names: tuple[str, ...] = ESTIMATORS) -> list[Estimate]:
    return [estimate(log, n, gains) for n in names]


def recorded_match(log: Log, spec: str, skip: int = 3) -> dict[str, Any]:
    """How the generated ``spec`` compares with the estimate the recording controller logged
    (``qd_hat_logged``), after ``skip`` start-up samples: equal samples and the largest difference."""
    if "qd_hat_logged" not in log.extra:
        raise ValueError("the log has no qd_hat_logged (import a seed 000 run with manipgen import-log)")
    setup = setup_of(log, "default")
    rt = pipeline(setup, spec)
    mine = rt.run(log)["qd_hat"][skip:]
    theirs = np.asarray(log.extra["qd_hat_logged"])[skip:]
    return {
        "estimator": spec,
        "samples": int(mine.size),
        "equal": int(np.sum(mine == theirs)),
        "max_abs_difference": float(np.max(np.abs(mine - theirs))),
    }


def recorded_estimator(log: Log) -> dict[str, Any] | None:
    """Which of seed 000's recording estimators (findiff, movav p = 3) the log's qd_hat_logged is:
    the one the generated C reproduces sample for sample, with the comparison; None if neither."""
    if "qd_hat_logged" not in log.extra:
        return None
    for spec in RECORDED.values():
        match = recorded_match(log, spec)
        if match["equal"] == match["samples"]:
            return match
    return None


def report(
    runs: dict[str, Log], gains: tuple[str, ...] = ("default",), names: tuple[str, ...] = ESTIMATORS
) -> tuple[dict[str, Any], dict[str, dict[str, list[Estimate]]]]:
    """The JSON document (ISE per run, gain set and estimator; the recorded estimator reproduced)
    and the estimates themselves (for figures)."""
    doc: dict[str, Any] = {
        "ground_truth": f"FIR order {FIR_ORDER}, Hamming window, {CUTOFF_HZ:g} Hz, filtfilt, "
        "central differences (seed 000's offline reference)",
        "ise_unit": "(rad/s)^2 s",
        "runs": {},
    }
    estimates: dict[str, dict[str, list[Estimate]]] = {}
    for run, log in runs.items():
        entry: dict[str, Any] = {
            "robot": log.robot,
            "samples": len(log.time),
            "sample_period": log.sample_period,
            "recorded_estimator": recorded_estimator(log),
            "gains": {},
        }
        estimates[run] = {}
        for g in gains:
            est = estimate_all(log, g, names)
            estimates[run][g] = est
            entry["gains"][g] = {
                e.name: {"estimator": e.spec, "ise": float(e.ise.sum()), "per_axis": [float(v) for v in e.ise]}
                for e in est
            }
        doc["runs"][run] = entry
    return doc, estimates


def table(doc: dict[str, Any]) -> str:
    """Markdown: ISE per estimator (rows) and run x gain set (columns)."""
    cols = [(run, g) for run, e in doc["runs"].items() for g in e["gains"]]
    names = list(next(iter(doc["runs"].values()))["gains"][cols[0][1]])
    lines = [
        "| estimator | " + " | ".join(f"{run}, {Path(g).name} gains" for run, g in cols) + " |",
        "| --- |" + " --: |" * len(cols),
    ]
    for n in names:
        lines.append(
            f"| {n} | "
            + " | ".join(
                f"{doc['runs'][run]['gains'][g][n]['ise']:.4g} ({doc['runs'][run]['gains'][g][n]['estimator']})"
                for run, g in cols
            )
            + " |"
        )
    for run, e in doc["runs"].items():
        rec = e["recorded_estimator"]
        lines.append("")
        lines.append(
            f"{run}: the recorded estimate is "
            + (
                f"{rec['estimator']}: the generated C gives it exactly "
                f"({rec['equal']} of {rec['samples']} values equal)"
                if rec
                else "neither findiff nor movav p = 3"
            )
        )
    return "\n".join(lines)
