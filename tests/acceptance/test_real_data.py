"""Liu et al.'s own Schunk LWA-4P runs (#11): the drive data, the log import, the generated estimators
on the real encoder stream. The .mat files are not in this repository: they are read from
../shared/data/lwa4p/ (or $MANIPGEN_SHARED_DATA/lwa4p); a user without them gets a skip, CI (which
has them) a failure."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.interpolate
import scipy.io
import scipy.signal

from codegen.blocks.options import parse_estimator
from codegen.model.description import load_robot
from host_tools.bindings.source import RobotSource
from host_tools.cli import main
from host_tools.data.logs import Log
from host_tools.studies.evaluate import EstimatorRequest
from tests.tooling import ROOT

DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", ROOT.parent / "shared" / "data")) / "lwa4p"
RUNS = {"FinDiff": DATA / "4ms_FinDiff_run1.mat", "MovAv": DATA / "4ms_MovAv_run1.mat"}
LWA4P = RobotSource.of("schunk_lwa4p")
RUNS_EXPERIMENT1 = DATA / "Experiment1_data.mat"  # clipped drives from t = 31 s: the input checks flag them


@pytest.fixture(scope="module", autouse=True)
def shared_data() -> None:
    if not all(p.is_file() for p in RUNS.values()):
        message = f"Liu et al.'s LWA-4P runs are not in {DATA}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def drives() -> list[dict[str, float]]:
    """The drive data straight from the data package's model file (independent of our YAML)."""
    m = scipy.io.loadmat(str(DATA / "modelSchunkLWA4P.mat"), squeeze_me=True, struct_as_record=False)
    return [{f: float(getattr(p.DJ, f)) for f in ("k_tau", "k_r", "curr_lim", "tau_lim")} for p in m["robot"].DynPar]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("logs")
    paths = {}
    for run, mat in RUNS.items():
        paths[run] = out / f"{run}.npz"
        assert main(["import-log", str(mat), "--robot", "schunk_lwa4p", "--out", str(paths[run])]) == 0
    return paths


# Today's (#11) identification options: the description's one Coulomb scale, every sample kept
TODAY = ["--band", "15", "--min-speed", "0", "--no-fit-coulomb-scale"]


@pytest.fixture(scope="module")
def identified(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[dict[str, Any], Path]]:
    """``manipgen identify`` with TODAY's options on a run, validated on the other, --json: (its
    JSON, its --out folder), once per run for the module (two tests read the FinDiff run's; a
    validation run does not enter the fit: config_identified.json is byte-identical without it)."""
    done: dict[str, tuple[dict[str, Any], Path]] = {}

    def get(run: str) -> tuple[dict[str, Any], Path]:
        if run not in done:
            other = "FinDiff" if run == "MovAv" else "MovAv"
            out = tmp_path_factory.mktemp(f"identified_{run}")
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = main(
                    ["identify", "schunk_lwa4p", str(RUNS[run]), "--validate", str(RUNS[other]), *TODAY]
                    + ["--json", "--out", str(out)]
                )
            assert code == 0
            done[run] = (json.loads(printed.getvalue()), out)
        return done[run]

    return get


def test_description_has_the_drives_of_the_data(drives: list[dict[str, float]]) -> None:
    robot = load_robot("schunk_lwa4p")
    assert robot.sample_period == 0.004
    for j, d in zip(robot.joints, drives):
        assert j.gear_ratio == d["k_r"] and j.torque_constant == d["k_tau"]
        assert j.limits.current == d["curr_lim"] / 1000 and j.limits.tau == pytest.approx(d["tau_lim"], rel=1e-12)
        assert j.encoder is not None and j.encoder.cpr == 360000 and j.encoder.side == "link"  # 1 mdeg


def test_import_round_trip(logs: dict[str, Path], drives: list[dict[str, float]]) -> None:
    """Counts give back the recorded q; tau is k_r k_tau I_c two samples earlier; the desired
    trajectory and the recorded estimate come through; the NPZ reloads identically."""
    for run, mat in RUNS.items():
        raw = scipy.io.loadmat(str(mat), squeeze_me=True)
        log = Log.load(logs[run])
        assert log.robot == "schunk_lwa4p" and len(log.time) == len(raw["time"]) - 2
        assert np.array_equal(log.time, raw["time"][2:])
        assert np.max(np.abs(log.counts * (2 * np.pi / 360000) - raw["q"][2:])) < 1e-12
        gain = np.array([d["k_r"] * d["k_tau"] for d in drives])
        assert np.allclose(log.tau, gain * raw["I_c"][:-2] / 1000, rtol=1e-14, atol=0)
        assert np.array_equal(log.q_des, raw["q_d"][2:]) and np.array_equal(
            log.extra["qd_hat_logged"], raw["dq_hat"][2:]
        )
        # the desired velocity (q_d's central differences) against an interpolating spline's
        # derivative: they agree closely except at the trapezoid's acceleration steps
        mid = slice(10, -10)
        spline = scipy.interpolate.CubicSpline(raw["time"], raw["q_d"]).derivative()(raw["time"][2:])
        gap = np.abs(log.qd_des[mid] - spline[mid]) / np.max(np.abs(spline))
        assert np.median(gap) < 1e-6 and np.max(gap) < 3e-3, (np.median(gap), np.max(gap))
        again = Log.load(logs[run])
        assert all(np.array_equal(getattr(log, f), getattr(again, f)) for f in ("counts", "tau", "q_des"))


def test_wrong_robot_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import-log", str(RUNS["FinDiff"]), "--robot", "kuka_iiwa14", "--out", str(tmp_path / "x.npz")]) == 2
    assert "q" in capsys.readouterr().err and not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize("run, spec", [("FinDiff", "findiff"), ("MovAv", "movav:p=3")])
def test_generated_estimator_reproduces_the_recording_exactly(run: str, spec: str, logs: dict[str, Path]) -> None:
    from host_tools.studies.log_estimation import recorded_estimator, recorded_match

    log = Log.load(logs[run])
    match = recorded_match(log, parse_estimator(spec), LWA4P)
    assert match["equal"] == match["samples"] == (len(log.time) - 3) * 6, match
    assert recorded_estimator(log, LWA4P) == match


def test_ground_truth_is_liu_filter() -> None:
    """The FIR is MATLAB's window design: order 7, Hamming, 26 Hz at 250 Hz, unit DC gain; written
    out here from the window method's formula."""
    from host_tools.studies.log_estimation import ground_truth_velocity

    n = np.arange(8)
    ideal = 2 * 26 / 250 * np.sinc(2 * 26 / 250 * (n - 3.5))
    h = ideal * (0.54 - 0.46 * np.cos(2 * np.pi * n / 7))
    h /= h.sum()
    assert np.allclose(scipy.signal.firwin(8, 26.0, fs=250.0, window="hamming"), h, rtol=1e-12)
    # through the code: a sine of f Hz comes out scaled by |H(f)|^2 (forwards and backwards) and
    # by central differences' sin(w T) / T instead of w -- at the pass band, the cut-off and beyond
    t = np.arange(0, 8, 0.004)
    for f in (5.0, 26.0, 45.0):
        w = 2 * np.pi * f
        v = ground_truth_velocity(np.sin(w * t)[:, None], 0.004)[500:-500, 0]
        gain = abs(np.sum(h * np.exp(-1j * w * 0.004 * n))) ** 2 * np.sin(w * 0.004) / 0.004
        assert abs(np.max(np.abs(v)) / gain - 1) < 1e-3, f


def test_ise_of_the_recorded_estimate_equals_the_generated_ones(logs: dict[str, Path]) -> None:
    """The ISE plumbing: the recording's own dq_hat, scored by hand against the ground truth, gives
    the generated findiff's ISE; the linear high-gain observer with Table 8's gains beats finite
    differences on the real encoders (Liu et al.'s finding)."""
    from host_tools.identification.pipeline import positions
    from host_tools.studies.log_estimation import estimate, ground_truth_velocity

    log = Log.load(logs["FinDiff"])
    truth = ground_truth_velocity(positions(load_robot("schunk_lwa4p"), log), log.sample_period)
    by_hand = np.sum((log.extra["qd_hat_logged"][3:] - truth[3:]) ** 2, axis=0) * 0.004
    fd = estimate(log, EstimatorRequest("findiff"), LWA4P, "paper")
    assert np.allclose(fd.ise, by_hand, rtol=1e-6)
    lin = estimate(log, EstimatorRequest("linhg"), LWA4P, "paper")
    assert lin.ise.sum() < 0.7 * fd.ise.sum()


def test_evaluate_and_thresholds_accept_the_mat_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["evaluate", "schunk_lwa4p", "--log", str(RUNS["MovAv"]), "--estimators", "movav", "findiff", "--json"])
        == 0
    )
    assert '"recorded_estimator"' in capsys.readouterr().out
    assert main(["thresholds", "schunk_lwa4p", str(RUNS["FinDiff"]), "--model", "description", "--json"]) == 0


# issue #44's LWA-4P goal for thresholds designed on one run with the defaults, checked on other runs
GOAL_SUM, GOAL_RATIO = 53.7, 0.9


@pytest.mark.parametrize("design_run", ["MovAv", "FinDiff"])
def test_default_thresholds_carry_over_to_the_other_run(design_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    """#44: `manipgen thresholds` with the defaults (the description's pipeline, linhg + momentum, and
    --model auto), designed on one run and checked on the other: no false-alarm sample, worst
    max |r| / threshold <= 0.9 and the mean thresholds' sum <= 53.7 N m. auto keeps the model
    identified on the design run, whose held-out blocks each take their margin from a model
    identified without them; the description's model needs more than the goal's sum (56.0 and
    56.2 N m measured, 60.6 and 60.6 with the level at rest's floor, against 37.0 and 34.8; the checks'
    worst ratios 0.76 and 0.73; 37.8, 37.5, 0.73
    and 0.67 before the friction terms' held-out blocks were weighted by their rows, 2026-12-01)."""
    other = "FinDiff" if design_run == "MovAv" else "MovAv"
    assert main(["thresholds", "schunk_lwa4p", str(RUNS[design_run]), "--check", str(RUNS[other]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    model = doc["model"]
    assert model["used"] == "identified" and model["identified"]["held_out_fits"] == doc["margin_from"]["blocks"]
    assert min(model["threshold_mean_sum"].values()) == sum(doc["threshold_mean"]) <= GOAL_SUM, model
    assert doc["check"]["false_alarm_samples"] == [0] * 6
    assert max(doc["check"]["ratio"]) <= GOAL_RATIO, doc["check"]["ratio"]


def test_experiment1_recorded_outputs_are_reproduced(capsys: pytest.CaptureFixture[str]) -> None:
    """Liu et al.'s Experiment 1 holds its own estimators' outputs, switched on at t = 15 s from a zero
    state. Replayed from there, from the zero state too, with Table 8's gains (chosen from the run's
    1 mdeg at 250 Hz) and the paper's forms, from 1 s after the switch-on: finite differences and
    the moving average are the same arithmetic (0), the linear high-gain observer and the Tustin
    Kalman filter agree to
    1e-4 rad/s (measured 1.7e-5 and 3.7e-5: the table's Q and gains are rounded to 4 digits, which
    moves their outputs by about that much; the zero-order-hold Kalman filter with the same Q is
    0.3 rad/s off, issue #27). The recording's ISE is scored like ours, over the same samples."""
    if not RUNS_EXPERIMENT1.is_file():
        pytest.skip(f"{RUNS_EXPERIMENT1} is absent")
    import json

    args = ["evaluate", "schunk_lwa4p", "--log", str(RUNS_EXPERIMENT1), "--gains", "paper", "--json"]
    assert main([*args, "--estimators", "findiff", "movav", "kalman", "linhg"]) == 0
    doc = json.loads(capsys.readouterr().out)
    run = doc["runs"]["Experiment1_data"]
    assert run["switch_on_s"] == pytest.approx(15.0) and run["ise_from_s"] == pytest.approx(16.0)
    gains = run["gains"]["paper"]
    assert gains["kalman"]["estimator"] == "kalman:tustin=1" and gains["movav"]["estimator"] == "movav:p=3"
    # the zero-state start: the first output of a finite difference is q / T, as recorded
    from host_tools.data.formats import read_log
    from host_tools.studies.log_estimation import estimate, recorded_outputs

    log = read_log(RUNS_EXPERIMENT1, load_robot("schunk_lwa4p")).log
    fd = estimate(log, EstimatorRequest("findiff"), LWA4P, "paper")
    assert np.array_equal(fd.qd_hat[fd.start :], recorded_outputs(log)["findiff"][fd.start :])
    for name, bound in (("findiff", 0.0), ("movav", 0.0), ("linhg", 1e-4), ("kalman", 1e-4)):
        rec = gains[name]["recorded"]
        assert rec["from_s"] == pytest.approx(16.0)
        assert rec["max_abs_difference"] <= bound, name
        # the same outputs scored over the same samples: the same ISE to the difference's share
        assert rec["ise"] == pytest.approx(gains[name]["ise"], rel=1e-3), name


def test_experiment1_recorded_outputs_survive_the_log_format(tmp_path: Path) -> None:
    """import-log keeps the six recorded outputs (qd_recorded_<name>, zero before t = 15 s) through
    the NPZ format, and the replay finds their switch-on there too."""
    if not RUNS_EXPERIMENT1.is_file():
        pytest.skip(f"{RUNS_EXPERIMENT1} is absent")
    from host_tools.studies.log_estimation import recorded_outputs, switch_on

    out = tmp_path / "exp1.npz"
    assert main(["import-log", str(RUNS_EXPERIMENT1), "--robot", "schunk_lwa4p", "--out", str(out)]) == 0
    log = Log.load(out)
    raw = scipy.io.loadmat(str(RUNS_EXPERIMENT1))
    rec = recorded_outputs(log)
    assert set(rec) == {"findiff", "movav", "kalman", "linhg", "nlhg", "slimod"}
    assert np.array_equal(rec["kalman"], raw["dq_Kalman"][2:])  # the import's 2-sample current delay
    assert log.time[switch_on(log)] == pytest.approx(15.0)


# Validation RMS per joint (N m) of the independent reference in issue #11: unconstrained least
# squares on 84 columns, fit on a FinDiff run, validated on another run of the same trajectory.
REFERENCE_VALIDATION_RMS = np.array([1.65, 2.78, 1.78, 1.42, 0.83, 0.89])


def test_identification_on_one_run_validates_on_the_other(
    identified: Callable[[str], tuple[dict[str, Any], Path]],
) -> None:
    """#5's pipeline on the recorded (non-periodic) run, with the description's one Coulomb scale
    (the parameters docs/real-data.md's observer table uses): base, essential and physically
    consistent parameters from the FinDiff run, validated on the MovAv run's measured torque. The
    physical parameters are within 10 % of the reference per joint and give a positive definite
    M(q); the base parameters do better than the reference in total and on five joints of six."""
    from host_tools import load

    doc, tmp_path = identified("FinDiff")
    base, phys = np.array(doc["validation_rms"]["base"]), np.array(doc["validation_rms"]["physical"])
    assert doc["validation_torque"] == "measured, unfiltered"
    assert np.all(phys <= 1.10 * REFERENCE_VALIDATION_RMS), phys  # the goal for them
    assert base.sum() < REFERENCE_VALIDATION_RMS.sum()
    better = [0, 1, 2, 3, 5]  # "at least as good" holds on these joints ...
    assert np.all(base[better] <= REFERENCE_VALIDATION_RMS[better]), base
    # ... joint 5 needs its own Coulomb scale (the next test); within 10 % here
    assert base[4] <= 1.10 * REFERENCE_VALIDATION_RMS[4], base
    fitted = load_robot(tmp_path / "schunk_lwa4p_identified.yaml")  # IA >= 0 and so on: it loads
    assert all(j.IA >= 0 for j in fitted.joints)
    dyn = load("schunk_lwa4p")
    pi = np.array(doc["identified_standard"])
    rng = np.random.default_rng(0)
    for q in rng.uniform(-np.pi, np.pi, (50, 6)):
        np.linalg.cholesky(dyn.mass_matrix(q, params=pi))  # raises unless M(q) is positive definite
    # the identified YAML (URDF convention: the DH link frames re-expressed) is that same model
    exported = load(tmp_path / "schunk_lwa4p_identified.yaml")
    for q, qd, qdd in rng.normal(0.0, 1.5, (20, 3, 6)):
        tau = dyn.rnea(q, qd, qdd, params=pi)
        np.testing.assert_allclose(exported.rnea(q, qd, qdd), tau, rtol=0, atol=1e-9 * float(np.linalg.norm(tau)))
    assert (tmp_path / "identification_validation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # config_identified.json carries model.params into the description's generated pipelines: the
    # identified model explains the torque better, so the momentum residual on the fitting run drops
    # on the inertia-dominated joints 1-3 (joints 4-6: friction, unchanged within noise)
    from host_tools.bindings.rt import load_rt, with_config_terms
    from host_tools.data.formats import read_log
    from host_tools.studies.thresholds import design_thresholds

    log = read_log(RUNS["FinDiff"], load_robot("schunk_lwa4p")).log
    # generated with the friction terms the config sets (identify's choice; 0 until it is loaded)
    robot = with_config_terms(load_robot("schunk_lwa4p"), tmp_path / "config_identified.json")
    rt = load_rt(robot, estimator="kalman", observer="momentum")
    nominal = design_thresholds(rt, log).max_residual
    rt.config.load(tmp_path / "config_identified.json")
    np.testing.assert_array_equal(rt.config["model.params"], pi)
    ident = design_thresholds(rt, log).max_residual
    # per joint strictly lower, and together at least 15 % lower (measured 2026-11-30: 4.3-10.7 against
    # 10.0-16.2 N m, 44 % in sum): ident comes from the physical fit's multi-start IPOPT, whose
    # local optimum may move with a machine's last bits; a per-joint 10 % bound had 2 % to spare
    assert np.all(ident[:3] < nominal[:3]), (nominal, ident)
    assert ident[:3].sum() <= 0.85 * nominal[:3].sum(), (nominal, ident)


def _identify(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    import json

    assert main(["identify", "schunk_lwa4p", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_friction_terms_beat_plain_least_squares_on_the_other_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's command as it is (#24, #44): on a recorded run the friction structure (offset,
    Dahl, load-dependent, Stribeck, smooth Coulomb) is chosen per joint on held-out blocks of the
    fitting run; validated on the other run, the base fit beats the plain least-squares baseline on
    the same pair by the issue's goal (sum <= 0.9 x, no joint above 1.02 x; measured 2026-11-30:
    0.623 / 0.629 and at most 0.753 per joint; 2026-12-01: 0.624 / 0.629, at most 0.754), both ways."""
    for fit, val in (("FinDiff", "MovAv"), ("MovAv", "FinDiff")):
        out = tmp_path / fit
        doc = _identify([str(RUNS[fit]), "--validate", str(RUNS[val]), "--out", str(out)], capsys)
        assert (
            doc["settings"]["identification"]["friction_terms"] and doc["settings"]["identification"]["min_speed"] == 0
        )
        base = np.array(doc["validation_rms"]["base"])
        baseline = np.array(doc["baseline_ls"]["validation_rms"])
        assert base.sum() <= 0.9 * baseline.sum(), (base, baseline)
        assert np.all(base <= 1.02 * baseline), (base, baseline)
        assert doc["baseline_ls"]["base_ratio_sum"] == pytest.approx(base.sum() / baseline.sum(), rel=1e-12)
        if fit == "FinDiff":
            # an independent plain least squares (the issue's) gave 8.57 N m on this pair; ours, the
            # same columns and processing, within 2 % (edge trimming and filter details may differ)
            assert baseline.sum() == pytest.approx(8.57, rel=0.02)
            # the physically consistent parameters, fitted with the terms (what config_identified.json
            # gives the generated C), come close to the unconstrained base fit with the terms: sum
            # within 5 % (measured 0.2 % on 2026-11-30, 443ab9f), no joint above 1.25 x (measured 0.996-1.005 x;
            # IPOPT's local optimum may move a little with a machine's last bits), and beat the plain
            # baseline by 0.75 x in sum (measured 0.624)
            phys = np.array(doc["validation_rms"]["physical"])
            assert phys.sum() <= 1.05 * base.sum() and np.all(phys <= 1.25 * base), (phys, base)
            assert phys.sum() <= 0.75 * baseline.sum(), (phys, baseline)
            _terms_online(out, doc, RUNS[val])
            terms = doc["friction_terms"]["per_joint"]
            assert len(terms) == 6 and all(t["joint"] == j + 1 for j, t in enumerate(terms))
            # the run carries the drive's velocity estimate: auto compared both on held-out blocks
            sums = doc["velocity"]["held_out_rms_sum"]
            assert doc["velocity"]["used"] == min(sums, key=sums.get), doc["velocity"]
            # each joint's form names the terms its kept trials added, and those only
            for row in doc["friction_terms"]["structure"]:
                kept = [t["kind"] for t in row["trials"] if t["kept"]]
                assert row["form"].count("+") == 1 + len(kept), row
            # chosen on the fitting run alone: validating on another run picks the same terms
            other = _identify([str(RUNS[fit]), "--validate", str(RUNS_EXPERIMENT1)], capsys)
            assert other["friction_terms"]["per_joint"] == terms
            assert [n for n in doc["base"] if n[:2] in ("FD", "FL", "FS")]
    # the physical parameters are the description's model: its C takes them at run time
    assert (tmp_path / "FinDiff" / "config_identified.json").exists()
    from host_tools import load

    dyn = load(tmp_path / "FinDiff" / "schunk_lwa4p_identified.yaml")
    for q in np.random.default_rng(1).uniform(-np.pi, np.pi, (50, 6)):
        np.linalg.cholesky(dyn.mass_matrix(q))  # raises unless M(q) is positive definite


def _terms_online(out: Path, doc: dict, other: Path) -> None:
    """config_identified.json carries the physical parameters and the friction terms (run-time
    fields of the ``fric`` block) into the generated pipeline (Xu et al. 2020 Table 10): replayed on the
    other run, the momentum observer's max |r| (Kalman estimator, after 0.5 s) is lower than the
    nominal model's on every joint, and the terms take its sum to at most 0.75 x the nominal one
    (measured 28.7 against 53.1 N m, 0.54 x; the parameters alone: 51.8, 0.97 x; docs/real-data.md, Table 10)."""
    import json

    from host_tools.bindings.rt import load_rt, with_config_terms
    from host_tools.data.formats import read_log
    from host_tools.studies.thresholds import replay

    config = json.loads((out / "config_identified.json").read_text())["config"]
    assert {k: config[k] for k in config if k.startswith("fric.")} == doc["friction_terms"]["runtime_config"]
    log = read_log(other, load_robot("schunk_lwa4p")).log
    robot = with_config_terms(load_robot("schunk_lwa4p"), out / "config_identified.json")  # identify's terms
    assert robot.friction_terms  # the description declares none: the config's are generated
    rt = load_rt(robot, estimator="kalman", observer="momentum")
    k0 = int(round(0.5 / rt.sample_period))

    def max_r() -> np.ndarray:
        return np.abs(np.asarray(replay(rt, log)["r"])[k0:]).max(axis=0)

    nominal = max_r()
    rt.config.load(out / "config_identified.json")
    identified = max_r()
    assert np.all(identified < nominal), (identified, nominal)
    assert identified.sum() <= 0.75 * nominal.sum(), (identified, nominal)
    for key in config:  # the parameters without the terms: the terms do the larger part
        if key.startswith("fric.f"):
            rt.config[key] = 0.0
    assert identified.sum() < max_r().sum()


def test_per_joint_coulomb_scales_meet_the_reference_on_every_joint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--fit-coulomb-scale --no-friction-terms: each joint's Coulomb scale is fitted (on the
    fitting run only) and the slow samples kept (the tanh model is defined at rest), and the WLS
    base parameters are at least as good as the reference on every joint, joint 5 included; the
    physical ones within 10 %. The identified YAML carries the chosen scales."""
    doc = _identify(
        [
            str(RUNS["FinDiff"]),
            "--validate",
            str(RUNS["MovAv"]),
            "--fit-coulomb-scale",
            "--no-friction-terms",
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert doc["settings"]["identification"]["min_speed"] == 0.0
    base, phys = np.array(doc["validation_rms"]["base"]), np.array(doc["validation_rms"]["physical"])
    assert np.all(base <= REFERENCE_VALIDATION_RMS), base
    assert np.all(phys <= 1.10 * REFERENCE_VALIDATION_RMS), phys
    scales = doc["coulomb"]["velocity_scale"]
    assert len(scales) == 6 and len(set(scales)) > 1  # a per-joint choice, not one value
    for k, fit_rms in enumerate(np.array(list(doc["coulomb"]["candidates_fit_rms"].values())).T):
        candidates = [float(c) for c in doc["coulomb"]["candidates_fit_rms"]]
        assert scales[k] == candidates[int(np.argmin(fit_rms))]  # each joint's best fit residual
        # no near-tie: the fits are least squares on fixed data, the same on any machine to ~1e-12
        # relative, so a choice ahead by more than 1e-9 cannot flip there -- and with it, the
        # validation figures above (the reference margins are 1-2 %, far beyond rounding)
        best, second = np.sort(fit_rms)[:2]
        assert second - best > 1e-9 * best, (k, fit_rms)
    import json

    identified = load_robot(tmp_path / "schunk_lwa4p_identified.yaml")
    assert identified.coulomb.model == "tanh" and list(identified.coulomb.velocity_scale) == scales
    from host_tools import load

    dyn = load(tmp_path / "schunk_lwa4p_identified.yaml")
    for q in np.random.default_rng(1).uniform(-np.pi, np.pi, (50, 6)):
        np.linalg.cholesky(dyn.mass_matrix(q))  # raises unless M(q) is positive definite
    diag = doc["validation_residual"]  # where the rest of the error is
    assert len(diag["mean"]) == 6 and all(0.5 < p <= 1.0 for p in diag["power_below_cutoff"])
    # the scales are run-time fields of the description's pipelines: config_identified.json carries them
    config = json.loads((tmp_path / "config_identified.json").read_text())["config"]
    assert config["model.coulomb_scale"] == scales and not any(k.startswith("fric.") for k in config)
    from host_tools.bindings.rt import load_rt

    rt = load_rt("schunk_lwa4p", estimator="kalman", observer="momentum")
    rt.config.load(tmp_path / "config_identified.json")
    np.testing.assert_array_equal(rt.config["model.coulomb_scale"], scales)


# Today's (#11) thresholds, 1.2 x max |r| of the momentum observer with the Kalman estimator and the
# identified config (--band 15 --min-speed 0 --no-fit-coulomb-scale): their sum, per design run (#24)
STATIC_SUM = {"MovAv": 53.7, "FinDiff": 54.4}


@pytest.mark.parametrize("design_run", ["MovAv", "FinDiff"])
def test_fitted_thresholds_hold_on_the_other_run(
    design_run: str, identified: Callable[[str], tuple[dict[str, Any], Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    """#24's goal: the config identified on one run, thresholds designed on it with the defaults
    (fitted envelope, margin from held-out blocks) and the Kalman estimator, checked on the other
    run: no false alarm, max |r| / threshold <= 0.85, and the thresholds' mean summed over the
    joints no higher than today's 1.2 x max |r| (on both runs)."""
    other = "FinDiff" if design_run == "MovAv" else "MovAv"
    config = ["--config", str(identified(design_run)[1] / "config_identified.json")]
    command = ["thresholds", "schunk_lwa4p", str(RUNS[design_run]), "--check", str(RUNS[other]), "--json"]
    assert main([*command, "--estimator", "kalman", "--observer", "momentum", *config]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["check"]["false_alarm_samples"] == [0] * 6
    assert max(doc["check"]["ratio"]) <= 0.85, doc["check"]["ratio"]
    assert sum(doc["threshold_mean"]) <= STATIC_SUM[design_run], doc["threshold_mean"]
    assert sum(doc["check"]["threshold_mean"]) <= STATIC_SUM[design_run], doc["check"]["threshold_mean"]
    assert doc["margin_from"]["derived"] and doc["margin"] == max(1.0, doc["margin_from"]["held_out_worst"]) / 0.85
    # the description's estimator (linhg: no q-ddot estimate, ka moot) holds there too
    assert main([*command, *config]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not doc["acceleration"] and doc["ka"] == [0.0] * 6
    assert doc["check"]["false_alarm_samples"] == [0] * 6 and max(doc["check"]["ratio"]) <= 0.85


@pytest.mark.parametrize("design_run", ["MovAv", "FinDiff"])
def test_momentum_form_thresholds_are_checked_as_the_written_config_runs(
    design_run: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The adaptive observer's momentum form (#25, the Kalman estimator's q-dot) holds its adaptation
    on its thresholds (obs.freeze, the block's default). So its residual depends on them, and
    `manipgen thresholds` designs it with them acting on the hold and checks the other real run the
    same way (host_tools.studies.thresholds.holds). The check's residual is the one a fresh pipeline
    computes from the config the command writes, on the other run with no collision latched: its
    largest |r| per joint after the skipped start, bit for bit (the same C on the same inputs; the
    LWA-4P runs have no flagged sample). With detection off, as the design and check were replayed
    before 2026-11-30, the residual is another one here. Designed as it runs, with its default rate
    limit, the form's thresholds hold on the other run (no false alarm, worst ratio <= 0.85), the
    default's sliced covariance update within 10 % of the dense update's (69.9 / 72.4 against 68.6 /
    66.6 N m; the momentum observer's 55.2 / 55.1; without the limit the hold starved the
    adaptation: 298.7 / 156.0 dense; docs/real-data.md)."""
    import json

    from host_tools.bindings.rt import load_rt
    from host_tools.data.formats import read_log
    from host_tools.studies.thresholds import replay

    other = "FinDiff" if design_run == "MovAv" else "MovAv"
    out = tmp_path / "config.json"
    command = ["thresholds", "schunk_lwa4p", str(RUNS[design_run]), "--check", str(RUNS[other]), "--json"]
    assert main([*command, "--estimator", "kalman", "--observer", "adaptive_momentum", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["flagged_left_out"] == 0 and doc["hold_acting"] is True
    robot = load_robot("schunk_lwa4p")
    log = read_log(RUNS[other], robot).log
    rt = load_rt(robot, estimator="kalman", observer="adaptive_momentum")
    rt.config.load(out)
    rt.config["det.debounce"] = float(len(log) + 1)  # no collision latches: every sample's residual
    rt.reset()
    k0 = int(round(doc["skip_s"] / rt.sample_period))
    as_written = np.abs(np.asarray(rt.run(log)["r"], float)[k0:]).max(axis=0)
    assert as_written.tolist() == doc["check"]["max_residual"], (as_written, doc["check"]["max_residual"])
    # not vacuous: the hold acts on the other run, so detection off gives another residual
    off = np.abs(np.asarray(replay(rt, log)["r"], float)[k0:]).max(axis=0)
    assert not np.array_equal(off, as_written), (off, as_written)
    assert doc["check"]["false_alarm_samples"] == [0] * 6 and max(doc["check"]["ratio"]) <= 0.85, doc["check"]
    # its covariance refresh spread over a window (the M4F's budget, issue #47) costs at most the 10 % of
    # the dense update's thresholds that issue #47 allows its detection figures
    assert main([*command, "--estimator", "kalman", "--observer", "adaptive_momentum_dense"]) == 0
    dense = json.loads(capsys.readouterr().out)
    assert dense["check"]["false_alarm_samples"] == [0] * 6 and max(dense["check"]["ratio"]) <= 0.85
    assert sum(doc["threshold_mean"]) <= 1.1 * sum(dense["threshold_mean"]), (doc["threshold_mean"], dense)
    # the momentum observer does not adapt: its residual is the same either way, its thresholds hold
    assert main([*command, "--estimator", "kalman", "--observer", "momentum"]) == 0
    mom = json.loads(capsys.readouterr().out)
    assert mom["hold_acting"] is False
    assert mom["check"]["false_alarm_samples"] == [0] * 6 and max(mom["check"]["ratio"]) <= 0.85


def test_thresholds_check_plot_and_adaptive_tuning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """manipgen thresholds on the adaptive observer: --tune picks an interior noise variance lambda
    whose thresholds' sum is at most the default's (0.1 N^2 m^2 for the estimator-fed observer) and
    under half the grid's smallest (1e-6, which adapts to the estimated q-ddot's noise), the tuned
    config's thresholds flag nothing on the other run (--check), and the plot is written."""
    import json

    from codegen.blocks.adaptive import LAMBDA
    from host_tools.bindings.rt import load_rt

    out, plot = tmp_path / "adaptive.json", tmp_path / "r.png"
    assert (
        main(
            [
                "thresholds",
                "schunk_lwa4p",
                str(RUNS["FinDiff"]),
                "--estimator",
                "kalman",
                "--observer",
                "adaptive",
                "--tune",
                "--check",
                str(RUNS["MovAv"]),
                "--plot",
                str(plot),
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    tuned = doc["tuned"]
    assert LAMBDA.grid[0] < tuned["obs.lam"] < LAMBDA.grid[-1]
    assert tuned["objective"] <= tuned["default_objective"]
    assert tuned["objective"] < 0.5 * tuned["candidates"][0]["objective"]  # lambda = 1e-6
    assert min(c["objective"] for c in tuned["candidates"]) == tuned["objective"]
    assert doc["check"]["false_alarm_samples"] == [0] * 6 and max(doc["check"]["ratio"]) < 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rt = load_rt("schunk_lwa4p", estimator="kalman", observer="adaptive")
    rt.config.load(out)
    assert rt.config["obs.lam"] == tuned["obs.lam"]
    for key in ("threshold", "kv", "ka", "ks", "vs"):
        np.testing.assert_array_equal(rt.config[f"det.{key}"], doc[key])
    # the momentum observer has nothing of this kind to tune; a plot must be a PNG; a missing
    # --check run is named: one clear error each, and no config written
    bad = tmp_path / "bad.json"
    for args, words in (
        (["--observer", "momentum", "--tune"], "nothing to tune"),
        (["--plot", str(tmp_path / "r.svg")], "r.svg"),
        (["--check", str(tmp_path / "missing.mat")], "missing.mat"),
    ):
        assert main(["thresholds", "schunk_lwa4p", str(RUNS["FinDiff"]), *args, "--out", str(bad)]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and err.count("\n") == 1, err
        assert not bad.exists()


def test_coulomb_scale_fit_needs_a_coulomb_term(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fit-coulomb-scale on a description that does not identify FC: one clear error, not a silent
    switch to a tanh model."""
    import re

    text = (
        (ROOT / "robots" / "schunk_lwa4p.yaml")
        .read_text()
        .replace("joint_parameters: [IA, FV, FC]", "joint_parameters: [IA, FV]")
    )
    text = re.sub(r"\n +FC: [^\n]*", "", text)
    assert "joint_parameters: [IA, FV]\n" in text and "FC:" not in text
    (tmp_path / "schunk_lwa4p.yaml").write_text(text)
    assert main(["identify", str(tmp_path / "schunk_lwa4p.yaml"), str(RUNS["FinDiff"]), "--fit-coulomb-scale"]) == 2
    assert "no Coulomb scale to fit" in capsys.readouterr().err
