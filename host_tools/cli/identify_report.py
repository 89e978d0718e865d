"""`manipgen identify`: processing, base and essential parameters, physical retrieval, validation,
and the report (JSON, markdown tables like seed 004 Tables 4, 5, 8, a measured-vs-predicted torque
plot like its Fig. 5, the identified robot as YAML). ``--synthetic`` runs the whole round trip on
the loopback against the description's own parameters."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from codegen.emit.files import write_file
from codegen.model.description import load_robot
from codegen.model.export import robot_to_urdf, robot_to_yaml
from codegen.model.robot import Robot
from host_tools.bindings.rt import load_rt
from host_tools.data.checks import SETTLE, LogChecks, counter_span, with_start_position
from host_tools.data.csvdata import Samples
from host_tools.data.logs import Log
from host_tools.identification.baseline import baseline_doc, baseline_robot, missing_joint_columns, offset_columns
from host_tools.identification.friction_terms import (
    DAHL_LENGTHS,
    FOLDS,
    MIN_GAIN,
    STRIBECK_VELOCITIES,
    Candidates,
    FrictionTerms,
    Selection,
    candidates,
    columns,
    select,
)
from host_tools.identification.least_squares import (
    Fit,
    Model,
    essential,
    least_squares,
    model,
    one_blas_thread,
    rms_per_joint,
)
from host_tools.identification.physical import PhysicalResult, PhysicalSettings, retrieve
from host_tools.identification.pipeline import (
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
    synthetic_log,
    validation_data,
    weighted_fit,
    with_coulomb_scales,
)
from host_tools.identification.processing import decimation, lowpass
from host_tools.reports import plots

T = TypeVar("T")

if TYPE_CHECKING:  # the excitation design imports the trajectory splines (0.25 s)
    from host_tools.identification.excitation import Excitation

WELL_EXCITED_RSD = 0.5  # %: "well excited" base parameters (their eq. 7 RSD at most this)

Stage = Callable[[str], None]


@dataclass(frozen=True)
class Synthetic:
    periods: int = 6
    torque_noise: float = 0.2  # N m, standard deviation (a joint-torque sensor's)
    seed: int = 0
    excite_starts: int = 1
    excite_max_iter: int = 150


@one_blas_thread
def run(
    spec: str,
    log: Log | Samples,
    exc: Excitation | None,
    validate: Log | Samples | None = None,
    settings: IdentSettings = IdentSettings(),
    physical: PhysicalSettings = PhysicalSettings(),
    stage: Stage = lambda _: None,
    checks: InputChecks | None = None,
    executor: Executor | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Identify from an excitation log (or, ``exc`` None, a recorded non-periodic run: validated
    against its measured torque as it is); returns (the JSON document, arrays for the figures).
    ``checks``: the input checks' findings on the logs; their flagged samples are left out unless
    ``checks.keep_flagged``; ``executor``: where the physical fit's starts run (default: here)."""
    robot = load_robot(spec)
    rigid_only(robot, spec)
    check_inputs(robot, log, exc, validate)
    checks = checks or InputChecks()
    t0 = time.perf_counter()
    stage("processing, regressor, least squares")
    # positions through the generated encoder read once per run (every stage below shares them)
    log = samples_of(spec, log)
    validate = samples_of(spec, validate) if validate is not None else None
    data = process(spec, log, exc, settings, checks.left_out(checks.data))
    processing = time.perf_counter() - t0
    scale_fit: dict[float, list[float]] = {}
    obs = None
    if settings.coulomb_scales:
        stage(f"Coulomb scales ({len(settings.coulomb_scales)} candidates)")
        robot, scale_fit, obs = fit_coulomb_scales(robot, data, settings)
    scales_s = time.perf_counter() - t0 - processing
    m = model(robot)
    free = exc is None  # a recorded run: its own derivative cut-off, the validation torque as measured
    # two workers beside this thread: the validation run's data (filtering, the generated regressor,
    # the friction terms' candidates) from here on, and the physical fit (IPOPT releases the GIL)
    # once the base fit is known; stage_seconds of these overlap
    with ThreadPoolExecutor(max_workers=2) as pool:
        val_job = None
        if validate is not None:
            val_job = pool.submit(
                _timed,
                validation_data,
                spec,
                validate,
                settings,
                settings.cutoff_q if free else 5.0,
                not free,
                robot,
                checks.left_out(checks.validate),
                settings.friction_terms,
            )
        ident, data, (y, tau, qd) = identify(spec, log, exc, settings, robot, data, obs)
        stages = {**ident.stage_seconds, "processing": processing}
        if scale_fit:
            stages["coulomb_scales"] = scales_s
        rows = equation_rows(data, settings, qd)
        checked = equation_rows(data, replace(settings, min_speed=0.0), qd)  # the input checks' rows only
        kept = ident.essential.kept
        # the eliminated base parameters stay within 3 standard deviations of their least-squares value
        eliminated = [i for i in range(len(m.names)) if i not in set(kept)]
        sigma = np.abs(ident.base.values) * ident.base.rsd / 100.0
        span = (
            ident.base.values[eliminated] - 3 * sigma[eliminated],
            ident.base.values[eliminated] + 3 * sigma[eliminated],
        )

        def physical_fit(
            extra: np.ndarray | None = None, start: PhysicalResult | None = None
        ) -> tuple[PhysicalResult, float]:
            """The multi-start; or, with the friction terms' columns ``extra``, IPOPT again from the
            description model's solution ``start`` with the columns projected out (retrieve's ``extra``)."""
            t1 = time.perf_counter()
            result = retrieve(
                robot,
                m.base.k,
                kept,
                y[rows][:, kept],
                tau.reshape(-1)[rows],
                ident.essential.values,
                physical,
                span,
                extra=extra,
                start=None if start is None else start.x,
                executor=executor,
            )
            if start is not None:
                result.starts = start.starts + result.starts
            return result, time.perf_counter() - t1

        stage("physical parameters (multi-start IPOPT), friction terms, validation, baseline")
        physical_job = pool.submit(physical_fit)
        extended = None
        if settings.friction_terms:
            t1 = time.perf_counter()
            c = candidates(m, log.q, data.q, data.qd)
            extended = _friction_terms(m, c, data, settings, y, tau, qd, rows)
            stages["friction_terms"] = time.perf_counter() - t1
        rep = extended or Reported(ident.base, ident.essential, y, list(m.names))
        if rep.terms is not None:  # the physical parameters with the terms, beside the validation
            plain, stages["physical"] = physical_job.result()
            physical_job = pool.submit(physical_fit, rep.y[rows][:, len(m.names) :], plain)
        val = None
        ours: dict[str, list[float]] = {}
        if val_job is not None:
            prepared, stages["validation"] = val_job.result()
            val = prepared.with_terms(rep.terms)
            ours = {"base": val.rms(rep.base.values).tolist()}
        t1 = time.perf_counter()
        baseline = _baseline(
            spec,
            data,
            settings,
            validate,
            exc is not None,
            ours or None,
            checks.left_out(checks.validate),
            (robot, y, tau, qd, prepared if val_job is not None else None),
        )
        stages["baseline_ls"] = time.perf_counter() - t1
        phys, seconds = physical_job.result()
        stages["physical"] = stages.get("physical", 0.0) + seconds
    terms_phys = phys.extra if rep.terms is not None else None
    beta_phys = m.base.k @ phys.standard
    if terms_phys is not None:
        beta_phys = np.concatenate([beta_phys, terms_phys])
    doc: dict[str, Any] = {
        "robot": robot.name,
        "n_base": len(m.names),
        "n_essential": len(rep.essential.names),
        "eliminated": rep.essential.removed,
        "periods_averaged": data.periods,
        "base": {
            n: {"value": float(v), "rsd": float(r) / 100}  # a fraction, as every ratio of the JSON
            for n, v, r in zip(rep.names, rep.base.values, rep.base.rsd)
        },
        "essential": {
            n: {"value": float(v), "rsd": float(r) / 100}
            for n, v, r in zip(rep.essential.names, rep.essential.values, rep.essential.rsd)
        },
        "physical": {n: float(v) for n, v in zip(phys.names, phys.mu)},
        "physical_objective": phys.objective,
        "base_objective": phys.base_objective,
        "physical_starts": phys.starts,
        "fit_rms": {
            "base": _rms(rep.y, tau, rep.base.values, checked).tolist(),
            "essential": _rms(rep.y[:, rep.essential.kept], tau, rep.essential.values, checked).tolist(),
            "physical": _rms(rep.y if terms_phys is not None else y, tau, beta_phys, checked).tolist(),
        },
        "settings": {"identification": vars(settings), "physical": vars(physical)},
        "coulomb": {
            "model": robot.coulomb.model,
            "velocity_scale": list(robot.coulomb.velocity_scale),
            "candidates_fit_rms": {str(k): v for k, v in scale_fit.items()},
        },
    }
    arrays = {
        "tau": tau,
        "base": (rep.y @ rep.base.values).reshape(tau.shape),
        "essential": (rep.y[:, rep.essential.kept] @ rep.essential.values).reshape(tau.shape),
        "physical": ((rep.y if terms_phys is not None else y) @ beta_phys).reshape(tau.shape),
        "ts": data.sample_period * len(data.q) / len(tau),
        "periodic": exc is not None,
    }
    if val is not None:
        doc["validation_torque"] = "low-passed at the band" if exc is not None else "measured, unfiltered"
        betas = {"base": rep.base.values, "essential": rep.essential.full(len(rep.names)), "physical": beta_phys}
        doc["validation_rms"] = {name: val.rms(beta).tolist() for name, beta in betas.items()}
        doc["validation_residual"] = _residual_diagnostics(
            val.tau - val.predicted(rep.base.values), val.keep, settings.cutoff_q, val.time[1] - val.time[0]
        )
        arrays["validation"] = {
            "tau": val.tau,
            "keep": val.keep,
            "t": val.time,
            "base": val.predicted(rep.base.values),
            "physical": val.predicted(beta_phys),
        }
    doc["baseline_ls"] = baseline
    if checks.data is not None or checks.validate is not None:
        doc["checks"] = checks.as_json()
        doc["flagged_samples"] = checks.flagged_samples()
        doc["flagged_left_out"] = not checks.keep_flagged
    if rep.selection is not None:
        doc["friction_terms"] = {
            "per_joint": rep.selection.terms.as_json(),
            "cv_rms_description_model": rep.selection.cv_rms_plain.tolist(),
            "cv_rms": rep.selection.cv_rms.tolist(),
            "grids": {"dahl_length": list(DAHL_LENGTHS), "stribeck_velocity": list(STRIBECK_VELOCITIES)},
            "folds": FOLDS,
            "min_gain": MIN_GAIN,
            "physical": "the physical parameters fitted with the terms' coefficients (from the description "
            "model's solution): what config_identified.json gives the generated C",
        }
        if terms_phys is not None:
            doc["friction_terms"]["physical_coefficients"] = dict(zip(rep.selection.terms.names(), terms_phys.tolist()))
            doc["friction_terms"]["runtime_config"] = rep.selection.terms.runtime_config(terms_phys)
    doc["identified_standard"] = phys.standard.tolist()
    doc["stage_seconds"] = stages
    doc["seconds"] = time.perf_counter() - t0
    return doc, arrays


def _timed(f: Callable[..., T], *args: Any) -> tuple[T, float]:
    """f(*args) and its wall time (s): a stage run on a worker thread."""
    t = time.perf_counter()
    return f(*args), time.perf_counter() - t


@dataclass(frozen=True)
class Reported:
    """The fit the report gives as base and essential: the description's model, or with friction
    terms its columns followed by the terms' (names FD_j, FL_j, FS_j)."""

    base: Fit
    essential: Fit
    y: np.ndarray  # the observation's columns, stacked (K' n, p)
    names: list[str]
    selection: Selection | None = None

    @property
    def terms(self) -> FrictionTerms | None:
        return None if self.selection is None else self.selection.terms


def _friction_terms(
    m: Model,
    c: Candidates,
    data: Processed,
    settings: IdentSettings,
    y: np.ndarray,
    tau: np.ndarray,
    qd: np.ndarray,
    rows: np.ndarray,
) -> Reported:
    """The friction terms chosen on held-out blocks of the candidates ``c`` (the fitting run's, at
    full rate), then the base and essential fit with them."""
    n, nb, k = m.robot.dof, len(m.names), len(tau)
    dahl, load, shapes = filtered(data, settings, [c.dahl, c.load, c.stribeck])
    keep = equation_rows(data, replace(settings, min_speed=0.0), qd).reshape(k, n)[:, 0]
    nd = decimation(1.0 / data.sample_period, settings.band)  # observation's decimation
    sel = select(
        y.reshape(k, n, nb), tau, {"dahl": dahl, "load": load, "stribeck": shapes}, nd * data.sample_period, keep
    )
    x = columns(sel.terms, Candidates(dahl, load, shapes, c.lengths, c.velocities))
    y_ext = np.concatenate([y.reshape(k, n, nb), x], axis=2).reshape(k * n, -1)
    names = list(m.names) + sel.terms.names()
    base, w = weighted_fit(y_ext, tau, names, rows, data, settings)
    ess = essential(y_ext, tau, n, names, w, settings.min_abs, settings.max_rsd, rows)
    return Reported(base, ess, y_ext, names, sel)


def _baseline(
    spec: str,
    data: Processed,
    settings: IdentSettings,
    validate: Log | Samples | None,
    periodic: bool,
    ours: dict[str, list[float]] | None,
    flagged: np.ndarray | None,
    observed: tuple[Robot, np.ndarray, np.ndarray, np.ndarray, ValidationData | None],
) -> dict[str, Any]:
    """The plain least-squares baseline on the same processed data and validation run (the same
    samples left out); ``observed``: the robot of an observation already computed, it, and the
    validation run's data prepared for that robot (None: not prepared)."""
    described = load_robot(spec)
    robot = baseline_robot(described)
    missing = missing_joint_columns(robot)
    if set(missing) - {"FO"}:
        return {"skipped": f"{robot.name} does not identify {', '.join(missing)}: the baseline's columns need them"}
    model(described).with_robot(robot)  # the description's C, the baseline's Coulomb shape
    same = observed[0].digest == robot.digest
    y, tau, qd = observed[1:4] if same else observation(robot, data, settings)
    n = robot.dof
    k = len(tau)
    if missing:  # FO: a constant per joint, through the same filter and decimation
        (fo,) = filtered(data, settings, [offset_columns(len(data.q), n)])
        y = np.concatenate([y.reshape(k, n, -1), fo], axis=2).reshape(k * n, -1)
    rows = equation_rows(data, replace(settings, min_speed=0.0), qd)
    beta = least_squares(y, tau, n, [str(i) for i in range(y.shape[1])], rows=rows).values
    rms = None
    if validate is not None:
        prepared = observed[4] if same else None
        val = (
            replace(prepared, extra=None)
            if prepared is not None
            else validation_data(
                spec, validate, settings, 5.0 if periodic else settings.cutoff_q, periodic, robot, flagged
            )
        )
        if missing:
            val = replace(val, extra=offset_columns(len(val.tau), n).reshape(-1, n))
        rms = val.rms(beta)
    return baseline_doc(robot, beta, _rms(y, tau, beta, rows), rms, ours["base"] if ours else None)


def _residual_diagnostics(e: np.ndarray, keep: np.ndarray, cutoff: float, ts: float) -> dict[str, Any]:
    """Where the base parameters' validation error sits, per joint, over the samples the input
    checks left (``keep``): its mean (a bias no parameter explains) and the share of its power below
    ``cutoff`` Hz (zero-phase low-pass: model error at the motion's frequencies rather than noise).
    The left-out samples are zeroed before the low-pass; the kept ones lie at least SETTLE (0.5 s)
    from them, beyond the filter's settling at ``cutoff`` (a few / cutoff s)."""
    kept = np.where(keep[:, None], e, 0.0)
    low = lowpass(kept, cutoff, 1.0 / ts)
    return {
        "mean": e[keep].mean(axis=0).tolist(),
        "cutoff_hz": cutoff,
        "power_below_cutoff": (np.sum(low[keep] ** 2, axis=0) / np.sum(e[keep] ** 2, axis=0)).tolist(),
    }


@dataclass(frozen=True)
class InputChecks:
    """The input checks' findings on the fitting and the validation log (None: a CSV, not checked),
    and whether their flagged samples are kept (--keep-flagged) or left out (the default)."""

    data: LogChecks | None = None
    validate: LogChecks | None = None
    keep_flagged: bool = False

    def left_out(self, checks: LogChecks | None) -> np.ndarray | None:
        """The samples to leave out of one log (None: none)."""
        return None if checks is None or self.keep_flagged else checks.flagged

    def as_json(self) -> list[dict[str, Any]]:
        """Every finding, {kind, joint, t0, t1, samples, detail, source (the file)}."""
        return [{**f, "source": c.source} for c in (self.data, self.validate) if c is not None for f in c.as_json()]

    def flagged_samples(self) -> dict[str, int]:
        return {w: int(c.flagged.sum()) for w, c in (("data", self.data), ("validate", self.validate)) if c is not None}

    def lines(self) -> list[str]:
        out = [line for c in (self.data, self.validate) if c is not None for line in c.lines()]
        if out:
            out.append(
                "the flagged samples are used as they are (--keep-flagged)"
                if self.keep_flagged
                else f"the flagged samples (and {SETTLE:g} s either side: the filters' settling) are left out of "
                "the fit and the validation RMS (--keep-flagged keeps them)"
            )
        return out


def check_inputs(robot: Any, log: Log | Samples, exc: Excitation | None, validate: Log | Samples | None) -> None:
    """The data and the excitation belong to this robot (one clear error otherwise)."""
    if exc is not None and len(exc.q0) != robot.dof:
        raise ValueError(f"the excitation has {len(exc.q0)} joints, {robot.name} has {robot.dof}")
    for what, data in (("DATA", log), ("--validate", validate)):
        if isinstance(data, Log) and data.robot != robot.c_name:
            raise ValueError(f"{what}: the log is of robot {data.robot!r}, not {robot.c_name!r}")
        if data is not None and np.shape(data.tau)[1] != robot.dof:
            raise ValueError(f"{what}: {np.shape(data.tau)[1]} joints in the data, {robot.name} has {robot.dof}")


def _rms(y: np.ndarray, tau: np.ndarray, beta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The fit's RMS per joint over ``rows`` (K' n,) bool: the equations the input checks left."""
    return rms_per_joint((tau.reshape(-1) - y @ beta).reshape(tau.shape), rows.reshape(tau.shape))


def synthetic(
    spec: str,
    options: Synthetic = Synthetic(),
    settings: IdentSettings = IdentSettings(),
    physical: PhysicalSettings = PhysicalSettings(),
    stage: Stage = lambda _: None,
    start: tuple[float, ...] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], Excitation]:
    """The round trip without a robot: design the excitation, run it on the loopback (the
    description's parameters are the truth) with torque noise, identify, and compare. ``start``:
    the stated start position of the excitation run (rad or m) for encoders whose counters wrap
    within a joint's travel (the validation motion's start is the simulation's own)."""
    # here, not at the top: a recorded run's identification needs none of them (identify <= 3 s)
    from codegen.blocks import kalman
    from host_tools.bindings.loopback import simulate
    from host_tools.data.trajectories import generated_trajectory
    from host_tools.identification.excitation import ExciteSettings, design

    t0 = time.perf_counter()
    robot = load_robot(spec)
    rigid_only(robot, spec)
    stage("excitation design (IPOPT)")
    t1 = time.perf_counter()
    exc = design(
        robot, ExciteSettings(starts=options.excite_starts, max_iter=options.excite_max_iter, seed=options.seed)
    ).excitation
    excite_s = time.perf_counter() - t1
    stage("simulating the excitation and a validation motion")
    t1 = time.perf_counter()
    log = synthetic_log(spec, exc, options.periods, options.torque_noise, options.seed)
    rt = load_rt(spec, estimator=kalman.SPEC.name, observer="none", controller="computed_torque")
    rt.config["ctl.friction_ff"] = 1.0  # as synthetic_log: no friction chatter in the run
    other = simulate(rt, generated_trajectory(robot, 20.0, rt.sample_period, seed=options.seed + 1)).log
    other.tau = other.tau + np.random.default_rng(options.seed + 1).normal(0.0, options.torque_noise, other.tau.shape)
    if start is not None:
        # the run is simulated: a stated start the counts cannot place (off by half a counter span
        # or more, start_offsets) would identify from wrong absolute positions -- refuse it
        true_start = np.asarray(log.extra["q_true"][0], float)
        off = np.abs(np.asarray(start, float) - true_start) >= counter_span(robot) / 2
        if np.any(off):
            j = int(np.argmax(off))
            raise ValueError(
                f"--start-position: joint {j + 1}: {start[j]:.6g} is not where the synthetic run starts "
                f"({true_start[j]:.6g}, the designed excitation's first sample); state it to within half "
                f"a counter span ({counter_span(robot)[j] / 2:.4g} rad or m): --start-position="
                + ",".join(f"{v:.4g}" for v in true_start)
            )
        log = with_start_position(log, robot, start)
        other = with_start_position(other, robot, other.extra["q_true"][0])
    simulate_s = time.perf_counter() - t1
    doc, arrays = run(spec, log, exc, other, settings, physical, stage)
    m = model(robot)
    truth = m.true_base()
    values = np.array([doc["base"][n]["value"] for n in m.names])
    rsd = np.array([doc["base"][n]["rsd"] for n in m.names]) * 100  # %
    rel = np.abs(values - truth) / np.maximum(np.abs(truth), 1e-12)
    well = rsd <= WELL_EXCITED_RSD
    doc["truth"] = {"base": dict(zip(m.names, truth.tolist())), "relative_error": dict(zip(m.names, rel.tolist()))}
    doc["well_excited"] = [n for n, w in zip(m.names, well) if w]
    doc["well_excited_rsd"] = WELL_EXCITED_RSD / 100
    doc["max_rel_error_well_excited"] = float(rel[well].max()) if np.any(well) else None
    doc["noise_floor_rms"] = _noise_floor(options, doc, log)
    doc["noise_floor_factor"] = NOISE_FLOOR_FACTOR
    doc.setdefault("warnings", [])
    above = [j + 1 for j, v in enumerate(doc["fit_rms"]["base"]) if v > NOISE_FLOOR_FACTOR * doc["noise_floor_rms"]]
    if above:
        doc["warnings"].append(
            f"base fit RMS above {NOISE_FLOOR_FACTOR:g} x the noise floor ({doc['noise_floor_rms']:.3g} N m) on joints "
            f"{', '.join(map(str, above))}: "
            f"model or processing error beyond the noise (e.g. the excitation not tracked, "
            "harmonics outside the derivative band, a discontinuous Coulomb model)"
        )
    # the validation run is one pass, not averaged: its floor is the band-limited noise alone
    band = doc["settings"]["identification"]["band"]
    doc["validation_noise_floor_rms"] = float(options.torque_noise * np.sqrt(band / (0.5 / other.sample_period)))
    # the truth through the same validation processing: what no identified model can beat there
    # (the band-limited noise plus the time-domain derivatives' error of a single pass)
    doc["validation_rms_truth"] = validation_data(spec, other, settings, 5.0, True, robot).rms(truth).tolist()
    doc["stage_seconds"] = {"excitation": excite_s, "simulation": simulate_s, **doc["stage_seconds"]}
    doc["seconds"] = time.perf_counter() - t0
    doc["synthetic"] = vars(options)
    return doc, arrays, exc


# A synthetic fit whose RMS exceeds this factor times the noise floor has error beyond the noise:
# the band-limited noise's RMS over the K kept samples scatters by ~1/sqrt(2K) (K ~ 2 x 6 Hz x 20 s
# = 240 decimated samples: 5 %), so 1.2 is four such standard deviations above a pure-noise residual.
NOISE_FLOOR_FACTOR = 1.2


def _noise_floor(options: Synthetic, doc: dict[str, Any], log: Log) -> float:
    """RMS the torque noise leaves after averaging the periods and the band-limiting low-pass."""
    settings = doc["settings"]["identification"]
    fs = 1.0 / log.sample_period
    return float(options.torque_noise / np.sqrt(doc["periods_averaged"]) * np.sqrt(settings["band"] / (fs / 2)))


def table(doc: dict[str, Any]) -> str:
    lines = [
        f"# Identification of {doc['robot']}",
        "",
        f"{doc['n_base']} base parameters, {doc['n_essential']} essential "
        f"(eliminated: {', '.join(doc['eliminated']) or 'none'}); {doc['periods_averaged']} periods averaged.",
        f"Objective |tau - Y_e pi_e|: least squares {doc['base_objective']:.4g} N m, "
        f"physical {doc['physical_objective']:.4g} N m.",
        "",
        "| parameter | base | RSD % | essential | RSD % |" + (" truth |" if "truth" in doc else ""),
        "| --- | --: | --: | --: | --: |" + (" --: |" if "truth" in doc else ""),
    ]
    for n, b in doc["base"].items():
        e = doc["essential"].get(n)
        row = f"| {n} | {b['value']:.5g} | {100 * b['rsd']:.3g} | " + (
            f"{e['value']:.5g} | {100 * e['rsd']:.3g} |" if e else "— | — |"
        )
        if "truth" in doc:
            row += f" {doc['truth']['base'][n]:.5g} |"
        lines.append(row)
    if "validation_rms" in doc:
        n = len(doc["validation_rms"]["base"])
        lines += [
            "",
            "Validation RMS torque error per joint, N m (seed 004 Table 8):",
            "",
            "| parameters | " + " | ".join(f"joint {i + 1}" for i in range(n)) + " |",
            "| --- |" + " --: |" * n,
        ]
        lines += [
            f"| {k} | " + " | ".join(f"{v:.4f}" for v in vals) + " |" for k, vals in doc["validation_rms"].items()
        ]
    return "\n".join(lines) + "\n"


def write(doc: dict[str, Any], arrays: dict[str, Any], spec: str, out: Path) -> list[Path]:
    """identification.{json,md,png} and the identified robot as <robot>_identified.yaml and .urdf."""
    from host_tools.identification.physical import PhysicalResult

    robot = load_robot(spec)
    fitted = tuple(doc["coulomb"]["velocity_scale"])
    scaled = bool(doc["coulomb"]["candidates_fit_rms"])
    if scaled:
        robot = with_coulomb_scales(robot, fitted)
    write_file(out / "identification.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "identification.md", table(doc))
    result = PhysicalResult(np.zeros(0), [], np.asarray(doc["identified_standard"]), 0.0, 0.0)
    ident_robot = result.robot(robot)
    header = (
        f"Identified by `manipgen identify` from {robot.name}: physical parameters retrieved from "
        f"{doc['n_essential']} essential parameters (objective {doc['physical_objective']:.4g} N m).\n"
        "Kinematics, limits, encoders as in the original description."
    )
    yaml_path = out / f"{robot.c_name}_identified.yaml"
    write_file(yaml_path, robot_to_yaml(ident_robot, header))
    urdf_path = out / f"{robot.c_name}_identified.urdf"
    write_file(urdf_path, robot_to_urdf(ident_robot))
    written = [
        out / "identification.json",
        out / "identification.md",
        plots.identification_fit(arrays, out / "identification.png"),
        yaml_path,
        urdf_path,
    ]
    if "validation" in arrays:
        written.append(plots.identification_validation(arrays["validation"], out / "identification_validation.png"))
    # the description's generated C takes the identified model at run time: the parameters, the
    # Coulomb scales (fitted or the description's) and the friction terms
    extra: dict[str, list[float]] = {}
    if robot.coulomb.model == "tanh":
        extra["model.coulomb_scale"] = [robot.coulomb.scale(i) for i in range(robot.dof)]
    extra.update(doc.get("friction_terms", {}).get("runtime_config", {}))
    written.append(write_params_config(robot, doc["identified_standard"], out / "config_identified.json", extra))
    return written


def write_params_config(
    robot: Any, standard: list[float], path: Path, extra: dict[str, list[float]] | None = None
) -> Path:
    """A config JSON (docs/realtime.md) setting ``model.params`` and the ``extra`` fields (the Coulomb
    scales, the friction terms' ``fric.*``): it loads into any pipeline of the robot with run-time
    parameters (``rt.config.load``, ``--config``; a pipeline without the ``fric`` block, i.e.
    without an observer, skips its fields)."""
    from host_tools.bindings.rt import ANY_PIPELINE, CONFIG_FORMAT, CONFIG_VERSION

    doc = {
        "format": CONFIG_FORMAT,
        "version": CONFIG_VERSION,
        "robot": robot.c_name,
        "pipeline": ANY_PIPELINE,
        "config": {"model.params": [float(v) for v in standard], **(extra or {})},
    }
    write_file(path, json.dumps(doc, indent=1) + "\n")
    return path
