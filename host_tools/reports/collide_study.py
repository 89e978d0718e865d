"""`manipgen study --report` for a study's collision items (host_tools.studies.collide_study): per
robot (and over every robot) and observer, the miss rate (per contact and per run), the false-alarm
rate (per run and per hour of collision-free motion) with exact 95 % intervals, the detection delay's
median and 95th percentile per contact kind, and the distribution of the threshold-to-momentum ratio.

- A rate of k in n (runs, contacts) gets its Clopper-Pearson interval (Clopper & Pearson 1934: the
  beta quantiles; never narrower than 95 %).
- A count of false alarms over T hours gets the Poisson's exact interval (Garwood 1936: the chi-square
  quantiles), the same construction for a count per exposure.
- The threshold ratio of an item is its largest mean threshold over momentum's on the same draw
  (collide's ``ratio_to_momentum``); draws without a momentum item have none.
- A run whose closed loop hit its torque limit on the collision-free design run (collide.ClosedLoop:
  the controller left its linear range, e.g. an oscillation) measures the controller, not the
  observer: it is counted in ``torque_limited`` (with its interval) and left out of every other
  figure, the threshold ratios of its draw included when it is momentum's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from codegen.blocks import momentum
from codegen.emit.files import write_file
from host_tools.reports import plots
from host_tools.reports.collision import standin_line
from host_tools.studies.collide import delays_by_target
from host_tools.studies.collide_study import CollideRow

LEVEL = 0.95
ALL = "all robots"


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion, k of n."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"a proportion needs 0 <= k <= n, n >= 1, got {k} of {n}")
    a = (1 - level) / 2
    lower = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return lower, upper


def poisson_exact(k: int, exposure: float, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Garwood) interval of a rate, k events over ``exposure`` (e.g. hours)."""
    a = (1 - level) / 2
    lower = 0.0 if k == 0 else float(stats.chi2.ppf(a, 2 * k)) / 2
    upper = float(stats.chi2.ppf(1 - a, 2 * k + 2)) / 2
    return lower / exposure, upper / exposure


def rise_ms(cutoff_hz: float) -> float:
    """10-90 % rise time of a first-order low-pass at ``cutoff_hz``: ln 9 / (2 pi f)."""
    return float(np.log(9) / (2 * np.pi * cutoff_hz) * 1e3)


def _proportion(k: int, n: int) -> dict[str, Any]:
    low, high = clopper_pearson(k, n)
    return {"count": k, "of": n, "rate": k / n, "ci95": [low, high]}


def _delays(rows: list[CollideRow]) -> dict[str, dict[str, Any]]:
    """Per contact kind: the detected delays' median and 95th percentile, and how many were missed."""
    kinds: dict[str, list[float | None]] = defaultdict(list)
    for row in rows:
        r = row.result
        for cutoff, found in r["delays_ms"].items():
            kinds[f"step {cutoff} Hz (rise {rise_ms(float(cutoff)):.3g} ms)"] += found
        for target, found in delays_by_target(r).items():
            kinds[f"impact {target:g} m/s"].append(found)
        if "push_delays_ms" in r:
            hz, seconds = row.item.push_hz, row.item.push_s
            kinds[f"push {hz:g} Hz for {seconds:g} s (rise {rise_ms(hz):.3g} ms)"] += r["push_delays_ms"]
    out = {}
    for kind, found in kinds.items():
        seen = np.array([x for x in found if x is not None], float)
        out[kind] = {
            "contacts": len(found),
            "missed": len(found) - len(seen),
            "median_ms": float(np.median(seen)) if len(seen) else None,
            "p95_ms": float(np.percentile(seen, 95)) if len(seen) else None,
        }
    return out


def torque_limited(row: CollideRow) -> bool:
    """Whether the row's closed loop hit its torque limit on the design run (collide.ClosedLoop)."""
    return bool(row.result.get("closed_loop", {}).get("torque_limited", False))


def _ratios(rows: list[CollideRow], everything: list[CollideRow]) -> list[float]:
    """Each item's largest mean threshold over momentum's of the same draw (``everything``: the
    runs that count)."""
    baseline = {
        row.item.draw: max(row.result["threshold_mean"])
        for row in everything
        if row.item.observer == momentum.SPEC.name
    }
    return [max(r.result["threshold_mean"]) / baseline[r.item.draw] for r in rows if r.item.draw in baseline]


def observer_summary(rows: list[CollideRow], everything: list[CollideRow]) -> dict[str, Any]:
    """One observer's rates, delays and threshold ratios over ``rows`` (its finished items), those
    whose loop hit its torque limit counted apart (``everything``: every observer's runs that count)."""
    limited = sum(map(torque_limited, rows))
    # a store written before collide reported its loop has no closed_loop: not measured (None)
    measured = all("closed_loop" in r.result for r in rows)
    rows = [r for r in rows if not torque_limited(r)]
    n = len(rows)
    if n == 0:
        return {"runs": 0, "torque_limited": _proportion(limited, limited)}
    contacts = sum(r.result["events"] + len(r.result.get("push_delays_ms", ())) for r in rows)
    missed = sum(r.result["missed"] + sum(x is None for x in r.result.get("push_delays_ms", ())) for r in rows)
    runs_missing = sum(
        r.result["missed"] > 0 or any(x is None for x in r.result.get("push_delays_ms", ())) for r in rows
    )
    alarms = sum(r.result["false_alarms"] for r in rows)
    hours = sum(r.result["check_s"] for r in rows) / 3600
    low, high = poisson_exact(alarms, hours)
    ratios = np.array(_ratios(rows, everything), float)
    return {
        "runs": n,
        "torque_limited": _proportion(limited, n + limited) if measured else None,
        "miss_per_contact": _proportion(missed, contacts),
        "miss_per_run": _proportion(runs_missing, n),
        "false_alarm_per_run": _proportion(sum(r.result["false_alarms"] > 0 for r in rows), n),
        "false_alarms_per_hour": {"count": alarms, "hours": hours, "rate": alarms / hours, "ci95": [low, high]},
        "delay_by_kind": _delays(rows),
        "threshold_ratio": (
            {
                "draws": len(ratios),
                "median": float(np.median(ratios)),
                "quartiles": [float(np.percentile(ratios, 25)), float(np.percentile(ratios, 75))],
                "min": float(ratios.min()),
                "max": float(ratios.max()),
            }
            if len(ratios)
            else None
        ),
    }


def summary(rows: list[CollideRow], total: int) -> dict[str, Any]:
    """The report's JSON: per robot and over every robot, per observer (observer_summary)."""
    ok = [r for r in rows if "error" not in r.result]
    counted = [r for r in ok if not torque_limited(r)]
    groups: dict[str, list[CollideRow]] = defaultdict(list)
    for row in ok:
        groups[row.item.robot].append(row)
    if len(groups) > 1:
        groups[ALL] = ok
    cpu = [r.cpu_seconds for r in rows]
    doc: dict[str, Any] = {
        "items": len(rows),
        "total": total,
        "worker_seconds": sum(r.seconds for r in rows),
        "worker_cpu_seconds": sum(cpu),
        "cpu_seconds_per_item": {
            robot: float(np.mean([r.cpu_seconds for r in rows if r.item.robot == robot]))
            for robot in dict.fromkeys(r.item.robot for r in rows)
        },
        "errors": [{"item": r.item.key, "error": r.result["error"]} for r in rows if "error" in r.result],
        "groups": {},
    }
    for name, part in groups.items():
        observers: dict[str, list[CollideRow]] = defaultdict(list)
        for row in part:
            observers[row.item.observer].append(row)
        doc["groups"][name] = {
            "draws": len({r.item.draw for r in part}),
            # a description without motion limits ran on collide's stated stand-in (None: its own limits)
            "standin_limits": None
            if name == ALL
            else next((r.result["standin_limits"] for r in part if r.result.get("standin_limits")), None),
            "observers": {o: observer_summary(rs, counted) for o, rs in observers.items()},
        }
    return doc


def _ci(p: dict[str, Any], scale: float = 100, unit: str = " %") -> str:
    low, high = p["ci95"]
    return f"{p['rate'] * scale:.3g}{unit} [{low * scale:.3g}, {high * scale:.3g}]"


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"# Collision study: {doc['items']} of {doc['total']} items in the store",
        "",
        f"Worker CPU time {doc['worker_cpu_seconds']:.0f} s; per item: "
        + ", ".join(f"{r} {s:.1f} s" for r, s in doc["cpu_seconds_per_item"].items())
        + ". Rates with their exact 95 % intervals (Clopper-Pearson; per hour: Garwood).",
    ]
    if doc["errors"]:
        lines += ["", f"{len(doc['errors'])} item(s) could not be run:"] + [f"- {e['error']}" for e in doc["errors"]]
    for name, group in doc["groups"].items():
        lines += [
            "",
            f"## {name}: {group['draws']} draws",
            "",
            *([standin_line(group["standin_limits"]), ""] if group.get("standin_limits") else []),
            "| observer | runs | loop at its torque limit (left out) | missed contacts | runs with a miss "
            "| runs with a false alarm | false alarms / h | threshold / momentum's: median [quartiles] |",
            "| --- | --: | --: | --: | --: | --: | --: | --: |",
        ]
        for obs, s in group["observers"].items():
            lim = s["torque_limited"]
            limited = f"{lim['count']}: {_ci(lim)}" if lim else "not measured"
            if not s["runs"]:
                lines.append(f"| {obs} | 0 | {limited} |" + " — |" * 5)
                continue
            fa = s["false_alarms_per_hour"]
            ratio = s["threshold_ratio"]
            lines.append(
                f"| {obs} | {s['runs']} | {limited} | "
                f"{s['miss_per_contact']['count']}/{s['miss_per_contact']['of']}: "
                f"{_ci(s['miss_per_contact'])} | {_ci(s['miss_per_run'])} | {_ci(s['false_alarm_per_run'])} | "
                f"{fa['count']} in {fa['hours']:.3g} h: {_ci(fa, 1, '')} | "
                + (
                    f"{ratio['median']:.3g} [{ratio['quartiles'][0]:.3g}, {ratio['quartiles'][1]:.3g}]"
                    if ratio
                    else "—"
                )
                + " |"
            )
        kinds = list(dict.fromkeys(k for s in group["observers"].values() for k in s.get("delay_by_kind", ())))
        if not kinds:  # every run of the group left out
            continue
        lines += ["", "Detection delay, ms: median / 95th percentile (missed)", ""]
        lines += ["| observer | " + " | ".join(kinds) + " |", "| --- |" + " --: |" * len(kinds)]
        for obs, s in group["observers"].items():
            cells = []
            for k in kinds:
                d = s.get("delay_by_kind", {}).get(k)
                cells.append(
                    ""
                    if d is None
                    else ("—" if d["median_ms"] is None else f"{d['median_ms']:.3g} / {d['p95_ms']:.3g}")
                    + (f" ({d['missed']})" if d["missed"] else "")
                )
            lines.append(f"| {obs} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figure(doc: dict[str, Any], path: Path) -> Path:
    """Per observer of each group, the miss and false-alarm rates per run with their intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = doc["groups"]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 + 2.5 * len(groups), 4), squeeze=False)
    for ax, (name, group) in zip(axes[0], groups.items()):
        names = [o for o, s in group["observers"].items() if s["runs"]]
        y = np.arange(len(names))
        for dy, key, label in (
            (-0.2, "miss_per_run", "runs with a miss"),
            (0.2, "false_alarm_per_run", "runs with a false alarm"),
        ):
            p = [group["observers"][o][key] for o in names]
            rate = np.array([x["rate"] for x in p]) * 100
            err = np.array([[x["rate"] - x["ci95"][0], x["ci95"][1] - x["rate"]] for x in p]).T * 100
            ax.errorbar(rate, y + dy, xerr=err, fmt="o", capsize=3, label=label)
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        ax.set_xlabel("% of runs (95 % Clopper-Pearson)")
        ax.set_title(f"{name}: {group['draws']} draws")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return plots.save_figure(fig, path)


def write_collide_report(rows: list[CollideRow], total: int, out: Path, stem: str = "report") -> list[str]:
    """STEM.md, STEM.json and STEM_rates.png in ``out``."""
    doc = summary(rows, total)
    text = markdown(doc)
    written = [f"{stem}.md", f"{stem}.json"]
    if doc["groups"]:
        figure(doc, out / f"{stem}_rates.png")
        written.append(f"{stem}_rates.png")
        text = text.replace("\n## ", f"\n![Miss and false-alarm rates per run]({stem}_rates.png)\n\n## ", 1)
    write_file(out / f"{stem}.md", text)
    write_file(out / f"{stem}.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return written
