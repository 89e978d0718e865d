"""Two-stage identification of an elastic arm (Kirchhoff 2011 §4.2, Table 4.1).

1. Actuator side (§4.2.1): per joint tau_m - I_m thetadd = Y_m [d_e, d_vm, k_e, d_Cm] (eq. 4.4), with
   tau_m the motor torque from the current (eq. 4.51; the log's ``tau``), I_m known (data sheet:
   rotor and gear reflected through z^2, eq. 3.18).
2. Load side (§4.2.2): (I + A)^T tau_el = Y_b(q, qd, qdd) beta (eq. 3.24), tau_el computed from the
   measured positions with the k_e, d_e identified in stage 1; beta the base parameters (link
   friction included), the same base regressor as the rigid identification (host_tools.identification.least_squares).

Each stage runs its own excitation (Fourier series, D-optimal for its regressor: host_tools.identification.excitation
with ``stage``), several periods; positions come from the log's counts through the generated encoder
read, both channels; the periods are averaged (eq. 4.45) and differentiated in the frequency domain;
WLS weights are 1 / the variance of the averaged torque per joint (eqs. 4.46-4.47).

``simulated_log`` makes such a log on the loopback (the elastic plant, the state-feedback
controller, both encoders quantised, white noise on the motor torque as a current sensor adds).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import casadi as cs
import numpy as np

from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.excitation import samples_per_period
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.logs import Log, recorded_for
from host_tools.identification.excitation import Excitation
from host_tools.identification.least_squares import Fit, least_squares, model
from host_tools.identification.paper_setups import KIRCHHOFF_IDENTIFICATION
from host_tools.identification.pipeline import ENCODER_READ, torque_at_samples
from host_tools.identification.processing import fourier_derivatives, period_average

MOTOR_PARAMS = ("d_e", "d_vm", "k_e", "d_Cm")  # eq. 4.4's order
FIELD = {"d_e": "damping", "d_vm": "motor_viscous", "k_e": "stiffness", "d_Cm": "motor_coulomb"}


@dataclass(frozen=True)
class ElasticIdentSettings:
    skip_periods: int = 1  # the controller's start-up transient
    # Hz: DFT bins kept for the derivatives. Not the excitation's 0.5 Hz: the arm's response holds
    # its spring resonances (biorob4: up to ~30 Hz); at 10 Hz the load stage's largest error is
    # 3e-2, at 50 Hz 4e-5 (out/elastic study, k_e and d_e identified)
    derivative_band: float = 50.0
    weighted: bool = True  # WLS (eq. 4.47), else OLS
    # also estimate a constant offset of each motor encoder (an incremental encoder referenced
    # imprecisely): a constant column k_e o_j per joint in stage 1; stage 2 reads theta + o
    motor_offsets: bool = False


@dataclass
class Averaged:
    """One averaged period of an elastic arm's run: link and motor positions and derivatives."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    theta: np.ndarray
    thetad: np.ndarray
    thetadd: np.ndarray
    tau_m: np.ndarray
    tau_m_variance: np.ndarray
    periods: int
    sample_period: float


def motor_names(robot: Robot) -> list[str]:
    return [f"{p}{i + 1}" for i in range(robot.dof) for p in MOTOR_PARAMS]


def true_motor_parameters(robot: Robot) -> np.ndarray:
    """The description's [d_e, d_vm, k_e, d_Cm] per joint (eq. 4.4's vector)."""
    return np.array([getattr(j.elastic, FIELD[p]) for j in robot.joints for p in MOTOR_PARAMS])


def positions(robot: Robot, log: Log, config: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """q and theta from the log's counts through the robot's generated encoder read (with the
    logged run's ``config`` JSON, e.g. its enc.motor_offset, if given)."""
    if "motor_counts" not in log.extra:
        raise ValueError("the log has no motor_counts: an elastic arm's identification needs the motor encoders")
    rt = load_rt(robot, *ENCODER_READ, sample_period=log.sample_period)
    if config is not None:
        rt.config.load(config)
    out = rt.run(log)
    return np.asarray(out["q"], float), np.asarray(out["theta"], float)


def check_run(
    name: str, robot: Robot, log: Log, exc: Excitation | None, stage: str | None, settings: ElasticIdentSettings
) -> None:
    """A recorded run fits what it is used for: the robot (name, joints), its stage's excitation
    (robot, joints, stage, the desired motion it tracked) and enough periods -- one message naming it."""
    if log.robot != robot.c_name:
        raise ValueError(f"{name} log: it is of robot {recorded_for(log)!r}, not {robot.name!r}")
    if np.shape(log.counts)[1] != robot.dof:
        raise ValueError(f"{name} log: {np.shape(log.counts)[1]} joints, {robot.name} has {robot.dof}")
    if exc is None:
        if len(log) * log.sample_period < 2.0:
            raise ValueError(f"{name} log: {len(log) * log.sample_period:g} s; validation needs at least 2 s")
        return
    if exc.robot != robot.name or len(exc.q0) != robot.dof:
        raise ValueError(f"{name} excitation: designed for {exc.robot} ({len(exc.q0)} joints), not {robot.name}")
    if exc.stage != stage:
        raise ValueError(
            f"{name} excitation: designed for the {exc.stage} stage, not the {stage} stage "
            f"(manipgen excite --stage {stage})"
        )
    try:
        p = samples_per_period(exc.base_frequency, log.sample_period)
    except ValueError as err:
        raise ValueError(f"{name} log: its sample period does not fit the excitation: {err}") from None
    need = settings.skip_periods + 2  # two averaged periods at least: the WLS weights
    if len(log) // p < need:
        raise ValueError(
            f"{name} log: {len(log) // p} whole periods of {exc.period:g} s; it needs {need} "
            f"({settings.skip_periods} skipped, two to average)"
        )
    planned = exc.trajectory(log.sample_period).q
    if np.max(np.abs(np.asarray(log.q_des, float)[:p] - planned)) > 1e-6:
        raise ValueError(f"{name} log: its desired motion is not this excitation (q_des differs from it)")


def motor_torque(robot: Robot, log: Log, current: bool) -> np.ndarray:
    """The motor torque at the sample instants (torque_at_samples), link side: the log's ``tau`` as it
    is, or with ``current`` the armature currents it holds (A) through tau_m = z k_t i_a (Kirchhoff 2011
    eq. 4.51 at the motor shaft, reflected by the joint's gear_ratio z, eq. 3.15)."""
    tau = torque_at_samples(log)
    if not current:
        return tau
    missing = [j.name for j in robot.joints if not j.torque_constant > 0]
    if missing:
        raise ValueError(
            f"{robot.file}: joints {', '.join(missing)}: torque_constant: needed to turn the "
            "logged currents into motor torques (eq. 4.51)"
        )
    return tau * np.array([j.gear_ratio * j.torque_constant for j in robot.joints])


def average(
    robot: Robot,
    log: Log,
    exc: Excitation,
    settings: ElasticIdentSettings,
    current: bool = False,
    config: str | Path | None = None,
) -> Averaged:
    """Period averaging (eq. 4.45), Fourier derivatives of the averaged positions (Xu et al. 2020 §II-C)."""
    q, theta = positions(robot, log, config)
    try:
        p = samples_per_period(exc.base_frequency, log.sample_period)
    except ValueError as err:
        raise ValueError(f"the log's sample period does not fit the excitation: {err}") from None
    ts = log.sample_period
    qa = period_average(q, p, settings.skip_periods)
    tha = period_average(theta, p, settings.skip_periods)
    tau = period_average(motor_torque(robot, log, current), p, settings.skip_periods)
    q_f, qd, qdd = fourier_derivatives(qa.mean, ts, settings.derivative_band)
    th_f, thd, thdd = fourier_derivatives(tha.mean, ts, settings.derivative_band)
    return Averaged(q_f, qd, qdd, th_f, thd, thdd, tau.mean, tau.variance, qa.periods, ts)


def _weights(variance: np.ndarray, periods: int, weighted: bool) -> np.ndarray | None:
    var = variance.mean(axis=0)
    return 1.0 / var if weighted and periods > 1 and np.all(var > 0) else None


_FUNCTIONS: dict[str, tuple[cs.Function, cs.Function]] = {}


def _functions(robot: Robot) -> tuple[cs.Function, cs.Function]:
    """Y_m(q, qd, theta, thetad) and (I + A)^T tau_el(q, qd, theta, thetad, k_e, d_e) of a robot,
    built once per description (cached by its digest, as host_tools.identification.least_squares.model)."""
    if robot.digest not in _FUNCTIONS:
        dyn = Dynamics(robot)
        ks, ds = cs.SX.sym("k", robot.dof), cs.SX.sym("d", robot.dof)
        args = [dyn.q, dyn.qd, dyn.theta, dyn.thetad]
        _FUNCTIONS[robot.digest] = (
            cs.Function("ym", args, [dyn.motor_regressor()]),
            cs.Function("tj", args + [ks, ds], [dyn.elastic_joint_torque(ks, ds)]),
        )
    return _FUNCTIONS[robot.digest]


def motor_regressor(robot: Robot, q: np.ndarray, qd: np.ndarray, theta: np.ndarray, thetad: np.ndarray) -> np.ndarray:
    """Y_m stacked over the samples: (K n, 4 n)."""
    k, n = np.shape(q)
    wide = np.array(_functions(robot)[0].map(k)(q.T, qd.T, theta.T, thetad.T))  # (n, K 4n)
    return wide.reshape(n, k, 4 * n).transpose(1, 0, 2).reshape(k * n, 4 * n)


def joint_torque(
    robot: Robot,
    q: np.ndarray,
    qd: np.ndarray,
    theta: np.ndarray,
    thetad: np.ndarray,
    stiffness: np.ndarray,
    damping: np.ndarray,
) -> np.ndarray:
    """(I + A)^T tau_el at every sample with the given k_e, d_e: (K, n)."""
    k = len(q)
    return np.array(
        _functions(robot)[1].map(k)(
            q.T,
            qd.T,
            theta.T,
            thetad.T,
            np.tile(np.asarray(stiffness, float)[:, None], k),
            np.tile(np.asarray(damping, float)[:, None], k),
        )
    ).T


def motor_inertia(robot: Robot) -> np.ndarray:
    return np.array([j.elastic.motor_inertia for j in robot.joints if j.elastic is not None])


def actuator_stage(robot: Robot, data: Averaged, settings: ElasticIdentSettings) -> Fit:
    """Stage 1 (eq. 4.4): [d_e, d_vm, k_e, d_Cm] per joint by (W)LS; with settings.motor_offsets
    also c_j = k_e o_j per joint (names c1 ..), o_j the motor encoder's offset (motor_offsets)."""
    n = robot.dof
    y = motor_regressor(robot, data.q, data.qd, data.theta, data.thetad)
    names = motor_names(robot)
    if settings.motor_offsets:
        y = np.hstack([y, np.tile(np.eye(n), (len(data.q), 1))])
        names = names + [f"c{i + 1}" for i in range(n)]
    lhs = data.tau_m - motor_inertia(robot) * data.thetadd
    return least_squares(y, lhs, n, names, _weights(data.tau_m_variance, data.periods, settings.weighted))


def stiffness_damping(robot: Robot, fit: Fit) -> tuple[np.ndarray, np.ndarray]:
    """k_e, d_e per joint out of a stage-1 fit."""
    v = fit.full(len(fit.names))[: 4 * robot.dof].reshape(robot.dof, 4)
    return v[:, MOTOR_PARAMS.index("k_e")], v[:, MOTOR_PARAMS.index("d_e")]


def motor_offsets(robot: Robot, fit: Fit) -> np.ndarray:
    """The motor encoders' offsets o = c / k_e (rad, link side: theta_true = theta_read + o) of a
    stage-1 fit with motor_offsets, else zeros. Add them to enc.motor_offset."""
    n = robot.dof
    if len(fit.names) == 4 * n:
        return np.zeros(n)
    return fit.full(len(fit.names))[4 * n :] / stiffness_damping(robot, fit)[0]


def load_stage(
    robot: Robot,
    log: Log,
    exc: Excitation,
    stiffness: np.ndarray,
    damping: np.ndarray,
    settings: ElasticIdentSettings,
    offsets: np.ndarray | None = None,
    config: str | Path | None = None,
) -> tuple[Fit, np.ndarray, np.ndarray]:
    """Stage 2: (I + A)^T tau_el = Y_b beta, tau_el from the measured positions (theta + the
    stage-1 ``offsets``) and the stage-1 k_e, d_e; the weights from the variance of tau_el over the
    periods (each period differentiated alone). Returns the fit, the stacked Y_b and the averaged
    (I + A)^T tau_el."""
    q, theta = positions(robot, log, config)
    if offsets is not None:
        theta = theta + offsets
    p = samples_per_period(exc.base_frequency, log.sample_period)
    ts, s = log.sample_period, len(q) // p - settings.skip_periods
    if s < 1:
        raise ValueError(f"the log holds {len(q) // p} periods; {settings.skip_periods} skipped leaves none")
    per_period = []
    for j in range(settings.skip_periods, settings.skip_periods + s):
        sl = slice(j * p, (j + 1) * p)
        _, qd, _ = fourier_derivatives(q[sl], ts, settings.derivative_band)
        _, thd, _ = fourier_derivatives(theta[sl], ts, settings.derivative_band)
        per_period.append(joint_torque(robot, q[sl], qd, theta[sl], thd, stiffness, damping))
    stack = np.stack(per_period)
    mean = stack.mean(axis=0)
    var = stack.var(axis=0, ddof=1) / s if s > 1 else np.zeros_like(mean)
    qa = period_average(q, p, settings.skip_periods)
    q_f, qd, qdd = fourier_derivatives(qa.mean, ts, settings.derivative_band)
    m = model(robot)
    y = m.stacked(q_f, qd, qdd)
    fit = least_squares(y, mean, robot.dof, m.names, _weights(var, s, settings.weighted))
    return fit, y, mean


# the (estimator, observer, controller) of the simulated runs: the description's velocity
# estimator (the bundled biorob4's: EWLR), no observer
SIMULATION = (None, "none", KIRCHHOFF_IDENTIFICATION.controller)


def simulation_pipeline(robot: Robot) -> Realtime:
    """The loop the stages' excitations and the validation motion run in: the study's set-up,
    paper_setups.KIRCHHOFF_IDENTIFICATION."""
    rt = load_rt(robot, *SIMULATION)
    KIRCHHOFF_IDENTIFICATION.apply(rt.config, robot)
    return rt


def simulated_log(robot: Robot, exc: Excitation, periods: int, current_noise: float, seed: int) -> Log:
    """The elastic arm tracking the excitation on the loopback (state-feedback controller, EWLR
    estimates; both encoders quantised as described) with white noise of ``current_noise`` N m
    (standard deviation, link side) on the logged motor torque."""
    rt = simulation_pipeline(robot)
    run = simulate(rt, exc.trajectory(rt.sample_period, periods))
    log = run.log
    log.tau = log.tau + np.random.default_rng(seed).normal(0.0, current_noise, log.tau.shape)
    return log


def validation_rms(
    robot: Robot,
    log: Log,
    motor_fit: Fit,
    load_fit: Fit,
    current: bool = False,
    cutoff: float = 10.0,
    config: str | Path | None = None,
) -> dict[str, Any]:
    """On a validation run (not periodic): the RMS of the motor torque predicted by stage 1 (
    Kirchhoff (2011) Table 4.3) and of (I + A)^T tau_el predicted by Y_b beta against the one computed from the
    identified k_e, d_e and the measured positions (Table 4.4's epsilon_RMS, eq. 4.50), and, for a
    simulated log, against the true one. Positions from the encoders, low-passed (zero phase) at
    ``cutoff`` Hz and differentiated; the motor torque low-passed alike."""
    from host_tools.identification.processing import filtered_derivatives, lowpass

    q, theta = positions(robot, log, config)
    theta = theta + motor_offsets(robot, motor_fit)
    ts = log.sample_period
    edge = int(round(0.5 / ts))
    if len(q) < 4 * edge:
        raise ValueError(f"the validation run has {len(q) * ts:g} s; it needs at least {4 * edge * ts:g} s")
    q_f, qd, qdd = filtered_derivatives(q, ts, cutoff)
    th_f, thd, thdd = filtered_derivatives(theta, ts, cutoff)
    sl = slice(edge, len(q) - edge)
    k_e, d_e = stiffness_damping(robot, motor_fit)
    tau_m = lowpass(motor_torque(robot, log, current), cutoff, 1.0 / ts)[sl]
    pred_m = motor_inertia(robot) * thdd[sl] + (
        motor_regressor(robot, q_f[sl], qd[sl], th_f[sl], thd[sl])
        @ motor_fit.full(len(motor_fit.names))[: 4 * robot.dof]
    ).reshape(-1, robot.dof)
    measured = joint_torque(robot, q_f[sl], qd[sl], th_f[sl], thd[sl], k_e, d_e)
    m = model(robot)
    pred = (m.stacked(q_f[sl], qd[sl], qdd[sl]) @ load_fit.full(len(m.names))).reshape(-1, robot.dof)

    def rms(e: np.ndarray) -> list[float]:
        return np.sqrt(np.mean(e**2, axis=0)).tolist()

    out: dict[str, Any] = {
        "motor_torque_rms": rms(tau_m - pred_m),
        "motor_torque_std": np.std(tau_m, axis=0).tolist(),
        "elastic_torque_rms": rms(measured - pred),
        "elastic_torque_std": np.std(measured, axis=0).tolist(),
        "seconds": len(q) * ts,
    }
    ex = log.extra
    if all(k in ex for k in ("q_true", "qd_true", "theta_true", "thetad_true")):
        true_j = joint_torque(
            robot,
            ex["q_true"][sl],
            ex["qd_true"][sl],
            ex["theta_true"][sl],
            ex["thetad_true"][sl],
            np.array([j.elastic.stiffness for j in robot.joints if j.elastic]),
            np.array([j.elastic.damping for j in robot.joints if j.elastic]),
        )
        out.update(elastic_torque_vs_true_rms=rms(true_j - pred), elastic_torque_std=np.std(true_j, axis=0).tolist())
    return out


def identify_logs(
    robot: Robot,
    actuator: tuple[Log, Excitation],
    load: tuple[Log, Excitation],
    validate: Log | None = None,
    current: bool = False,
    settings: ElasticIdentSettings = ElasticIdentSettings(),
    config: str | Path | None = None,
) -> dict[str, Any]:
    """Both stages on recorded runs (each a log of its stage's excitation, several periods), and the
    validation on another run if given; ``config``: the runs' config JSON (encoder offsets). The
    description's values are reported next to the estimates (a reference, not the truth of a real
    arm)."""
    if not robot.elastic:
        raise ValueError(f"{robot.name} has no series-elastic drives (elastic: in its joints)")
    check_run("actuator", robot, actuator[0], actuator[1], "actuator", settings)
    check_run("load", robot, load[0], load[1], "load", settings)
    if validate is not None:
        check_run("validate", robot, validate, None, None, settings)
    fit1 = actuator_stage(robot, average(robot, actuator[0], actuator[1], settings, current, config), settings)
    k_e, d_e = stiffness_damping(robot, fit1)
    offsets = motor_offsets(robot, fit1)
    fit2, _, _ = load_stage(robot, load[0], load[1], k_e, d_e, settings, offsets, config)
    desc1 = np.concatenate([true_motor_parameters(robot), np.zeros(len(fit1.names) - 4 * robot.dof)])
    desc2 = model(robot).true_base()
    doc: dict[str, Any] = {
        "robot": robot.name,
        "source": "logs",
        "current": current,
        "actuator": [
            {"name": nm, "estimated": float(v), "rsd": _finite(r / 100), "description": float(t)}
            for nm, v, r, t in zip(fit1.names, fit1.values, fit1.rsd, desc1)
        ],
        "actuator_rms": fit1.rms.tolist(),
        "load": [
            {"name": nm, "estimated": float(v), "rsd": _finite(r / 100), "description": float(t)}
            for nm, v, r, t in zip(fit2.names, fit2.values, fit2.rsd, desc2)
        ],
        "load_rms": fit2.rms.tolist(),
    }
    if settings.motor_offsets:
        doc["motor_offsets_rad"] = offsets.tolist()
    if validate is not None:
        doc["validation"] = validation_rms(robot, validate, fit1, fit2, current, config=config)
    return doc


# Kirchhoff (2011) Table 4.2 (simulation): (exact, estimated) per joint, eq. 4.4's order d_e, d_vm, k_e, d_Cm.
# As printed; joint 2's d_vm "exact 3.630e-3" is likely 3.630e-4 (its error column, 6.00e-4, fits that).
PAPER_TABLE_4_2 = (
    ((0.20, 0.156), (3.072e-4, 6.901e-4), (17.5, 17.403), (0.016, 0.0189)),
    ((0.20, 0.20), (3.630e-3, 9.634e-4), (10.0, 9.980), (0.0209, 0.0219)),
    ((0.10, 0.0827), (2.041e-4, -7.538e-5), (6.0, 5.985), (0.0104, 0.00996)),
    ((0.10, 0.0824), (2.315e-4, 2.759e-4), (6.0, 6.013), (0.011, 0.0105)),
)
PAPER_TABLE_4_3_RANDOM = (6.25e-2, 9.07e-2, 6.32e-2, 2.91e-1)  # motor torque RMS on a random motion, N m
PAPER_TABLE_4_4_D_OPT = (4.31e-3, 3.42e-3, 3.08e-3, 1.68e-3)  # elastic torque RMS, N m
PAPER_TABLE_4_5_MAX_ERROR = 4.56e-2  # largest |error| of a base parameter


@dataclass(frozen=True)
class StudySettings:
    harmonics: int = 5  # Kirchhoff (2011) §4.3.1: Fourier series of degree 5
    base_frequency: float = 0.1  # Hz: a 10 s period
    periods: int = 6  # simulated per stage (the first skipped)
    current_noise: float = 0.02  # N m, on the motor torque from the current
    starts: int = 2  # IPOPT starts per design
    grid: int = 60  # samples per period in the design
    max_iter: int = 300
    seed: int = 0
    validation_seconds: float = 20.0


def stored_cond(robot: Robot, exc: Excitation, rate: float) -> float:
    """cond(Y) of a stored excitation for its stage's regressor, sampled at ``rate`` Hz (a design's
    report grid)."""
    from host_tools.identification.excitation import regressor_cond, stage_regressor

    return regressor_cond(robot, exc, rate, *stage_regressor(robot, exc.stage))


def _finite(x: float) -> float | None:
    """A JSON-safe number: None for inf or NaN (an RSD of a parameter estimated as 0)."""
    return float(x) if np.isfinite(x) else None


def _pct(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}%}"


def _at(values: list[Any], i: int, fmt: str) -> str:
    """Kirchhoff's column for row i (its arm has 4 joints: '–' beyond)."""
    return format(values[i], fmt) if i < len(values) and values[i] is not None else "–"


def study(
    robot: Robot,
    s: StudySettings = StudySettings(),
    progress: Any = None,
    designs: tuple[Excitation, Excitation] | None = None,
) -> dict[str, Any]:
    """Kirchhoff (2011) §4.3.1 in simulation: design both stages' excitations (D-optimal), run them on the
    loopback, identify, validate on a random motion; the figures next to the thesis' Tables 4.2-4.5.
    ``designs``: the (actuator, load) excitations to run instead of designing them (their objective
    then NaN: not computed; their cond on the design's report grid)."""
    import time

    from host_tools.identification.excitation import DesignResult, ExciteSettings, design, random_excitation

    def say(text: str) -> None:
        if progress is not None:
            progress(text)

    if not robot.elastic:
        raise ValueError(f"{robot.name} has no series-elastic drives (elastic: in its joints)")
    settings = ElasticIdentSettings()
    es = ExciteSettings(
        harmonics=s.harmonics,
        base_frequency=s.base_frequency,
        objective="logdet",
        starts=s.starts,
        grid=s.grid,
        seed=s.seed,
        max_iter=s.max_iter,
    )
    t0 = time.perf_counter()
    if designs is None:
        say("designing the actuator stage's excitation (D-optimal, eq. 4.4) ...")
        act = design(robot, es, stage="actuator")
        say("designing the load stage's excitation (D-optimal, base regressor) ...")
        load = design(robot, es, stage="load")
    else:
        act, load = (DesignResult(e, stored_cond(robot, e, es.report_rate), float("nan"), 0.0) for e in designs)
    t_design = time.perf_counter() - t0
    say("stage 1: simulating and identifying the actuators ...")
    log1 = simulated_log(robot, act.excitation, s.periods, s.current_noise, s.seed)
    fit1 = actuator_stage(robot, average(robot, log1, act.excitation, settings), settings)
    k_e, d_e = stiffness_damping(robot, fit1)
    say("stage 2: simulating and identifying the links with the identified springs ...")
    log2 = simulated_log(robot, load.excitation, s.periods, s.current_noise, s.seed + 1)
    fit2, _, _ = load_stage(robot, log2, load.excitation, k_e, d_e, settings)
    say("validating on a random motion ...")
    val_exc = random_excitation(robot, s.seed + 100, speed=0.5, base_frequency=1.0 / s.validation_seconds)
    rt = simulation_pipeline(robot)
    val = validation_rms(robot, simulate(rt, val_exc.trajectory(rt.sample_period)).log, fit1, fit2)
    true1 = true_motor_parameters(robot)
    m = model(robot)
    true2 = m.true_base()
    actuator = [
        {
            "name": nm,
            "exact": float(t),
            "estimated": float(v),
            "error": float(abs(v - t)),
            "relative_error": float(abs(v - t) / abs(t)) if t != 0 else None,
            "rsd": _finite(r / 100),
        }
        for nm, v, t, r in zip(fit1.names, fit1.values, true1, fit1.rsd)
    ]
    paper = [
        {"name": f"{p}{i + 1}", "exact": e, "estimated": v, "relative_error": abs(v - e) / abs(e)}
        for i, row in enumerate(PAPER_TABLE_4_2)
        for p, (e, v) in zip(MOTOR_PARAMS, row)
    ]
    base = [
        {"name": nm, "exact": float(t), "estimated": float(v), "error": float(abs(v - t)), "rsd": _finite(r / 100)}
        for nm, v, t, r in zip(fit2.names, fit2.values, true2, fit2.rsd)
    ]
    return {
        "robot": robot.name,
        "source": "simulation",
        "settings": {**s.__dict__},
        "design_seconds": t_design,
        "excitation": {
            "actuator": {"cond": act.cond, "objective": act.objective},
            "load": {"cond": load.cond, "objective": load.objective},
        },
        "actuator": actuator,
        "paper_table_4_2": paper,
        "load": base,
        "load_max_error": float(np.max(np.abs(fit2.values - true2))),
        "paper_table_4_5_max_error": PAPER_TABLE_4_5_MAX_ERROR,
        "validation": val,
        "paper_table_4_3_random_rms": list(PAPER_TABLE_4_3_RANDOM),
        "paper_table_4_4_rms": list(PAPER_TABLE_4_4_D_OPT),
        "excitations": {"actuator": act.excitation.to_dict(), "load": load.excitation.to_dict()},
    }


def markdown(res: dict[str, Any]) -> str:
    """The study as tables (ours next to Kirchhoff's)."""
    lines = [
        f"# Two-stage identification of {res['robot']} (Kirchhoff 2011 §4.3.1, simulation)",
        "",
        f"Excitations (Fourier, {res['settings']['harmonics']} harmonics, {res['settings']['base_frequency']:g} Hz, "
        f"D-optimal): actuator cond {res['excitation']['actuator']['cond']:.1f}, load cond "
        f"{res['excitation']['load']['cond']:.1f}; {res['settings']['periods']} periods each, motor-torque noise "
        f"{res['settings']['current_noise']:g} N m.",
        "",
        "## Actuator side (like Table 4.2)",
        "",
        "| parameter | exact | estimated | relative error | RSD % | Kirchhoff (2011): relative error |",
        "| --- | --: | --: | --: | --: | --: |",
    ]
    paper = [p["relative_error"] for p in res["paper_table_4_2"]]
    for i, a in enumerate(res["actuator"]):
        rsd = "–" if a["rsd"] is None else f"{100 * a['rsd']:.2f}"
        lines.append(
            f"| {a['name']} | {a['exact']:.4g} | {a['estimated']:.4g} | {_pct(a['relative_error'])} | "
            f"{rsd} | {_at(paper, i, '.1%')} |"
        )
    lines += [
        "",
        "## Load side base parameters (like Table 4.5)",
        "",
        "| parameter | exact | estimated | error | RSD % |",
        "| --- | --: | --: | --: | --: |",
    ]
    for b in res["load"]:
        rsd = "–" if b["rsd"] is None else f"{100 * b['rsd']:.2f}"
        lines.append(f"| {b['name']} | {b['exact']:.5g} | {b['estimated']:.5g} | {b['error']:.2e} | {rsd} |")
    lines += [
        "",
        f"Largest error {res['load_max_error']:.2e} "
        f"(Kirchhoff 2011 Table 4.5: {res['paper_table_4_5_max_error']:.2e}).",
        "",
        f"## Validation on a random motion ({res['validation']['seconds']:g} s)",
        "",
        "| joint | motor torque RMS (N m) | Kirchhoff (2011) Table 4.3 (random motion) | "
        "elastic torque RMS (N m) | vs the true one | "
        "Kirchhoff (2011) Table 4.4 | std of the true one |",
        "| --- | --: | --: | --: | --: | --: | --: |",
    ]
    v = res["validation"]
    for j in range(len(v["motor_torque_rms"])):
        lines.append(
            f"| {j + 1} | {v['motor_torque_rms'][j]:.2e} | {_at(res['paper_table_4_3_random_rms'], j, '.2e')} | "
            f"{v['elastic_torque_rms'][j]:.2e} | {v['elastic_torque_vs_true_rms'][j]:.2e} | "
            f"{_at(res['paper_table_4_4_rms'], j, '.2e')} | {v['elastic_torque_std'][j]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def markdown_logs(res: dict[str, Any]) -> str:
    """The identification from recorded runs as tables (estimate, RSD, the description's value)."""

    def rows(items: list[dict[str, Any]]) -> list[str]:
        return [
            f"| {x['name']} | {x['estimated']:.5g} | "
            f"{'–' if x['rsd'] is None else format(100 * x['rsd'], '.2f')} "
            f"| {x['description']:.5g} |"
            for x in items
        ]

    head = ["| parameter | estimated | RSD % | the description's |", "| --- | --: | --: | --: |"]
    lines = (
        [
            f"# Two-stage identification of {res['robot']} from recorded runs (Kirchhoff 2011 §4.2)",
            "",
            "Motor torque " + ("from the logged currents, z k_t i_a (eq. 4.51)." if res["current"] else "as logged."),
            "",
            "## Actuator side (eq. 4.4)",
            "",
        ]
        + head
        + rows(res["actuator"])
    )
    lines += [
        "",
        "RMS of the motor-torque residual per joint (N m): " + ", ".join(f"{v:.3g}" for v in res["actuator_rms"]),
    ]
    if "motor_offsets_rad" in res:
        lines += [
            "",
            "Motor encoder offsets o (rad, link side; add to enc.motor_offset): "
            + ", ".join(f"{v:.4g}" for v in res["motor_offsets_rad"]),
        ]
    lines += ["", "## Load side base parameters", ""]
    lines += head + rows(res["load"])
    lines += [
        "",
        "RMS of the (I + A)^T tau_el residual per joint (N m): " + ", ".join(f"{v:.3g}" for v in res["load_rms"]),
    ]
    if "validation" in res:
        v = res["validation"]
        lines += [
            "",
            f"## Validation ({v['seconds']:g} s)",
            "",
            "| joint | motor torque RMS (N m) | elastic torque RMS (N m) |",
            "| --- | --: | --: |",
        ]
        lines += [
            f"| {j + 1} | {a:.3g} | {b:.3g} |"
            for j, (a, b) in enumerate(zip(v["motor_torque_rms"], v["elastic_torque_rms"]))
        ]
    return "\n".join(lines) + "\n"
