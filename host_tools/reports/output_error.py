"""`manipgen identify --method ...`'s report: the JSON document of an output-error identification
(host_tools.identification.closed_loop_run), Brunot et al.'s tables (1: estimates and RSD, 2: singular
values, condition number and time, 3: relative errors of the simulated q and tau) with the paper's
values beside ours, and the residual autocorrelation figures (Figs. 1-3)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from codegen.emit.files import write_file
from host_tools.identification.closed_loop_run import ClosedLoopResult
from host_tools.identification.output_error import Method, Result
from host_tools.reports import plots
from host_tools.studies.reproduce.brunot_paper import PAPER_TABLE2, PAPER_TABLE3, PAPER_TABLE5


def document(c: ClosedLoopResult) -> dict[str, Any]:
    """The identification as strict JSON (every inf/NaN as null; every ratio a fraction)."""
    doc: dict[str, Any] = {
        "robot": c.robot.name,
        "samples": c.samples,
        "sample_period": c.sample_period,
        "n_base": c.n_base,
        "estimated": c.estimated,
        "init": c.init,
        "settings": asdict(c.settings),
        "warnings": c.warnings,
        "methods": {},
    }
    ref = c.results["idim-ls"]
    for m, r in c.results.items():
        doc["methods"][m] = _result_doc(r, c.truth, None if m == "idim-ls" else ref)
    doc["seconds"] = c.seconds
    return finite(doc)


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
        rel = r.truth_errors(truth)
        doc["max_rel_param_error"] = float(rel.max()) if rel.size else 0.0
        doc["median_rel_param_error"] = float(np.median(rel)) if rel.size else 0.0
        for n, tv in zip(r.names, t):
            doc["parameters"][n]["truth"] = float(tv)
    if reference is not None and reference.names == r.names:
        # Brunot et al. (2019) §5.2: do the estimates lie in the 3 sigma confidence intervals of the LS ones?
        sigma = np.abs(reference.values) * reference.rsd / 100
        inside = np.abs(r.values - reference.values) <= 3 * sigma
        doc["within_3sigma_of_idim_ls"] = float(np.mean(inside))
        doc["outside_3sigma_of_idim_ls"] = [n for n, i in zip(r.names, inside) if not i]
    return doc


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
    """Brunot et al. (2019) Tables 1-3 for our run, the paper's beside Tables 2 and 3."""
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
        "Estimates within IDIM-LS's 3σ intervals (Brunot et al. 2019 §5.2)"
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
    """output_error.{json,md} and output_error_autocorrelation.png."""
    write_file(out / "output_error.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_file(out / "output_error.md", tables(doc))
    return [
        out / "output_error.json",
        out / "output_error.md",
        plots.output_error_autocorrelation(results, out / "output_error_autocorrelation.png", doc["robot"]),
    ]
