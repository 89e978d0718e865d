"""`manipgen thresholds`: the least-mean threshold envelope covering a collision-free run's residual
(threshold + kv |qd| + ka |qdd| + ks exp(-|qd|/vs)), times a margin from held-out blocks, written into
the config; the envelope is tight (5 % lower fires on the same run) and detects a collision the run
did not have. The fit recovers a known envelope; the generated C's threshold is the CasADi one."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.trajectories import generated_trajectory
from host_tools.reports import plots
from host_tools.studies.thresholds import (
    check_thresholds,
    coulomb_floor,
    design_from_outputs,
    design_thresholds,
    envelope,
    held_out_ratios,
    regressor,
    replay,
    threshold_along,
)
from tests.tooling import ROOT, cli_in_process


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
    margin = doc["margin"]
    assert doc["shape"] == "fitted" and doc["margin_from"]["derived"] and doc["acceleration"]
    assert margin == pytest.approx(max(1.0, doc["margin_from"]["held_out_worst"]) / doc["margin_from"]["target"])
    rt.config.load(tmp_path / "cfg.json")
    for key in ("threshold", "kv", "ka", "ks", "vs"):
        np.testing.assert_array_equal(rt.config[f"det.{key}"], doc[key])
    assert min(doc["threshold"]) > 0  # every joint detects
    rt.reset()
    assert not rt.run(free)["collision"].any()  # false-alarm free on its run
    for key in ("threshold", "kv", "ka", "ks"):  # the envelope 5 % below its fit ...
        rt.config[f"det.{key}"] = 0.95 / margin * np.array(doc[key])
    rt.config["det.debounce"] = 1
    rt.reset()
    assert rt.run(free)["collision"].any()  # ... fires: the fit is tight
    rt.config.load(tmp_path / "cfg.json")
    rt.reset()
    out = rt.run(hit)
    k = np.flatnonzero(out["collision"])
    assert k.size and 3000 <= k[0] < 3100 and out["link"][k[0]] == 2  # a 4 N m contact, found and isolated


def test_the_fit_recovers_a_known_envelope() -> None:
    """|r| under a known threshold envelope, touching it on a random tenth of the samples: the
    least-mean covering envelope is that one (the linear programme's optimum, unique here); the
    regressor times the coefficients is detect.level; an estimator without q-ddot gives ka = 0."""
    rng = np.random.default_rng(7)
    k = 4000
    t = np.arange(k) * 0.004
    qd = 0.8 * np.sin(1.3 * t) + 0.3 * np.sin(4.1 * t)
    qdd = np.gradient(qd, t)
    true = np.array([0.7, 1.5, 0.4, 2.0])  # threshold, kv, ka, ks
    vs = 0.05
    x = regressor(qd, qdd, vs)
    np.testing.assert_allclose(x[:, 0], 1.0)
    np.testing.assert_allclose(x[:, 1:], np.column_stack([abs(qd), abs(qdd), np.exp(-abs(qd) / vs)]), rtol=1e-12)
    scale = rng.uniform(0.3, 1.0, k)
    scale[rng.random(k) < 0.1] = 1.0
    r = scale * (x @ true)
    np.testing.assert_allclose(envelope(r, x, 0.0), true, rtol=1e-6)
    x[:, 2] = 0.0  # no q-ddot estimate: ka is moot, fitted 0
    assert envelope(scale * (x @ true), x, 0.0)[2] == 0.0


def test_a_given_margin_designs_the_same_without_the_held_out_ratios() -> None:
    """design_from_outputs(held_out=False), for callers that give the margin (the PyBullet peer): the
    held-out fits (eight envelopes per joint) only report then, so every designed figure is the
    same bit for bit and the held-out ratios are absent; without a margin it is refused (the
    derived margin is made of them)."""
    rng = np.random.default_rng(3)
    k, ts = 3000, 0.001
    qd = np.column_stack([np.sin(np.arange(k) * ts * w) for w in (2.0, 5.0)])
    outs = {"r": rng.normal(0.0, 1.0, (k, 2)) * (1 + np.abs(qd)), "qd_hat": qd, "qdd_hat": np.gradient(qd, ts, axis=0)}
    both = [
        design_from_outputs(outs, 100, ts, margin=1.5, static=static, held_out=h)
        for static in (True, False)
        for h in (True, False)
    ]
    for full, light in (both[:2], both[2:]):
        assert full.held_out.shape == (8, 2) and light.held_out.shape == (0, 2)
        for name in ("threshold", "kv", "ka", "ks", "vs", "margins", "threshold_mean", "level"):
            assert np.array_equal(getattr(full, name), getattr(light, name)), name
    assert both[0].threshold.tolist() != both[2].threshold.tolist()  # the two designs differ: a real comparison
    with pytest.raises(ValueError, match="held_out=False needs a margin"):
        design_from_outputs(outs, 100, ts, held_out=False)


def test_held_out_blocks_and_the_margin(tmp_path: Path) -> None:
    """A constant threshold whose last block holds twice the others' largest |r|: held out, it is 2x
    the threshold fitted on the others, and they 0.5x its; design_thresholds' margin is
    max(1, worst held-out ratio) / target, its threshold covers the run with exactly 1 / margin,
    and the generated C's threshold (out.above) is detect.level evaluated by CasADi."""
    r = np.ones(400)
    r[350] = 2.0
    x = np.ones((400, 4))
    x[:, 1:] = 0.0
    np.testing.assert_allclose(held_out_ratios(r, x, 0.0, 4), [0.5, 0.5, 0.5, 2.0])
    rt, _, _, free = _runs(tmp_path)
    design = design_thresholds(rt, free, blocks=4, target=0.8)
    assert design.held_out.shape == (4, 2) and not design.margin_given
    assert design.margin == pytest.approx(max(1.0, design.held_out.max()) / 0.8)
    check = check_thresholds(rt, free, design)  # the design run itself
    assert check.false_alarm_samples.sum() == 0
    flagged = np.zeros(len(free), bool)
    flagged[[*range(2000, 2300), *range(4000, 4010)]] = True  # as the input checks would flag them
    flagged[:100] = True  # inside the skipped start: shaded as the start-up, not as left out
    left = design_thresholds(rt, free, blocks=4, target=0.8, exclude=flagged)
    assert left.samples == design.samples - 310 and left.left_out is not None
    assert plots._runs_of(left.left_out) == [(2000, 2300), (4000, 4010)]  # the spans the plot shades
    assert plots.threshold_residuals(left, rt.sample_period, tmp_path / "r.png", "t").stat().st_size > 0
    assert check.ratio.max() == pytest.approx(1 / design.margin, rel=1e-6)
    np.testing.assert_allclose(check.threshold_mean, design.threshold_mean, rtol=1e-12)
    for key, value in design.config().items():
        rt.config[key] = value
    rt.config["det.ka"] = 5.0 * np.maximum(design.ka, 0.05)  # the acceleration part matters here
    rt.config["det.ks"] = 0.5 * design.threshold
    rt.config["det.release"], rt.config["det.reaction"] = 1.0, 0  # above = |r| > level, no reaction
    rt.reset()
    out = rt.run(free)
    level = threshold_along(out, replace(design, ka=rt.config["det.ka"].copy(), ks=rt.config["det.ks"].copy()))
    r_abs = np.abs(out["r"])
    clear = np.abs(r_abs - level) > 1e-9 * (1 + level)  # away from exact ties
    np.testing.assert_array_equal(out["above"][clear].astype(bool), (r_abs > level)[clear])
    assert np.all(rt.config["det.ka"] > 0) and np.any(np.abs(out["qdd_hat"]) > 0.1)


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
    lines = r.stderr.strip().splitlines()  # the input checks' finding, then one error
    assert r.returncode == 2 and "standstill: whole arm" in lines[0] and len(lines) == 2, r.stderr
    assert "barely moves" in lines[1], r.stderr


def test_a_urdf_chain_through_record_and_thresholds(tmp_path: Path) -> None:
    """A user's URDF (example-robot-data's UR10, a tree: the chain given) goes through `record` and
    `thresholds` with the same --base-link/--tip-link flags as `generate`; the designed thresholds
    hold on the run they came from (with the derived margin: max |r| / threshold <= the target)."""
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
    assert sum(doc["check"]["false_alarm_samples"]) == 0 and max(doc["check"]["ratio"]) <= doc["margin_from"]["target"]


def test_extreme_value_margins_recover_a_known_gumbel_quantile() -> None:
    """Held-out maxima drawn from known Gumbel laws (two joints, equal cost x scale): each joint's
    share of the run's hazard is half of -ln(1 - p), so its level is mu + sigma ln(blocks / share);
    the fitted one is within 4 standard errors of the Gumbel MLE quantile (Var = sigma^2 / N
    (1.1087 + 0.5140 y + 0.6079 y^2), y the reduced variate), and the margin is level / target. A
    run of 1e5 blocks puts the level (y = 12.5) above the largest of the 2000 maxima (about
    ln 2000 = 7.6 scales above mu), which is the level's floor."""
    from host_tools.studies.thresholds import extreme_value_margins

    rng = np.random.default_rng(11)
    mu, sigma, units, blocks, p, target = np.array([0.8, 0.9]), np.array([0.1, 0.05]), 2000, 100_000, 0.5, 0.85
    held_out = mu + sigma * rng.gumbel(size=(units, 2))
    margins, fits = extreme_value_margins(held_out, 1 / sigma, blocks, target, p)
    y = np.log(blocks / (-np.log1p(-p) / 2))
    known = mu + sigma * y
    tolerance = 4 * sigma * np.sqrt((1.1087 + 0.5140 * y + 0.6079 * y**2) / units)
    assert np.all(np.abs(margins * target - known) <= tolerance), (margins * target, known, tolerance)
    np.testing.assert_allclose(fits[:, 1], sigma, rtol=0.1)


def test_several_runs_are_held_out_in_turn() -> None:
    """Two runs of a constant threshold, the second twice as loud: each held out in turn against
    the envelope of the other, its maxima taken on two blocks of it."""
    r = np.concatenate([np.ones(100), 2 * np.ones(100)])
    x = np.zeros((200, 4))
    x[:, 0] = 1.0
    run = np.repeat([0, 1], 100)
    np.testing.assert_allclose(held_out_ratios(r, x, 0.0, 2, run), [0.5, 0.5, 2.0, 2.0])


def test_thresholds_across_runs_and_the_stated_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`thresholds RUN1 RUN2 --check RUN3 RUN1`: the margin comes from each run held out in turn (2 x
    blocks held-out maxima, the worst brought to the target); the report states what it was designed
    for (the rank bound 1 / (units + 1) per block); the checks are listed per run and the first
    design run holds. `--false-alarm-rate P --target 1`: per-joint margins never below the joint's
    worst held-out ratio (nor 1), stated as P per hour of motion, and no lower than the same P per
    run of the design's length (an hour holds more blocks than the run, so its level is higher)."""
    from host_tools.cli import main
    from host_tools.studies.thresholds import extreme_value_margins

    robot = load_robot("planar2")
    rt, _, _, _ = _runs(tmp_path)
    true = robot.standard_parameters()
    paths = []
    for seed in (4, 5, 6):
        traj = generated_trajectory(robot, 4.0, rt.sample_period, seed=seed, speed=0.2)
        paths.append(str(simulate(rt, traj, true_params=true).log.save(tmp_path / f"run{seed}.npz")))
    pipeline = ["--estimator", "kalman", "--observer", "momentum", "--config", str(tmp_path / "base.json")]
    assert main(["thresholds", "planar2", *paths[:2], *pipeline, "--check", paths[2], paths[0], "--json"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    held = np.array(doc["margin_from"]["held_out_ratio"])
    assert doc["data"] == paths[:2] and held.shape == (2 * 8, 2)
    assert doc["margin"] == pytest.approx(max(1.0, held.max()) / 0.85)
    assert doc["margin_from"]["designed_for"]["probability"] == pytest.approx(1 / 17)
    assert [run["data"] for run in doc["check"]["runs"]] == [paths[2], paths[0]]
    assert doc["check"]["runs"][1]["false_alarm_samples"] == [0, 0]  # a design run is covered
    ratio = np.max([run["ratio"] for run in doc["check"]["runs"]], axis=0)
    np.testing.assert_array_equal(doc["check"]["ratio"], ratio)

    assert (
        main(["thresholds", "planar2", paths[0], *pipeline, "--false-alarm-rate", "0.01", "--target", "1", "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    stated = doc["margin_from"]["designed_for"]
    assert stated["probability"] == 0.01 and stated["per_s"] == 3600.0 and stated["false_alarm_probability_modelled"]
    held = np.array(doc["margin_from"]["held_out_ratio"])
    margins = np.array(doc["margins"])
    assert np.all(margins >= np.maximum(held.max(axis=0), 1.0))
    cost = np.array(doc["threshold_mean"]) / margins  # the envelopes' means
    per_hour = extreme_value_margins(held, cost, 3600.0 / doc["margin_from"]["block_s"], 1.0, 0.01)[0]
    np.testing.assert_allclose(per_hour, margins, rtol=1e-9)
    assert np.all(per_hour >= extreme_value_margins(held, cost, 8, 1.0, 0.01)[0])  # a run holds 8 blocks


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--margin", "0.5"], "--margin must be >= 1"),
        (["--blocks", "1"], "--blocks >= 2"),
        (["--plot", "r.jpg"], "name it .png"),
        (["--margin", "2", "--false-alarm-rate", "0.01"], "give one"),
    ],
)
def test_thresholds_cli_refuses_bad_options_before_reading_the_log(
    options: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad option value is one line and exit 2, before any log is read (the log does not exist)."""
    r = cli_in_process(capsys, "thresholds", "planar2", "no_such_log.npz", *options)
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert "no_such_log" not in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_check_line_says_what_was_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A checked run with flagged samples (here logger-repeated rows) says on its line that they were
    left out, and how to check them too; a run without any says nothing of it."""
    _, free_path, _, free = _runs(tmp_path)
    k = len(free.time)
    per_sample = {n: getattr(free, n).copy() for n in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des")}
    extra = {n: a.copy() for n, a in free.extra.items() if np.shape(a)[:1] == (k,)}
    for a in [*per_sample.values(), *extra.values()]:
        a[2001:2006] = a[2000]  # the logger wrote row 2000 again, at five new stamps
    repeated = replace(free, **per_sample, extra={**free.extra, **extra})
    other = repeated.save(tmp_path / "other.npz")
    flags = ["--estimator", "kalman", "--observer", "momentum", "--config", str(tmp_path / "base.json")]
    r = cli_in_process(capsys, "thresholds", "planar2", str(free_path), "--check", str(other), *flags)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"{other}: "))
    assert "flagged or next to a flagged one, were left out; --keep-flagged checks them too)" in line, line
    r = cli_in_process(capsys, "thresholds", "planar2", str(free_path), "--check", str(free_path), *flags)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"{free_path}: "))
    assert r.returncode == 0 and "left out" not in line, line


def test_extreme_value_margins_of_maxima_without_spread() -> None:
    """A joint whose held-out maxima are all equal (a bound covers its residual wholly) has no Gumbel
    scale to fit (scipy's likelihood overflows): it is a point law, its level the maximum seen, and
    the other joint keeps its fit. Non-finite maxima are refused with a sentence, not a traceback."""
    from host_tools.studies.thresholds import extreme_value_margins

    rng = np.random.default_rng(3)
    held_out = np.column_stack([np.full(40, 0.7), 0.8 + 0.05 * rng.gumbel(size=40)])
    margins, fits = extreme_value_margins(held_out, np.ones(2), 10.0, 0.85, 0.1)
    assert fits[0, 1] == 0.0 and margins[0] == pytest.approx(1.0 / 0.85)  # max(0.7, floor 1) / target
    assert fits[1, 1] > 0 and np.isfinite(margins[1]) and margins[1] * 0.85 >= held_out[:, 1].max()
    held_out[3, 0] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        extreme_value_margins(held_out, np.ones(2), 10.0, 0.85, 0.1)


def test_which_observers_are_designed_with_their_thresholds_acting() -> None:
    """holds: a model-adaptive observer whose adaptation holds on its thresholds (obs.freeze, the
    block's default) is designed and checked with them acting on the hold; the momentum observer
    (no adaptation) and an adaptive one configured not to hold (freeze 0) with detection off. Its
    effect on the real LWA-4P: tests/acceptance/test_real_data.py."""
    from host_tools.studies.thresholds import holds

    assert not holds(load_rt("planar2", estimator="kalman", observer="momentum"))
    rt = load_rt("planar2", estimator="kalman", observer="adaptive_momentum")
    assert float(rt.config["obs.freeze"]) == 1 and holds(rt)
    rt.config["obs.freeze"] = 0
    assert not holds(rt)


def _holding_runs() -> tuple:
    """planar2's adaptive_momentum (a holding observer) with a 5 % model error, no reaction, and two
    of its collision-free runs: (rt, design run, other run)."""
    robot = load_robot("planar2")
    rt = load_rt("planar2", estimator="kalman", observer="adaptive_momentum", controller="computed_torque")
    true = robot.standard_parameters()
    rt.config["model.params"] = true * (1 + np.random.default_rng(3).uniform(-0.05, 0.05, true.shape))
    rt.config["det.reaction"] = 0
    free = simulate(rt, generated_trajectory(robot, 6.0, rt.sample_period, seed=4, speed=0.2), true_params=true).log
    other = simulate(rt, generated_trajectory(robot, 6.0, rt.sample_period, seed=5, speed=0.2), true_params=true).log
    return rt, free, other


def test_a_holding_observers_check_has_its_thresholds_acting(tmp_path: Path) -> None:
    """check_thresholds on a holding observer replays the run with the design's thresholds in the
    config and no collision latched (a debounce longer than the run): its residual is, bit for bit,
    a run of the pipeline with design.config() loaded and that debounce (the same C on the same
    inputs), and the config is as it was afterwards."""
    rt, free, other = _holding_runs()
    before = {key: np.array(rt.config[key], copy=True) for key in ("det.threshold", "det.debounce", "det.kv")}
    design = design_thresholds(rt, free)
    for key, value in before.items():  # design_thresholds leaves the config as it was
        np.testing.assert_array_equal(rt.config[key], value)
    check = check_thresholds(rt, other, design)
    for key, value in design.config().items():
        rt.config[key] = value
    rt.config["det.debounce"] = float(len(other) + 1)
    rt.reset()
    np.testing.assert_array_equal(check.residual, np.asarray(rt.run(other)["r"], float))
    # the hold acts on this run (23 N m apart on 2026-11-30): with detection off the residual differs
    assert not np.array_equal(check.residual, np.asarray(replay(rt, other)["r"], float))


def test_a_holding_observer_is_designed_again_with_its_first_thresholds_acting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """design_thresholds on a holding observer designs twice: the result's residual is, bit for bit,
    the run replayed with the first design's thresholds (the one with detection off) acting on the
    hold, and not the residual with detection off (the hold acts on this run)."""
    from host_tools.studies import thresholds

    rt, free, _ = _holding_runs()
    design = design_thresholds(rt, free)
    monkeypatch.setattr(thresholds, "holds", lambda rt: False)
    first = design_thresholds(rt, free)  # designed once, with detection off
    np.testing.assert_array_equal(first.residual, np.asarray(replay(rt, free)["r"], float))
    np.testing.assert_array_equal(design.residual, np.asarray(replay(rt, free, first)["r"], float))
    assert not np.array_equal(design.residual, first.residual)


def test_the_coulomb_floor_is_twice_the_models_coulomb_friction_over_the_target() -> None:
    """coulomb_floor: planar2's description gives FC = 0.2 and 0.1 N m (robots/planar2.yaml), so at
    rest the level may not be below 2 FC / target: 0.4 / 0.85 and 0.2 / 0.85 N m. It is the model's
    FC (a drawn model's, here 1.3 x the description's), and 0 where a description declares none."""
    robot = load_robot("planar2")
    np.testing.assert_allclose(coulomb_floor(robot, robot.standard_parameters(), 0.85), [0.4 / 0.85, 0.2 / 0.85])
    np.testing.assert_allclose(coulomb_floor(robot, 1.3 * robot.standard_parameters(), 1.0), [0.52, 0.26])
    # a Stribeck term rides on the Coulomb shape: the jump through zero velocity is 2 (FC + FS), signs
    # kept (an FS of the other sign lowers it); its coefficients are the config's fric.fs
    np.testing.assert_allclose(
        coulomb_floor(robot, robot.standard_parameters(), 0.5, np.array([0.3, -0.25])), [4 * 0.5, 4 * 0.15]
    )
    panda = load_robot("franka_panda")  # rigid bodies only
    assert not coulomb_floor(panda, panda.standard_parameters()).any()


def test_the_floor_at_rest_raises_the_level_at_rest_only() -> None:
    """design_from_outputs(at_rest=...): the standstill part ks makes the level at qd_hat = 0 reach
    the floor where the design left it below; the static part is the design's without the floor, and
    away from rest the level differs by ks exp(-|qd_hat| / vs) alone (below 1e-8 of the floor at
    |qd_hat| = 20 vs); a joint whose level at rest is already above keeps its design."""
    rng = np.random.default_rng(5)
    k, ts = 4000, 0.001
    t = np.arange(k) * ts
    qd = np.column_stack([0.5 * np.sin(2.0 * t), 0.8 * np.sin(3.0 * t)])
    outs = {"r": rng.normal(0.0, 0.05, (k, 2)), "qd_hat": qd, "qdd_hat": np.gradient(qd, ts, axis=0)}
    plain = design_from_outputs(outs, 100, ts, static=True, static_vs=0.01)
    floor = np.array([1.0, 0.5 * plain.threshold[1]])  # joint 1 far above its threshold, joint 2 below
    raised = design_from_outputs(outs, 100, ts, static=True, static_vs=0.01, at_rest=floor)
    assert np.array_equal(raised.threshold, plain.threshold) and np.array_equal(raised.vs, plain.vs)
    assert raised.threshold[0] + raised.ks[0] == pytest.approx(1.0, rel=1e-12)
    assert raised.ks[1] == plain.ks[1] == 0.0
    rest = {"qd_hat": np.zeros((1, 2)), "qdd_hat": np.zeros((1, 2))}
    assert threshold_along(rest, raised)[0, 0] == pytest.approx(1.0, rel=1e-12)
    moving = {"qd_hat": np.full((1, 2), 20 * 0.01), "qdd_hat": np.zeros((1, 2))}
    assert abs(threshold_along(moving, raised)[0, 0] - threshold_along(moving, plain)[0, 0]) < 1e-8
