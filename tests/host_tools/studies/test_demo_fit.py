"""The demo's motion and push fitted to a description's limits (host_tools.studies.scenarios,
issue 45): an arm with low torque limits gets a motion it can follow without saturating, where the
motion made for a big arm pins tau_cmd at its limits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.studies.scenarios import HELD_S, MOTION_SHARE, Motion, fit_to_limits, saturated


def test_a_weak_arm_gets_a_motion_it_can_follow() -> None:
    """planar2 with 20 / 8 N m drives (its shoulder needs ~30 N m to hold the arm level at the middle
    of its range, q = 0; the limits set in the controller's clamp, the C of planar2 reused): the
    default motion saturates the shoulder in the closed loop; the fitted one (hanging, slower and
    smaller) runs without a single sample at a limit, its inverse dynamics within MOTION_SHARE of
    each limit."""
    robot = load_robot("planar2")
    weak = np.array([20.0, 8.0])
    rt = load_rt(robot)
    rt.config["ctl.tau_max"] = weak
    ts, duration = rt.sample_period, 4.0
    fit = fit_to_limits(robot, ts, duration=duration, tau_max=weak)
    assert fit.motion.centre is not None and fit.motion_fits
    assert np.all(fit.motion_peak <= MOTION_SHARE * weak)
    rt.config["det.threshold"] = 1e9
    fitted = simulate(rt, fit.motion.trajectory(robot, duration, ts)).log.extra["tau_cmd"]
    default = simulate(rt, Motion().trajectory(robot, duration, ts)).log.extra["tau_cmd"]
    assert saturated(default, weak).sum() > 100  # the test can fail: unfitted, the shoulder is pinned
    assert saturated(fitted, weak).sum() == 0


def test_pil_runs_the_motion_and_push_fitted_to_the_drives() -> None:
    """`manipgen target pil`'s scenario (the host side, no QEMU) on planar2 with the 20 / 8 N m drives
    above: the demo's unfitted collision run pins tau_cmd at the limits, the PIL scenario's (motion
    and push fitted as the demo's) has no sample at a limit before the push nor from HELD_S after it
    (the stop's braking at the limits right after the detection is a real arm's too: scenarios'
    notes), and still flags the push."""
    from host_tools.studies.scenarios import collision
    from host_tools.target import pil

    robot = load_robot("planar2")
    weak = np.array([20.0, 8.0])
    rt = load_rt(robot)
    rt.config["ctl.tau_max"] = weak
    unfitted = collision(robot, 4.0, 2.0, rt=rt).hit.log.extra["tau_cmd"]
    assert saturated(unfitted, weak).sum() > 100  # the test can fail: what target pil ran before
    _, tau_ext, host, onset = pil.scenario(robot, rt, 4.0)  # 2 s: the start-up transient sets high thresholds
    pushed = np.flatnonzero(np.any(tau_ext != 0, axis=1))
    held = int(pushed[-1]) + 1 + round(HELD_S / rt.sample_period)
    tau_cmd = host.log.extra["tau_cmd"]
    assert saturated(tau_cmd[: pushed[0]], weak).sum() == 0 and saturated(tau_cmd[held:], weak).sum() == 0
    flagged = np.flatnonzero(host.out["collision"])
    assert len(flagged) and flagged[0] * rt.sample_period >= onset


def test_record_refuses_a_saturated_run(tmp_path: Path) -> None:
    """`manipgen record` with drives of 1 N m (a config's ctl.tau_max; planar2's shoulder needs ~25 N m
    for the motion fitted to its 60 N m): the log is written, but the run is not called collision-free,
    exit 1, the saturated samples named per joint."""
    rt = load_rt("planar2")
    rt.config["ctl.tau_max"] = np.array([1.0, 1.0])
    config, log = tmp_path / "weak.json", tmp_path / "free.npz"
    rt.config.save(config)
    r = subprocess.run(
        [sys.executable, "-m", "host_tools.cli", "record", "planar2", "--duration", "2", "--config", str(config)]
        + ["--out", str(log)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "collision-free" not in r.stdout, r.stdout + r.stderr
    assert "reached the torque limit" in r.stderr and "joint 1:" in r.stderr and log.is_file(), r.stderr
