"""identify with the input checks (issue #24): flagged samples left out of the fit and the
validation, wrapping encoder counters refused without a stated start position."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from codegen.blocks import kalman
from codegen.model.description import load_robot
from host_tools import cli
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.checks import check_log, with_start_position
from host_tools.data.logs import Log
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.input_checks import InputChecks
from host_tools.identification.pipeline import IdentSettings, positions
from host_tools.identification.run import identify_run
from host_tools.reports.identification import document
from tests.tooling import ROOT


def _recorded_run(spec: str, seconds: float, seed: int, shift: float = 0.0) -> Log:
    """A non-periodic run of ``spec`` tracking a generated trajectory (computed torque, Kalman),
    every joint's positions shifted by ``shift`` rad."""
    rt = load_rt(spec, estimator=kalman.SPEC.name, observer="none", controller="computed_torque")
    rt.config["ctl.friction_ff"] = 1.0
    traj = generated_trajectory(load_robot(spec), seconds, rt.sample_period, seed=seed)
    return simulate(rt, replace(traj, q=traj.q + shift)).log


def test_clipped_drive_samples_are_left_out_of_the_fit_and_the_validation() -> None:
    """A drive clipped at 60 % of its peak torque on the fitting run and on the validation run:
    the checks flag the plateaus, identify leaves them out and fits as well as on the clean run;
    --keep-flagged fits the clipped torque as if it were the joint's and is far off."""
    robot = load_robot("planar2")
    fit, val = _recorded_run("planar2", 20.0, 1), _recorded_run("planar2", 12.0, 2)
    settings = IdentSettings(min_speed=0.0)
    clean = document(identify_run(robot, fit, None, val, settings))
    clipped: list[Log] = []
    for log in (fit, val):
        c = 0.6 * np.max(np.abs(log.tau[:, 0]))
        tau = log.tau.copy()
        tau[:, 0] = np.clip(tau[:, 0], -c, c)
        clipped.append(Log(**{**log.__dict__, "tau": tau}))
    checks = [check_log(log, robot, name) for log, name in zip(clipped, ("fit.npz", "val.npz"))]
    for c, log in zip(checks, clipped):
        at_clip = np.abs(np.abs(log.tau[:, 0]) - np.max(np.abs(log.tau[:, 0]))) == 0
        kinds = {(f.kind, f.joint) for f in c.findings}
        assert ("saturation", 1) in kinds
        # a plateau shorter than the check's minimum length is no evidence of a clip (a peak that
        # touches its maximum): all but a few of the ~2000-4000 clipped samples are in long ones
        assert np.mean(c.flagged[at_clip]) >= 0.95
    left_out = document(
        identify_run(robot, clipped[0], None, clipped[1], settings, checks=InputChecks(checks[0], checks[1]))
    )
    kept = document(
        identify_run(
            robot, clipped[0], None, clipped[1], settings, checks=InputChecks(checks[0], checks[1], keep_flagged=True)
        )
    )
    assert left_out["flagged_left_out"] and not kept["flagged_left_out"]
    assert {c["source"] for c in left_out["checks"]} == {"fit.npz", "val.npz"}
    assert all({"kind", "joint", "t0", "t1", "samples"} <= set(c) for c in left_out["checks"])
    e_clean = np.array(clean["validation_rms"]["base"])
    e_out = np.array(left_out["validation_rms"]["base"])
    e_kept = np.array(kept["validation_rms"]["base"])
    # Left out, the clipped run fits like the clean one: the processing's own error (the low-pass
    # and central differences of a single run, the same on both) dominates; what differs is which
    # samples were fitted and scored, a few tens of percent of that error at most. Kept, the fit
    # absorbs the clipped 40 % of joint 1's peak torque: its error grows by an order of magnitude.
    assert np.all(e_out <= 1.5 * e_clean + 1e-3)
    assert e_kept[0] >= 5 * e_out[0]


def test_a_counter_that_wraps_within_the_travel_is_refused_without_a_start_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """planar2 with 16-bit motor-side counters of 4096 counts per turn behind 100:1 gears: a counter
    range covers 57.6 deg of joint travel, so the first raw count does not give the absolute
    position. identify refuses in one line naming the joints and the fixes; with the start position
    stated, the generated read gives the true positions."""
    text = (ROOT / "robots" / "planar2.yaml").read_text()
    text = text.replace("gear_ratio: 1.0", "gear_ratio: 100.0").replace(
        "encoder: {cpr: 16384, side: link, bits: 32, signed: true}",
        "encoder: {cpr: 4096, side: motor, bits: 16, signed: false}",
    )
    path = tmp_path / "planar2_16bit.yaml"
    path.write_text(text)
    assert cli.main(["identify", str(path), "--synthetic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [ln for ln in err if ln.startswith("manipgen: error:")]
    assert len(errors) == 1
    assert "joint 1 (shoulder)" in errors[0] and "joint 2 (elbow)" in errors[0] and "--start-position" in errors[0]
    # a stated start the counts cannot place (half a counter range or more off) is refused too: the
    # synthetic run knows its own start (the designed excitation's first sample, -1.108 rad on joint 1)
    assert cli.main(["identify", str(path), "--synthetic", "--start-position=0,0"]) == 2
    err_text = capsys.readouterr().err
    assert "--start-position: joint 1" in err_text and "where the synthetic run starts" in err_text
    robot = load_robot(str(path))
    log = _recorded_run(str(path), 2.0, 3, shift=1.2)  # 1.2 rad: beyond half a counter range (0.5 rad)
    truth = log.extra["q_true"]
    span = 2 * np.pi * 2**16 / (4096 * 100)  # rad of joint travel per counter range
    count = 2 * np.pi / (4096 * 100)  # rad per count, link side
    unstated = positions(robot, log)
    # without it, the read is off by a whole number of counter ranges: the run starts more than
    # half a range from 0
    off = (unstated - truth)[0] / span
    assert np.allclose(off, np.round(off), atol=0.01) and np.all(np.round(off) != 0)
    # stated to within a quarter range (half a range is the limit), the read is right to a count
    stated = truth[0] + 0.25 * span * np.array([1.0, -1.0])
    q = positions(robot, with_start_position(log, robot, stated))
    assert np.max(np.abs(q - truth)) <= count


def test_flagged_samples_of_every_period_are_not_a_reason_to_record_again() -> None:
    """An excitation run flagged at the same phase of every period (the loop's own tracking, e.g. the
    Kinova Jaco2's light wrist direction) is refused with --keep-flagged, not "record it again" (a new
    recording repeats it); flagged in one period only, it is a one-off to record again."""
    from host_tools.identification.excitation import Excitation
    from host_tools.identification.pipeline import flagged_excitation

    exc = Excitation("arm", 1, 0.5, np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1))  # 2 s periods
    ts, p = 0.001, 2000
    every = np.zeros(3 * p, bool)
    for k in range(3):
        every[k * p + 500 : k * p + 700] = True
    every[2 * p + 700 : 2 * p + 760] = True  # a little wider in the last period: still the same phase
    once = np.zeros(3 * p, bool)
    once[p + 500 : p + 700] = True
    shifted = every.copy()
    shifted[2 * p : 3 * p] = np.roll(every[2 * p : 3 * p], 400)  # another phase in one period
    assert "same phase of every period" in flagged_excitation(every, exc, ts)
    # on an arm whose description leaves a light wrist without rotor inertia, the refusal says so
    from tests.host_tools.data.test_light_joints import TIP, kinova

    said = flagged_excitation(every, exc, ts, load_robot(kinova(), tip_link=TIP))
    assert "gives j2s6s200_joint_4, j2s6s200_joint_6 no rotor inertia" in said and "IA in an overlay" in said
    assert "rotor inertia" not in flagged_excitation(every, exc, ts, load_robot("planar2"))
    for mask in (once, shifted):
        assert flagged_excitation(mask, exc, ts).endswith("record it again (or --keep-flagged to use them as they are)")


def test_recording_an_excitation_points_to_identify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`record --trajectory excitation.json` ends with the next step of an excitation run, identify
    with that excitation (a test motion's next step is thresholds)."""
    from host_tools.cli import main
    from host_tools.identification.excitation import Excitation

    exc = tmp_path / "excitation.json"
    a = np.array([[0.2], [0.1]])  # one harmonic per joint, rad/s: a gentle 0.5 Hz swing of planar2
    Excitation("planar2", 1, 0.5, a, np.zeros((2, 1)), np.array([0.1, 0.2])).save(exc)
    out = tmp_path / "run.npz"
    assert main(["record", "planar2", "--trajectory", str(exc), "--periods", "1", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"Next: manipgen identify planar2 {out} --excitation {exc}" in said, said
    assert "manipgen thresholds" not in said
