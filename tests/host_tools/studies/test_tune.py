"""GA tuning (Liu et al. §III, Table 3) and the evaluation CLI: tuning lowers the ISE, the same seed
gives the same result whatever the executor, and the reports are written."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from codegen.blocks import registry
from codegen.model.description import load_robot
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import PipelineSource, RobotSource
from host_tools.data.trajectories import generated_trajectory
from host_tools.studies.evaluate import (
    SWITCH_ON_SPEED,
    EstimatorRequest,
    Setup,
    convergence_time,
    default_spec,
    design_values,
    evaluate,
    pipeline,
    variant,
)
from host_tools.studies.tune import GaSettings, Problem, cost, gain_space, tune
from tests.tooling import cli_in_process

PLANAR2, LWA4P = RobotSource.of("planar2"), RobotSource.of("schunk_lwa4p")


def _problem(estimator: str) -> tuple[Problem, float]:
    rt = load_rt("planar2", estimator=estimator, observer="none", sample_period=0.004)
    rt.config["enc.cpr"] = 36000.0
    traj = generated_trajectory(load_robot("planar2"), 4.0, 0.004, seed=1)
    genes = gain_space(estimator, 2)
    source = PipelineSource.of("planar2", estimator=estimator, observer="none", sample_period=0.004)
    problem = Problem(source, rt.config.to_dict(), genes, traj)
    default = np.log10(np.r_[rt.config["est.h1"], rt.config["est.h2"]])
    return problem, cost(problem, default)


def test_ga_lowers_the_ise_and_is_reproducible() -> None:
    problem, untuned = _problem("linhg")
    settings = GaSettings(population=16, elites=2, generations=5)
    with ProcessPoolExecutor(max_workers=2) as ex:
        a = tune(problem, settings, seed=3, executor=ex)
    with ProcessPoolExecutor(max_workers=1) as ex:
        b = tune(problem, settings, seed=3, executor=ex)
    with ThreadPoolExecutor(max_workers=4) as ex:  # threads share the process
        c = tune(problem, settings, seed=3, executor=ex, chunks=5)
    assert a.cost < untuned, (a.cost, untuned)
    for other in (b, c):
        assert np.array_equal(a.genome, other.genome) and a.best == other.best
    assert all(x >= y for x, y in zip(a.best, a.best[1:]))  # elitism: never worse
    assert a.evaluations == 16 + 4 * (16 - 2)  # elites keep their cost
    assert cost(problem, a.genome) == a.cost  # the reported cost is reproducible


def test_evaluate_cli_writes_reports(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "evaluate",
            "planar2",
            "--rate-hz",
            "250",
            "--resolution-mdeg",
            "2",
            "--estimators",
            "findiff",
            "kalman",
            "--json",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc["estimators"]) == {"findiff", "kalman"} and doc["setup"]["rate_hz"] == 250
    k, f = doc["estimators"]["kalman"], doc["estimators"]["findiff"]
    assert 0 < k["ise_velocity"] < f["ise_velocity"]  # Liu et al.: the Kalman filter beats findiff
    assert k["ise_faulty"] < f["ise_faulty"]  # and tolerates lost samples far better
    for name in (
        "evaluation.md",
        "evaluation.csv",
        "evaluation.json",
        "evaluation.png",
        "fig5_estimates.png",
        "fig7_switch_on.png",
        "fig8_faults.png",
    ):
        assert (tmp_path / name).stat().st_size > 100
    rt = load_rt("planar2", estimator="kalman", observer="none", sample_period=0.004)
    rt.config.load(tmp_path / k["gains"]["config_file"])  # the gains, loadable by rt users
    assert rt.config["enc.cpr"][0] == 360000.0 / 2
    bad = subprocess.run(
        [sys.executable, "-m", "host_tools.cli", "evaluate", "planar2", "--estimators", "nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr


def test_evaluate_several_setups_makes_the_comparison_figure(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "evaluate",
            "planar2",
            "--setups",
            "10@125",
            "2@250",
            "--estimators",
            "findiff",
            "movav",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    a = json.loads((tmp_path / "10mdeg_125Hz" / "evaluation.json").read_text())
    b = json.loads((tmp_path / "2mdeg_250Hz" / "evaluation.json").read_text())
    assert a["setup"]["rate_hz"] == 125 and b["setup"]["resolution_mdeg"] == 2
    assert b["estimators"]["findiff"]["ise_velocity"] < a["estimators"]["findiff"]["ise_velocity"]  # finer, faster
    assert len(a["estimators"]["findiff"]["per_axis"]["ise_velocity"]) == 2
    assert (tmp_path / "fig9_setups.png").stat().st_size > 1000


def test_evaluate_rejects_bad_setups(capsys: pytest.CaptureFixture[str]) -> None:
    for args, needle in (
        (["--rate-hz", "0"], "--rate-hz"),
        (["--resolution-mdeg", "-1"], "--resolution-mdeg"),
        (["--faults", "2"], "--faults"),
        (["--model-error", "-1"], "--model-error"),
        (["--setups", "10x125"], "--setups"),
        (["--tune", "--generations", "0"], "--generations"),
    ):
        r = cli_in_process(capsys, "evaluate", "planar2", *args)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_switch_on_convergence_through_the_loop() -> None:
    """Fig. 7's test on the loopback: with a fine encoder finite differences are exact from the second
    sample (the first has no previous position); a slow Kalman filter needs longer; a filter whose
    estimate never reaches 5 % within the 2 s observed reports None."""
    setup = Setup(PLANAR2, resolution_mdeg=0.01, rate_hz=1000)
    fd = pipeline(setup, default_spec("findiff"))
    conv, curve, truth = convergence_time(fd, setup)
    assert conv is not None and conv <= 2 * setup.sample_period, conv
    assert np.allclose(truth, SWITCH_ON_SPEED, atol=0.05 * SWITCH_ON_SPEED) and len(curve) == 2000
    kf = pipeline(setup, default_spec("kalman"))
    kf.config.redesign(q_var=1e-2)
    slow, _, _ = convergence_time(kf, setup)
    assert slow is not None and slow > 10 * setup.sample_period
    kf.config.redesign(q_var=1e-9)
    assert convergence_time(kf, setup)[0] is None


def test_liu_gains_and_progress() -> None:
    """--gains paper puts Liu et al. Table 4 into the config; progress reaches done == total."""
    setup = Setup(LWA4P, gains="paper")
    assert setup.problems() == []
    rt = pipeline(setup, default_spec("linhg"))
    assert rt.config["est.eps"] == 0.03 and rt.config["est.h1"][0] == 47.01 and rt.config["est.h2"][5] == 206.9
    rt = pipeline(setup, default_spec("slimod"))
    assert rt.config["est.k1"] == 84.46 and rt.config["est.f_plus"][1] == 12.20
    kf = pipeline(setup, default_spec("kalman"))
    q_var = [18.55, 17.93, 0.010, 14.62, 0.037, 11.48]  # Liu et al. Table 8, 10 mdeg at 125 Hz
    assert design_values(setup, kf) == {"q_var": q_var} == kf.config.designed
    assert variant(setup, "lsf").label == "lsf:n=4,p=1"
    assert any("1@250" in p for p in Setup(LWA4P, gains="paper", resolution_mdeg=5).problems())
    assert any("exclude" in p for p in Setup(LWA4P, gains="paper", tune=True).problems())
    assert Setup(PLANAR2, gains="paper").problems()
    seen: list[tuple[str, int, int]] = []
    doc = evaluate(
        Setup(PLANAR2, rate_hz=250, tune=True, generations=2),
        (EstimatorRequest("movav"),),
        progress=lambda name, done, total, info: seen.append((name, done, total)),
        executor=ThreadPoolExecutor(max_workers=2),
    ).doc
    variants = len(registry.estimators()["movav"].grid)
    grid = [x for x in seen if x[2] == variants]
    assert [d for _, d, _ in grid] == list(range(1, variants + 1))  # every variant, in parallel
    assert seen[-1][1] == seen[-1][2] and doc["estimators"]["movav"]["gains"]["estimator"].startswith("movav:p=")
    assert len(doc["estimators"]["movav"]["history"]) == variants


def test_evaluate_defaults_to_the_robots_own_setup(tmp_path: Path) -> None:
    """No --resolution-mdeg/--rate-hz: the description's coarsest link-side encoder and its sample
    period (planar2: 16384 counts per turn on the link, 1 ms); liu names Liu et al.'s three."""
    base = [sys.executable, "-m", "host_tools.cli", "evaluate", "planar2", "--estimators", "findiff", "--json"]
    r = subprocess.run(base, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    setup = json.loads(r.stdout)["setup"]
    assert setup["resolution_mdeg"] == 360000 / 16384 and setup["rate_hz"] == 1000
    r = subprocess.run([*base, "--setups", "liu", "5@500"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [(d["setup"]["resolution_mdeg"], d["setup"]["rate_hz"]) for d in json.loads(r.stdout)]
    assert got == [(10, 125), (2, 125), (1, 250), (5, 500)]


def test_retuning_under_faults_tunes_on_lost_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """--tune-faults (Liu et al. Table 6's retuned columns): the GA's and the grid search's tuning runs
    lose the fault case's share of samples on the fault axis (another draw than the test's); without
    it they lose none; and it needs --tune."""
    import host_tools.studies.evaluate as ev
    from host_tools.studies.tune import TuneResult

    setup = Setup(PLANAR2, rate_hz=250, tune=True, tune_faults=True, generations=1)
    assert setup.problems() == [] and any("--tune" in p for p in Setup(PLANAR2, tune_faults=True).problems())
    motion = ev.tuning_trajectory(setup)
    mask = ev.tuning_faults(setup, motion)
    assert mask is not None and mask.shape == motion.q.shape
    assert np.all(mask[:, :-1] == 1)
    lost = 1 - mask[:, -1].mean()
    k = len(mask)
    # binomial: 10 % of k samples lost, within 5 standard deviations
    assert abs(lost - setup.faults) < 5 * np.sqrt(setup.faults * (1 - setup.faults) / k)
    assert not np.array_equal(mask, ev.fault_mask(setup, motion.q.shape))  # not the test's draw
    assert ev.tuning_faults(Setup(PLANAR2, rate_hz=250, tune=True), motion) is None
    seen: list[Problem] = []

    def fake_tune(problem: Problem, *args: object, **kwargs: object) -> TuneResult:
        seen.append(problem)
        # the config's own gains, as log10 values (apply_genome's)
        genome = np.log10([np.asarray(problem.config[g.key]).reshape(-1)[g.index or 0] for g in problem.genes])
        return TuneResult(genome=genome, cost=0.0)

    monkeypatch.setattr(ev, "tune", fake_tune)
    doc = evaluate(setup, (EstimatorRequest("linhg"),), executor=ThreadPoolExecutor(max_workers=1)).doc
    assert doc["setup"]["tuned_under_faults"] is True
    assert seen and seen[0].valid is not None and np.array_equal(seen[0].valid, mask)


def test_evaluate_takes_variants_with_their_options() -> None:
    """Liu et al. Table 5 in one command: variants with their options are evaluated as given (no grid
    search); an unknown option is one line naming it."""
    base = [sys.executable, "-m", "host_tools.cli", "evaluate", "planar2", "--json", "--estimators"]
    r = subprocess.run([*base, "lsf:n=8,p=3", "bde:n=2", "findiff"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)["estimators"]
    assert list(doc) == ["lsf:n=8,p=3", "bde:n=2", "findiff"]
    assert (
        doc["lsf:n=8,p=3"]["gains"]["estimator"] == "lsf:n=8,p=3" and doc["bde:n=2"]["gains"]["estimator"] == "bde:n=2"
    )
    # bde:n=2 differentiates the quantisation twice as hard as findiff (coefficients 1.5, -2, 0.5)
    assert doc["bde:n=2"]["ise_velocity"] > doc["findiff"]["ise_velocity"]
    bad = subprocess.run([*base, "lsf:q=3"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no option 'q'" in bad.stderr and "Traceback" not in bad.stderr
