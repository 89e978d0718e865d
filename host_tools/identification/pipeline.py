"""From a log to identified parameters (Xu et al. 2020 §II, IV-B/C): positions through the robot's own
encoder read, period averaging, frequency-domain derivatives, a zero-phase low-pass on the
torques, the stacked base regressor, WLS with per-joint variance weights, essential parameters;
and the synthetic round trip (the optimised excitation on the loopback with noise) that needs no
robot."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from codegen.blocks import findiff, kalman
from codegen.model.robot import Coulomb, Robot, digest_of
from codegen.symbolic.excitation import samples_per_period
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.checks import with_start_position
from host_tools.data.csvdata import Samples
from host_tools.data.light_joints import light_joints
from host_tools.data.logs import Log
from host_tools.identification.friction_terms import Candidates, FrictionTerms, candidates, columns
from host_tools.identification.least_squares import Fit, Model, essential, least_squares, model, one_blas_thread
from host_tools.identification.paper_setups import XU_IDENTIFICATION
from host_tools.identification.processing import (
    decimation,
    filtered_derivatives,
    fourier_derivatives,
    lowpass,
    parallel_decimate,
    period_average,
    recorded_derivatives,
)

if TYPE_CHECKING:  # the excitation design imports the trajectory splines (0.25 s)
    from host_tools.identification.excitation import Excitation


@dataclass(frozen=True)
class IdentSettings:
    skip_periods: int = 1  # transients of the first period(s)
    derivative_band: float = 20.0  # Hz: frequencies of q kept for qd, qdd (DFT window, Xu et al. (2020) §II-C)
    # Hz: the parallel low-pass on tau and on every column of Y (Brunot et al. 2019 §3.1; Butterworth order 4
    # at Xu et al. (2020) §IV-B's 6 Hz)
    band: float = 6.0
    min_abs: float = 0.01  # essential parameters: |value| below ...
    max_rsd: float = 40.0  # ... and RSD (%) above are eliminated (Xu et al. 2020 §II-A)
    weighted: bool = True  # WLS with per-joint variance weights (else OLS)
    # rad/s: a joint's equations slower than this are left out -- Coulomb friction sgn(qd) is
    # undefined at rest (stiction)
    min_speed: float = 0.05
    # Hz: a non-periodic run's zero-phase low-pass on q before the central differences (Brunot et al. 2019 §3.1)
    cutoff_q: float = 10.0
    # rad/s: candidate tanh scales, one chosen per joint (fit_coulomb_scales); empty: the
    # description's model
    coulomb_scales: tuple[float, ...] = ()
    # a recorded run: choose offset, Dahl, load-dependent, Stribeck and smooth Coulomb friction terms
    # per joint on held-out blocks (host_tools.identification.friction_terms)
    friction_terms: bool = False
    # a joint's smooth Coulomb term kept, the fit with the terms uses every row the input checks left
    # (min_speed 0: the term differs from a sgn column near rest); False: min_speed as set (identify
    # --min-speed given)
    smooth_near_rest: bool = True
    # a recorded run's velocity: "estimate" (central differences of the low-passed positions),
    # "recorded" (the log's own, low-passed alike; the estimate where it has none -- identify refuses
    # it on a log without one) or "auto"
    # (host_tools.identification.run chooses on held-out blocks)
    velocity: str = "estimate"


COULOMB_SCALE_GRID = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)  # rad/s: manipgen identify --fit-coulomb-scale


def fits_friction_terms(robot: Robot, recorded: bool) -> bool:
    """manipgen identify's default: choose friction terms (friction_terms) on a recorded run (a
    real arm, whose slow joints' torque is mostly friction) whatever the description's Coulomb
    shape (issue #44: the data choose, the description is the starting point); never on an
    excitation run (the identification of the description as it is)."""
    return recorded


def default_min_speed(robot: Robot, fit_scales: bool, terms: bool) -> float:
    """identify's --min-speed default: 0 with fitted tanh scales, or with the friction terms on a
    tanh Coulomb description (both need the samples near rest, where they differ); a sign Coulomb
    column flips with the noise there, so it keeps IdentSettings.min_speed."""
    return 0.0 if fit_scales or (terms and robot.coulomb.model == "tanh") else IdentSettings.min_speed


def recorded_run_settings(robot: Robot) -> IdentSettings:
    """`manipgen identify`'s defaults for a recorded run (no excitation): the friction terms chosen
    per joint and the velocity chosen on held-out blocks (auto)."""
    terms = fits_friction_terms(robot, True)
    return IdentSettings(min_speed=default_min_speed(robot, False, terms), friction_terms=terms, velocity="auto")


def with_coulomb_scales(robot: Robot, scales: tuple[float, ...]) -> Robot:
    """The robot with smooth Coulomb friction tanh(qd_i / scales_i) (one scale, or one per joint)."""
    return replace(
        robot,
        coulomb=Coulomb("tanh", tuple(float(v) for v in scales)),
        digest=digest_of(robot.digest.encode(), repr(tuple(scales)).encode()),
    )


def rigid_only(robot: Robot, spec: str | None = None) -> None:
    """This identification takes the log's torque as the links'; an elastic arm logs its motors'.
    ``spec``: the description as the user named it (default: its file)."""
    if robot.elastic:
        raise ValueError(
            f"{robot.name} has series-elastic joints: its log's torque is the motors', not the links'; "
            f"identify it in two stages (Kirchhoff 2011 §4.2): manipgen elastic identify {spec or robot.file}"
        )


@dataclass
class Processed:
    """One averaged period (or a whole non-periodic run: periods = 0) ready for the regressor."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    tau_variance: np.ndarray  # per sample and joint, of the averaged torque
    periods: int
    sample_period: float
    keep: np.ndarray | None = None  # (K,) bool: the samples fit to use (a recorded run's; None: all)


# the (estimator, observer, controller) of the pipeline that reads a log's counts: its encoder
# block alone is used (no config field but the description's encoders)
ENCODER_READ = (findiff.FINDIFF.name, "none", "none")


def positions(robot: Robot, log: Log) -> np.ndarray:
    """Joint positions from the log's counts through the robot's generated encoder read; with the
    log's stated start position (host_tools.data.checks.with_start_position) where it states one."""
    rt = load_rt(robot, *ENCODER_READ, sample_period=log.sample_period)
    if "start_position" in log.extra and log.encoder_offset is None:
        log = with_start_position(log, robot, log.extra["start_position"])
    return np.asarray(rt.run(log)["q"], float)  # the stated start's offsets apply (Realtime.run)


def torque_at_samples(log: Log) -> np.ndarray:
    """The torque at the sample instants. log.tau[k] is the torque held over the sample before k
    (the format's convention): the torque at instant k is taken as the mean of the holds either side
    of it (what a smooth derivative of q at k corresponds to). A log whose tau was measured at the
    instants (``tau_sampled``: a ROS bag's effort, a CSV's tau) is taken as it is."""
    tau = np.asarray(log.tau, float)
    if bool(log.extra.get("tau_sampled", False)):
        return tau
    return np.vstack([(tau[:-1] + tau[1:]) / 2, tau[-1:]])


def recorded_velocity(data: Log | Samples) -> np.ndarray | None:
    """The velocity a log records (a CSV's qd columns, a log's ``qd_hat_logged``), or None."""
    if isinstance(data, Samples):
        return data.qd
    qd = data.extra.get("qd_hat_logged")
    return None if qd is None else np.asarray(qd, float)


def samples_of(robot: Robot, data: Log | Samples) -> Samples:
    """Positions and torques at the sample instants: a CSV's as they are; a log's positions through
    the robot's encoder read and its torques by torque_at_samples."""
    if isinstance(data, Samples):
        return data
    return Samples(data.sample_period, positions(robot, data), torque_at_samples(data), recorded_velocity(data))


def derivatives(s: Samples, cutoff: float, velocity: str) -> tuple[np.ndarray, ...]:
    """(q_f, qd, qdd) of a non-periodic run: the recorded velocity if ``velocity`` is "recorded" and
    the samples carry one, else the estimate from the positions (processing's two filters)."""
    if velocity == "recorded" and s.qd is not None:
        return recorded_derivatives(s.q, s.qd, s.sample_period, cutoff)
    return filtered_derivatives(s.q, s.sample_period, cutoff)


def flagged_excitation(flagged: np.ndarray, exc: Excitation, sample_period: float, robot: Robot | None = None) -> str:
    """Why an excitation run with flagged samples is refused, and what to do. Flagged at the same
    phase of every period (at least half of each period's flagged samples flagged in every period),
    the run repeats them -- the loop's own tracking of this motion, e.g. an off-trajectory error in
    a light direction of the arm -- and a new recording repeats them too; else they are a one-off."""
    n = int(np.sum(flagged))
    whole = (
        f"{n} samples of the excitation run are left out by the input checks (flagged, or within the filters' "
        "settling of a flagged one); its periods are averaged whole"
    )
    try:
        p = samples_per_period(exc.base_frequency, sample_period)
    except ValueError:
        p = 0
    periods = len(flagged) // p if p else 0
    if periods >= 2:
        per = np.asarray(flagged[: periods * p], bool).reshape(periods, p)
        common = np.all(per, axis=0).sum()
        if np.all(per.any(axis=1)) and 2 * common >= per.sum(axis=1).max():
            light = light_joints(robot) if robot is not None else []
            without = [f.joint for f in light if f.rotor_inertia == 0.0]
            fix = (
                f"; the description gives {', '.join(without)} no rotor inertia, with which a loop on this model "
                "tracks them poorly (generate names the figures): if the drives have one, give their IA in an "
                "overlay (README: overlays)"
                if without
                else ""
            )
            return (
                f"{whole}: they lie at the same phase of every period, the loop's own tracking of this motion, "
                "which a new recording repeats: --keep-flagged uses them as they are, or design a gentler "
                f"excitation{fix}"
            )
    return f"{whole}: record it again (or --keep-flagged to use them as they are)"


def process(
    robot: Robot,
    data: Log | Samples,
    exc: Excitation | None,
    settings: IdentSettings,
    flagged: np.ndarray | None = None,
) -> Processed:
    """Average the periods; q, qd, qdd by frequency-domain differentiation within derivative_band.
    Without an excitation (a recorded non-periodic run): the whole run, q low-passed at cutoff_q
    (zero phase) and differentiated centrally; ``flagged`` (K,) bool: the samples the input checks
    leave out of the fit (InputChecks.left_out: the flagged ones and the filters' settling around
    them). An excitation run's periods are averaged whole: flagged samples there are an error."""
    s = samples_of(robot, data)
    if exc is None:
        qf, qd, qdd = derivatives(s, settings.cutoff_q, settings.velocity)
        keep = None if flagged is None or not np.any(flagged) else ~flagged
        return Processed(qf, qd, qdd, s.tau, np.zeros_like(s.tau), 0, s.sample_period, keep)
    if flagged is not None and np.any(flagged):
        raise ValueError(flagged_excitation(flagged, exc, s.sample_period, robot))
    try:
        p = samples_per_period(exc.base_frequency, s.sample_period)
    except ValueError as err:
        raise ValueError(f"the data's sample period does not fit the excitation: {err}") from None
    q = period_average(s.q, p, settings.skip_periods)
    tau = period_average(s.tau, p, settings.skip_periods)
    qf, qd, qdd = fourier_derivatives(q.mean, s.sample_period, settings.derivative_band)
    return Processed(qf, qd, qdd, tau.mean, tau.variance, q.periods, s.sample_period)


def observation(robot: Robot, data: Processed, settings: IdentSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The regressor at every sample, then Brunot et al.'s parallel filter on it and on the torques
    (periodic data: no edge effects) and its decimation to twice the band (the residuals stay
    nearly white, so eq. 7's RSDs hold). Returns (Y stacked (K' n, nb), tau (K', n), qd (K', n) at the kept samples)."""
    y = model(robot).regressor(data.q, data.qd, data.qdd)
    y_f, tau_f, qd = filtered(data, settings, [y, data.tau, data.qd], filter_last=False)
    return y_f.reshape(-1, y.shape[2]), tau_f, qd


def filtered(
    data: Processed, settings: IdentSettings, arrays: list[np.ndarray], filter_last: bool = True
) -> list[np.ndarray]:
    """``arrays`` ((K, ...) each, at data's samples) through observation's parallel filter and
    decimation, and a non-periodic run's edges trimmed (half a second at either end: the filters'
    edge effects); ``filter_last`` False: the last array is only decimated and trimmed (qd, which
    selects the rows)."""
    k = len(data.q)
    fs = 1.0 / data.sample_period
    nd = decimation(fs, settings.band)
    periodic = data.periods > 0
    head = arrays if filter_last else arrays[:-1]
    out = parallel_decimate(head, fs, settings.band, periodic=periodic)
    if not filter_last:
        out.append(np.asarray(arrays[-1])[::nd])
    if periodic:
        return out
    edge = int(round(0.5 * fs / nd))
    if len(out[0]) < 4 * edge:
        raise ValueError(
            f"the run has {k / fs:g} s; a recorded (non-periodic) run needs at least {4 * edge * nd / fs:g} s"
        )
    return [a[edge:-edge] for a in out]


def joint_weights(data: Processed) -> np.ndarray | None:
    """1 / sigma_j^2 per joint from the period averaging's variances (None with a single period)."""
    var = data.tau_variance.mean(axis=0)
    if data.periods < 2 or not np.all(var > 0):
        return None
    return 1.0 / var


@dataclass
class Identified:
    base: Fit
    essential: Fit
    stage_seconds: dict[str, float] = field(default_factory=dict)
    weights: np.ndarray | None = None  # the base fit's per-joint WLS weights (None: OLS)


@one_blas_thread
def identify(
    described: Robot,
    log: Log | Samples,
    exc: Excitation | None,
    settings: IdentSettings = IdentSettings(),
    robot: Robot | None = None,
    data: Processed | None = None,
    obs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[Identified, Processed, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Base (OLS/WLS) and essential parameters from an excitation log (or, ``exc`` None, a recorded
    non-periodic run); also returns the processed data and the observation (Y stacked, tau, qd at
    the kept samples). ``robot``: the model to fit (default: the ``described`` robot; the log is read
    through its encoders either way); ``data``: the log already processed; ``obs``: its
    observation already computed (for ``robot``)."""
    robot = described if robot is None else robot
    rigid_only(robot)
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    data = process(described, log, exc, settings) if data is None else data
    stages["processing"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    m: Model = model(robot)
    y, tau, qd = observation(robot, data, settings) if obs is None else obs
    stages["regressor"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    base, w, rows = base_fit(m, y, tau, qd, data, settings)
    ess = essential(y, tau, robot.dof, m.names, w, settings.min_abs, settings.max_rsd, rows)
    stages["estimation"] = time.perf_counter() - t0
    return Identified(base, ess, stages, w), data, (y, tau, qd)


def equation_rows(data: Processed, settings: IdentSettings, qd: np.ndarray) -> np.ndarray:
    """(K' n,) bool: the equations of an observation the fit uses: the joints at least
    ``min_speed`` fast, at the samples the input checks left (data.keep)."""
    rows = np.abs(qd) >= settings.min_speed
    if data.keep is not None:
        (keep,) = filtered(data, settings, [data.keep], filter_last=False)
        rows &= keep[:, None]
    return rows.reshape(-1)


def base_fit(
    m: Model, y: np.ndarray, tau: np.ndarray, qd: np.ndarray, data: Processed, settings: IdentSettings
) -> tuple[Fit, np.ndarray | None, np.ndarray]:
    """The base parameters' (W)LS fit of an observation: (fit, joint weights, rows used)."""
    rows = equation_rows(data, settings, qd)
    fit, w = weighted_fit(y, tau, list(m.names), rows, data, settings)
    return fit, w, rows


def weighted_fit(
    y: np.ndarray, tau: np.ndarray, names: list[str], rows: np.ndarray, data: Processed, settings: IdentSettings
) -> tuple[Fit, np.ndarray | None]:
    """(W)LS of tau on the columns of y (names): per-joint weights from the period averaging's
    variances, or (a recorded run) from the OLS residual; OLS with ``settings.weighted`` off."""
    n = tau.shape[1]
    w = joint_weights(data) if settings.weighted else None
    if settings.weighted and data.periods == 0:  # no period variances: the OLS residual's per joint
        w = 1.0 / least_squares(y, tau, n, names, rows=rows).rms ** 2
    return least_squares(y, tau, n, names, w, rows=rows), w


@one_blas_thread
def fit_coulomb_scales(
    robot: Robot, data: Processed, settings: IdentSettings
) -> tuple[Robot, dict[float, list[float]], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each joint's Coulomb tanh scale from ``settings.coulomb_scales``: the base parameters are fitted
    with every candidate scale on all joints, and each joint keeps the candidate with its smallest fit
    residual (a joint's Coulomb column is non-zero only in its own equation, so the joints' choices
    barely interact; the final fit uses the chosen scales together). Only the fitting data are used.
    The regressor is computed and filtered once; a candidate only recomputes the Coulomb columns.
    Returns the robot with the chosen scales, the fit RMS per joint of every candidate and the
    observation with the chosen scales."""
    if not settings.coulomb_scales or min(settings.coulomb_scales) <= 0:
        raise ValueError("the candidate Coulomb scales must be positive (rad/s)")
    if "FC" not in robot.joint_parameters:
        raise ValueError(
            f"{robot.name} does not identify Coulomb friction (FC is not in its joint_parameters): "
            "there is no Coulomb scale to fit"
        )
    m = model(robot)
    y, tau, qd = observation(robot, data, settings)
    columns = m.coulomb_columns()
    n, nb = robot.dof, len(m.names)

    def observed(scales: tuple[float, ...]) -> tuple[Model, np.ndarray]:
        mc = m.with_robot(with_coulomb_scales(robot, scales))
        (shape,) = filtered(data, settings, [mc.coulomb_shape(data.qd)])
        yc = y.reshape(-1, n, nb).copy()
        for j, column in enumerate(columns):
            yc[:, j, column] = shape[:, j]
        return mc, yc.reshape(-1, nb)

    rms = {}
    for scale in settings.coulomb_scales:
        mc, yc = observed((scale,))
        rms[scale] = base_fit(mc, yc, tau, qd, data, settings)[0].rms.tolist()
    grid = np.array([rms[s] for s in settings.coulomb_scales])
    best = tuple(settings.coulomb_scales[k] for k in grid.argmin(axis=0))
    mc, yc = observed(best)
    return mc.robot, rms, (yc, tau, qd)


def synthetic_log(
    robot: Robot,
    exc: Excitation,
    periods: int,
    torque_noise: float,
    seed: int,
    sample_period: float | None = None,
    true_params: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Log:
    """The robot (true_params; default its description's) tracking the excitation in the loopback
    (computed torque on its own model with a Kalman velocity estimate, its encoders as described),
    with white noise of ``torque_noise`` N m (standard deviation) on the logged torques, as a
    joint-torque sensor would add. The loop is the study's set-up (paper_setups.XU_IDENTIFICATION):
    the controller feeds the friction forward at the desired velocity (ctl.friction_ff = 1):
    compensated at the estimate, sgn(qd_hat) chatters at every velocity reversal and puts motion
    beyond the derivative band into the run (the iiwa's fit RMS then sat at 3x its noise floor).
    ``progress``: simulate's."""
    from host_tools.bindings.loopback import simulate  # here: a recorded run's identification needs no loopback

    rt = synthetic_pipeline(robot, sample_period)
    run = simulate(rt, exc.trajectory(rt.sample_period, periods), true_params=true_params, progress=progress)
    log = run.log
    log.tau = log.tau + np.random.default_rng(seed).normal(0.0, torque_noise, log.tau.shape)
    return log


# the (estimator, observer, controller) of the synthetic runs: a Kalman estimate, no observer
SYNTHETIC = (kalman.SPEC.name, "none", XU_IDENTIFICATION.controller)


def synthetic_pipeline(robot: Robot, sample_period: float | None = None) -> Realtime:
    """The loop the synthetic runs (the excitation and the validation motion) track their motion in:
    the study's set-up, paper_setups.XU_IDENTIFICATION."""
    rt = load_rt(robot, *SYNTHETIC, sample_period=sample_period)
    XU_IDENTIFICATION.apply(rt.config, robot)
    return rt


@dataclass(frozen=True)
class ValidationData:
    """A validation run ready for predictions: the measured torque, the stacked base regressor at the
    same samples and their times (half a second trimmed at either end: filter edge effects)."""

    tau: np.ndarray  # (K, n)
    y: np.ndarray  # (K n, nb)
    time: np.ndarray  # (K,) s from the start of the run
    keep: np.ndarray  # (K,) bool: the samples the input checks left (all, with --keep-flagged)
    extra: np.ndarray | None = None  # (K n, p): friction terms' columns, after y's in a longer beta
    candidates: Candidates | None = None  # the friction terms' candidate columns at the same samples
    qd: np.ndarray | None = None  # (K, n) the filtered rate and acceleration at the same samples
    qdd: np.ndarray | None = None

    def with_terms(self, terms: FrictionTerms | None) -> ValidationData:
        """The same run with the chosen friction terms' columns (``extra``) from its candidates (none
        chosen on any joint: the run as it is)."""
        if terms is None or not terms.per_joint():
            return self
        if self.candidates is None:
            raise ValueError("the validation data were prepared without the friction terms' candidates")
        x = columns(terms, self.candidates)
        return replace(self, extra=x.reshape(-1, x.shape[2]))

    def predicted(self, beta: np.ndarray) -> np.ndarray:
        nb = self.y.shape[1]
        out = self.y @ beta[:nb]
        if len(beta) > nb:
            if self.extra is None or self.extra.shape[1] != len(beta) - nb:
                raise ValueError(f"{len(beta) - nb} friction-term coefficients, the validation data has none")
            out = out + self.extra @ beta[nb:]
        return out.reshape(self.tau.shape)

    def rms(self, beta: np.ndarray) -> np.ndarray:
        """RMS torque prediction error per joint over the kept samples (Xu et al. 2020 Table 8)."""
        return np.sqrt(np.mean((self.tau - self.predicted(beta))[self.keep] ** 2, axis=0))


def validation_data(
    described: Robot,
    data: Log | Samples,
    settings: IdentSettings,
    cutoff_q: float = 5.0,
    filter_torque: bool = True,
    robot: Robot | None = None,
    flagged: np.ndarray | None = None,
    with_candidates: bool = False,
) -> ValidationData:
    """A (non-periodic) validation run: positions low-passed (zero phase) at ``cutoff_q`` and
    differentiated centrally, torques low-passed at the identification's band (``filter_torque``;
    else the measured torque as it is). ``robot``: the model (default the ``described`` robot, whose
    encoders read the log either way); ``flagged``
    (K,) bool: the samples the input checks leave out of the RMS (InputChecks.left_out);
    ``with_candidates``: also every friction-term candidate column (ValidationData.with_terms)."""
    robot = described if robot is None else robot
    s = samples_of(described, data)
    ts = s.sample_period
    edge = int(round(0.5 / ts))  # filter edge effects
    if len(s.q) < 4 * edge:
        raise ValueError(f"the validation run has {len(s.q) * ts:g} s; it needs at least {4 * edge * ts:g} s")
    q, qd, qdd = derivatives(s, cutoff_q, settings.velocity)
    tau = lowpass(s.tau, settings.band, 1.0 / ts) if filter_torque else s.tau
    sl = slice(edge, len(q) - edge)
    keep = np.ones(len(q), bool) if flagged is None else ~flagged
    if not np.any(keep[sl]):
        raise ValueError("the validation run is flagged throughout by the input checks (--keep-flagged to use it)")
    m = model(robot)
    y = m.regressor(q, qd, qdd)  # the whole run's (the friction terms' load reuses it)
    cands = None
    if with_candidates:  # the Dahl states run from the start of the run
        c = candidates(m, s.q, q, qd)
        cands = replace(c, dahl=c.dahl[sl], load=c.load[sl], stribeck=c.stribeck[sl], smooth=c.smooth[sl])
    time_ = np.arange(len(q))[sl] * ts
    return ValidationData(
        tau[sl], y[sl].reshape(-1, y.shape[2]), time_, keep[sl], candidates=cands, qd=qd[sl], qdd=qdd[sl]
    )
