"""The model `manipgen thresholds` designs with (host_tools.studies.design_model, issue #44): held-out
ratios cross-fitted (each block's ratio on the residual of a model fitted without it), the
identification run once per held-out block without that block, and the choice between the
description's and the identified model."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt, with_config_terms
from host_tools.cli import main
from host_tools.data.checks import TIMING_SETTLE_DESIGN, TIMING_SETTLE_FIT, check_log, with_settling
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.pipeline import samples_of
from host_tools.studies import design_model
from host_tools.studies import thresholds as thresholds_study
from host_tools.studies.thresholds import DesignSettings, Recording, design_across, design_blocks, design_from_outputs

BLOCKS = 4


def _outputs(k: int = 2000, n: int = 2, seed: int = 0) -> dict[str, np.ndarray]:
    """A residual and estimates of the shape a pipeline gives (smooth motion, noisy residual)."""
    rng = np.random.default_rng(seed)
    t = np.arange(k) * 1e-3
    qd = np.column_stack([np.sin(2 * np.pi * (0.7 + 0.3 * j) * t) for j in range(n)])
    qdd = np.gradient(qd, t, axis=0)
    r = 0.2 * rng.standard_normal((k, n)) + 0.3 * np.abs(qd)
    return {"r": r, "qd_hat": qd, "qdd_hat": qdd}


def test_each_blocks_ratio_comes_from_its_own_models_residual() -> None:
    """With every block's model the run's own (folds all the same outputs) the cross-fitted ratios are
    the held-out ratios, bit for bit: the same blocks, the same fits. A fold whose residual is three
    times larger on its own block moves that block's ratio about threefold and no other block's."""
    outs = _outputs()
    plain = design_from_outputs(outs, 100, 1e-3, blocks=BLOCKS)
    same = design_from_outputs(outs, 100, 1e-3, blocks=BLOCKS, folds=[outs] * BLOCKS)
    np.testing.assert_array_equal(same.held_out, plain.held_out)
    np.testing.assert_array_equal(same.threshold, plain.threshold)
    held = design_blocks(len(outs["r"]), 100, None, BLOCKS)[2]
    louder = {**outs, "r": outs["r"].copy()}
    louder["r"][held] *= 3.0
    folds = [outs, outs, louder, outs]
    crossed = design_from_outputs(outs, 100, 1e-3, blocks=BLOCKS, folds=folds)
    np.testing.assert_array_equal(np.delete(crossed.held_out, 2, axis=0), np.delete(plain.held_out, 2, axis=0))
    np.testing.assert_allclose(crossed.held_out[2], 3.0 * plain.held_out[2], rtol=0.05)
    # the thresholds are the run's own model's envelope, with the cross-fitted margin
    np.testing.assert_allclose(crossed.threshold / crossed.margins, plain.threshold / plain.margins, rtol=1e-12)
    assert crossed.margin > plain.margin
    with pytest.raises(ValueError, match="per held-out block"):
        design_from_outputs(outs, 100, 1e-3, blocks=BLOCKS, folds=[outs] * 3)


def test_each_held_out_runs_ratios_come_from_its_own_models_residual() -> None:
    """Several runs (``run`` labels), one fold per run: with every fold the runs' own outputs the
    cross-fitted ratios are held_out_ratios' (each run held out in turn, its blocks' maxima), bit for
    bit; a fold three times louder on its own run moves that run's ratios (all ``BLOCKS`` of them)
    about threefold and the other run's not at all (a given margin: the standstill scale the ratios
    are reported at does not follow them)."""
    outs = _outputs(3000)
    run = np.repeat([0, 1], 1500)
    plain = design_from_outputs(outs, 100, 1e-3, 2.0, blocks=BLOCKS, run=run)
    same = design_from_outputs(outs, 100, 1e-3, 2.0, blocks=BLOCKS, run=run, folds=[outs, outs])
    np.testing.assert_array_equal(same.held_out, plain.held_out)
    assert plain.held_out.shape == (2 * BLOCKS, 2)
    louder = {**outs, "r": outs["r"] * np.where(run == 1, 3.0, 1.0)[:, None]}
    crossed = design_from_outputs(outs, 100, 1e-3, 2.0, blocks=BLOCKS, run=run, folds=[outs, louder])
    np.testing.assert_array_equal(crossed.held_out[:BLOCKS], plain.held_out[:BLOCKS])
    np.testing.assert_allclose(crossed.held_out[BLOCKS:], 3.0 * plain.held_out[BLOCKS:], rtol=0.05)
    with pytest.raises(ValueError, match="per run"):
        design_from_outputs(outs, 100, 1e-3, blocks=BLOCKS, run=run, folds=[outs] * BLOCKS)


@dataclass
class _Fit:
    """What identify_for_design reads of an identification."""

    values: dict[str, Any]

    def config(self) -> dict[str, Any]:
        return self.values

    reported = SimpleNamespace(selection=None, names=[])
    velocity = {"used": "estimate"}
    settings = SimpleNamespace(velocity="auto")


def _record(tmp_path: Path, seconds: float = 6.0, seed: int = 4) -> Recording:
    robot = load_robot("planar2")
    rt = load_rt("planar2", estimator="kalman", observer="momentum", controller="computed_torque")
    rt.config["det.reaction"] = 0
    traj = generated_trajectory(robot, seconds, rt.sample_period, seed=seed, speed=0.2)
    log = simulate(rt, traj).log
    return Recording(log, check_log(log, robot, "free.npz"))


def test_the_identification_leaves_each_held_out_block_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """identify_for_design fits the whole run (its flagged samples left out, with the filters'
    settling around a finding of the arm's) and then once per held-out block of the design
    (design_blocks, the samples the thresholds hold out) with that block and its settling left out
    too; the pipeline's friction terms are every term any of the fits sets."""
    run = _record(tmp_path)
    flagged = np.zeros(len(run.log), bool)
    flagged[3000:3050] = True  # as the input checks would flag them
    run = replace(run, checks=replace(run.checks, flagged=flagged))
    seen: list[np.ndarray] = []

    def spy(robot: Any, data: Any, exc: Any, validate: Any, settings: Any, checks: Any) -> _Fit:
        seen.append(checks.left_out(checks.data, 1e-3).copy())
        fold = len(seen) - 2  # -1: the whole run
        stribeck = [0.0, 0.0]
        if fold >= 0:
            stribeck[fold % 2] = 1.0 + fold  # fold b sets a Stribeck term on joint b mod 2
        return _Fit({"model.params": [0.0], "fric.fs": stribeck})

    monkeypatch.setattr(design_model, "identify_run", spy)
    settings = DesignSettings(blocks=BLOCKS, skip=0.5)
    model = design_model.identify_for_design(load_robot("planar2"), run, settings)
    settled = with_settling(flagged, run.log.sample_period)  # no timing finding: the arm's settling
    blocks = design_blocks(len(run.log), 500, settled, BLOCKS)
    assert len(seen) == 1 + BLOCKS and len(model.folds) == BLOCKS
    np.testing.assert_array_equal(seen[0], settled)
    for b, mask in enumerate(seen[1:]):
        block = np.zeros(len(run.log), bool)
        block[blocks[b]] = True
        np.testing.assert_array_equal(mask, settled | with_settling(block, run.log.sample_period))
    assert model.terms == (("stribeck",), ("stribeck",)) and model.velocity == "estimate"
    # the models in the blocks' order: block b's is the one fitted without block b
    assert [f["fric.fs"] for f in model.folds] == [[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]]


def test_several_runs_are_identified_together_and_each_without_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """identify_for_design on two runs fits their samples one after the other (positions and torques
    as each run's own identification reads them), each run's left-out samples left out and the
    junction (the second run's first sample) with the filters' settling either side; then once per
    run with that run's samples and their settling left out too: the folds in the runs' order."""
    first, second = _record(tmp_path), _record(tmp_path, seconds=4.0, seed=7)
    flagged = np.zeros(len(first.log), bool)
    flagged[3000:3050] = True
    first = replace(first, checks=replace(first.checks, flagged=flagged))
    seen: list[tuple[Any, np.ndarray]] = []

    def spy(robot: Any, data: Any, exc: Any, validate: Any, settings: Any, checks: Any) -> _Fit:
        seen.append((data, checks.left_out(checks.data, 1e-3).copy()))
        return _Fit({"model.params": [float(len(seen))]})

    monkeypatch.setattr(design_model, "identify_run", spy)
    robot = load_robot("planar2")
    model = design_model.identify_for_design(robot, [first, second], DesignSettings(blocks=BLOCKS))
    k1, k2 = len(first.log), len(second.log)
    assert len(seen) == 3 and model.runs == 2 and [f["model.params"] for f in model.folds] == [[2.0], [3.0]]
    data = seen[0][0]
    for got, run in ((data.q[:k1], first), (data.q[k1:], second)):
        np.testing.assert_array_equal(got, samples_of(robot, run.log).q)
    np.testing.assert_array_equal(data.tau[k1:], samples_of(robot, second.log).tau)
    junction = np.zeros(k1 + k2, bool)
    junction[k1] = True
    whole = np.concatenate([with_settling(flagged, 1e-3), np.zeros(k2, bool)]) | with_settling(junction, 1e-3)
    np.testing.assert_array_equal(seen[0][1], whole)
    for i, (a, b) in enumerate(((0, k1), (k1, k1 + k2))):
        held = np.zeros(k1 + k2, bool)
        held[a:b] = True
        np.testing.assert_array_equal(seen[1 + i][1], whole | with_settling(held, 1e-3))
    other = replace(second, log=replace(second.log, sample_period=2 * second.log.sample_period))
    with pytest.raises(ValueError, match="sample periods differ"):
        design_model.identify_for_design(robot, [first, other], DesignSettings(blocks=BLOCKS))


def test_design_across_replays_each_run_with_its_model(tmp_path: Path) -> None:
    """design_across on two runs with one fold per run: folds of the pipeline's own model give the
    held-out ratios of the plain design bit for bit; a wrong model in one run's fold moves every
    ratio of that run and none of the other's; the config is as it was after. (A given margin: a
    derived one would follow the wrong fold's ratios, and with it the standstill scale the design
    picks and reports the ratios at.)"""
    runs = [_record(tmp_path).log, _record(tmp_path, seconds=4.0, seed=7).log]
    rt = load_rt(load_robot("planar2"))
    params = np.array(rt.config["model.params"], copy=True)
    own = {"model.params": params.tolist()}
    wrong = {"model.params": (1.5 * params).tolist()}
    plain = design_across(rt, runs, 2.0, blocks=BLOCKS)
    same = design_across(rt, runs, 2.0, blocks=BLOCKS, folds=[own, own])
    np.testing.assert_array_equal(same.held_out, plain.held_out)
    for at, folds in ((1, [own, wrong]), (0, [wrong, own])):
        crossed = design_across(rt, runs, 2.0, blocks=BLOCKS, folds=folds)
        rows = [slice(0, BLOCKS), slice(BLOCKS, 2 * BLOCKS)]
        np.testing.assert_array_equal(crossed.held_out[rows[1 - at]], plain.held_out[rows[1 - at]])
        assert np.all(crossed.held_out[rows[at]] != plain.held_out[rows[at]]), (at, crossed.held_out)
        np.testing.assert_array_equal(rt.config["model.params"], params)
    # the held-out run's envelope is fitted on the other runs' residual with the held-out run's own
    # model too (not the whole data's): a static design (its standstill scale fixed) whose folds are
    # the wrong model gives, for that run, the ratios of the plain design with the wrong model
    crossed = design_across(rt, runs, 2.0, blocks=BLOCKS, static=True, folds=[own, wrong])
    rt.config["model.params"] = wrong["model.params"]
    try:
        off = design_across(rt, runs, 2.0, blocks=BLOCKS, static=True)
    finally:
        rt.config["model.params"] = params
    np.testing.assert_array_equal(crossed.held_out[BLOCKS:], off.held_out[BLOCKS:])


def test_design_across_replays_each_block_with_its_model_and_restores_the_config(tmp_path: Path) -> None:
    """design_across(folds=...) replays the run once per fold's model: folds that are the pipeline's
    own model give the held-out ratios bit for bit, a wrong model on the last block raises that
    block's ratios and no other's; the config is as it was after (fields of friction terms the
    pipeline lacks, 0 here, are accepted and change nothing)."""
    run = _record(tmp_path)
    rt = load_rt(load_robot("planar2"))
    params = np.array(rt.config["model.params"], copy=True)
    own = {"model.params": params.tolist(), "fric.fs": [0.0, 0.0], "fric.stribeck_velocity": [0.1, 0.1]}
    wrong = {**own, "model.params": (1.5 * params).tolist()}
    plain = design_across(rt, [run.log], blocks=BLOCKS)
    same = design_across(rt, [run.log], blocks=BLOCKS, folds=[own] * BLOCKS)
    np.testing.assert_array_equal(same.held_out, plain.held_out)
    crossed = design_across(rt, [run.log], blocks=BLOCKS, folds=[own] * (BLOCKS - 1) + [wrong])
    np.testing.assert_array_equal(crossed.held_out[:-1], plain.held_out[:-1])
    assert np.all(crossed.held_out[-1] > plain.held_out[-1]), (crossed.held_out, plain.held_out)
    np.testing.assert_array_equal(rt.config["model.params"], params)
    np.testing.assert_array_equal(
        design_across(rt, [run.log], blocks=BLOCKS).held_out, plain.held_out
    )  # and the next design is the run's own model's again


def test_thresholds_with_the_identified_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`thresholds --model identified` designs with the model identified on the run; the config it
    writes loads into the pipeline generated with its friction terms (--friction-from) and sets the
    designed thresholds and the identified parameters; auto keeps the design with the lower sum and
    says so; a config that gives the model leaves auto with the description's model; several design
    runs are identified together, each run's margin from a model identified on the others."""
    run, other = _record(tmp_path), _record(tmp_path, seed=9)
    free, check = run.log.save(tmp_path / "free.npz"), other.log.save(tmp_path / "other.npz")
    out = tmp_path / "cfg.json"
    args = ["thresholds", "planar2", str(free), "--check", str(check), "--json"]
    folds_given: list[Any] = []

    def across(*a: Any, **kw: Any) -> Any:
        folds_given.append(kw.get("folds"))
        return design_across(*a, **kw)

    monkeypatch.setattr(thresholds_study, "design_across", across)
    assert main([*args, "--model", "identified", "--out", str(out)]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    # the identified design takes its margin from the held-out blocks' own models
    assert len(folds_given) == 1 and folds_given[0] is not None and len(folds_given[0]) == doc["margin_from"]["blocks"]
    assert doc["model"]["used"] == "identified" and set(doc["model"]["threshold_mean_sum"]) == {"identified"}
    assert doc["model"]["identified"]["held_out_fits"] == doc["margin_from"]["blocks"]
    rt = load_rt(with_config_terms(load_robot("planar2"), out))
    rt.config.load(out)
    for key in ("threshold", "kv", "ka", "ks", "vs"):
        np.testing.assert_array_equal(rt.config[f"det.{key}"], doc[key])
    assert not np.array_equal(rt.config["model.params"], load_robot("planar2").standard_parameters())
    assert main(args) in (0, 1)
    auto = json.loads(capsys.readouterr().out)
    sums = auto["model"]["threshold_mean_sum"]
    assert set(sums) == {"description", "identified"} and auto["model"]["used"] == min(sums, key=sums.get)
    assert sum(auto["threshold_mean"]) == sums[auto["model"]["used"]]
    assert main([*args, "--config", str(out)]) in (0, 1)
    given = json.loads(capsys.readouterr().out)
    assert given["model"]["used"] == "description" and "--config" in given["model"]["note"]
    folds_given.clear()
    assert main(["thresholds", "planar2", str(free), str(check), "--model", "identified", "--json"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["model"]["identified"]["runs"] == 2 and two["model"]["identified"]["held_out"] == "runs"
    assert len(folds_given) == 1 and len(folds_given[0]) == 2 == two["model"]["identified"]["held_out_fits"]
    assert main([*args, "--static"]) in (0, 1)
    static = json.loads(capsys.readouterr().out)
    assert static["model"]["used"] == "description" and static["model"]["note"] == design_model.STATIC_NOTE


def test_a_failed_identification_leaves_auto_with_the_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run the identification cannot fit (numpy's bare "Singular matrix" here): auto designs with the
    description's model and says why, naming which fit failed; --model identified is one clear error."""

    def singular(*args: Any, **kwargs: Any) -> None:
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(design_model, "identify_run", singular)
    free = _record(tmp_path).log.save(tmp_path / "free.npz")
    assert main(["thresholds", "planar2", str(free), "--json"]) == 0
    captured = capsys.readouterr()
    model = json.loads(captured.out)["model"]
    assert model["used"] == "description" and set(model["threshold_mean_sum"]) == {"description"}
    assert "identifying the whole run: Singular matrix" in model["note"]
    assert captured.err.count("manipgen: note:") == 1, captured.err
    assert main(["thresholds", "planar2", str(free), "--model", "identified"]) == 2
    err = capsys.readouterr().err
    assert "--model identified: identifying the whole run: Singular matrix" in err and "Traceback" not in err, err


def test_auto_keeps_the_lower_sum() -> None:
    """choose: auto keeps the design with the lower sum of mean thresholds, the description's on a
    tie; an asked model is kept whatever its sum."""

    def designed(means: list[float]) -> Any:
        return SimpleNamespace(design=SimpleNamespace(threshold_mean=np.array(means), margin=1.2))

    low, high = designed([1.0, 2.0]), designed([2.0, 2.0])
    assert design_model.choose("auto", {"description": high, "identified": low}, None, "").used == "identified"
    assert design_model.choose("auto", {"description": low, "identified": high}, None, "").used == "description"
    assert design_model.choose("auto", {"identified": low, "description": low}, None, "").used == "description"
    assert design_model.choose("identified", {"identified": high}, None, "").used == "identified"


def test_an_elastic_arm_keeps_the_description_without_trying(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A series-elastic arm's log holds the motors' torque, which identify's rigid model cannot read:
    auto keeps the description's model and says why, without a note of a failed identification."""

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("identified an elastic arm's log")

    monkeypatch.setattr(design_model, "identify_run", never)
    log = tmp_path / "elastic.npz"
    assert main(["record", "biorob4", "--duration", "4", "--out", str(log)]) == 0
    capsys.readouterr()
    assert main(["thresholds", "biorob4", str(log), "--json"]) == 0
    captured = capsys.readouterr()
    model = json.loads(captured.out)["model"]
    assert model["used"] == "description" and "series-elastic" in model["note"], model
    assert "note:" not in captured.err, captured.err


def test_runs_laid_end_to_end_keep_a_recorded_velocity_only_if_every_run_has_one(tmp_path: Path) -> None:
    """_laid_end_to_end: the runs' recorded velocities one after the other where every run carries one,
    none where one run lacks it (identify then estimates the velocity on all of them, not on a part);
    with keep_flagged no run's flagged sample is left out, the junctions (and their settling) still are."""
    robot = load_robot("planar2")
    first, second = _record(tmp_path), _record(tmp_path, seconds=4.0, seed=7)
    k1, k2 = len(first.log), len(second.log)
    qd1, qd2 = np.full((k1, robot.dof), 0.25), np.full((k2, robot.dof), -0.5)
    with_qd = [replace(r, samples=replace(samples_of(robot, r.log), qd=v)) for r, v in ((first, qd1), (second, qd2))]
    joined, _, groups = design_model._laid_end_to_end(robot, with_qd, False)
    assert joined.qd is not None
    np.testing.assert_array_equal(joined.qd, np.concatenate([qd1, qd2]))
    assert [len(g) for g in groups] == [k1, k2]
    for mixed in ([with_qd[0], second], [first, with_qd[1]]):
        assert design_model._laid_end_to_end(robot, mixed, False)[0].qd is None
    flagged = np.zeros(k1, bool)
    flagged[3000:3050] = True
    runs = [replace(first, checks=replace(first.checks, flagged=flagged)), second]
    kept = design_model._laid_end_to_end(robot, runs, True)[1]
    np.testing.assert_array_equal(np.flatnonzero(kept), np.arange(k1 - 500, k1 + 501))


def test_the_design_leaves_out_timing_findings_with_their_own_settling(tmp_path: Path) -> None:
    """design_on (and so `manipgen thresholds`) leaves out what LogChecks.left_out gives: around a
    lone gap TIMING_SETTLE_DESIGN (0.2 s), not the 0.5 s of a finding of the arm's."""
    run = _record(tmp_path)
    log = run.log
    t = log.time.copy()
    t[3000:] += 0.01  # a gap after sample 2999
    log = replace(log, time=t)
    robot = load_robot("planar2")
    checks = check_log(log, robot, "gap.npz")
    assert [f.kind for f in checks.findings] == ["gap"], checks.lines()
    rt = load_rt("planar2", estimator="kalman", observer="momentum", controller="computed_torque")
    designed = thresholds_study.design_on(rt, Recording(log, checks), DesignSettings(blocks=BLOCKS))
    k0 = designed.design.skipped  # the 0.5 s start
    expected = checks.left_out(log.sample_period, TIMING_SETTLE_DESIGN)
    assert designed.design.left_out is not None
    np.testing.assert_array_equal(designed.design.left_out[k0:], expected[k0:])
    # the gap's two samples (the stamps either side of the jump) and 0.2 s either side
    assert expected.sum() == 2 + 2 * round(TIMING_SETTLE_DESIGN / log.sample_period)


def test_the_identification_for_the_design_leaves_a_gap_out_as_identify_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """identify_for_design on a run with a gap: its fits leave out what identify leaves out (the gap
    and TIMING_SETTLE_FIT either side), its held-out blocks are the design's (design_blocks of
    design_on's mask: TIMING_SETTLE_DESIGN either side); laid end to end with another run, that
    run's gap is left out as identify does. (The review of c95b630.)"""
    run = _record(tmp_path)
    t = run.log.time.copy()
    t[3000:] += 0.005  # a short gap after sample 2999
    log = replace(run.log, time=t)
    robot = load_robot("planar2")
    checks = check_log(log, robot, "gap.npz")
    assert [f.kind for f in checks.findings] == ["gap"], checks.lines()
    fit, design = round(TIMING_SETTLE_FIT / 1e-3), round(TIMING_SETTLE_DESIGN / 1e-3)
    assert design < fit
    own = np.zeros(len(log), bool)
    own[2999 - fit : 3001 + fit] = True  # the stamps either side of the jump and identify's settling
    held = np.zeros(len(log), bool)
    held[2999 - design : 3001 + design] = True  # design_on's
    seen: list[np.ndarray] = []

    def spy(robot: Any, data: Any, exc: Any, validate: Any, settings: Any, checks: Any) -> _Fit:
        seen.append(checks.left_out(checks.data, 1e-3).copy())
        return _Fit({"model.params": [float(len(seen))]})

    monkeypatch.setattr(design_model, "identify_run", spy)
    design_model.identify_for_design(robot, Recording(log, checks), DesignSettings(blocks=BLOCKS, skip=0.5))
    np.testing.assert_array_equal(seen[0], own)
    blocks = design_blocks(len(log), 500, held, BLOCKS)
    for b, mask in enumerate(seen[1:]):
        block = np.zeros(len(log), bool)
        block[blocks[b]] = True
        np.testing.assert_array_equal(mask, own | with_settling(block, 1e-3))
    seen.clear()
    second = _record(tmp_path, seconds=4.0, seed=7)
    design_model.identify_for_design(robot, [Recording(log, checks), second], DesignSettings(blocks=BLOCKS))
    k1 = len(log)
    np.testing.assert_array_equal(seen[0][: k1 - 500], own[: k1 - 500])
