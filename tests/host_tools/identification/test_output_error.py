"""Output-error identification (Brunot et al. 2019): the closed-loop model against the loopback (a separate C
path: the pipeline's own rt_step in <robot>_loopback), its integrator's order, the exact
sensitivities against central differences, the diagnostics against closed forms, and the round trip
on ur5 (DIDIM and CLIE near IDIM-LS, CLOE's tiny singular values), the CLI and its errors."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.loopback import SimulationError, simulate
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import RobotSource
from host_tools.data.logs import Log
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.closed_loop import ClosedLoopModel, Loop, oesim_folder
from host_tools.identification.closed_loop_run import OESynthetic, identify_closed_loop, oe_data, synthetic_run
from host_tools.identification.output_error import (
    Identification,
    OEData,
    OESettings,
    Result,
    autocorrelation,
    description_start,
)
from host_tools.reports.output_error import document, tables, write
from tests.tooling import ROOT, cli_in_process, require_tool

STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wvla", "-Werror"]
UR5_SOURCE = RobotSource.of("ur5")
UR5 = UR5_SOURCE.robot()


def _identified(*args: Any) -> tuple[dict[str, Any], dict[str, Result]]:
    """identify_closed_loop's result as the report gives it: (the JSON document, results by method)."""
    result = identify_closed_loop(*args)
    return document(result), result.results


@pytest.fixture(scope="module")
def ur5() -> tuple[ClosedLoopModel, Loop, object]:
    rt = load_rt("ur5", estimator="findiff", observer="none", controller="pid")
    traj = generated_trajectory(load_robot("ur5"), 3.0, rt.sample_period, seed=1)
    return ClosedLoopModel(UR5_SOURCE), Loop.from_rt(rt), traj


def test_closed_loop_model_matches_the_loopback(ur5: tuple) -> None:
    """The model (composed CasADi functions, RK4 once per sample) and the loopback (the generated
    pipeline's rt_step, RK4 8 times per sample) on the same pid loop, encoders fine enough to be exact."""
    model, loop, traj = ur5
    beta = model.ident.true_base()
    sim = model.simulate(beta, loop, traj.q, traj.qd, traj.q[0], traj.qd[0])
    rt = load_rt("ur5", estimator="findiff", observer="none", controller="pid")
    rt.config["enc.cpr"] = np.full(6, 2.0**31)  # 3e-9 rad per count
    rt.config["enc.gear"] = np.ones(6)
    run = simulate(rt, traj, substeps=8)
    assert np.abs(sim.q - run.log.extra["q_true"]).max() < 1e-8  # measured 4e-9
    # the torque differs by the findiff of the 3e-9 rad quantisation times Kd
    assert np.abs(sim.tau - run.log.extra["tau_cmd"]).max() < 1e-3
    assert np.abs(sim.q - traj.q).max() > 1e-3  # not trivially the reference


def test_rk4_at_the_sample_rate_is_fourth_order(ur5: tuple) -> None:
    model, loop, traj = ur5
    beta = model.ident.true_base()
    ref = model.simulate(beta, replace(loop, substeps=16), traj.q, traj.qd, traj.q[0], traj.qd[0]).q
    err = [
        np.abs(model.simulate(beta, replace(loop, substeps=s), traj.q, traj.qd, traj.q[0], traj.qd[0]).q - ref).max()
        for s in (1, 2)
    ]
    assert err[0] < 1e-7  # one RK4 step per sample is enough
    assert 8 < err[0] / err[1] < 32  # halving h divides the error by ~16


@pytest.mark.parametrize("variant", ["pd", "pid_saturated"])
def test_exact_sensitivities_match_central_differences(ur5: tuple, variant: str) -> None:
    """PD; and PID with its integral clamp and the output saturation active part of the time (the
    integral state's sensitivity and the derivatives of fmin/fmax)."""
    model, loop, traj = ur5
    if variant == "pid_saturated":
        loop = loop.with_gains(ki=loop.kp * 2, i_max=0.002, tau_max=loop.tau_max * 0.5)
    beta = model.ident.true_base()
    cols = [0, 10, 23, 40, 47]
    s = model.simulate(beta, loop, traj.q, traj.qd, traj.q[0], traj.qd[0], cols=cols, regressor=True)
    assert np.abs(np.einsum("knb,b->kn", s.y, beta) - s.tau).max() < 1e-9  # Y_b(q, qd, qdd) beta = tau
    if variant == "pid_saturated":
        saturated = np.mean(np.abs(s.tau) >= loop.tau_max * (1 - 1e-12), axis=0)
        assert 0.01 < saturated.max() < 0.5  # sometimes, not always
    for i, c in enumerate(cols):
        h = 1e-6 * max(abs(beta[c]), 1.0)
        plus, minus = beta.copy(), beta.copy()
        plus[c] += h
        minus[c] -= h
        sp = model.simulate(plus, loop, traj.q, traj.qd, traj.q[0], traj.qd[0])
        sm = model.simulate(minus, loop, traj.q, traj.qd, traj.q[0], traj.qd[0])
        for exact, fd in ((s.dq[:, :, i], (sp.q - sm.q) / (2 * h)), (s.dtau[:, :, i], (sp.tau - sm.tau) / (2 * h))):
            assert np.abs(exact - fd).max() <= 1e-4 * np.abs(fd).max(), model.ident.names[c]


def test_finite_difference_sensitivities_agree_with_the_exact_ones(ur5: tuple) -> None:
    model, loop, traj = ur5
    k = len(traj.q)
    data = OEData(0.001, traj.q, np.zeros((k, 6)), traj.q, traj.qd)
    kept = [0, 13, 35, 36]
    beta = model.ident.true_base()
    exact = Identification(model, loop, data, OESettings(sensitivities="exact", workers=2)).sensitivities(
        beta, kept, "tau"
    )
    fd = Identification(model, loop, data, OESettings(sensitivities="fd", workers=2)).sensitivities(beta, kept, "tau")
    assert np.abs(exact - fd).max() <= 1e-3 * np.abs(exact).max()


def test_drive_gains_scale_the_controller_output(ur5: tuple) -> None:
    """tau = G_tau x (controller output): gains / g with G_tau = g is the same loop (the controller's
    gravity compensation off: its model is one vector for all joints)."""
    model, loop, traj = ur5
    beta = model.ident.true_base()
    g = np.array([2.0, 0.5, 4.0, 1.0, 3.0, 0.25])
    plain = replace(loop, ctl_params=np.zeros_like(loop.ctl_params))
    scaled = replace(plain, kp=loop.kp / g, kd=loop.kd / g, tau_max=loop.tau_max / g).with_gains(drive_gain=g)
    a = model.simulate(beta, plain, traj.q, traj.qd, traj.q[0], traj.qd[0])
    b = model.simulate(beta, scaled, traj.q, traj.qd, traj.q[0], traj.qd[0])
    assert np.allclose(a.q, b.q, atol=1e-12, rtol=0) and np.allclose(a.tau, b.tau, atol=1e-9, rtol=0)
    assert (
        np.abs(
            a.q - model.simulate(beta, loop.with_gains(drive_gain=g), traj.q, traj.qd, traj.q[0], traj.qd[0]).q
        ).max()
        > 1e-4
    )  # and G_tau does act


def test_autocorrelation_and_its_bounds() -> None:
    rng = np.random.default_rng(0)
    white = rng.normal(size=(20000, 2))
    ac = autocorrelation(white, 30)
    assert np.allclose(ac[0], 1.0)
    assert np.mean(np.abs(ac[1:]) > 2 / np.sqrt(20000)) < 0.15  # ~5 % outside 2 sigma
    t = np.arange(20000) * 0.001
    sine = np.sin(2 * np.pi * 2 * t)[:, None]
    lag = 10
    assert autocorrelation(sine, lag)[lag, 0] == pytest.approx(np.cos(2 * np.pi * 2 * lag * 0.001), abs=2e-3)


def test_description_start_perturbs_links_consistently() -> None:
    model = ClosedLoopModel(UR5_SOURCE)
    assert np.allclose(description_start(model), model.ident.true_base())
    b = description_start(model, 0.3, seed=4)
    assert not np.allclose(b, model.ident.true_base())
    q = generated_trajectory(model.robot, 1.0, 0.01, seed=2).q
    from host_tools import load

    dyn = load("ur5")
    for qk in q:
        assert np.linalg.eigvalsh(dyn.mass_matrix(qk, params=model.standard(b))).min() > 0


@pytest.fixture(scope="module")
def run12() -> tuple:
    """ur5 on the loopback (12 s, well-tuned PD, quantised encoders, torque noise and an unmodelled
    disturbance): (log, loop, truth, options)."""
    opts = OESynthetic(duration=12.0, seed=2)
    log, loop = synthetic_run(UR5, opts)
    from host_tools.identification.least_squares import model

    return log, loop, model(load_robot("ur5")).true_base(), opts


@pytest.fixture(scope="module")
def round_trip(run12: tuple) -> tuple[dict, dict]:
    """Every method from a CAD model 30 % off."""
    log, loop, truth, opts = run12
    return _identified(
        UR5_SOURCE,
        oe_data(UR5, log),
        loop,
        ["didim", "clie", "cloe"],
        OESettings(),
        "description",
        opts.init_error,
        "essential",
        opts.seed,
        truth,
    )


def test_idim_ls_recovers_the_truth(round_trip: tuple) -> None:
    doc, res = round_trip
    ref = res["idim-ls"]
    assert doc["methods"]["idim-ls"]["median_rel_param_error"] < 0.03  # measured 0.0097
    assert 20 <= len(ref.kept) <= 52 and np.all(ref.rsd > 0)


def test_didim_and_clie_agree_with_idim_ls(round_trip: tuple) -> None:
    doc, res = round_trip
    ref = res["idim-ls"]
    sigma = np.abs(ref.values) * ref.rsd / 100
    for m in ("didim", "clie"):
        r = res[m]
        assert r.names == ref.names
        inside = np.abs(r.values - ref.values) <= 3 * sigma  # Brunot et al. (2019): within LS's 3 sigma
        assert np.mean(inside) >= 0.8, (m, [n for n, i in zip(r.names, inside) if not i])
        assert doc["methods"][m]["median_rel_param_error"] < 0.05  # against the truth (measured 0.0055-0.0067)
        assert r.iterations >= 1 and r.history[-1] < 0.1 * r.history[0]
    # the same optimum: DIDIM's pseudo-linear regression lands where CLIE's Gauss-Newton does
    assert abs(doc["methods"]["didim"]["rel_error_tau"] - doc["methods"]["clie"]["rel_error_tau"]) < 0.0005


def test_cloe_is_insensitive(round_trip: tuple, run12: tuple) -> None:
    """Brunot et al. (2019) §4.3 / Table 2: CLOE's Jacobian has singular values orders of magnitude below CLIE's
    (CLIE = CLOE weighted by the controller). Each method minimises the error on its own output."""
    doc, res = round_trip
    clie, cloe = res["clie"], res["cloe"]
    assert cloe.mu_min < 1e-2 * clie.mu_min and cloe.mu_max < 1e-1 * clie.mu_max
    assert cloe.cond > clie.cond
    log, loop, _, _ = run12
    data = oe_data(UR5, log)
    ident = Identification(ClosedLoopModel(UR5_SOURCE), loop, data)
    s_clie, s_cloe = ident.simulate(clie.full(52)), ident.simulate(cloe.full(52))
    assert np.sum((data.tau - s_clie.tau) ** 2) < np.sum((data.tau - s_cloe.tau) ** 2)
    assert np.sum((data.q - s_cloe.q) ** 2) < np.sum((data.q - s_clie.q) ** 2)
    # residual whiteness (Figs. 1-2): CLOE's position residual is correlated at every lag shown
    assert doc["methods"]["cloe"]["residual_autocorrelation"]["fraction_outside"] > 0.9
    assert doc["methods"]["clie"]["residual_autocorrelation"]["fraction_outside"] < 0.5


def test_didim_step_halving(run12: tuple, round_trip: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DIDIM estimate that cannot be simulated is pulled halfway back and the iteration goes on
    to the same result."""
    log, loop, _, opts = run12
    ident = Identification(ClosedLoopModel(UR5_SOURCE), loop, oe_data(UR5, log))
    # round_trip's IDIM-LS and DIDIM are this run's from this start (identify_closed_loop: the essential
    # set, description_start(init_error, seed)): the same bits as computing them again here
    kept, plain = round_trip[1]["idim-ls"].kept, round_trip[1]["didim"]
    start = description_start(ident.model, opts.init_error, opts.seed)
    calls = []
    original = Identification.simulate

    def flaky(self: Identification, beta: np.ndarray, **kw: object) -> object:
        calls.append(beta.copy())
        if len(calls) == 2:  # the first least-squares estimate
            raise SimulationError("M(q) not positive definite")
        return original(self, beta, **kw)

    monkeypatch.setattr(Identification, "simulate", flaky)
    halved = ident.didim(start, kept)
    assert np.allclose(calls[2], (calls[0] + calls[1]) / 2)  # halfway back to the start
    assert np.all(np.diff(halved.history) < 0)
    assert np.allclose(halved.values, plain.values, rtol=1e-3, atol=1e-4)


def test_drive_gain_on_the_logged_signal(run12: tuple, round_trip: tuple) -> None:
    """A log of the control signal v = tau / G_tau, with the controller in those units (gains and
    its gravity model / G_tau), identifies the same robot as the torque log (Brunot et al. 2019 eq. 5)."""
    log, loop, _, opts = run12
    # N m per unit, e.g. per ampere; a power of two, so that every scaling is exact and the two
    # problems are the same bit for bit (g = 40 left DIDIM's stopping test to the last bits)
    g = 32.0
    v_log = copy.deepcopy(log)
    v_log.tau = log.tau / g
    v_loop = replace(
        loop, kp=loop.kp / g, kd=loop.kd / g, tau_max=loop.tau_max / g, ctl_params=loop.ctl_params / g
    ).with_gains(drive_gain=g)
    model = ClosedLoopModel(UR5_SOURCE)
    a = Identification(model, loop, oe_data(UR5, log))
    b = Identification(model, v_loop, oe_data(UR5, v_log, v_loop.drive_gain))
    assert np.allclose(b.data.tau, a.data.tau, rtol=1e-12, atol=1e-12)
    # a's IDIM-LS and DIDIM from this start are round_trip's (the same run, loop and start)
    kept, ra = round_trip[1]["idim-ls"].kept, round_trip[1]["didim"]
    start = description_start(model, opts.init_error, opts.seed)
    rb = b.didim(start, kept)
    assert np.allclose(ra.values, rb.values, rtol=1e-8, atol=1e-10)
    unscaled = Identification(model, v_loop, oe_data(UR5, v_log)).didim(start, kept)  # G_tau forgotten
    assert not np.allclose(unscaled.values, ra.values, rtol=1e-2)


def test_report_files(round_trip: tuple, tmp_path: Path) -> None:
    doc, res = round_trip
    paths = write(doc, res, tmp_path)
    assert [p.name for p in paths] == ["output_error.json", "output_error.md", "output_error_autocorrelation.png"]
    back = json.loads(paths[0].read_text())
    assert back["methods"]["clie"]["mu_min"] == pytest.approx(res["clie"].mu_min)
    md = paths[1].read_text()
    assert "Table 2" in md and "Table 3" in md and "| cloe |" in md and "2.26e+04" in md  # the paper's beside ours
    assert paths[2].stat().st_size > 10_000


def test_decimated_framework() -> None:
    """Brunot et al. (2019) Tables 4-5, Fig. 3: on the parallel-filtered, decimated signals the singular values
    shrink with the number of rows, CLOE's stay orders of magnitude below, DIDIM and CLIE keep to
    IDIM-LS, and the torque residuals are nearly white."""
    opts = OESynthetic(duration=12.0, seed=2)
    log, loop = synthetic_run(UR5, opts)
    doc, res = _identified(
        UR5_SOURCE,
        oe_data(UR5, log),
        loop,
        ["didim", "clie", "cloe"],
        OESettings(decimate=True),
        "description",
        opts.init_error,
        "essential",
        opts.seed,
    )
    ref = res["idim-ls"]
    for m in ("didim", "clie"):
        assert doc["methods"][m]["within_3sigma_of_idim_ls"] >= 0.8
        assert doc["methods"][m]["residual_autocorrelation"]["fraction_outside"] < 0.3
        assert res[m].mu_min == pytest.approx(ref.mu_min, rel=0.2)  # same rows as IDIM-LS's decimated X
    assert res["cloe"].mu_min < 1e-2 * res["clie"].mu_min
    assert "Table 5, with the decimation filter" in tables(doc)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "host_tools.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=900
    )


def test_cli_synthetic_json() -> None:
    r = _cli("identify", "ur5", "--synthetic", "--method", "didim", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in (
        "method",
        "seconds",
        "iterations",
        "mu_min",
        "mu_max",
        "cond",
        "rel_error_q",
        "rel_error_tau",
        "max_rel_param_error",
    ):
        assert key in doc, key
    assert doc["method"] == "didim" and doc["samples"] == 34500 and doc["iterations"] >= 1
    assert 0 < doc["mu_min"] < doc["mu_max"]
    assert 0.01 < doc["rel_error_tau"] < 0.5  # a fraction (Table 3: a few %), as every ratio of the JSON
    assert 0.0 < doc["max_rel_param_error"] and doc["median_rel_param_error"] < 0.05
    assert doc["idim_ls"]["method"] == "idim-ls" and doc["within_3sigma_of_idim_ls"] >= 0.8


def test_cli_errors_name_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def fails(*args: str, says: tuple[str, ...]) -> None:
        r = cli_in_process(capsys, "identify", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.count("manipgen: error") == 1, r.stderr
        for text in says:
            assert text in r.stderr, (text, r.stderr)

    csv = tmp_path / "run.csv"
    csv.write_text("t,q1,q2,q3,q4,q5,q6,tau1,tau2,tau3,tau4,tau5,tau6\n")
    fails("ur5", str(csv), "--method", "didim", says=("run.csv", "reference trajectory"))
    rt = load_rt("planar2", estimator="findiff", observer="none", controller="pid")
    path = simulate(rt, generated_trajectory(load_robot("planar2"), 0.5, rt.sample_period)).log.save(
        tmp_path / "p2.npz"
    )
    fails("ur5", str(path), "--method", "clie", says=("p2.npz", "not ur5"))
    # a measured log (a bag, or a CSV or bag through import-log) has no reference either
    measured = Log.load(path)
    measured.extra["tau_sampled"] = np.array(True)
    measured.save(tmp_path / "measured.npz")
    fails("planar2", str(tmp_path / "measured.npz"), "--method", "didim", says=("measured.npz", "reference trajectory"))
    # the input checks run first: output error simulates the run whole, flagged samples refuse it
    stamped = Log.load(path)
    stamped.time[100] = stamped.time[99]
    stamped.save(tmp_path / "stamped.npz")
    fails(
        "planar2", str(tmp_path / "stamped.npz"), "--method", "didim", says=("stamped.npz", "flagged", "--keep-flagged")
    )
    short = simulate(rt, generated_trajectory(load_robot("planar2"), 0.1, rt.sample_period)).log.save(
        tmp_path / "s.npz"
    )
    fails("planar2", str(short), "--method", "didim", says=("s.npz", "too short for IDIM-LS"))
    fails("planar2", str(path), "--method", "didim", "--max-iter", "0", says=("--max-iter",))
    fails("planar2", str(path), "--method", "didim", "--excitation", "x.json", says=("--excitation",))
    fails("planar2", "--synthetic", "--method", "didim", "--gains", "g.yaml", says=("--gains",))
    fails("planar2", str(path), "--method", "didim", "--gains", str(tmp_path / "missing.yaml"), says=("missing.yaml",))
    gains = tmp_path / "gains.yaml"
    for text, says in (
        ("kp: [1, 2, 3]\n", ("gains.kp", "2")),
        ("kq: 3\n", ("unknown key", "kq")),
        ("kp: {a: 1}\n", ("gains.kp",)),
        ("kd: true\n", ("gains.kd",)),
        ("ki: '5'\n", ("gains.ki",)),
        ("tau_max: 0\n", ("gains.tau_max", "> 0")),
        ("kp: -1\n", ("gains.kp", ">= 0")),
        ("gravity_compensation: maybe\n", ("gains.gravity_compensation",)),
        ("", ("expected a mapping",)),
        ("[1, 2]\n", ("expected a mapping",)),
        ("1: 2\nkp: 3\n", ("unknown key", "1")),
    ):
        gains.write_text(text)
        fails("planar2", str(path), "--method", "didim", "--gains", str(gains), says=("gains.yaml",) + says)


def test_cli_warns_when_the_loop_does_not_fit(tmp_path: Path) -> None:
    """Gains that are not the controller that ran: the simulated loop does not reproduce the run."""
    rt = load_rt("planar2", estimator="findiff", observer="none", controller="pid")
    path = simulate(rt, generated_trajectory(load_robot("planar2"), 4.0, rt.sample_period, seed=3)).log.save(
        tmp_path / "p2.npz"
    )
    gains = tmp_path / "gains.yaml"
    gains.write_text("kp: 0.5\nkd: 0.05\n")
    r = _cli("identify", "planar2", str(path), "--method", "idim-ls", "--gains", str(gains), "--json")
    assert r.returncode == 0, r.stderr
    assert "manipgen: warning: with the start parameters the simulated positions are" in r.stderr
    doc = json.loads(r.stdout)
    assert any("--gains" in w for w in doc["warnings"])
    # the input checks report the PID's own saturation (tau_max 60 N m on joint 1, the description's
    # limits.tau: a plateau and a limit), which the closed-loop model simulates: reported, not left out
    kinds = {(c["kind"], c["joint"]) for c in doc["checks"]}
    assert kinds == {("saturation", 1), ("limit", 1)} and not doc["flagged_left_out"]
    r = _cli("identify", "planar2", str(path), "--method", "idim-ls", "--json")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["warnings"]
    assert not any("simulated positions" in w for w in warnings)
    assert any("sign(qd)" in w for w in warnings) == any(j.FC != 0 for j in load_robot("planar2").joints)


def test_oesim_generation_is_deterministic() -> None:
    from codegen.emit.oesim import oesim_files

    robot = load_robot("ur5")
    assert oesim_files(robot) == oesim_files(robot)


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_oesim_c_is_strict_c99(cc: str, tmp_path: Path) -> None:
    require_tool(cc)
    folder = oesim_folder(UR5)
    for src in (folder / "host" / "ur5_oesim.c", folder / "ur5_dynamics.c"):
        r = subprocess.run(
            [cc, *STRICT, f"-I{folder}", "-c", str(src), "-o", str(tmp_path / (src.stem + ".o"))],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
