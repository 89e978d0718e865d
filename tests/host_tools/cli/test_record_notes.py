"""`manipgen record` says when its own run leaves the desired motion, and why where the desired motion
only crept while the controller fed its Coulomb friction forward (issue 45: TALOS's left wrist)."""

from __future__ import annotations

import numpy as np

from host_tools.cli.record import off_trajectory_notes
from host_tools.data.logs import Log
from tests.host_tools.data.test_log_checks import PLANAR2, fabricate, window


def _ahead(creeping: bool) -> Log:
    """A clean planar2 run whose elbow runs 200 counts (0.077 rad: beyond the off_trajectory check's
    bound, 20 x the run's median error of 1.3e-3 rad, and its floor of 20 counts) ahead of its
    desired motion for 3 <= t <= 4 s, where that motion only creeps (1e-5 rad/s: rest to the
    checks) or moves as fabricated."""
    log, _ = fabricate(PLANAR2, 6.0)
    w = window(log, 3.0, 4.0)
    if creeping:
        log.q_des[w, 1] = log.q_des[np.argmax(w), 1]
        log.qd_des[w, 1] = 1e-5
        log.qdd_des[w, 1] = 0.0
    step = 2 * np.pi / PLANAR2.joints[1].encoder.cpr  # type: ignore[union-attr]
    log.counts[w, 1] = np.round(log.q_des[w, 1] / step).astype(np.int64) + 200
    log.extra["q_true"] = log.counts * step  # a recorded run's truth: here its encoder positions
    return log


def test_a_run_ahead_of_a_creeping_motion_is_explained() -> None:
    notes = off_trajectory_notes(PLANAR2, _ahead(creeping=True), True, "run.npz")
    assert len(notes) == 1, notes
    assert notes[0].startswith("run.npz: joint 2 leaves its desired motion in 1 span(s) from t = 3.000 to 4.000 s")
    assert "only creeps there" in notes[0] and "FC 0.1" in notes[0] and "--keep-flagged" in notes[0]
    # without the feed-forward (ctl.friction_ff = 0) the mechanism is not this one: the finding alone
    alone = off_trajectory_notes(PLANAR2, _ahead(creeping=True), False, "run.npz")
    assert len(alone) == 1 and "creeps" not in alone[0]


def test_a_run_ahead_of_a_moving_motion_is_named_without_the_creep() -> None:
    notes = off_trajectory_notes(PLANAR2, _ahead(creeping=False), True, "run.npz")
    assert len(notes) == 1 and "joint 2" in notes[0] and "creeps" not in notes[0], notes
    clean, _ = fabricate(PLANAR2, 6.0)
    assert off_trajectory_notes(PLANAR2, clean, True, "run.npz") == []
