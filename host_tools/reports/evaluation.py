"""Reports of an estimator evaluation (host_tools.studies.evaluate): the table (markdown, CSV, JSON, written
atomically) and the figures like Liu et al. Figs. 3, 5, 7, 8 and 9; and of the estimators over recorded
runs (host_tools.studies.log_estimation)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegen.emit.files import write_file
from host_tools.reports import plots

if TYPE_CHECKING:
    from host_tools.data.logs import Log
    from host_tools.studies.evaluate import Evaluation, Setup
    from host_tools.studies.log_estimation import Estimate


def _num(v: Any) -> str:
    return "diverged" if v is None else f"{v:.4g}"


def table(doc: dict[str, Any]) -> str:
    s = doc["setup"]
    error = f", plant parameters x {1 + s['model_error']:g}" if s.get("model_error") else ""
    gains = (
        (", GA-tuned" + (" under the fault case" if s.get("tuned_under_faults") else ""))
        if s["tuned"]
        else ", Liu et al.'s tuned gains"
        if s.get("gains") == "paper"
        else ""
    )
    lines = [
        f"Estimators on {s['robot']}, {s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz"
        f"{gains}{error} (ISE: Liu et al. eq. 5, summed over joints)",
        "",
        f"| estimator | ISE velocity | ISE tracking | convergence (s) | ISE, {s['faults']:.0%} lost on one axis |",
        "| --- | --: | --: | --: | --: |",
    ]
    for name, r in doc["estimators"].items():
        conv = "—" if r["convergence_s"] is None else f"{r['convergence_s']:.3f}"
        lines.append(
            f"| {r['gains'].get('estimator', name)} | {_num(r['ise_velocity'])} | {_num(r['ise_tracking'])} | "
            f"{conv} | {_num(r['ise_faulty'])} |"
        )
    axes = [
        (name, r["per_axis"]["ise_velocity"])
        for name, r in doc["estimators"].items()
        if r.get("per_axis", {}).get("ise_velocity")
    ]
    if axes:
        n = len(axes[0][1])
        lines += [
            "",
            "ISE of the velocity estimate per axis:",
            "",
            "| estimator | " + " | ".join(f"axis {i + 1}" for i in range(n)) + " |",
            "| --- |" + " --: |" * n,
        ]
        lines += [
            f"| {name} | " + " | ".join("—" if v is None else f"{v:.3g}" for v in vals) + " |" for name, vals in axes
        ]
    return "\n".join(lines) + "\n"


def summary(doc: dict[str, Any], out: Path | None) -> str:
    """The table and the time; with ``out``, what was written there."""
    return (
        table(doc)
        + f"\n{doc['seconds']:.0f} s"
        + (
            f"; reports in {out}/ (evaluation.md/.csv/.json/.png, fig5/7/8 PNGs, <estimator>.config.json)"
            if out
            else ""
        )
    )


def write_reports(evaluation: Evaluation, setup: Setup, out: Path) -> None:
    """Each estimator's config (<estimator>.config.json, named in the document's gains), then
    evaluation.json/.md/.csv, the summary figure and Liu et al. Figs. 5, 7, 8."""
    doc = evaluation.doc
    for r in evaluation.results:
        if r.config is not None:
            r.config.save(out / r.config_file)
            doc["estimators"][r.name]["gains"]["config_file"] = r.config_file
    write_file(out / "evaluation.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "evaluation.md", table(doc))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["estimator", "ise_velocity", "ise_tracking", "convergence_s", "ise_faulty"])
    for name, r in doc["estimators"].items():
        w.writerow([name, r["ise_velocity"], r["ise_tracking"], r["convergence_s"], r["ise_faulty"]])
    write_file(out / "evaluation.csv", buf.getvalue())
    plots.evaluation_summary(doc, out)
    plots.evaluation_figures(evaluation.results, setup, out)


def log_table(doc: dict[str, Any]) -> str:
    """Markdown of host_tools.studies.log_estimation.report: ISE per estimator (rows) and run x gain
    set (columns)."""
    cols = [(run, g) for run, e in doc["runs"].items() for g in e["gains"]]
    names = list(next(iter(doc["runs"].values()))["gains"][cols[0][1]])
    lines = [
        "| estimator | " + " | ".join(f"{run}, {Path(g).name} gains" for run, g in cols) + " |",
        "| --- |" + " --: |" * len(cols),
    ]
    for n in names:
        lines.append(
            f"| {n} | "
            + " | ".join(
                f"{doc['runs'][run]['gains'][g][n]['ise']:.4g} ({doc['runs'][run]['gains'][g][n]['estimator']})"
                for run, g in cols
            )
            + " |"
        )
    for run, e in doc["runs"].items():
        rec = e["recorded_estimator"]
        lines.append("")
        lines.append(
            f"{run}: the recorded estimate is "
            + (
                f"{rec['estimator']}: the generated C gives it exactly "
                f"({rec['equal']} of {rec['samples']} values equal)"
                if rec
                else "neither findiff nor movav p = 3"
            )
        )
    return "\n".join(lines)


def write_log_reports(
    doc: dict[str, Any], runs: dict[str, Log], estimates: dict[str, dict[str, list[Estimate]]], gains: str, out: Path
) -> list[str]:
    """real_estimation.json/.md and per run the figure of the ``gains`` set's estimates; the names
    written."""
    write_file(out / "real_estimation.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "real_estimation.md", log_table(doc) + "\n")
    written = ["real_estimation.json", "real_estimation.md"]
    for run, log in runs.items():
        plots.log_estimation(log, estimates[run][gains], out / f"real_estimation_{run}.png")
        written.append(f"real_estimation_{run}.png")
    return written
