"""`manipgen study --report`: Liu et al. §IV's tables and figures from a study's store.

One section per robot, model error and fault rate (and tuning); in each, the estimators by set-up:
the ISE of the velocity estimate (Liu et al. eq. 5; Fig. 9), the ISE under lost samples (Table 6),
the convergence time after a switch-on (Fig. 7) and the ISE of tracking. With several seeds a
cell is their median, with the range; every item's time on its worker is summed up too (what a
study costs per item: docs/cluster.md).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from codegen.emit.files import write_file
from host_tools.reports import plots
from host_tools.studies.study import Stored, StudyItem

QUANTITIES = (
    ("ise_velocity", "ISE of the velocity estimate ((rad/s)² s; Liu et al. eq. 5, Fig. 9)"),
    ("ise_faulty", "ISE with the fault case's lost samples ((rad/s)² s; Liu et al. Table 6)"),
    ("convergence_s", "convergence after a switch-on while moving (s; Liu et al. Fig. 7)"),
    ("ise_tracking", "ISE of tracking (rad² s)"),
)
Rows = list[Stored]


def _section(item: StudyItem) -> tuple[str, float, float, bool, bool, int, str]:
    return (item.robot, item.model_error, item.faults, item.tune, item.tune_faults, item.generations, item.gains)


def _title(key: tuple[str, float, float, bool, bool, int, str]) -> str:
    robot, me, faults, tune, tune_faults, generations, gains = key
    how = (
        f"GA-tuned ({generations} generations)" + (" under faults" if tune_faults else "")
        if tune
        else ("Liu et al.'s gains" if gains == "paper" else "default gains")
    )
    return f"{robot}, model error {me:g}, {faults:.0%} lost samples, {how}"


def _cell(values: list[float | None]) -> str:
    if any(v is None for v in values):
        return f"diverged ({sum(v is None for v in values)}/{len(values)})" if len(values) > 1 else "—"
    arr = np.asarray(values, float)
    if len(arr) == 1:
        return f"{arr[0]:.4g}"
    return f"{np.median(arr):.4g} [{arr.min():.4g}, {arr.max():.4g}]"


def report(rows: Rows, total: int) -> tuple[str, dict[str, Any]]:
    """(markdown, JSON) of the stored items; ``total``: the spec's item count."""
    sections: dict[tuple[str, float, float, bool, bool, int, str], Rows] = defaultdict(list)
    for row in rows:
        sections[_section(row.item)].append(row)
    seconds = [r.seconds for r in rows]
    cpu = [r.cpu_seconds for r in rows]
    lines = [
        f"# Study: {len(rows)} of {total} items in the store",
        "",
        f"Worker CPU time: {sum(cpu):.0f} s in all, {np.mean(cpu) if cpu else 0:.1f} s per item "
        f"(median {np.median(cpu) if cpu else 0:.1f} s, longest {max(cpu, default=0):.1f} s); "
        f"wall time on the workers {sum(seconds):.0f} s.",
    ]
    doc: dict[str, Any] = {
        "items": len(rows),
        "total": total,
        "worker_seconds": sum(seconds),
        "worker_cpu_seconds": sum(cpu),
        "sections": [],
    }
    failed = [(r.item, r.result["error"]) for r in rows if "error" in r.result]
    if failed:
        lines += ["", f"{len(failed)} item(s) could not be evaluated (empty cells below):"]
        lines += [
            f"- {it.robot} {it.resolution_mdeg:g}@{it.rate_hz:g} {it.estimator} seed {it.seed}: {e}" for it, e in failed
        ]
        doc["errors"] = [{"item": it.key, "error": e} for it, e in failed]
    for key, part in sections.items():
        setups = list(dict.fromkeys((r.item.resolution_mdeg, r.item.rate_hz) for r in part))
        names = list(dict.fromkeys(r.item.estimator for r in part))
        seeds = sorted({r.item.seed for r in part})
        cols = [f"{r:g} mdeg, {f:g} Hz" for r, f in setups]
        entry: dict[str, Any] = {"title": _title(key), "robot": key[0], "seeds": seeds, "setups": cols, "tables": {}}
        lines += [
            "",
            f"## {_title(key)}",
            "",
            f"Seeds {', '.join(map(str, seeds))}" + (" (cells: median [min, max])" if len(seeds) > 1 else ""),
        ]
        for quantity, caption in QUANTITIES:
            values: dict[tuple[str, tuple[float, float]], list[float | None]] = defaultdict(list)
            for it, result, *_ in part:
                if "error" not in result:
                    values[(it.estimator, (it.resolution_mdeg, it.rate_hz))].append(result.get(quantity))
            lines += ["", caption, "", "| estimator | " + " | ".join(cols) + " |", "| --- |" + " --: |" * len(cols)]
            table = {}
            for n in names:
                cells = [_cell(values[(n, s)]) if (n, s) in values else "" for s in setups]
                lines.append(f"| {n} | " + " | ".join(cells) + " |")
                table[n] = {c: values.get((n, s)) for c, s in zip(cols, setups)}
            entry["tables"][quantity] = table
        doc["sections"].append(entry)
    return "\n".join(lines) + "\n", doc


def write_report(rows: Rows, total: int, out: Path) -> list[str]:
    """report.md, report.json and per section a figure like Liu et al. Fig. 9 (median over seeds, a
    whisker over their range), linked from report.md under its section."""
    text, doc = report(rows, total)
    written = ["report.md", "report.json"]
    for entry in doc["sections"]:
        slug = re.sub(r"[^A-Za-z0-9.]+", "_", entry["title"]).strip("_")
        docs = []
        for col in entry["setups"]:
            res, rate = (float(x.split()[0]) for x in col.split(", "))
            ise = {
                n: {"ise_velocity": _median(v.get(col)), "ise_velocity_range": _range(v.get(col))}
                for n, v in entry["tables"]["ise_velocity"].items()
            }
            setup = {"robot": entry["robot"], "resolution_mdeg": res, "rate_hz": rate}
            docs.append({"setup": setup, "estimators": ise})
        (out / slug).mkdir(parents=True, exist_ok=True)
        plots.evaluation_setups(docs, out / slug)
        figure = f"{slug}/fig9_setups.png"
        written.append(figure)
        heading = f"## {entry['title']}\n"
        caption = "ISE of the velocity estimate by set-up" + (
            ", median over the seeds, whiskers from the lowest to the highest" if len(entry["seeds"]) > 1 else ""
        )
        text = text.replace(heading, f"{heading}\n![{caption}]({figure})\n", 1)
    write_file(out / "report.md", text)
    write_file(out / "report.json", json.dumps(doc, indent=1) + "\n")
    return written


def _range(values: list[float | None] | None) -> list[float] | None:
    """[min, max] over the seeds (the figure's whisker; the table's [min, max]), None for one seed or a diverged one."""
    if not values or len(values) < 2 or any(v is None for v in values):
        return None
    arr = np.asarray(values, float)
    return [float(arr.min()), float(arr.max())]


def _median(values: list[float | None] | None) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return float(np.median(np.asarray(values, float)))
