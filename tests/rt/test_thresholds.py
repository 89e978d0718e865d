"""`manipgen thresholds`: the smallest false-alarm-free threshold on a collision-free run, times a
margin, written into the config; it is tight (5 % lower fires on the same run) and detects a
collision the run did not have."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.trajectories import generated_trajectory
from host_tools.studies.thresholds import design_thresholds

ROOT = Path(__file__).resolve().parents[2]


def _runs(tmp_path: Path) -> tuple:
    robot = load_robot("planar2")
    rt = load_rt("planar2", estimator="kalman", observer="momentum", controller="computed_torque")
    true = robot.standard_parameters()
    rt.config["model.params"] = true * (1 + np.random.default_rng(3).uniform(-0.05, 0.05, true.shape))
    rt.config["det.reaction"] = 0
    traj = generated_trajectory(robot, 6.0, rt.sample_period, seed=4, speed=0.2)
    free = simulate(rt, traj, true_params=true).log
    ext = np.zeros_like(traj.q)
    ext[3000:3400, 1] = 4.0
    hit = simulate(rt, traj, true_params=true, tau_ext=ext).log
    rt.config.save(tmp_path / "base.json")
    return rt, free.save(tmp_path / "free.npz"), hit, free


def test_thresholds_cli_is_tight_and_detects(tmp_path: Path) -> None:
    rt, free_path, hit, free = _runs(tmp_path)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "thresholds",
            "planar2",
            str(free_path),
            "--estimator",
            "kalman",
            "--observer",
            "momentum",
            "--config",
            str(tmp_path / "base.json"),
            "--out",
            str(tmp_path / "cfg.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    th, worst = np.array(doc["threshold"]), np.array(doc["max_residual"])
    assert np.allclose(th, 1.2 * worst) and np.all(worst > 0.01)
    rt.config.load(tmp_path / "cfg.json")
    assert np.allclose(rt.config["det.threshold"], th)
    rt.reset()
    assert not rt.run(free)["collision"].any()  # false-alarm free on its run
    rt.config["det.threshold"] = 0.95 * worst  # 5 % below the largest residual ...
    rt.config["det.debounce"] = 1
    rt.reset()
    assert rt.run(free)["collision"].any()  # ... fires: the design is tight
    rt.config.load(tmp_path / "cfg.json")
    rt.reset()
    out = rt.run(hit)
    k = np.flatnonzero(out["collision"])
    assert k.size and 3000 <= k[0] < 3100 and out["link"][k[0]] == 2  # a 4 N m contact, found and isolated


def test_thresholds_errors(tmp_path: Path) -> None:
    rt, free_path, _, free = _runs(tmp_path)
    with pytest.raises(ValueError, match="margin"):
        design_thresholds(rt, free, margin=0.9)
    with pytest.raises(ValueError, match="leaves none"):
        design_thresholds(rt, free, skip=100.0)
    other = load_rt("schunk_lwa4p", estimator="kalman", observer="momentum")
    with pytest.raises(ValueError, match="robot"):
        design_thresholds(other, free)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "thresholds",
            "planar2",
            str(free_path),
            "--observer",
            "adaptive",
            "--estimator",
            "findiff",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 2 and "needs the joint acceleration" in r.stderr and "Traceback" not in r.stderr


def test_undesigned_thresholds_never_latch_and_an_early_latch_warns() -> None:
    """A robot without designed thresholds (planar2's description sets none): det.threshold is 0 on
    every joint, the detection is off, a whole run latches nothing. Thresholds far below the
    residual of normal motion latch at once: the run says so, naming the thresholds."""
    from host_tools.bindings.loopback import RunWarning

    robot = load_robot("planar2")
    rt = load_rt("planar2", observer="momentum")
    assert np.all(rt.config["det.threshold"] == 0) and rt.config["det.reaction"] == 1  # stop, once designed
    traj = generated_trajectory(robot, 3.0, rt.sample_period, seed=2)
    run = simulate(rt, traj)
    assert not run.out["collision"].any() and np.max(np.abs(run.out["r"])) > 0.1  # a residual, no latch
    rt.config["det.threshold"] = 1e-3
    early = r"collision latched at t = 0\.\d+ s, before any external force.*det\.threshold"
    with pytest.warns(RunWarning, match=early):
        simulate(rt, traj)
    worst = np.max(np.abs(run.out["r"]), axis=0)
    ext = np.zeros_like(traj.q)
    ext[300:, 0] = 4 * worst[0]  # a push from 0.3 s: an early latch then is the push's, no warning
    rt.config["det.threshold"] = 2 * worst
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        assert simulate(rt, traj, tau_ext=ext).out["collision"].any()


def test_record_then_thresholds_needs_no_python(tmp_path: Path) -> None:
    """`manipgen record` writes a collision-free run; `thresholds` designs from it; `--check` on a
    run of another motion exits 1 when that run has false alarms (0 when it has none); a log of a
    robot at standstill is refused, saying why."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "host_tools.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
        )

    free, other = tmp_path / "free.npz", tmp_path / "other.npz"
    r = cli("record", "planar2", "--duration", "4", "--out", str(free))
    assert r.returncode == 0 and "collision-free" in r.stdout, r.stderr
    assert cli("record", "planar2", "--duration", "4", "--seed", "5", "--out", str(other)).returncode == 0
    tight = cli("thresholds", "planar2", str(free), "--margin", "1.0", "--check", str(other), "--json")
    loose = cli("thresholds", "planar2", str(free), "--margin", "3.0", "--check", str(other), "--json")
    alarms = sum(json.loads(tight.stdout)["check"]["false_alarm_samples"])
    assert (tight.returncode, loose.returncode) == ((1, 0) if alarms else (0, 0)), (tight.stderr, loose.stderr)
    assert sum(json.loads(loose.stdout)["check"]["false_alarm_samples"]) == 0
    with np.load(free) as z:
        still = {k: z[k] for k in z.files}
    for key in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des"):
        still[key] = np.repeat(still[key][:1], len(still["time"]), axis=0)
    np.savez(tmp_path / "still.npz", **still)
    r = cli("thresholds", "planar2", str(tmp_path / "still.npz"))
    assert r.returncode == 2 and "barely moves" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_urdf_chain_through_record_and_thresholds(tmp_path: Path) -> None:
    """A user's URDF (example-robot-data's UR10, a tree: the chain given) goes through `record` and
    `thresholds` with the same --base-link/--tip-link flags as `generate`; the designed thresholds
    hold on the run they came from (margin 1.2 over its largest residual)."""
    from host_tools.studies.pinocchio_models import ur_urdf_path

    chain = [str(ur_urdf_path("ur10")), "--base-link", "base_link", "--tip-link", "tool0"]
    free = tmp_path / "free.npz"
    run = [sys.executable, "-m", "host_tools.cli"]
    r = subprocess.run([*run, "record", *chain, "--duration", "3", "--out", str(free)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"Next: manipgen thresholds {' '.join(chain)} {free}" in r.stdout  # the hint runs as printed
    r = subprocess.run(
        [*run, "thresholds", *chain, str(free), "--check", str(free), "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["threshold"]) == 6 and min(doc["threshold"]) > 0
    assert sum(doc["check"]["false_alarm_samples"]) == 0
