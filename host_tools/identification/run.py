"""Identification from a log (Xu et al. 2020): processing, base and essential parameters, the friction
terms of a recorded run, physical retrieval, validation and the plain least-squares baseline, on
the loaded robot and logs; the result as numbers (host_tools.reports.identification writes it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.csvdata import Samples
from host_tools.data.logs import Log
from host_tools.identification.baseline import (
    baseline_doc,
    baseline_robot,
    independent_columns,
    joint_columns,
    missing_joint_columns,
)
from host_tools.identification.friction_terms import (
    Candidates,
    FrictionTerms,
    Selection,
    candidates,
    columns,
    held_out_rms,
    select,
)
from host_tools.identification.input_checks import InputChecks, check_inputs
from host_tools.identification.ipopt_progress import stage_lines
from host_tools.identification.least_squares import (
    Fit,
    Model,
    essential,
    least_squares,
    model,
    one_blas_thread,
    rms_per_joint,
)
from host_tools.identification.physical import PhysicalResult, PhysicalSettings, objective_columns, retrieve
from host_tools.identification.pipeline import (
    Identified,
    IdentSettings,
    Processed,
    ValidationData,
    equation_rows,
    filtered,
    fit_coulomb_scales,
    identify,
    observation,
    process,
    rigid_only,
    samples_of,
    validation_data,
    weighted_fit,
)
from host_tools.identification.processing import decimation, lowpass

if TYPE_CHECKING:  # the excitation design imports the trajectory splines (0.25 s)
    from host_tools.identification.excitation import Excitation

T = TypeVar("T")
Stage = Callable[[str], None]


@dataclass(frozen=True)
class Reported:
    """The fit the report gives as base and essential: the description's model, or with friction
    terms its columns followed by the terms' (names FD_j, FL_j, FS_j)."""

    base: Fit
    essential: Fit
    y: np.ndarray  # the observation's columns, stacked (K' n, p)
    names: list[str]
    selection: Selection | None = None
    rows: np.ndarray | None = None  # the equations the fit with the terms used (None: the fit's own)
    weights: np.ndarray | None = None  # the per-joint WLS weights of the fit with the terms (None: the fit's own)

    @property
    def terms(self) -> FrictionTerms | None:
        return None if self.selection is None else self.selection.terms


@dataclass(frozen=True)
class FitTorques:
    """The fitting run's torque (filtered, decimated) and each parameter set's prediction (K', n)."""

    tau: np.ndarray
    base: np.ndarray
    essential: np.ndarray
    physical: np.ndarray
    sample_period: float  # s, between the rows
    periodic: bool  # one averaged period of an excitation run (else a recorded run)


@dataclass(frozen=True)
class Residual:
    """Where the base parameters' validation error sits, per joint (_residual_diagnostics)."""

    mean: np.ndarray
    cutoff_hz: float
    power_below_cutoff: np.ndarray


@dataclass(frozen=True)
class Validation:
    """The validation run (with the friction terms' columns) and each parameter set's RMS error."""

    data: ValidationData
    rms: dict[str, np.ndarray]  # base, essential, physical: N m per joint
    residual: Residual
    base: np.ndarray  # (K, n) predicted torque
    physical: np.ndarray


@dataclass
class IdentificationResult:
    """What one identification found (host_tools.reports.identification: its JSON document)."""

    robot: Robot  # the model fitted: the description, with its fitted Coulomb scales if any
    n_base: int
    reported: Reported
    physical: PhysicalResult
    terms_physical: np.ndarray | None  # the friction terms' coefficients fitted with the physical parameters
    fit_rms: dict[str, np.ndarray]  # base, essential, physical: N m per joint
    periods: int  # averaged (0: a recorded run)
    settings: IdentSettings
    physical_settings: PhysicalSettings
    scale_fit: dict[float, list[float]]  # Coulomb scale candidates' fit RMS per joint
    fit: FitTorques
    validation: Validation | None
    baseline: dict[str, Any]  # the plain least-squares baseline (identification.baseline.baseline_doc)
    checks: InputChecks
    stage_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    # which velocity a recorded run used and why (choose_velocity), with the held-out figures
    velocity: dict[str, Any] = field(default_factory=dict)

    def config(self) -> dict[str, list[float]]:
        """The identified model as the generated pipeline's run-time fields (runtime_config)."""
        sel = self.reported.selection
        terms = None if sel is None or self.terms_physical is None else sel.terms.runtime_config(self.terms_physical)
        return runtime_config(self.robot, self.physical.standard, terms)


def runtime_config(
    robot: Robot, standard: Sequence[float] | np.ndarray, terms: dict[str, list[float]] | None = None
) -> dict[str, list[float]]:
    """An identified model's run-time fields (what config_identified.json sets): ``model.params``, the
    standard parameters ``standard``; a tanh Coulomb model's ``model.coulomb_scale`` (``robot``'s:
    fitted or the description's); the friction terms' ``fric.*`` fields ``terms``
    (FrictionTerms.runtime_config)."""
    out = {"model.params": [float(v) for v in standard]}
    if robot.coulomb.model == "tanh":
        out["model.coulomb_scale"] = [robot.coulomb.scale(i) for i in range(robot.dof)]
    out.update(terms or {})
    return out


@dataclass
class _Fitting:
    """The fitting run as the stages after the least-squares fit share it."""

    robot: Robot
    m: Model
    data: Processed
    ident: Identified
    y: np.ndarray
    tau: np.ndarray
    qd: np.ndarray
    rows: np.ndarray  # the equations the fit used
    checked: np.ndarray  # the equations the input checks left (min_speed 0)
    settings: IdentSettings
    physical: PhysicalSettings
    executor: Executor | None
    stage: Stage = lambda _: None

    def physical_fit(
        self, extra: np.ndarray | None = None, start: PhysicalResult | None = None
    ) -> tuple[PhysicalResult, float]:
        """The multi-start; or, with the friction terms' columns ``extra``, IPOPT again from the
        description model's solution ``start`` with the columns projected out (retrieve's ``extra``)."""
        t1 = time.perf_counter()
        kept = self.ident.essential.kept
        # the eliminated base parameters stay within 3 standard deviations of their least-squares value
        eliminated = [i for i in range(len(self.m.names)) if i not in set(kept)]
        sigma = np.abs(self.ident.base.values) * self.ident.base.rsd / 100.0
        span = (
            self.ident.base.values[eliminated] - 3 * sigma[eliminated],
            self.ident.base.values[eliminated] + 3 * sigma[eliminated],
        )
        columns = objective_columns(self.physical, len(self.m.names), kept)
        whole = self.physical.objective == "model"
        # the objective over every base parameter is the base fit's own, its per-joint WLS weights too
        weights = self.ident.weights
        rows_w = None if not whole or weights is None else np.tile(weights, len(self.rows) // len(weights))[self.rows]
        result = retrieve(
            self.robot,
            self.m.base.k,
            kept,
            self.y[self.rows][:, columns],
            self.tau.reshape(-1)[self.rows],
            self.ident.base.values if whole else self.ident.essential.values,
            self.physical,
            span,
            extra=extra,
            start=None if start is None else start.x,
            weights=rows_w,
            executor=self.executor,
            iteration=stage_lines(
                self.stage,
                "physical parameters (IPOPT)"
                if extra is None
                else "physical parameters with the friction terms (IPOPT)",
                self.physical.starts if start is None else 1,
                self.physical.max_iter,
            ),
        )
        if start is not None:
            result.starts = start.starts + result.starts
        return result, time.perf_counter() - t1


@one_blas_thread
def identify_run(
    described: Robot,
    log: Log | Samples,
    exc: Excitation | None,
    validate: Log | Samples | None = None,
    settings: IdentSettings = IdentSettings(),
    physical: PhysicalSettings = PhysicalSettings(),
    stage: Stage = lambda _: None,
    checks: InputChecks | None = None,
    executor: Executor | None = None,
) -> IdentificationResult:
    """Identify the ``described`` robot from an excitation log (or, ``exc`` None, a recorded
    non-periodic run: validated against its measured torque as it is). ``checks``: the input
    checks' findings on the logs; their flagged samples are left out unless ``checks.keep_flagged``;
    ``executor``: where the physical fit's starts run (default: here)."""
    rigid_only(described)
    check_inputs(described, log, exc, validate)
    checks = checks or InputChecks()
    t0 = time.perf_counter()
    stage("processing, regressor, least squares")
    # positions through the generated encoder read once per run (every stage below shares them)
    log = samples_of(described, log)
    validate = samples_of(described, validate) if validate is not None else None
    left_out = checks.left_out(checks.data, log.sample_period)
    settings, velocity, data, obs = choose_velocity(described, log, exc, settings, left_out)
    processing = time.perf_counter() - t0
    robot, scale_fit = described, {}
    if settings.coulomb_scales:
        stage(f"Coulomb scales ({len(settings.coulomb_scales)} candidates)")
        robot, scale_fit, obs = fit_coulomb_scales(robot, data, settings)
    scales_s = time.perf_counter() - t0 - processing
    free = exc is None  # a recorded run: its own derivative cut-off, the validation torque as measured
    val_left_out = None if validate is None else checks.left_out(checks.validate, validate.sample_period)
    # two workers beside this thread: the validation run's data (filtering, the generated regressor,
    # the friction terms' candidates) from here on, and the physical fit (IPOPT releases the GIL)
    # once the base fit is known; stage_seconds of these overlap
    with ThreadPoolExecutor(max_workers=2) as pool:
        val_job = None
        if validate is not None:
            val_job = pool.submit(
                _timed,
                validation_data,
                described,
                validate,
                settings,
                settings.cutoff_q if free else 5.0,
                not free,
                robot,
                val_left_out,
                settings.friction_terms,
            )
        ident, data, (y, tau, qd) = identify(described, log, exc, settings, robot, data, obs)
        stages = {**ident.stage_seconds, "processing": processing}
        if scale_fit:
            stages["coulomb_scales"] = scales_s
        rows = equation_rows(data, settings, qd)
        checked = equation_rows(data, replace(settings, min_speed=0.0), qd)  # the input checks' rows only
        fitting = _Fitting(
            robot, model(robot), data, ident, y, tau, qd, rows, checked, settings, physical, executor, stage
        )
        stage("physical parameters (multi-start IPOPT), friction terms, validation, baseline")
        physical_job = pool.submit(fitting.physical_fit)
        rep, physical_job = _with_friction_terms(fitting, settings, log, pool, physical_job, stages)
        val = prepared = None
        if val_job is not None:
            prepared, stages["validation"] = val_job.result()
            val = prepared.with_terms(rep.terms)
        t1 = time.perf_counter()
        observed = (robot, y, tau, qd, prepared)
        baseline = _baseline(described, data, settings, validate, exc is not None, rep, val, val_left_out, observed)
        stages["baseline_ls"] = time.perf_counter() - t1
        phys, seconds = physical_job.result()
        stages["physical"] = stages.get("physical", 0.0) + seconds
    result = _result(fitting, rep, phys, val, scale_fit, baseline, checks, exc is not None)
    result.stage_seconds = stages
    result.seconds = time.perf_counter() - t0
    result.velocity = velocity
    return result


Observed = tuple[np.ndarray, np.ndarray, np.ndarray]


def choose_velocity(
    described: Robot, log: Samples, exc: Excitation | None, settings: IdentSettings, flagged: np.ndarray | None
) -> tuple[IdentSettings, dict[str, Any], Processed, Observed | None]:
    """The velocity a run is fitted with (settings.velocity: recorded, estimate or auto), the
    settings with it resolved, a report of the choice, the processed run and (auto) its observation
    for the description's model. auto compares the description's model fitted with each velocity
    on the same held-out blocks of the fitting run (friction_terms.held_out_folds) and takes the
    lower sum of the joints' held-out RMS; the validation run plays no part."""
    requested = settings.velocity
    if exc is not None or log.qd is None:
        why = (
            "an excitation run: Fourier derivatives of the averaged period"
            if exc is not None
            else "no velocity in the log"
        )
        settings = replace(settings, velocity="estimate")
        return (
            settings,
            {"requested": requested, "used": "estimate", "reason": why},
            process(described, log, exc, settings, flagged),
            None,
        )
    if requested != "auto":
        asked = {"requested": requested, "used": requested, "reason": "as requested"}
        return settings, asked, process(described, log, exc, settings, flagged), None

    def trial(v: str) -> tuple[IdentSettings, Processed, Observed, np.ndarray]:
        s = replace(settings, velocity=v)
        data = process(described, log, exc, s, flagged)
        y, tau, qd = observation(described, data, s)
        k, n = tau.shape
        keep = equation_rows(data, replace(s, min_speed=0.0), qd).reshape(k, n)[:, 0]
        nd = decimation(1.0 / data.sample_period, s.band)
        return s, data, (y, tau, qd), held_out_rms(y.reshape(k, n, -1), tau, nd * data.sample_period, keep)

    # the two on two threads (the filters and the generated regressor release the GIL): on an
    # otherwise idle 2-core machine the comparison takes about the wall time of one
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(("estimate", "recorded"), pool.map(trial, ("estimate", "recorded"))))
    used = min(runs, key=lambda v: float(np.sum(runs[v][3])))
    doc: dict[str, Any] = {
        "requested": "auto",
        "used": used,
        "reason": "the lower held-out RMS sum of the description's model on blocks of the fitting run",
        "held_out_rms": {v: r[3].tolist() for v, r in runs.items()},
        "held_out_rms_sum": {v: float(np.sum(r[3])) for v, r in runs.items()},
    }
    s, data, obs, _ = runs[used]
    return s, doc, data, obs


def _with_friction_terms(
    f: _Fitting,
    settings: IdentSettings,
    log: Samples,
    pool: ThreadPoolExecutor,
    physical_job: Future[tuple[PhysicalResult, float]],
    stages: dict[str, float],
) -> tuple[Reported, Future[tuple[PhysicalResult, float]]]:
    """The fit to report (with the friction terms a recorded run chooses, if any) and the physical
    fit that goes with it: with terms, IPOPT again from the description model's solution."""
    rep = Reported(f.ident.base, f.ident.essential, f.y, list(f.m.names))
    if settings.friction_terms:
        t1 = time.perf_counter()
        c = candidates(f.m, log.q, f.data.q, f.data.qd)
        rep = _friction_terms(f.m, c, f.data, settings, f.y, f.tau, f.qd, (f.rows, f.checked))
        stages["friction_terms"] = time.perf_counter() - t1
    if rep.terms is None or not rep.terms.per_joint():  # no term kept on any joint: the plain physical fit
        return rep, physical_job
    plain, stages["physical"] = physical_job.result()  # the physical parameters with the terms, beside the validation
    # the rows and the per-joint weights of the fit with the terms, which the physical fit stands beside
    with_terms = replace(f, rows=f.rows if rep.rows is None else rep.rows, ident=replace(f.ident, weights=rep.weights))
    return rep, pool.submit(with_terms.physical_fit, rep.y[with_terms.rows][:, len(f.m.names) :], plain)


def _result(
    f: _Fitting,
    rep: Reported,
    phys: PhysicalResult,
    val: ValidationData | None,
    scale_fit: dict[float, list[float]],
    baseline: dict[str, Any],
    checks: InputChecks,
    periodic: bool,
) -> IdentificationResult:
    """The predictions and RMS errors of the base, essential and physical parameters."""
    terms_phys = phys.extra if rep.terms is not None else None
    beta_phys = f.m.base.k @ phys.standard
    if terms_phys is not None:
        beta_phys = np.concatenate([beta_phys, terms_phys])
    y_phys = rep.y if terms_phys is not None else f.y
    tau = f.tau
    fit_rms = {
        "base": _rms(rep.y, tau, rep.base.values, f.checked),
        "essential": _rms(rep.y[:, rep.essential.kept], tau, rep.essential.values, f.checked),
        "physical": _rms(y_phys, tau, beta_phys, f.checked),
    }
    fit = FitTorques(
        tau,
        (rep.y @ rep.base.values).reshape(tau.shape),
        (rep.y[:, rep.essential.kept] @ rep.essential.values).reshape(tau.shape),
        (y_phys @ beta_phys).reshape(tau.shape),
        f.data.sample_period * len(f.data.q) / len(tau),
        periodic,
    )
    validation = None
    if val is not None:
        betas = {"base": rep.base.values, "essential": rep.essential.full(len(rep.names)), "physical": beta_phys}
        validation = Validation(
            val,
            {name: val.rms(beta) for name, beta in betas.items()},
            _residual_diagnostics(
                val.tau - val.predicted(rep.base.values), val.keep, f.settings.cutoff_q, val.time[1] - val.time[0]
            ),
            val.predicted(rep.base.values),
            val.predicted(beta_phys),
        )
        if "validation_rms" in baseline:  # the essential and physical sets against it too, as base_ratio
            plain = np.asarray(baseline["validation_rms"], float)
            for name in ("essential", "physical"):
                baseline[f"{name}_ratio"] = (validation.rms[name] / plain).tolist()
                baseline[f"{name}_ratio_sum"] = float(np.sum(validation.rms[name]) / np.sum(plain))
    return IdentificationResult(
        f.robot,
        len(f.m.names),
        rep,
        phys,
        terms_phys,
        fit_rms,
        f.data.periods,
        f.settings,
        f.physical,
        scale_fit,
        fit,
        validation,
        baseline,
        checks,
    )


def _timed(f: Callable[..., T], *args: Any) -> tuple[T, float]:
    """f(*args) and its wall time (s): a stage run on a worker thread."""
    t = time.perf_counter()
    return f(*args), time.perf_counter() - t


def _friction_terms(
    m: Model,
    c: Candidates,
    data: Processed,
    settings: IdentSettings,
    y: np.ndarray,
    tau: np.ndarray,
    qd: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray],
) -> Reported:
    """The friction terms chosen on held-out blocks of the candidates ``c`` (the fitting run's, at
    full rate), then the base and essential fit with them. ``rows``: the equations the fit used
    and those the input checks left (min_speed 0). The choice is made on the latter; a joint's
    smooth Coulomb term kept, the fit with the terms uses them too (``Reported.rows``): the term
    is defined through zero velocity, and the rows near rest a min_speed leaves out (set for a
    ``sign`` column, which flips with the noise there) are where it differs from that column."""
    n, nb, k = m.robot.dof, len(m.names), len(tau)
    dahl, load, shapes, smooth = filtered(data, settings, [c.dahl, c.load, c.stribeck, c.smooth])
    keep = rows[1].reshape(k, n)[:, 0]
    nd = decimation(1.0 / data.sample_period, settings.band)  # observation's decimation
    # an offset per joint where the description does not identify FO (filtered: a constant stays one)
    offset = np.broadcast_to(np.array([f"FO{j + 1}" not in m.names for j in range(n)], float)[:, None], (k, n, 1))
    sel = select(
        y.reshape(k, n, nb),
        tau,
        {"dahl": dahl, "load": load, "stribeck": shapes, "offset": offset, "smooth": smooth},
        nd * data.sample_period,
        keep,
    )
    x = columns(sel.terms, Candidates(dahl, load, shapes, smooth, c.lengths, c.velocities, c.scales))
    y_ext = np.concatenate([y.reshape(k, n, nb), x], axis=2).reshape(k * n, -1)
    names = list(m.names) + sel.terms.names()
    near_rest = sel.terms.has_smooth and settings.smooth_near_rest
    fit_rows = rows[1] if near_rest else rows[0]
    base, w = weighted_fit(y_ext, tau, names, fit_rows, data, settings)
    ess = essential(y_ext, tau, n, names, w, settings.min_abs, settings.max_rsd, fit_rows)
    return Reported(base, ess, y_ext, names, sel, fit_rows if near_rest else None, w)


def _baseline(
    described: Robot,
    data: Processed,
    settings: IdentSettings,
    validate: Log | Samples | None,
    periodic: bool,
    rep: Reported,
    val: ValidationData | None,
    flagged: np.ndarray | None,
    observed: tuple[Robot, np.ndarray, np.ndarray, np.ndarray, ValidationData | None],
) -> dict[str, Any]:
    """The plain least-squares baseline on the same processed data and validation run (the same
    samples left out), beside the reported base fit's validation RMS (``val``: the validation run
    with the reported fit's columns); ``observed``: the robot of an observation already computed,
    it, and the validation run's data prepared for that robot (None: not prepared)."""
    robot = baseline_robot(described)
    missing = missing_joint_columns(robot)
    model(described).with_robot(robot)  # the description's C, the baseline's Coulomb shape
    same = observed[0].digest == robot.digest
    y, tau, qd = observed[1:4] if same else observation(robot, data, settings)
    n = robot.dof
    k = len(tau)
    scale = np.array([robot.coulomb.scale(j) for j in range(n)])
    kept = list(range(y.shape[1]))
    if missing:  # the joint parameters the description lacks, through the same filter and decimation
        (extra,) = filtered(data, settings, [joint_columns(missing, data.qd, data.qdd, scale)])
        y = np.concatenate([y.reshape(k, n, -1), extra], axis=2).reshape(k * n, -1)
        kept = independent_columns(y, len(kept))
        y = y[:, kept]
    rows = equation_rows(data, replace(settings, min_speed=0.0), qd)
    beta = least_squares(y, tau, n, [str(i) for i in range(y.shape[1])], rows=rows).values
    rms = None
    if validate is not None:
        prepared = observed[4] if same else None
        v = (
            replace(prepared, extra=None)
            if prepared is not None
            else validation_data(
                described, validate, settings, 5.0 if periodic else settings.cutoff_q, periodic, robot, flagged
            )
        )
        if missing:
            if v.qd is None or v.qdd is None:
                raise ValueError("the validation data were prepared without their qd, qdd")
            cols = joint_columns(missing, v.qd, v.qdd, scale)
            whole = np.concatenate([v.y, cols.reshape(-1, cols.shape[2])], axis=1)[:, kept]
            nb = v.y.shape[1]
            v = replace(v, y=whole[:, :nb], extra=whole[:, nb:])
        rms = v.rms(beta)
    ours = val.rms(rep.base.values).tolist() if val is not None else None
    return baseline_doc(robot, beta, _rms(y, tau, beta, rows), rms, ours)


def _residual_diagnostics(e: np.ndarray, keep: np.ndarray, cutoff: float, ts: float) -> Residual:
    """Where the base parameters' validation error sits, per joint, over the samples the input
    checks left (``keep``): its mean (a bias no parameter explains) and the share of its power below
    ``cutoff`` Hz (zero-phase low-pass: model error at the motion's frequencies rather than noise).
    The left-out samples are zeroed before the low-pass; the kept ones lie at least SETTLE (0.5 s)
    from a finding of the arm's, beyond the filter's settling at ``cutoff`` (a few / cutoff s), and
    as much from a timing finding's but where those are dense (host_tools.data.checks), where the
    zeroed samples are few and the leak small."""
    kept = np.where(keep[:, None], e, 0.0)
    low = lowpass(kept, cutoff, 1.0 / ts)
    return Residual(e[keep].mean(axis=0), cutoff, np.sum(low[keep] ** 2, axis=0) / np.sum(e[keep] ** 2, axis=0))


def _rms(y: np.ndarray, tau: np.ndarray, beta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The fit's RMS per joint over ``rows`` (K' n,) bool: the equations the input checks left."""
    return rms_per_joint((tau.reshape(-1) - y @ beta).reshape(tau.shape), rows.reshape(tau.shape))
