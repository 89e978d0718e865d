"""`manipgen identify --method idim-ls|didim|clie|cloe|all`: output-error identification of a
closed-loop run (host_tools.identification.output_error) and its report -- the JSON document, seed 002's tables
(1: estimates and RSD, 2: singular values, condition number and time, 3: relative errors of the
simulated q and tau) with the paper's values beside ours, and the residual autocorrelation figures
(Figs. 1-3). ``--synthetic`` makes the run itself: the robot on the loopback (the pipeline's pid on a
findiff velocity, quantised encoders) with measurement noise and an unmodelled disturbance."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks import findiff
from codegen.emit.files import write_file
from codegen.model.description import load_robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import SimulationError, simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.logs import Log
from host_tools.data.trajectories import generated_trajectory
from host_tools.identification.closed_loop import ClosedLoopModel, Loop
from host_tools.identification.output_error import (
    METHODS,
    Identification,
    Method,
    OEData,
    OESettings,
    Result,
    description_start,
)
from host_tools.identification.pipeline import positions, rigid_only
from host_tools.identification.processing import lowpass
from host_tools.reports import plots

Stage = Callable[[str], None]

# seed 002 Tables 2 and 3 (Staubli TX40, 34 500 samples, no decimation filter)
PAPER_TABLE2 = {
    "clie": (2.26e4, 19.3, 1172, "23 min"),
    "cloe": (9.85, 2.6e-3, 3845, "23 min"),
    "didim": (2.23e4, 19.1, 1166, "1 min"),
}
PAPER_TABLE3 = {"clie": (0.017, 6.97), "cloe": (0.017, 10.7), "didim": (0.013, 6.95)}
# seed 002 Table 5 (the same with the decimation filter, N = 276)
PAPER_TABLE5 = {
    "clie": (1589.0, 1.3, 1178, "23 min"),
    "cloe": (1.34, 1.74e-4, 7622, "23 min"),
    "didim": (1571.0, 1.3, 1165, "1 min"),
}


@dataclass(frozen=True)
class OESynthetic:
    duration: float = 34.5  # s: 34 500 samples at 1 kHz, seed 002's size
    bandwidth: float = 5.0  # Hz: PD kp = (2 pi f)^2 M_ii(q0), kd = 2 (2 pi f) M_ii(q0)
    torque_noise: float = 0.2  # N m, white, on the logged torque (current measurement)
    disturbance: float = 0.02  # N m RMS, unmodelled torque on the plant (low-passed noise) ...
    disturbance_band: float = 2.0  # ... below this, Hz
    init_error: float = 0.3  # the start: the description's parameters x U(1 -+ this)
    seed: int = 0


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


def loop_for(spec: str, gains: dict[Any, Any] | None = None) -> Loop:
    """The pid loop of the robot's pipeline (its default gains and model), with ``gains`` (kp, kd,
    ki, i_max, tau_max, drive_gain: one value or one per joint; gravity_compensation: true/false)
    over it."""
    rt = load_rt(spec, estimator=findiff.FINDIFF.name, observer="none", controller="pid")
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


def oe_data(spec: str, log: Log, drive_gain: np.ndarray | float = 1.0, source: str = "DATA") -> OEData:
    """A closed-loop log as the output-error methods see it: positions through the robot's encoder
    read; tau[k] = G_tau x the log's tau[k + 1] (the controller's output held over sample k, as a
    torque: G_tau = 1 when the log holds torques)."""
    robot = load_robot(spec)
    rigid_only(robot, spec)
    if log.robot != robot.c_name:
        raise ValueError(f"{source}: the log is of robot {log.robot!r}, not {robot.c_name!r}")
    if len(log) < 100:
        raise ValueError(f"{source}: {len(log)} samples; output-error identification needs a run of at least 100")
    q = positions(spec, log)
    tau = np.asarray(log.tau, float)[1:] * np.asarray(drive_gain, float)
    return OEData(log.sample_period, q[:-1], tau, np.asarray(log.q_des, float)[:-1], np.asarray(log.qd_des, float)[:-1])


def synthetic_run(spec: str, opts: OESynthetic) -> tuple[Log, Loop]:
    """The robot (its description = the truth) tracking a seed 000-like motion on the loopback with
    a well-tuned PD (critically damped at ``bandwidth``), quantised encoders, an unmodelled
    disturbance and noise on the logged torques."""
    robot = load_robot(spec)
    rigid_only(robot, spec)
    rt = load_rt(spec, estimator=findiff.FINDIFF.name, observer="none", controller="pid")
    traj = generated_trajectory(robot, opts.duration, rt.sample_period, seed=opts.seed + 3, speed=0.8, span=0.6)
    m0 = np.diag(load(spec).mass_matrix(traj.q[0]))
    w = 2 * np.pi * opts.bandwidth
    rt.config["ctl.kp"] = w * w * m0
    rt.config["ctl.kd"] = 2 * w * m0
    rng = np.random.default_rng(opts.seed)
    dist = lowpass(rng.normal(size=traj.q.shape), opts.disturbance_band, 1.0 / rt.sample_period)
    dist *= opts.disturbance / np.maximum(dist.std(axis=0), 1e-300)
    log = simulate(rt, traj, tau_ext=dist).log
    log.tau = log.tau + rng.normal(0.0, opts.torque_noise, log.tau.shape)
    return log, Loop.from_rt(rt)


def _result_doc(r: Result, truth: np.ndarray | None, reference: Result | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "method": r.method,
        "seconds": r.seconds,
        "iterations": r.iterations,
        "mu_min": r.mu_min,
        "mu_max": r.mu_max,
        "cond": r.cond,
        "rel_error_q": float(np.mean(r.rel_error_q)),
        "rel_error_tau": float(np.mean(r.rel_error_tau)),
        "rel_error_q_per_joint": r.rel_error_q.tolist(),
        "rel_error_tau_per_joint": r.rel_error_tau.tolist(),
        "residual_autocorrelation": {
            "bound_2sigma": r.bound,
            "lags": int(len(r.autocorrelation) - 1),
            "fraction_outside": float(np.mean(np.abs(r.autocorrelation[1:]) > r.bound)),
            "per_joint": r.autocorrelation.T.tolist(),
        },
        "criterion_history": r.history,
        "parameters": {n: {"value": float(v), "rsd": float(s) / 100} for n, v, s in zip(r.names, r.values, r.rsd)},
    }
    if truth is not None:
        t = truth[r.kept]
        nz = np.abs(t) > 1e-9
        rel = np.abs(r.values - t)[nz] / np.abs(t[nz])
        doc["max_rel_param_error"] = float(rel.max()) if rel.size else 0.0
        doc["median_rel_param_error"] = float(np.median(rel)) if rel.size else 0.0
        for n, tv in zip(r.names, t):
            doc["parameters"][n]["truth"] = float(tv)
    if reference is not None and reference.names == r.names:
        # seed 002 §5.2: do the estimates lie in the 3 sigma confidence intervals of the LS ones?
        sigma = np.abs(reference.values) * reference.rsd / 100
        inside = np.abs(r.values - reference.values) <= 3 * sigma
        doc["within_3sigma_of_idim_ls"] = float(np.mean(inside))
        doc["outside_3sigma_of_idim_ls"] = [n for n, i in zip(r.names, inside) if not i]
    return doc


def identify_closed_loop(
    spec: str,
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
) -> tuple[dict[str, Any], dict[str, Result]]:
    """IDIM-LS first (the reference, the essential set and, with init='idim-ls', the start), then the
    chosen methods from the same start. Returns (JSON document, results by method). ``executor``:
    where the sensitivities' simulations run (default: threads here)."""
    t0 = time.perf_counter()
    stage("building the closed-loop model")
    model = ClosedLoopModel(spec, data.sample_period)
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
    doc: dict[str, Any] = {
        "robot": model.robot.name,
        "samples": int(len(data.q)),
        "sample_period": data.sample_period,
        "n_base": model.n_base,
        "estimated": [names[i] for i in kept],
        "init": init,
        "settings": asdict(settings),
        "warnings": warnings,
        "methods": {},
    }
    for m, r in results.items():
        doc["methods"][m] = _result_doc(r, truth, None if m == "idim-ls" else ref)
    doc["seconds"] = time.perf_counter() - t0
    return finite(doc), results


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


def finite(obj: Any) -> Any:
    """The document with every inf/NaN as null (strict JSON)."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite(v) for v in obj]
    return obj


def single(doc: dict[str, Any], method: Method) -> dict[str, Any]:
    """The document of one method at the top level (the CLI's --method X --json), the IDIM-LS
    reference and the shared fields beside it."""
    out = {k: v for k, v in doc.items() if k != "methods"}
    out.update(doc["methods"][method])
    out["total_seconds"] = doc["seconds"]
    if method != "idim-ls":
        out["idim_ls"] = {k: v for k, v in doc["methods"]["idim-ls"].items() if k != "residual_autocorrelation"}
    return out


def _f(v: float | None, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def _pc(v: float | None, spec: str) -> str:
    """A fraction of the JSON (every ratio there is a fraction) printed in percent."""
    return "—" if v is None else format(100.0 * v, spec)


def tables(doc: dict[str, Any]) -> str:
    """seed 002 Tables 1-3 for our run, the paper's beside Tables 2 and 3."""
    methods = list(doc["methods"])
    lines = [
        f"# Output-error identification of {doc['robot']} ({doc['samples']} samples, start: {doc['init']})",
        "",
        "Table 1 — estimates (RSD %)"
        + (" and truth" if "truth" in next(iter(doc["methods"]["idim-ls"]["parameters"].values())) else ""),
        "",
        "| parameter | " + " | ".join(methods) + " |",
        "| --- |" + " --: |" * len(methods),
    ]
    first = doc["methods"][methods[0]]["parameters"]
    for name in doc["estimated"]:
        cells = []
        for m in methods:
            p = doc["methods"][m]["parameters"].get(name)
            cells.append(f"{_f(p['value'], '.4g')} ({_pc(p['rsd'], '.2g')} %)" if p else "—")
        truth = first.get(name, {}).get("truth")
        lines.append(f"| {name}{f' = {truth:.4g}' if truth is not None else ''} | " + " | ".join(cells) + " |")
    decimated = bool(doc["settings"].get("decimate"))
    paper_jac = PAPER_TABLE5 if decimated else PAPER_TABLE2
    lines += [
        "",
        "Table 2 — Jacobian and computing time (paper: Stäubli TX40, "
        + ("Table 5, with the decimation filter)" if decimated else "Table 2, no decimation filter)"),
        "",
        "| method | μ_max | μ_min | cond | time | iterations | paper μ_max | paper μ_min | paper cond | paper time |",
        "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
    ]
    for m in methods:
        d = doc["methods"][m]
        paper = paper_jac.get(m)
        pc = " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in paper) if paper else "— | — | — | —"
        lines.append(
            f"| {m} | {_f(d['mu_max'], '.3g')} | {_f(d['mu_min'], '.3g')} | "
            f"{_f(d['cond'], '.4g')} | {d['seconds']:.1f} s | "
            f"{d['iterations']} | {pc} |"
        )
    lines += [
        "",
        "Table 3 — mean relative errors over the axes of the simulated closed loop, % (paper: Table 3, "
        "no decimation filter)",
        "",
        "| method | ‖q_m − q_s‖/‖q_m‖ | ‖τ − τ_s‖/‖τ‖ | paper q | paper τ | residual autocorrelation outside 2σ |",
        "| --- | --: | --: | --: | --: | --: |",
    ]
    for m in methods:
        d = doc["methods"][m]
        paper3 = PAPER_TABLE3.get(m)
        pc = f"{paper3[0]} % | {paper3[1]} %" if paper3 else "— | —"
        lines.append(
            f"| {m} | {_pc(d['rel_error_q'], '.4f')} % | {_pc(d['rel_error_tau'], '.3f')} % | {pc} | "
            f"{d['residual_autocorrelation']['fraction_outside'] * 100:.0f} % of lags |"
        )
    lines += [
        "",
        "Estimates within IDIM-LS's 3σ intervals (seed 002 §5.2)"
        + (
            " and errors against the truth (non-zero true values)"
            if "max_rel_param_error" in doc["methods"]["idim-ls"]
            else ""
        ),
        "",
        "| method | within 3σ | outside | max error % | median error % |",
        "| --- | --: | --- | --: | --: |",
    ]
    for m in methods:
        d = doc["methods"][m]
        within = f"{d['within_3sigma_of_idim_ls'] * 100:.0f} %" if "within_3sigma_of_idim_ls" in d else "—"
        err = (
            f"{_pc(d['max_rel_param_error'], '.3g')} | {_pc(d['median_rel_param_error'], '.3g')}"
            if "max_rel_param_error" in d
            else "— | —"
        )
        lines.append(f"| {m} | {within} | {', '.join(d.get('outside_3sigma_of_idim_ls', [])) or '—'} | {err} |")
    if doc.get("warnings"):
        lines += ["", "Warnings:", ""] + [f"- {w}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"


def write(doc: dict[str, Any], results: dict[str, Result], out: Path) -> list[Path]:
    write_file(out / "output_error.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_file(out / "output_error.md", tables(doc))
    return [
        out / "output_error.json",
        out / "output_error.md",
        plots.output_error_autocorrelation(results, out / "output_error_autocorrelation.png"),
    ]


def methods_of(choice: str) -> list[Method]:
    if choice == "all":
        return list(METHODS)
    if choice not in METHODS:
        raise ValueError(f"unknown method {choice!r}; choose from {', '.join(METHODS)} or all")
    return [choice]
