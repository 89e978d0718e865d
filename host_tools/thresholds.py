"""Collision thresholds from collision-free data (issue #7 item 3): replay a log through the robot's
pipeline, take each joint's largest |r| after the start-up transient, and set
det.threshold = margin x that + floor -- the smallest false-alarm-free threshold on this run, with
a margin for runs it has not seen.

    rt = load_rt("kuka_iiwa14", observer="momentum")
    design = design_thresholds(rt, Log.load("free.npz"))
    rt.config["det.threshold"] = design.threshold; rt.config.save("config.json")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .logs import Log
from .rt import Realtime


@dataclass(frozen=True)
class Thresholds:
    threshold: np.ndarray          # per joint, N m (or N)
    max_residual: np.ndarray       # largest |r| per joint after the skipped start
    at_time: np.ndarray            # when it occurred, s from the start of the log
    samples: int                   # samples used


def design_thresholds(rt: Realtime, log: Log, margin: float = 1.2, skip: float = 0.5,
                      floor: float = 0.0) -> Thresholds:
    """``skip`` seconds at the start are left out (observer start-up); the log must be collision-free."""
    if not margin >= 1.0:
        raise ValueError(f"margin must be >= 1 (a factor on the largest residual), got {margin!r}")
    if not (skip >= 0 and floor >= 0):
        raise ValueError("skip and floor must be >= 0")
    if log.robot != rt.name:
        raise ValueError(f"the log is of robot {log.robot!r}, the pipeline is {rt.name!r}")
    if abs(log.sample_period - rt.sample_period) > 1e-9 * rt.sample_period:
        raise ValueError(f"the log is sampled every {log.sample_period:g} s, the pipeline runs every "
                         f"{rt.sample_period:g} s")
    if "qd_meas" in (rt.input_dtype.names or ()):
        raise ValueError(f"the {rt.rt_manifest['observer']} observer reads qd_meas and qdd_meas, which the log "
                         "format does not carry: use its estimator-fed variant")
    if "det.threshold" not in rt.config.keys():
        raise ValueError("the pipeline has no collision observer (choose one with --observer)")
    k0 = int(round(skip / rt.sample_period))
    if len(log) <= k0 + 1:
        raise ValueError(f"the log has {len(log)} samples; skipping {skip:g} s leaves none")
    rt.config["det.threshold"] = 1e30           # no detection (and no reaction) while replaying
    rt.reset()
    r = np.abs(np.asarray(rt.run(log)["r"], float))[k0:]
    if not np.all(np.isfinite(r)):
        raise ValueError("the residual is not finite on this log (diverged estimator or bad torques)")
    worst = r.max(axis=0)
    return Thresholds(margin * worst + floor, worst, (k0 + r.argmax(axis=0)) * rt.sample_period, len(r))
