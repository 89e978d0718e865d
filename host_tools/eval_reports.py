"""Reports of an estimator evaluation (host_tools.evaluate): the table (markdown, CSV, JSON, written
atomically) and the figures like seed 000 Figs. 3, 5, 7, 8 and 9."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codegen.outputs import write_file

if TYPE_CHECKING:
    from .evaluate import Result, Setup

SWITCH_ON_SPEED = 0.3  # rad/s: the constant velocity of the switch-on test (Fig. 7)


def save_figure(fig: Any, path: Path, dpi: int = 110) -> Path:
    """A matplotlib figure as a PNG, written atomically; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    write_file(path, buf.getvalue())
    return path


def finite(x: Any) -> Any:
    """JSON has no Infinity: a diverged run's cost becomes None (null)."""
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def _num(v: Any) -> str:
    return "diverged" if v is None else f"{v:.4g}"


def table(doc: dict[str, Any]) -> str:
    s = doc["setup"]
    error = f", plant parameters x {1 + s['model_error']:g}" if s.get("model_error") else ""
    gains = ", GA-tuned" if s["tuned"] else ", seed 000's tuned gains" if s.get("gains") == "paper" else ""
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
    _plots(doc, out)


def _plots(doc: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = list(doc["estimators"])
    vals = [
        np.nan if doc["estimators"][n]["ise_velocity"] is None else doc["estimators"][n]["ise_velocity"] for n in names
    ]
    faulty = [doc["estimators"][n]["ise_faulty"] for n in names]
    x = np.arange(len(names))
    ax[0].bar(x - 0.2, vals, 0.4, label="normal")
    ax[0].bar(
        x + 0.2,
        [np.nan if v is None else v for v in faulty],
        0.4,
        label=f"{doc['setup']['faults']:.0%} lost on one axis",
    )
    ax[0].set_xticks(x, names, rotation=30)
    ax[0].set_yscale("log")
    ax[0].set_ylabel("ISE of the velocity estimate")
    ax[0].legend()
    for n in names:
        h = doc["estimators"][n]["history"]
        if h and n in ("kalman", "linhg", "nlhg", "slimod"):
            ax[1].plot(range(1, len(h) + 1), h, marker="o", label=n)
    ax[1].set_xlabel("generation")
    ax[1].set_ylabel("best ISE (tuning trajectory)")
    ax[1].set_yscale("log")
    ax[1].set_title("GA convergence (seed 000 Fig. 3)" if doc["setup"]["tuned"] else "not tuned")
    if ax[1].lines:
        ax[1].legend()
    fig.tight_layout()
    save_figure(fig, out / "evaluation.png")
    plt.close(fig)


def figures(results: list[Result], setup: Setup, out: Path) -> None:
    """Like seed 000 Figs. 5 (excerpt of axis 6 and the cumulative ISE), 7 (switch-on while moving
    at constant speed, axis 2) and 8 (excerpt with 10 % lost samples)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    have = [r for r in results if "time" in r.curves]
    if not have:
        return
    t = have[0].curves["time"]
    window = (t >= t[-1] * 0.45) & (t <= t[-1] * 0.45 + 3.0)
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    ax[0].plot(t[window], have[0].curves["qd_true"][window], "k", lw=2, label="ground truth")
    for r in have:
        ax[0].plot(t[window], r.curves["qd_hat"][window], lw=0.9, label=r.name)
        ax[1].plot(t, r.curves["cumulative_ise"], label=r.name)
    ax[0].set_xlabel("t (s)")
    ax[0].set_ylabel(
        "velocity of the last axis (rad/s)"
        if setup.fault_axis == -1
        else f"velocity of axis {setup.fault_axis + 1} (rad/s)"
    )
    ax[1].set_xlabel("t (s)")
    ax[1].set_ylabel("cumulative ISE")
    ax[1].set_yscale("log")
    ax[0].legend(fontsize=7)
    fig.suptitle(f"{setup.robot}, {setup.resolution_mdeg:g} mdeg, {setup.rate_hz:g} Hz (like seed 000 Fig. 5)")
    fig.tight_layout()
    save_figure(fig, out / "fig5_estimates.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    ts = setup.sample_period
    switched = [r for r in have if "switch_on" in r.curves]
    if switched:
        truth = switched[0].curves["switch_on_true"]
        ax.plot(np.arange(len(truth)) * ts, truth, "k", lw=2, label="ground truth")
    for r in switched:
        c = r.curves["switch_on"]
        ax.plot(np.arange(len(c)) * ts, c, label=r.name)
    ax.set_xlim(0, 0.6)
    ax.set_xlabel("t after switch-on (s)")
    ax.set_ylabel("velocity estimate, axis 2 (rad/s)")
    ax.set_title(f"switched on while moving at {SWITCH_ON_SPEED:g} rad/s (like seed 000 Fig. 7)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "fig7_switch_on.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t[window], have[0].curves["qd_true_faulty"][window], "k", lw=2, label="ground truth")
    for r in have:
        if "qd_hat_faulty" in r.curves:
            ax.plot(t[window], r.curves["qd_hat_faulty"][window], lw=0.9, label=r.name)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("velocity, faulty axis (rad/s)")
    ax.set_title(f"{setup.faults:.0%} of the samples lost (like seed 000 Fig. 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "fig8_faults.png")
    plt.close(fig)


def setups_figure(docs: list[dict[str, Any]], out: Path) -> None:
    """Like seed 000 Fig. 9: the ISE of every estimator at each set-up (resolution, rate)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(docs[0]["estimators"])
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(docs)
    for i, doc in enumerate(docs):
        s = doc["setup"]
        vals = [
            np.nan if doc["estimators"][n]["ise_velocity"] is None else doc["estimators"][n]["ise_velocity"]
            for n in names
        ]
        ax.bar(
            np.arange(len(names)) + (i - (len(docs) - 1) / 2) * width,
            vals,
            width,
            label=f"{s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz",
        )
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel("ISE of the velocity estimate")
    ax.set_title(f"{docs[0]['setup']['robot']}: resolution and sample rate (like seed 000 Fig. 9)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, out / "fig9_setups.png")
    plt.close(fig)
