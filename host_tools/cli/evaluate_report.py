"""Reports of an estimator evaluation (host_tools.studies.evaluate): the table (markdown, CSV, JSON, written
atomically) and the figures like seed 000 Figs. 3, 5, 7, 8 and 9."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegen.emit.files import write_file
from host_tools.reports import plots

if TYPE_CHECKING:
    pass


def _num(v: Any) -> str:
    return "diverged" if v is None else f"{v:.4g}"


def table(doc: dict[str, Any]) -> str:
    s = doc["setup"]
    error = f", plant parameters x {1 + s['model_error']:g}" if s.get("model_error") else ""
    gains = (
        (", GA-tuned" + (" under the fault case" if s.get("tuned_under_faults") else ""))
        if s["tuned"]
        else ", seed 000's tuned gains"
        if s.get("gains") == "paper"
        else ""
    )
    lines = [
        f"Estimators on {s['robot']}, {s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz"
        f"{gains}{error} (ISE: seed 000 eq. 5, summed over joints)",
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


def write_reports(doc: dict[str, Any], out: Path) -> None:
    write_file(out / "evaluation.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "evaluation.md", table(doc))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["estimator", "ise_velocity", "ise_tracking", "convergence_s", "ise_faulty"])
    for name, r in doc["estimators"].items():
        w.writerow([name, r["ise_velocity"], r["ise_tracking"], r["convergence_s"], r["ise_faulty"]])
    write_file(out / "evaluation.csv", buf.getvalue())
    plots.evaluation_summary(doc, out)
