"""Output-error identification of a closed-loop run (Brunot et al. 2019) on the loaded robot: the pid loop
that ran, the log as the methods see it, IDIM-LS then the chosen methods from one start, and the
synthetic run (the robot on the loopback: the pipeline's pid on a findiff velocity, quantised
encoders, with measurement noise and an unmodelled disturbance). The report is
host_tools.reports.output_error's."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from codegen.blocks import controllers, findiff
from codegen.model.robot import Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import SimulationError, simulate
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import RobotSource
from host_tools.data.logs import Log, recorded_for
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.closed_loop import ClosedLoopModel, Loop
from host_tools.identification.least_squares import one_blas_thread
from host_tools.identification.output_error import (
    METHODS,
    Identification,
    Method,
    OEData,
    OESettings,
    Result,
    description_start,
)
from host_tools.identification.paper_setups import BRUNOT_OUTPUT_ERROR
from host_tools.identification.pipeline import positions, rigid_only
from host_tools.identification.processing import lowpass

Stage = Callable[[str], None]


@dataclass(frozen=True)
class OESynthetic:
    duration: float = 34.5  # s: 34 500 samples at 1 kHz, Brunot et al.'s size
    bandwidth: float = 5.0  # Hz: PD kp = (2 pi f)^2 M_ii(q0), kd = 2 (2 pi f) M_ii(q0)
    torque_noise: float = 0.2  # N m, white, on the logged torque (current measurement)
    disturbance: float = 0.02  # N m RMS, unmodelled torque on the plant (low-passed noise) ...
    disturbance_band: float = 2.0  # ... below this, Hz
    init_error: float = 0.3  # the start: the description's parameters x U(1 -+ this)
    seed: int = 0


# the (estimator, observer, controller) of the synthetic run: finite differences, no observer
SYNTHETIC = (findiff.FINDIFF.name, "none", BRUNOT_OUTPUT_ERROR.controller)
GAIN_KEYS = ("kp", "kd", "ki", "i_max", "tau_max", "drive_gain")
POSITIVE = ("tau_max", "drive_gain")  # > 0; the others >= 0


def _gain(key: str, value: Any, n: int) -> np.ndarray:
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
        raise ValueError(f"gains.{key}: give one number or a list of {n} numbers, got {value!r}")
    v = np.array(items, float)
    if v.size not in (1, n):
        raise ValueError(f"gains.{key}: give one number or {n} (one per joint), got {v.size}")
    bad = ~np.isfinite(v) | ((v <= 0) if key in POSITIVE else (v < 0))
    if np.any(bad):
        raise ValueError(f"gains.{key}: must be {'> 0' if key in POSITIVE else '>= 0'} and finite, got {value!r}")
    return v


def loop_for(robot: Robot, gains: dict[Any, Any] | None = None) -> Loop:
    """The pid loop of the robot's pipeline (its default gains and model), with ``gains`` (kp, kd,
    ki, i_max, tau_max, drive_gain: one value or one per joint; gravity_compensation: true/false)
    over it."""
    rt = load_rt(robot, estimator=findiff.FINDIFF.name, observer="none", controller=controllers.PID.name)
    loop = Loop.from_rt(rt)
    if gains is None:
        return loop
    allowed = set(GAIN_KEYS) | {"gravity_compensation"}
    unknown = sorted(str(k) for k in gains if k not in allowed)
    if unknown:
        raise ValueError(f"gains: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    loop = loop.with_gains(**{k: _gain(k, gains[k], rt.dof) for k in GAIN_KEYS if k in gains})
    comp = gains.get("gravity_compensation", True)
    if not isinstance(comp, bool):
        raise ValueError(f"gains.gravity_compensation: true or false, got {comp!r}")
    return loop if comp else replace(loop, ctl_params=np.zeros_like(loop.ctl_params))


def oe_data(robot: Robot, log: Log, drive_gain: np.ndarray | float = 1.0, source: str = "DATA") -> OEData:
    """A closed-loop log as the output-error methods see it: positions through the robot's encoder
    read; tau[k] = G_tau x the log's tau[k + 1] (the controller's output held over sample k, as a
    torque: G_tau = 1 when the log holds torques)."""
    rigid_only(robot)
    if log.robot != robot.c_name:
        raise ValueError(f"{source}: the log is of robot {recorded_for(log)!r}, not {robot.name!r}")
    if len(log) < 100:
        raise ValueError(f"{source}: {len(log)} samples; output-error identification needs a run of at least 100")
    q = positions(robot, log)
    tau = np.asarray(log.tau, float)[1:] * np.asarray(drive_gain, float)
    return OEData(log.sample_period, q[:-1], tau, np.asarray(log.q_des, float)[:-1], np.asarray(log.qd_des, float)[:-1])


def synthetic_run(robot: Robot, opts: OESynthetic) -> tuple[Log, Loop]:
    """The robot (its description = the truth) tracking a Liu et al.-like motion on the loopback with
    a well-tuned PD (critically damped at ``bandwidth``: the study's set-up,
    paper_setups.BRUNOT_OUTPUT_ERROR), quantised encoders, an unmodelled disturbance and noise on the
    logged torques."""
    rigid_only(robot)
    rt = load_rt(robot, *SYNTHETIC)
    BRUNOT_OUTPUT_ERROR.apply(rt.config, robot)
    traj = generated_trajectory(robot, opts.duration, rt.sample_period, seed=opts.seed + 3, speed=0.8, span=0.6)
    m0 = np.diag(load(robot).mass_matrix(traj.q[0]))
    w = 2 * np.pi * opts.bandwidth
    rt.config["ctl.kp"] = w * w * m0
    rt.config["ctl.kd"] = 2 * w * m0
    rng = np.random.default_rng(opts.seed)
    dist = lowpass(rng.normal(size=traj.q.shape), opts.disturbance_band, 1.0 / rt.sample_period)
    dist *= opts.disturbance / np.maximum(dist.std(axis=0), 1e-300)
    log = simulate(rt, traj, tau_ext=dist).log
    log.tau = log.tau + rng.normal(0.0, opts.torque_noise, log.tau.shape)
    return log, Loop.from_rt(rt)


@dataclass
class ClosedLoopResult:
    """What output error found (host_tools.reports.output_error: its JSON document and tables)."""

    robot: Robot
    samples: int
    sample_period: float
    n_base: int
    estimated: list[str]  # the base parameters estimated (IDIM-LS's essential set, or all)
    init: str  # the start: "description" or "idim-ls"
    settings: OESettings
    warnings: list[str]
    results: dict[str, Result]  # by method, IDIM-LS first
    truth: np.ndarray | None  # the true base parameters (a synthetic run's)
    seconds: float


@one_blas_thread
def identify_closed_loop(
    source: RobotSource,
    data: OEData,
    loop: Loop,
    methods: Sequence[Method],
    settings: OESettings = OESettings(),
    init: str = "description",
    init_error: float = 0.0,
    parameters: str = "essential",
    seed: int = 0,
    truth: np.ndarray | None = None,
    stage: Stage = lambda _: None,
    executor: Executor | None = None,
) -> ClosedLoopResult:
    """IDIM-LS first (the reference, the essential set and, with init='idim-ls', the start), then the
    chosen methods from the same start. ``executor``: where the sensitivities' simulations run
    (default: threads here)."""
    t0 = time.perf_counter()
    stage("building the closed-loop model")
    model = ClosedLoopModel(source, data.sample_period)
    ident = Identification(model, loop, data, settings, executor)
    stage("IDIM-LS (band-pass, parallel filter, decimation)")
    ref, essential = ident.idim_ls()
    kept = essential if parameters == "essential" else list(range(model.n_base))
    if parameters != "essential":
        ref = ident.idim_ls(kept)[0]
    beta0 = ref.full(model.n_base) if init == "idim-ls" else description_start(model, init_error, seed)
    warnings = check_fit(ident, beta0)
    results: dict[str, Result] = {"idim-ls": ref}
    for method in methods:
        if method == "idim-ls":
            continue

        def progress(it: int, crit: float, m: str = method) -> None:
            stage(f"{m.upper()}: iteration {it}, criterion {crit:.6g}")

        stage(f"{method.upper()} ...")
        results[method] = ident.run(method, beta0, kept, progress)
    names = model.ident.names
    return ClosedLoopResult(
        model.robot,
        int(len(data.q)),
        data.sample_period,
        model.n_base,
        [names[i] for i in kept],
        init,
        settings,
        warnings,
        results,
        truth,
        time.perf_counter() - t0,
    )


FIT_WARNING = 0.05  # the start's simulated q off the measured by more than this (relative, mean)


def check_fit(ident: Identification, beta0: np.ndarray) -> list[str]:
    """What the user should know before trusting the result: the description's Coulomb model, and
    whether the closed loop with the start parameters reproduces the run at all (wrong gains)."""
    out = []
    robot = ident.model.robot
    if robot.coulomb.model == "sign" and any(j.FC != 0 for j in robot.joints):
        out.append(
            f"{robot.name}'s Coulomb friction is sign(qd): the fixed-step simulation is first order at "
            "velocity reversals; use coulomb: {model: tanh, velocity_scale: ...} (docs/identification.md)"
        )
    try:
        s = ident.simulate(beta0)
    except SimulationError:
        raise ValueError(
            "the closed loop cannot be simulated with the start parameters (unstable or M(q) not "
            "positive definite): check --gains (the controller that ran) and --init"
        ) from None
    num = np.linalg.norm(ident.data.q - s.q, axis=0)
    den = np.linalg.norm(ident.data.q - ident.data.q.mean(axis=0), axis=0)
    off = float(np.mean(num / np.where(den > 0, den, 1.0)))
    if off > FIT_WARNING:
        out.append(
            f"with the start parameters the simulated positions are {off:.0%} off the measured motion "
            "(RMS, relative to each joint's excursion): is --gains the controller that ran, and the log's "
            "q_des its reference?"
        )
    return out


def methods_of(choice: str) -> list[Method]:
    if choice == "all":
        return list(METHODS)
    if choice not in METHODS:
        raise ValueError(f"unknown method {choice!r}; choose from {', '.join(METHODS)} or all")
    return [choice]
