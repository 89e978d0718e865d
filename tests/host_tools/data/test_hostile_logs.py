"""Issue #44 item 5: hostile synthetic logs (`manipgen record ROBOT --hostile`, host_tools.data.hostile)
and what the tools make of them on robots the choices of items 1-4 were not developed on (the
iiwa: sign Coulomb, no rotor inertia identified (the baseline appends its column); the UR5: tanh
Coulomb; items 1-4 were developed on
the LWA-4P's real runs and checked on closed-form UR5/Panda runs, never on loopback logs with
jitter, gaps, repeats, a drive's velocity and a plant friction other than the description's).

Every tolerance is derived next to it; no figure is taken from the tools' own output."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.rt import load_rt
from host_tools.cli import main
from host_tools.data.checks import TIMING_SETTLE_FIT, LogChecks, check_log, with_settling
from host_tools.data.formats import read_log
from host_tools.data.hostile import JITTER_CLIP, STRIBECK_VELOCITY
from host_tools.identification.friction_terms import STRIBECK_VELOCITIES
from host_tools.identification.input_checks import InputChecks
from host_tools.identification.pipeline import recorded_run_settings
from host_tools.identification.run import identify_run
from host_tools.studies.thresholds import replay

ROBOTS = ("kuka_iiwa14", "ur5")
FIT_SECONDS, VAL_SECONDS = 30.0, 20.0
EPS = 1e-9  # s: the CSV's stamps are written to 12 significant digits (1e-10 s at 30 s) and read to 1 ns


@cache
def _record(name: str, seed: int, seconds: float, folder: str, *extra: str) -> tuple[Path, Path, dict[str, Any]]:
    """`manipgen record NAME --hostile` (the documented command): the CSV, the NPZ and the planted JSON."""
    out = Path(folder) / f"{name}_{seed}_{'_'.join(extra) or 'default'}"
    csv, npz, planted = out.with_suffix(".csv"), out.with_suffix(".npz"), out.with_suffix(".json")
    args = ["record", name, "--hostile", "--duration", str(seconds), "--seed", str(seed)]
    args += ["--out", str(csv), "--out", str(npz), "--planted", str(planted), *extra]
    assert main(args) == 0
    return csv, npz, json.loads(planted.read_text())


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", ROBOTS)
def test_checks_find_the_planted_gaps_and_repeats(name: str, folder: str) -> None:
    """Both routes (the CSV, resampled on reading; the NPZ, taken row by row) report every planted gap
    and repeated row where it was planted, and nothing else; the timing report counts them and
    measures the planted jitter.

    Where: a gap is flagged from the stamp before it to the stamp after it (host_tools.data.checks):
    row by row those very stamps; on the resampled grid (time 0 = the first stamp, which the
    generator puts at 0) the first grid sample at or after the stamp before and the last at or before
    the stamp after, so within one sample period inside them. A repeated row is flagged between the
    row before it and the row after it, exclusive: row by row the repeated row alone; on the grid the
    samples strictly between its neighbours, which lie within (1 + 2 JITTER_CLIP) Ts of it (a step
    is at most that long: the jitter's clip).

    Jitter: the steps between rows are Ts + e_(k+1) - e_k with e independent, so their standard
    deviation is sqrt(2) sigma (the clip at 4 sigma removes 0.1 % of the variance); over N ~ 3e4
    steps of this MA(1) sequence (lag-one correlation -1/2) the sample variance's relative standard
    error is sqrt(2 (1 + 2 x 0.25) / N) = 1 %, the std's 0.5 %: 3 % is six of them."""
    robot = load_robot(name)
    ts = robot.sample_period
    csv, npz, planted = _record(name, 1, FIT_SECONDS, folder)
    step = (1 + 2 * JITTER_CLIP) * ts
    for path, resampled in ((csv, True), (npz, False)):
        f = read_log(path, robot)
        checks = check_log(f.log, robot, path.name)
        assert {x.kind for x in checks.findings} <= {"gap", "repeat"}, checks.lines()
        gaps = [x for x in checks.findings if x.kind == "gap"]
        repeats = [x for x in checks.findings if x.kind == "repeat"]
        assert len(gaps) == len(planted["gaps"]) and len(repeats) == len(planted["repeats"]), checks.lines()
        for g, (before, after) in zip(gaps, planted["gaps"]):
            if resampled:
                assert before - EPS <= g.t0 < before + ts and after - ts < g.t1 <= after + EPS, (g, before, after)
            else:
                assert abs(g.t0 - before) <= EPS and abs(g.t1 - after) <= EPS, (g, before, after)
        for r, at in zip(repeats, planted["repeats"]):
            if resampled:
                assert at - step < r.t0 <= r.t1 < at + step, (r, at)
            else:
                assert abs(r.t0 - at) <= EPS and abs(r.t1 - at) <= EPS, (r, at)
        timing = f.timing
        assert timing.gaps == len(planted["gaps"]) and timing.repeated == len(planted["repeats"])
        assert abs(timing.longest_step - max(b - a for a, b in planted["gaps"])) <= 2 * EPS
        sigma = planted["jitter_std"]
        assert abs(timing.jitter_std / (np.sqrt(2) * sigma) - 1) <= 0.03, (timing.jitter_std, sigma)


def _cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {}


@pytest.mark.parametrize(
    ("name", "estimator"),
    [
        ("kuka_iiwa14", None),
        ("ur5", None),
        ("ur5", "linhg"),
    ],
)
def test_thresholds_designed_on_one_hostile_run_hold_on_another(
    name: str, estimator: str | None, folder: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`manipgen thresholds R FIT --check VAL` with the defaults, FIT and VAL hostile runs of two seeds
    (another motion, other gaps, repeats, jitter and noise; the same plant): no false alarm on VAL.
    The NPZ route (taken row by row: the gaps and repeats are flagged and left out, docs/real-data.md)
    for the design, the CSV route (resampled) for the check.

    The UR5's test motion ends its sine part with every joint at rest at the sine's full acceleration,
    which then steps to 0 (6.67 s on VAL, 10.0 s on FIT): there the default Kalman estimate overshoots
    through zero and the steep tanh(qd / 0.02) Coulomb model turns that into the run's largest residual
    (docs/realtime.md, "Hostile logs"). Until 2026-11-30 FIT's instant lay within the 0.5 s left out
    around a planted repeated row (0.24 s before it), the design never saw it, and VAL raised false
    alarms there (a strict xfail); a timing finding now leaves out 0.2 s either side
    (TIMING_SETTLE_DESIGN), the design sees the event and sets its margin by it. With ``--estimator
    linhg`` (the linear high-gain observer, its default gains) the estimate does not overshoot
    through zero there, and the residual stays as small as at the other reversals."""
    csv_fit, npz_fit, _ = _record(name, 1, FIT_SECONDS, folder)
    csv_val, _, _ = _record(name, 2, VAL_SECONDS, folder)
    flags = () if estimator is None else ("--estimator", estimator)
    code, doc = _cli_json(capsys, "thresholds", name, str(npz_fit), "--check", str(csv_val), *flags, "--json")
    assert code == 0, doc
    assert sum(doc["check"]["false_alarm_samples"]) == 0, doc["check"]


def test_thresholds_on_a_csv_keep_the_level_at_rest_above_the_friction_jump(
    folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`manipgen thresholds kuka_iiwa14 FIT.csv --check VAL... --model identified` (the CSV route, its
    own rows, for the design too): seed 3's joint 2 breaks away from rest inside its planted Stribeck
    band (the friction at rest up to FC + FS on either side), which the run designed on showed less
    of. Without a floor on the level at rest (until 2026-12-01) the identified model's design (auto's
    choice then) raised 6-7 false-alarm samples on seed 3 at 1.12-1.13 of a threshold. The level at
    rest is now at least the model's friction jump 2 |FC + FS| / target (coulomb_floor of the model
    the written config runs: its model.params and the identified Stribeck coefficients fric.fs,
    checked here from the config itself, joint 2's among them), and no checked run alarms. (With
    auto the description's model now has the lower sum on this run, 2.14 against 2.18 N m.)"""
    fit, _, _ = _record("kuka_iiwa14", 1, FIT_SECONDS, folder)
    checks = [str(_record("kuka_iiwa14", seed, VAL_SECONDS, folder)[0]) for seed in (2, 3, 4)]
    config = tmp_path / "config.json"
    args = ["thresholds", "kuka_iiwa14", str(fit), "--check", *checks, "--model", "identified"]
    args += ["--out", str(config), "--json"]
    code, doc = _cli_json(capsys, *args)
    assert code == 0, doc["check"]
    assert all(sum(run["false_alarm_samples"]) == 0 for run in doc["check"]["runs"]), doc["check"]
    values = json.loads(config.read_text())["config"]
    robot = load_robot("kuka_iiwa14")
    names = list(robot.standard_parameter_names)
    fc = np.array([values["model.params"][names.index(f"FC{j + 1}")] for j in range(robot.dof)])
    fs = np.asarray(values["fric.fs"], float)
    assert fs[1] > 0, fs  # the identified Stribeck term of joint 2 (planted there) is in the floor
    floor = 2 * np.abs(fc + fs) / doc["margin_from"]["target"]
    np.testing.assert_allclose(doc["rest_floor"], floor, rtol=1e-12)
    # the level at qd = 0: threshold + ks (kv, ka multiply |qd|, |qdd|: 0 at rest, the design's own
    # qdd aside); at or above the floor on every joint, to the rounding of one addition
    at_rest = np.array(doc["threshold"]) + np.array(doc["ks"])
    assert np.all(at_rest >= floor * (1 - 1e-12)), (at_rest, floor)


@pytest.mark.parametrize("name", ROBOTS)
def test_identify_chooses_the_planted_structure(name: str, folder: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`manipgen identify R FIT.csv --validate VAL.csv --json` (the documented command, defaults):

    The default hostile plant: an offset on joint 1 (FC_1 / 2; joint 1 of both arms turns about the
    vertical: no gravity column, a constant there can only be the offset) and a Stribeck term on
    joint 2 (FS = FC_2 at 0.07 rad/s, between identify's grid values 0.05 and 0.1).

    - joint 1's first pick is an offset, its value within 3 standard errors (the fit's RSD) of the
      planted one; joint 2's first pick is a Stribeck term with a grid velocity next to the planted
      0.07 rad/s (0.05 or 0.1: the grid has no 0.07);
    - on the other joints a kept term is not significant: its value within 3 standard errors of 0. The
      one-standard-error rule keeps a term whose mean gain on the 5 blocks is above one standard error
      of it; with no term to find that happens by chance about one time in six per trial, and such a
      term then fits the blocks' noise, not a torque (a planted joint may take a small second term:
      test_structure.py's reason, the filtered velocity's shape near reversals);
    - the validation RMS sum on VAL is at most 0.95 x the plain least-squares baseline's: the issue's
      goal for another arm's real run. The iiwa's description identifies no rotor inertia IA, whose
      columns the baseline has: until 2026-12-01 its baseline was skipped; its columns are now
      appended to the regressor as the offset's were (a reviewer's finding)."""
    robot = load_robot(name)
    fit, _, planted = _record(name, 1, FIT_SECONDS, folder)
    val, _, _ = _record(name, 2, VAL_SECONDS, folder)
    offset = planted["offsets"][0]
    assert offset > 0 and not any(planted["offsets"][1:])
    assert planted["friction"]["stribeck_velocity"][1] == STRIBECK_VELOCITY
    code, doc = _cli_json(capsys, "identify", name, str(fit), "--validate", str(val), "--json")
    assert code == 0, doc
    trials = {s["joint"]: s["trials"] for s in doc["friction_terms"]["structure"]}
    base = doc["base"]
    first = trials[1][0]
    assert first["kind"] == "FO" and first["kept"], trials[1]
    forms = {x["joint"]: x["form"] for x in doc["friction_terms"]["structure"]}
    assert forms[1].count("offset") == 1, forms[1]  # the kept offset named once
    # the offset reaches the generated C's run-time config (config_identified.json's fric.fo), as fitted
    # with the physical parameters, within 5 % of the planted one (the base fit's: within 3 RSD, below)
    terms = doc["friction_terms"]
    fo_c = terms["runtime_config"]["fric.fo"]
    coefficients = terms["physical_coefficients"]
    assert fo_c == [coefficients.get(f"FO{j + 1}", 0.0) for j in range(robot.dof)], (fo_c, coefficients)
    assert abs(fo_c[0] - offset) <= 0.05 * offset, (fo_c, offset)
    fo = base["FO1"]
    assert abs(fo["value"] - offset) <= 3 * fo["rsd"] * abs(fo["value"]), (fo, offset)
    first = trials[2][0]
    assert first["kind"] == "FS" and first["kept"], trials[2]
    grid = STRIBECK_VELOCITIES
    assert first["shape"] in (
        max(v for v in grid if v < STRIBECK_VELOCITY),
        min(v for v in grid if v > STRIBECK_VELOCITY),
    )
    for j in range(3, robot.dof + 1):
        for t in trials[j]:
            if t["kept"]:
                key = t["kind"] + str(j)
                assert key in base and abs(base[key]["value"]) <= 3 * base[key]["rsd"] * abs(base[key]["value"]), (
                    key,
                    base.get(key),
                )
    baseline = doc["baseline_ls"]
    assert "skipped" not in baseline, baseline
    assert sum(doc["validation_rms"]["base"]) <= 0.95 * baseline["validation_rms_sum"], baseline


def _as_bag(csv: Path, dof: int) -> Path:
    """The hostile CSV (time, q_<joint>..., qd_<joint>..., tau_<joint>...) as a ROS 1 bag of
    JointState messages stamped as the CSV's rows (the bag route of the same log)."""
    from tests.host_tools.data.test_ros_bags import START, State, write_bag

    names = [h.strip()[2:] for h in csv.read_text().splitlines()[0].split(",")[1 : 1 + dof]]
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, comments="#", ndmin=2)
    records = []
    for row in rows:
        stamp = START + int(round(row[0] * 1e9))
        q, qd, tau = row[1 : 1 + dof], row[1 + dof : 1 + 2 * dof], row[1 + 2 * dof : 1 + 3 * dof]
        records.append(("/joint_states", stamp, State(stamp, names, q, qd, tau)))
    return write_bag(csv.with_suffix(""), "ros1", records)


@cache
def _identified(name: str, route: str, folder: str) -> dict[str, Any]:
    """`manipgen identify NAME FIT --validate VAL --json` on the hostile runs of seeds 1 and 2, written
    as CSV (``route`` "csv") or as ROS 1 bags of the same rows ("bag"): the JSON."""
    import contextlib
    import io

    fit, _, _ = _record(name, 1, FIT_SECONDS, folder)
    val, _, _ = _record(name, 2, VAL_SECONDS, folder)
    if route == "bag":
        dof = load_robot(name).dof
        fit, val = _as_bag(fit, dof), _as_bag(val, dof)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["identify", name, str(fit), "--validate", str(val), "--json"])
    assert code == 0, out.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


@pytest.mark.parametrize(
    "name,route", [("ur5", "csv"), ("kuka_iiwa14", "csv"), ("franka_panda", "csv"), ("franka_panda", "bag")]
)
def test_the_identified_model_is_no_worse_than_plain_least_squares_on_any_joint(
    name: str, route: str, folder: str
) -> None:
    """Issue #44's goal for another arm, on the model identify gives the generated C (the physical
    parameters with the friction terms: config_identified.json), not only on the unconstrained base
    fit: validated on VAL, no joint above 1.02 x the plain least-squares baseline's RMS, and the sum at
    most 0.95 x it where the model has something to find beyond the baseline's columns (the UR5's
    planted offset and Stribeck term). The Panda's description has no Coulomb friction, so its hostile
    plant plants none (offset FC_1 / 2 = 0, Stribeck FS = FC_2 = 0) and both fits sit at the torque
    noise (1e-3 x the torque limit: 0.087 N m on joints 1-4, the validation RMS 0.084-0.088): there
    the issue's per-joint bound is the test.

    Both arms' truths are physically consistent (the description is the plant), so a physical fit of
    the whole model predicts as well as the base fit. With the objective over the essential parameters
    only (Xu et al.'s Table 1, PhysicalSettings(objective="essential")), the eliminated base
    parameters drifted within their 3-sigma range unseen by the fit and carried into the model:
    Panda joint 2 1.10 x the baseline (in-sample RMS 0.044 against 0.013 N m), UR5 joint 4 1.023 x.
    The same log as a ROS bag identifies as the CSV does, to the last bit: identify fits the bag's own
    positions, efforts (measured at the stamps) and velocities, as a CSV's. Until 2026-11-30 it fitted
    the positions rounded to the encoder's counts and averaged the efforts over two samples as an NPZ's
    held torque: other estimates, the Panda's wrist joints 6 and 7 at 1.051 and 1.027 x with the
    physical fit unweighted, 0.971 and 0.988 x weighted as the base fit."""
    _, _, planted = _record(name, 1, FIT_SECONDS, folder)
    doc = _identified(name, route, folder)
    if route == "bag":
        csv = _identified(name, "csv", folder)
        for key in ("base", "physical"):
            assert doc["validation_rms"][key] == csv["validation_rms"][key], (key, doc["validation_rms"], csv)
        assert doc["baseline_ls"]["validation_rms"] == csv["baseline_ls"]["validation_rms"]
    baseline = doc["baseline_ls"]
    assert "skipped" not in baseline, baseline
    model, plain = np.array(doc["validation_rms"]["physical"]), np.array(baseline["validation_rms"])
    assert np.all(model <= 1.02 * plain), model / plain
    if any(planted["offsets"]):
        assert model.sum() <= 0.95 * plain.sum(), (model.sum(), plain.sum())


def _split_in_time(csv: Path, share: float) -> tuple[Path, Path]:
    """The CSV's rows before and from ``share`` of its duration, each with the header: one run cut
    in two as a user splits a log to fit on one part and validate on the rest."""
    lines = csv.read_text().splitlines()
    head, rows = lines[0], lines[1:]
    stamps = [float(r.split(",", 1)[0]) for r in rows]
    cut = stamps[0] + share * (stamps[-1] - stamps[0])
    parts = [[r for r, t in zip(rows, stamps) if t < cut], [r for r, t in zip(rows, stamps) if t >= cut]]
    out = []
    for name, part in zip(("fit", "val"), parts):
        path = csv.with_name(f"{csv.stem}_{name}.csv")
        path.write_text("\n".join([head, *part]) + "\n")
        out.append(path)
    return out[0], out[1]


def test_one_run_split_in_time_keeps_a_planted_offset(folder: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #44's protocol for the other arm: one run split 60/40 in time, identify on the first
    part, validate on the rest. A Panda plant (sign Coulomb description, FC 0) with offsets on
    joints 1 (0.3 N m, its axis vertical: no gravity column imitates a constant there) and 5, and
    Stribeck terms on joints 2 and 4 (a reviewer's recipe, 2026-12-01). The first 24 s hold one
    stretch (the last held-out block) at a pose the rest never reaches, where the shared rigid-body
    parameters extrapolate: joint 1's held-out RMS there rose from 0.65 to 1.11 N m with the offset
    while the other four blocks fell 25-fold. Judged by the pooled held-out RMS (until 2026-12-01)
    the offset was never offered, and joint 1 validated at 4.5 x plain least squares (the sum 1.32
    x). Now joint 1 keeps an offset and validates within 1.02 x the plain least-squares baseline
    (plain least squares carries an offset per joint, so a model without joint 1's cannot reach its
    RMS there), and the sum is at most 0.95 x it (the issue's goals). The issue's per-joint goal for
    the other joints is not asserted on this one draw: it holds on some draws of this recipe and not
    on others (2026-12-01: seed 5's joint 4 validated at 1.010 x, and at 1.023 x once the generated
    sin and cos changed the simulated run's last bits; seed 2's joint 3 at 1.10 x), so one draw's
    figure is not a property of the code. They are reported in the issue instead."""
    run, _, planted = _record(
        "franka_panda", 5, 40.0, folder, "--offset", "1:0.3,5:-0.1", "--stribeck", "2:0.5:0.07,4:0.4:0.07"
    )
    assert planted["offsets"][0] == 0.3
    fit, val = _split_in_time(run, 0.6)
    code, doc = _cli_json(capsys, "identify", "franka_panda", str(fit), "--validate", str(val), "--json")
    assert code == 0, doc
    joint1 = doc["friction_terms"]["structure"][0]
    assert any(t["kind"] == "FO" and t["kept"] for t in joint1["trials"]), joint1
    plain = np.array(doc["baseline_ls"]["validation_rms"])
    for which in ("base", "physical"):  # the physical set: what config_identified.json carries
        model = np.array(doc["validation_rms"][which])
        assert model[0] <= 1.02 * plain[0], (which, model / plain)
        assert model.sum() <= 0.95 * plain.sum(), (which, model.sum() / plain.sum())
        # the JSON states the ratios it is judged by (the sums' quotient, to its rounding)
        assert doc["baseline_ls"][f"{which}_ratio_sum"] == pytest.approx(model.sum() / plain.sum(), rel=1e-12)


def test_velocity_recorded_without_a_recorded_velocity_is_refused(
    folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`identify --velocity recorded` on a log that records no velocity (the hostile CSV without its
    qd columns) is refused in one line naming the file, instead of fitting the estimate silently."""
    fit, _, _ = _record("franka_panda", 1, FIT_SECONDS, folder)
    n = load_robot("franka_panda").dof
    rows = fit.read_text().splitlines()
    keep = [0, *range(1, 1 + n), *range(1 + 2 * n, 1 + 3 * n)]  # time, q, tau
    bare = tmp_path / "no_velocity.csv"
    bare.write_text("\n".join(",".join(row.split(",")[i] for i in keep) for row in rows) + "\n")
    capsys.readouterr()
    assert main(["identify", "franka_panda", str(bare), "--velocity", "recorded", "--json"]) == 2
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.startswith("manipgen: error:")]
    assert len(lines) == 1 and str(bare) in lines[0] and "--velocity recorded" in lines[0], out


def test_identify_validates_when_no_joint_keeps_a_term(
    folder: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run where the held-out choice keeps no friction term on any joint (found on the hostile
    Panda's ROS-bag route, where identify --validate stopped with "cannot reshape array of size 0"):
    identify validates the description's model, its physical set is the plain physical fit (no
    second fit with no terms), and the JSON still reports every joint's trials. The choice is made
    to keep nothing here (its verdicts replaced), so the case does not hang on one log's last bits."""
    from host_tools.identification import friction_terms, run

    def keep_nothing(*args: Any, **kwargs: Any) -> friction_terms.Selection:
        sel = friction_terms.select(*args, **kwargs)
        n = len(sel.trials)
        none = (None,) * n
        trials = [[{**t, "kept": False} for t in row[:1]] for row in sel.trials]
        return friction_terms.Selection(
            friction_terms.FrictionTerms(none, none, none, none, none), sel.cv_rms_plain, sel.cv_rms_plain, trials
        )

    monkeypatch.setattr(run, "select", keep_nothing)
    fit, _, _ = _record("franka_panda", 1, FIT_SECONDS, folder)
    val, _, _ = _record("franka_panda", 2, VAL_SECONDS, folder)
    code, doc = _cli_json(capsys, "identify", "franka_panda", str(fit), "--validate", str(val), "--json")
    assert code == 0, doc
    assert [row["form"] for row in doc["friction_terms"]["structure"]] == ["viscous + Coulomb"] * 7
    assert not [name for name in doc["base"] if name[:2] in friction_terms.KINDS]
    assert len(doc["validation_rms"]["physical"]) == 7 and all(np.isfinite(doc["validation_rms"]["physical"]))


# the smooth-friction Panda plant (test below): viscous and Coulomb friction per joint, N m s/rad and N m,
# of the order a 7-joint arm of this size shows, on a description that has none (FV 0.003, FC 0)
SMOOTH_PLANT = {"FV": (0.07, 0.2, 0.04, 0.25, 0.03, 0.1, 0.02), "FC": (0.27, 0.44, 0.32, 0.64, 0.42, 0.15, 0.28)}
SMOOTH_SCALE_PLANT = 0.15  # rad/s: the plant's Coulomb shape tanh(qd / 0.15), a sigmoid friction


def test_a_smooth_coulomb_plant_under_a_sign_description(
    folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #44 item 1, the Coulomb shape chosen by the data: a Panda whose plant's Coulomb friction
    is smooth (tanh(qd / 0.15), FC 0.15-0.64 N m, FV 0.02-0.25 N m s/rad, three offsets), identified
    with the bundled description (`coulomb: sign`, FC 0). The sgn column alone cannot follow friction
    that rises through zero velocity over a tenth of a rad/s: validated on another run, the base fit
    was 1.40 x plain least squares (its joint 4 3.4 x) and the physical set 2.52 x. With the smooth
    Coulomb term among the friction terms, some joints take it (offered with a positive coefficient:
    friction that rises with speed), and both the base fit and the model the generated C gets meet the
    issue's goals for another arm: a validation sum at most 0.95 x plain least squares and no joint
    above 1.02 x (measured 0.70 and 0.73 x, every joint at most 0.92 and 0.98 x). Before a joint
    whose first offer was refused could still take the smooth shape (2026-11-30), joints 5 and 6 of
    the physical set were at 1.15 and 1.12 x: joint 6's first offer (a load-dependent term) was
    refused and it was never asked again, and joint 5 built the smooth rise from a wide Stribeck shape
    over a negative FC, which the physical set (FC >= 0) cannot follow."""
    from codegen.resources import bundled_robot_path

    bundled = bundled_robot_path("franka_panda")
    assert bundled is not None
    text = bundled.read_text().replace("name: franka_panda", "name: panda_smooth_friction")
    parts = text.split("    FV: 0.003\n")
    assert len(parts) == 8  # one per joint
    plant = tmp_path / "panda_smooth_friction.yaml"
    plant.write_text(
        parts[0]
        + "".join(
            f"    FV: {fv}\n    FC: {fc}\n{rest}"
            for fv, fc, rest in zip(SMOOTH_PLANT["FV"], SMOOTH_PLANT["FC"], parts[1:])
        )
    )
    runs = []
    for seed, seconds in ((1, FIT_SECONDS), (2, VAL_SECONDS)):
        csv = tmp_path / f"smooth_{seed}.csv"
        args = ["record", str(plant), "--hostile", "--seed", str(seed), "--duration", str(seconds)]
        args += ["--coulomb-scale", str(SMOOTH_SCALE_PLANT), "--offset", "1:0.1,3:-0.08,6:0.05", "--out", str(csv)]
        assert main(args) == 0
        runs.append(csv)
    capsys.readouterr()
    code, doc = _cli_json(capsys, "identify", "franka_panda", str(runs[0]), "--validate", str(runs[1]), "--json")
    assert code == 0, doc
    forms = [row["form"] for row in doc["friction_terms"]["structure"]]
    smooth = [j + 1 for j, form in enumerate(forms) if "smooth Coulomb" in form]
    # offered only where its fit is positive in every held-out block; terms a joint takes after it
    # may share its part (a wide Stribeck shape sgn(qd) exp(-(qd / 0.5)^2) with FC of the other sign
    # is smooth too): at least one joint keeps it positive in the fit with every term
    assert any(doc["base"][f"FT{j}"]["value"] > 0 for j in smooth), [doc["base"][f"FT{j}"] for j in smooth]
    plain = np.array(doc["baseline_ls"]["validation_rms"])
    for key in ("base", "physical"):
        ours = np.array(doc["validation_rms"][key])
        assert ours.sum() <= 0.95 * plain.sum(), (key, ours / plain)
        assert np.all(ours <= 1.02 * plain), (key, ours / plain)
    # with the drive's recorded (filtered, lagging) velocity the base fit's terms build joint 5's
    # rise from a Stribeck bump over a negative FC and joint 6's from a wide tanh over a negative FV:
    # the physical set follows them (its FV, FC box extends to their negative estimates where terms
    # stand beside them) and is no worse than the base fit or plain least squares on any joint
    # (before the box extended: joints 5 and 6 at 1.10 and 1.05 x plain least squares, against the
    # base fit's 0.20 and 0.72 x); and no joint above the 1.02 x plain least squares (joint 2
    # was at 1.06 / 1.07 x while an offset whose held-out RMS over all blocks rose, 0.0531 -> 0.0534,
    # passed on its blocks' unweighted mean relative gain: the blocks are now weighted by their rows)
    code, doc = _cli_json(
        capsys, "identify", "franka_panda", str(runs[0]), "--validate", str(runs[1]), "--velocity", "recorded", "--json"
    )
    assert code == 0, doc
    plain = np.array(doc["baseline_ls"]["validation_rms"])
    base, physical = (np.array(doc["validation_rms"][key]) for key in ("base", "physical"))
    assert physical.sum() <= 0.95 * plain.sum(), physical / plain
    assert np.all(physical <= 1.02 * np.maximum(plain, base)), (physical / plain, base / plain)
    assert np.all(physical <= 1.02 * plain) and np.all(base <= 1.02 * plain), (physical / plain, base / plain)


@pytest.mark.parametrize("name", ROBOTS)
def test_auto_velocity_rejects_a_sluggish_drive_velocity(name: str, folder: str) -> None:
    """A drive whose velocity filter has a 50 ms time constant: its recorded velocity lags the motion by
    about 50.5 ms (T + Ts / 2), so at every reversal its sign is wrong for that long and the Coulomb
    torque it predicts is off by 2 FC (the UR5: 10-12 N m on joints 1-3; the iiwa: 0.5-1 N m on joints
    1, 2) for 50 ms, against the estimate from the positions, zero-phase filtered (no lag), whose
    error is the encoders' quantisation through the 10 Hz differentiator (below 1e-3 rad/s here).
    auto must keep the estimate, on the fitting run and alike on another run (seed 2): the choice is
    a property of the velocity, not of one run's blocks."""
    from host_tools.identification.pipeline import IdentSettings
    from host_tools.identification.run import choose_velocity

    robot = load_robot(name)
    settings = IdentSettings(velocity="auto")
    for seed, seconds in ((1, FIT_SECONDS), (2, VAL_SECONDS)):
        csv, _, planted = _record(name, seed, seconds, folder, "--drive-filter", "0.05")
        assert planted["drive_filter"] == 0.05
        f = read_log(csv, robot)
        assert f.samples is not None and f.samples.qd is not None
        _, doc, _, _ = choose_velocity(robot, f.samples, None, settings, None)
        assert doc["used"] == "estimate", doc["held_out_rms_sum"]


def test_hostile_flags_are_checked_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad hostile flags stop `record` with one line naming the flag, before any simulation."""
    out = str(tmp_path / "x.csv")
    cases = [
        (["--out", out], "belong to --hostile"),
        (["--hostile", "--out", out, "--offset", "1=3"], "--offset: '1=3': expected J:V"),
        (["--hostile", "--out", out, "--stribeck", "5:1:0.1"], "--stribeck: joint 5: planar2 has joints 1..2"),
        (["--hostile", "--out", str(tmp_path / "x.txt")], "written as .npz, .csv or .bag"),
        (["--out", str(tmp_path / "x.bag")], "a .csv or .bag --out and several --out belong to --hostile"),
        (["--hostile", "--out", out, "--gap-samples", "9-3"], "gap samples 1 <= first <= last"),
    ]
    for flags, message in cases:
        capsys.readouterr()
        assert main(["record", "planar2", *flags]) == 2, flags
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (flags, err)
    assert not (tmp_path / "x.csv").exists()


def test_the_physical_fit_with_terms_weighs_the_joints_as_the_fit_with_terms(
    folder: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The physical fit stands beside a least-squares fit and carries its per-joint WLS weights
    (1 / its residual variance per joint): with friction terms, the weights of the fit with the terms.
    On the hostile UR5 the planted offset and Stribeck term leave joints 1 and 2 a residual the terms
    remove: by about (3.7 / 0.13)^2 ~ 800 and (2.0 / 0.4)^2 ~ 25 (their held-out RMS without and with
    the terms, docs/realtime.md 'Hostile logs'), so the bounds below (10 and 2) leave an order of
    magnitude for the in-sample residuals to differ from the held-out ones. With the plain fit's
    weights the physical set validated at up to 0.894 x plain least squares per joint, with these 0.82-0.83 x."""
    import host_tools.identification.run as run

    calls: list[tuple[bool, np.ndarray]] = []
    real = run.retrieve

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append((kwargs.get("extra") is not None, np.asarray(kwargs["weights"], float)))
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "retrieve", spy)
    fit, _, _ = _record("ur5", 1, FIT_SECONDS, folder)
    code, doc = _cli_json(capsys, "identify", "ur5", str(fit), "--json")
    assert code == 0, doc
    plain = next(w for extra, w in calls if not extra)
    terms = next(w for extra, w in calls if extra)
    n = 6
    # one weight per joint, repeated along the equations: compare the joints' (first rows)
    assert np.unique(plain[:n]).size == n and np.unique(terms[:n]).size == n
    assert terms[0] > 10 * plain[0] and terms[1] > 2 * plain[1], terms[:n] / plain[:n]


def test_record_says_how_many_rows_a_hostile_log_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`record --hostile` drops the planted gaps' rows and adds the repeats: its summary may not call
    the simulated run's sample count the samples written (it said '30001 samples' beside '29975 rows')."""
    import re

    csv = tmp_path / "p2.csv"
    assert main(["record", "planar2", "--hostile", "--duration", "30", "--seed", "3", "--out", str(csv)]) == 0
    out = capsys.readouterr().out
    rows = int(re.search(r"hostile: (\d+) rows", out)[1])  # type: ignore[index]
    assert rows == len(csv.read_text().splitlines()) - 1  # the header
    wrote = next(line for line in out.splitlines() if line.startswith("wrote "))
    assert all(int(k) == rows for k in re.findall(r"(\d+) samples", wrote)), wrote


@pytest.mark.parametrize("seconds", ["1", "2"])
def test_a_hostile_run_too_short_for_its_defects_is_one_clear_line(
    seconds: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run shorter than twice the defects' distance from its ends (no row can take one) says so in
    one line naming --duration, as a run with room for fewer defects than asked does (found by a
    fresh-clone check: numpy's "low >= high" came through)."""
    out = tmp_path / "short.npz"
    capsys.readouterr()
    assert main(["record", "planar2", "--hostile", "--duration", seconds, "--out", str(out)]) == 2
    err = capsys.readouterr()
    lines = [line for line in (err.out + err.err).splitlines() if line.startswith("manipgen: error:")]
    assert len(lines) == 1 and "too short" in lines[0] and "--duration" in lines[0], err


def _dense_defects(csv: Path, repeats: int, gaps: int, seed: int) -> Path:
    """The CSV with ``repeats`` rows replaced by the row before (values, not the stamp) and ``gaps``
    runs of 3-9 rows left out, at random rows at least 1 s from the ends and with no spacing between
    them (record --hostile keeps its defects 1.2 s apart; a real arm's log has them tens of ms apart)."""
    rng = np.random.default_rng(seed)
    head, *rows = csv.read_text().splitlines()
    inner = np.arange(1000, len(rows) - 1000)
    drop = {int(k) + i for k in rng.choice(inner, gaps, replace=False) for i in range(int(rng.integers(3, 10)))}
    stale = {int(k) for k in rng.choice(inner, repeats, replace=False)} - drop
    out, before = [head], ""
    for k, row in enumerate(rows):
        if k in drop:
            continue
        if k in stale:
            row = row.split(",", 1)[0] + "," + before.split(",", 1)[1]
        out.append(row)
        before = row
    dense = csv.with_name(csv.stem + "_dense.csv")
    dense.write_text("\n".join(out) + "\n")
    return dense


def test_identify_fits_a_log_with_a_timing_defect_every_50_ms(folder: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A run with 300 repeated rows and 120 gaps in 20 s (a defect every 48 ms on average, as dense as
    issue #44's real log: 504 gaps and 1,131 repeats in one run) is identified with the defaults
    (`manipgen identify`): around each timing finding at most a quarter of the run's mean spacing of
    them (or of the distance to its neighbour, if larger) is left out, not 0.5 s (which leaves only
    the defect-free second at either end: 7 equations for the Panda's 62 parameters; docs/real-data.md,
    "Timing findings").

    What the defects cost is what the fit loses to them on the samples it keeps: the same samples of
    the same run without the defects (the clean run, the dense run's left-out mask given as it is)
    must validate within 1 % of it. Measured: 0.09 % (1.4753 against 1.4766 N m); the clean run with
    every sample validates at 1.4269, the difference being which samples the timing findings take,
    not their artifacts."""
    clean, _, _ = _record("ur5", 1, 20.0, folder, "--gaps", "0", "--repeats", "0")
    val, _, _ = _record("ur5", 2, 12.0, folder, "--gaps", "0", "--repeats", "0")
    dense = _dense_defects(clean, 300, 120, 3)
    robot = load_robot("ur5")
    f = read_log(dense, robot)
    checks = check_log(f.log, robot, dense.name)
    assert {x.kind for x in checks.findings} <= {"gap", "repeat"} and len(checks.findings) > 300, checks.lines()
    # with 0.5 s around each, only the defect-free second at either end would be left
    kept = np.flatnonzero(~with_settling(checks.flagged, robot.sample_period)) * robot.sample_period
    assert np.all((kept < 1.0) | (kept > 19.0)), kept
    code, doc = _cli_json(capsys, "identify", "ur5", str(dense), "--validate", str(val), "--json")
    assert code == 0, doc
    mask = checks.left_out(robot.sample_period, TIMING_SETTLE_FIT)
    assert 0.2 < mask.mean() < 0.7  # capped: about half of a run dense with defects goes (62 % here)
    c, v = read_log(clean, robot), read_log(val, robot)
    assert c.samples is not None and v.samples is not None and len(c.log) == len(mask)
    same = identify_run(
        robot,
        c.samples,
        None,
        v.samples,
        recorded_run_settings(robot),
        checks=InputChecks(LogChecks(clean.name, [], mask, settled=True), check_log(v.log, robot, val.name)),
    )
    assert same.validation is not None
    ours, theirs = sum(doc["validation_rms"]["base"]), float(np.sum(same.validation.rms["base"]))
    assert abs(ours - theirs) <= 0.01 * theirs, (ours, theirs)


def test_record_writes_the_same_rows_as_a_ros1_bag(tmp_path: Path) -> None:
    """`record --hostile --out run.csv --out run.bag`: one sensor_msgs/JointState per CSV row, read
    back with rosbags' own reader (not ours): stamped at the row's time (from the writer's epoch; the
    CSV's 12 significant digits: EPS), received at that stamp, the description's joint names, and
    the row's position, velocity and effort (the CSV's 12 digits: a relative 1e-11, 1e-12 N m or
    rad absolute below 1). Then import-log reads the bag as it reads the CSV: the same findings."""
    from rosbags.highlevel import AnyReader

    robot = load_robot("ur5")
    run = tmp_path / "run"
    args = ["record", "ur5", "--hostile", "--duration", "20", "--seed", "3", "--out", str(run.with_suffix(".csv"))]
    assert main([*args, "--out", str(run.with_suffix(".bag"))]) == 0
    rows = np.loadtxt(run.with_suffix(".csv"), delimiter=",", skiprows=1, ndmin=2)
    n = robot.dof
    stamps: list[int] = []
    messages: list[Any] = []
    with AnyReader([run.with_suffix(".bag")]) as reader:
        for connection, received, raw in reader.messages():
            msg: Any = reader.deserialize(raw, connection.msgtype)
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            assert connection.topic == "/joint_states" and received == stamp
            stamps.append(stamp)
            messages.append(msg)
    assert len(messages) == len(rows)
    t = (np.array(stamps) - stamps[0]) * 1e-9
    np.testing.assert_allclose(t, rows[:, 0] - rows[0, 0], rtol=0, atol=EPS)
    assert all(list(m.name) == [j.name for j in robot.joints] for m in messages)
    for k, field in enumerate(("position", "velocity", "effort")):
        got = np.array([getattr(m, field) for m in messages])
        np.testing.assert_allclose(got, rows[:, 1 + k * n : 1 + (k + 1) * n], rtol=1e-11, atol=1e-12)
    found = {}
    for route in ("csv", "bag"):
        path = run.with_suffix(f".{route}")
        found[route] = [
            (f.kind, f.first, f.last) for f in check_log(read_log(path, robot).log, robot, path.name).findings
        ]
    assert found["bag"] == found["csv"] and len(found["csv"]) == 9  # the 4 planted gaps and 5 repeated rows


def test_a_row_by_row_replay_steps_through_gaps_and_stale_rows(folder: str) -> None:
    """The NPZ route (rows taken one by one) replayed through the pipeline for a threshold design
    (host_tools.studies.thresholds.replay, host_tools.data.checks.on_its_clock): a gap's missing
    samples and a repeated row's stale counts are not valid samples there, so the residual next to
    them is the run's own. Stepped row by row instead, the estimator takes a gap's 5-10 periods of
    motion (or a stale row's none) as one period's: measured on this run, up to 87 x the largest
    |r| elsewhere (joint 2: 65 N m), decaying over longer than the 0.2 s a design leaves out.

    Bound: within 0.5 s of a finding and 0.5 s of the whole run lie about 45 % of the samples, of the
    same motion; measured 0.63-1.18 x the largest |r| elsewhere. 1.5 x leaves room for where the
    motion's own peaks fall and is still 1/5 of the smallest defect above (joint 1's 2.5 x aside,
    every joint's was 7-87 x)."""
    robot = load_robot("kuka_iiwa14")
    _, npz, planted = _record("kuka_iiwa14", 1, FIT_SECONDS, folder)
    log = read_log(npz, robot).log
    rt = load_rt(robot, "kalman", "momentum", "computed_torque")
    clocked = np.abs(replay(rt, log)["r"])
    rt.reset()
    rt.config["det.threshold"] = 0.0
    row_by_row = np.abs(rt.run(log)["r"])
    t = np.asarray(log.time)
    near = t < 1.0  # the observer's start
    for a, b in planted["gaps"]:
        near |= (t >= a - 0.5) & (t <= b + 0.5)
    for at in planted["repeats"]:
        near |= np.abs(t - at) <= 0.5
    assert planted["gaps"] and planted["repeats"] and 0.2 < near.mean() < 0.8
    after = near & (t >= 1.0)
    ratio = clocked[after].max(axis=0) / clocked[~near].max(axis=0)
    assert np.all(ratio < 1.5), ratio
    # the defect it removes, on the same rows: some joint's residual many times its own elsewhere
    assert np.max(row_by_row[after].max(axis=0) / row_by_row[~near].max(axis=0)) > 7.5


def test_a_description_without_coulomb_friction_is_told_what_the_log_does_not_plant() -> None:
    """The default offset (+FC/2 on joint 1) and Stribeck term (FS = FC on joint 2) are sized by the
    description's Coulomb friction: on the Panda (FC = 0, viscous only) they are 0, and the notice
    names both; terms the user gives, or a description with FC (the UR5), leave nothing to say. A
    zero FS plants no Stribeck term, so the planted velocity scale is 0 too."""
    from host_tools.data.hostile import Hostile, plant_friction, unplanted

    panda = load_robot("franka_panda")
    said = unplanted(panda, Hostile())
    assert said is not None and "joints 1 and 2" in said and "--offset J:V" in said and "--stribeck J:FS:VS" in said
    friction = plant_friction(panda, Hostile())
    assert friction.fc[0] == friction.fc[1] == friction.fs[1] == friction.vs[1] == 0.0
    assert unplanted(panda, Hostile(offsets={0: 0.3}, stribeck={1: (0.4, 0.07)})) is None
    only = unplanted(panda, Hostile(offsets={0: 0.3}))
    assert only is not None and "on joint 2," in only and "does not plant the Stribeck term" in only
    assert "offset" not in only and "neither" not in only
    assert unplanted(load_robot("ur5"), Hostile()) is None
    assert plant_friction(load_robot("ur5"), Hostile()).vs[1] == STRIBECK_VELOCITY


def test_record_hostile_prints_the_notice_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented command says it (one line on stderr), the Panda's default run; a short run
    without gaps or repeats (their spacing needs a longer one)."""
    args = ["record", "franka_panda", "--hostile", "--duration", "2", "--gaps", "0", "--repeats", "0"]
    assert main([*args, "--out", str(tmp_path / "panda.csv")]) == 0
    said = [ln for ln in capsys.readouterr().err.splitlines() if "no Coulomb friction (FC = 0)" in ln]
    assert len(said) == 1 and said[0].startswith("manipgen: warning: ") and "franka_panda.yaml: friction: " in said[0]
