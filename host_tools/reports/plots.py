"""Every figure of the tools, as PNG files (matplotlib, Agg): Liu et al. Figs. 3-9, the excitation,
thresholds, collision, identification and output-error plots. Written atomically; each figure closed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codegen.blocks import registry
from codegen.emit.files import write_file

if TYPE_CHECKING:
    from codegen.model.robot import Robot
    from host_tools.data.logs import Log
    from host_tools.identification.excitation import Excitation
    from host_tools.identification.output_error import Result as OEResult
    from host_tools.studies.collide import ImpactTrace
    from host_tools.studies.evaluate import Result, Setup
    from host_tools.studies.log_estimation import Estimate
    from host_tools.studies.thresholds import Check, Thresholds


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, as a figure's label should read it whatever the
    arm's size: 0.00457, 4.57, 457, 1.5e-5 (a fixed number of decimals printed 0.00 on a small arm)."""
    if not np.isfinite(value):
        return str(value)
    text = f"{value:.{digits}g}"
    if "e" in text:  # 1.5e-05 -> 1.5e-5
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def outside_legend(ax: Any, ncol: int) -> None:
    """The legend above the axes, left (their title row), never over the curves whatever their shape."""
    ax.legend(ncol=ncol, fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False, borderaxespad=0.1)


def save_figure(fig: Any, path: Path, dpi: int = 110) -> Path:
    """A matplotlib figure as a PNG, written atomically; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    write_file(path, buf.getvalue())
    return path


def evaluation_summary(doc: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

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
    ax[0].set_ylabel("ISE of the velocity estimate ((rad/s)² s)")
    ax[0].legend()
    for n in names:
        h = doc["estimators"][n]["history"]
        if h and n in registry.tuned_estimators():
            ax[1].plot(range(1, len(h) + 1), h, marker="o", label=n)
    ax[1].set_xlabel("generation")
    ax[1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax[1].set_ylabel("best ISE, tuning trajectory ((rad/s)² s)")
    ax[1].set_yscale("log")
    ax[1].set_title("GA convergence (Liu et al. Fig. 3)" if doc["setup"]["tuned"] else "not tuned")
    if ax[1].lines:
        ax[1].legend()
    fig.suptitle(f"{doc['setup']['robot']}: the estimators' ISE", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out / "evaluation.png")
    plt.close(fig)


def evaluation_figures(results: list[Result], setup: Setup, out: Path) -> None:
    """Like Liu et al. Figs. 5 (excerpt of axis 6 and the cumulative ISE), 7 (switch-on while moving
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
    ax[1].set_ylabel("cumulative ISE ((rad/s)² s)")
    ax[1].set_yscale("log")
    ax[0].legend(fontsize=7)
    fig.suptitle(f"{setup.robot}, {setup.resolution_mdeg:g} mdeg, {setup.rate_hz:g} Hz (like Liu et al. Fig. 5)")
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
    from host_tools.studies.evaluate import SWITCH_ON_SPEED  # here: every command imports plots

    ax.set_title(f"switched on while moving at {SWITCH_ON_SPEED:g} rad/s (like Liu et al. Fig. 7)")
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
    ax.set_title(f"{setup.faults:.0%} of the samples lost (like Liu et al. Fig. 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "fig8_faults.png")
    plt.close(fig)


def evaluation_setups(docs: list[dict[str, Any]], out: Path) -> None:
    """Like Liu et al. Fig. 9: the ISE of every estimator at each set-up (resolution, rate); where an
    estimator's entry gives ``ise_velocity_range`` (a study's seeds: [min, max]), the bar is the
    median and a whisker spans the range."""
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
        spread = [doc["estimators"][n].get("ise_velocity_range") for n in names]
        below = [np.nan if r is None or v is None else v - r[0] for r, v in zip(spread, vals)]
        above = [np.nan if r is None or v is None else r[1] - v for r, v in zip(spread, vals)]
        ax.bar(
            np.arange(len(names)) + (i - (len(docs) - 1) / 2) * width,
            vals,
            width,
            yerr=None if all(r is None for r in spread) else np.array([below, above], float),
            capsize=3,
            error_kw={"lw": 0.8},
            label=f"{s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz",
        )
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_yscale("log")
    ranged = any(e.get("ise_velocity_range") for d in docs for e in d["estimators"].values())
    ax.set_ylabel("ISE of the velocity estimate ((rad/s)² s)" + ("\nbar: median; whisker: min-max" if ranged else ""))
    ax.set_title(f"{docs[0]['setup']['robot']}: resolution and sample rate (like Liu et al. Fig. 9)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, out / "fig9_setups.png")
    plt.close(fig)


def excitation(exc: Excitation, path: Path, robot: Robot | None = None) -> Path:
    """One period of the excitation per joint; dashed, each joint's position, velocity and
    acceleration limits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traj = exc.trajectory(exc.period / 2000)
    fig, ax = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for i in range(traj.q.shape[1]):
        for k, (y, label) in enumerate(((traj.q, "q (rad)"), (traj.qd, "qd (rad/s)"), (traj.qdd, "qdd (rad/s²)"))):
            (line,) = ax[k].plot(traj.time, y[:, i], label=f"joint {i + 1}" if k == 0 else None)
            ax[k].set_ylabel(label)
            if robot is None:
                continue
            lim = robot.joints[i].limits
            for b in {0: (lim.q_min, lim.q_max), 1: (-lim.qd, lim.qd), 2: (-lim.qdd, lim.qdd)}[k]:
                if np.isfinite(b):
                    ax[k].axhline(b, color=line.get_color(), ls="--", lw=0.7)
    ax[0].legend(ncol=4, fontsize=7)
    ax[2].set_xlabel("t (s), one period" + ("; dashed: the joints' limits" if robot is not None else ""))
    ax[0].set_title(
        f"{exc.robot}: excitation, {exc.harmonics} harmonics of {exc.base_frequency:g} Hz (Xu et al. 2020 Fig. 3)"
    )
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def log_estimation(
    log: Log, estimates: list[Estimate], path: Path, axis: int = 5, window: tuple[float, float] | None = None
) -> Path:
    """Liu et al. Fig. 5-like: an excerpt of each estimate against the ground truth on ``axis`` and the
    cumulative ISE (all joints) over the run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = log.time - log.time[0]
    truth = next((e.truth for e in estimates if e.truth is not None), None)
    if truth is None:
        raise ValueError("the estimates carry no ground truth velocity to plot against")
    lo, hi = window or (0.4 * t[-1], 0.4 * t[-1] + 3.0)
    sel = (t >= lo) & (t <= hi)
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    a.plot(t[sel], truth[sel, axis], "k", lw=1.8, zorder=10, label="ground truth (FIR + filtfilt)")
    for e in estimates:
        a.plot(t[sel], e.qd_hat[sel, axis], lw=0.9, label=e.name)
        err = e.qd_hat - truth
        b.plot(t, np.cumsum(np.sum(err * err, axis=1)) * log.sample_period, label=e.name)
    a.set(xlabel="time (s)", ylabel=f"joint {axis + 1} velocity (rad/s)", title="estimates on the recorded encoders")
    b.set(xlabel="time (s)", ylabel="cumulative ISE, all joints ((rad/s)² s)", title="cumulative ISE")
    a.legend(fontsize=7)
    b.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)


def threshold_residuals(
    design: Thresholds, sample_period: float, path: Path, title: str, other: tuple[str, Check] | None = None
) -> Path:
    """r(t) per joint with the ± thresholds along it (and another run's r against the same thresholds,
    which follow that run's motion)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = design.residual.shape[1]
    fig, grid = plt.subplots(n, 1, figsize=(9, 1.5 * n + 1), sharex=True, squeeze=False)
    ax = grid[:, 0]
    runs = [("this run", design.residual, design.level, "k", "r")]
    if other:
        runs.append((other[0], other[1].residual, other[1].level, "tab:blue", "tab:purple"))
    spans = [  # left-out samples after the start (flagged by the input checks): (start, end) in s
        (a * sample_period, b * sample_period, shade)
        for mask, shade in ((design.left_out, "mistyrose"), (other[1].left_out if other else None, "lavender"))
        if mask is not None
        for a, b in _runs_of(mask)
    ]
    for i in range(n):
        for a, b, shade in spans:
            ax[i].axvspan(a, b, color=shade, lw=0)
        for label, r, level, colour, line in runs:
            t = np.arange(len(r)) * sample_period
            ax[i].plot(t, r[:, i], color=colour, lw=0.5, label=label, alpha=0.7 if colour != "k" else 1.0)
            for sign in (1, -1):
                ax[i].plot(
                    t,
                    sign * level[:, i],
                    color=line,
                    lw=0.6,
                    ls="--",
                    label=f"threshold ({label})" if sign == 1 else None,
                )
        ax[i].axvspan(0, design.skipped * sample_period, color="0.9")
        ax[i].set_ylabel(f"r{i + 1} (N m)")
    ax[0].legend(ncol=3, fontsize=7, loc="upper right")
    ax[-1].set_xlabel(
        "t (s); grey: start-up left out"
        + ("; pink (this run), lavender (the other): flagged, left out" if spans else "")
    )
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def _runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """The [start, end) index spans where ``mask`` is True."""
    edges = np.diff(np.concatenate([[0], np.asarray(mask, int), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def collision_impacts(
    free_ratio: dict[str, np.ndarray],
    ts: float,
    skip: float,
    impacts: list[ImpactTrace],
    path: Path,
    truth: str,
    robot: str,
) -> Path:
    """Like Birjandi & Haddadin Figs. 10 a-b and 8. Top: each observer's threshold ratio over a contact-free
    motion (a false alarm crosses 1). Per impact: left, the contact force along the obstacle normal
    (``truth`` names its source) against each observer's tip-force estimate; right, the ratio around
    the contact (the detection is where it crosses 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    palette = ("tab:blue", "tab:red", "tab:green", "tab:orange", "tab:olive", "tab:purple", "tab:brown", "tab:cyan")
    colours = {obs: palette[i % len(palette)] for i, obs in enumerate(free_ratio)}  # any number of observers
    fig = plt.figure(figsize=(11, 2.4 * (len(impacts) + 1) + 0.4))
    grid = fig.add_gridspec(len(impacts) + 1, 2)
    top = fig.add_subplot(grid[0, :])
    for obs, y in free_ratio.items():
        top.semilogy(skip + np.arange(len(y)) * ts, np.maximum(y, 1e-4), color=colours[obs], lw=0.6, label=obs)
    top.axhline(1.0, color="k", ls="--", lw=0.8)
    top.set_xlabel("s (contact-free motion)", fontsize=8)
    top.set_ylabel("max_j |r_j| / threshold_j", fontsize=8)
    top.set_title(
        f"{robot}, contact-free: how far below its thresholds each observer stays "
        "(like Birjandi & Haddadin Fig. 10 a-b)",
        fontsize=9,
    )
    top.legend(fontsize=6, ncol=min(6, len(free_ratio)), loc="lower right")
    for i, imp in enumerate(impacts):
        a = fig.add_subplot(grid[i + 1, 0])
        a.plot(imp.time_ms, imp.force, "k", lw=1.6, label=truth)
        for obs, f in imp.estimates.items():
            a.plot(imp.time_ms, f, color=colours[obs], lw=0.8, label=obs)
        high = 1.15 * max(imp.peak, 1e-9)
        a.set_ylim(-0.4 * high, high)
        a.set_ylabel("force (N)", fontsize=8)
        box = {"facecolor": "white", "alpha": 0.85, "linewidth": 0}
        a.text(0.02, 0.95, imp.label, transform=a.transAxes, fontsize=7, va="top", bbox=box, zorder=5)
        b = fig.add_subplot(grid[i + 1, 1])
        zoom = (imp.time_ms >= -20) & (imp.time_ms <= 10)
        for obs, y in imp.ratio.items():
            b.semilogy(imp.time_ms[zoom], np.maximum(y[zoom], 1e-4), color=colours[obs], lw=0.9, marker=".", ms=3)
        b.axhline(1.0, color="k", ls="--", lw=0.8)
        b.axvline(0.0, color="k", lw=0.6)
        b.set_ylabel("max_j |r_j| / threshold_j", fontsize=8)
        if i == 0:
            a.set_title(
                "contact force along the obstacle normal, f = (Jᵀ)⁺ r (like Birjandi & Haddadin Fig. 8)", fontsize=9
            )
            b.set_title("around the contact: detection where the ratio crosses 1", fontsize=9)
            a.legend(fontsize=6, loc="upper right")
        if i == len(impacts) - 1:
            a.set_xlabel("ms from the first contact", fontsize=8)
            b.set_xlabel("ms from the first contact", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def collision(arrays: dict[str, Any], path: Path, robot: str) -> Path:
    """Like Birjandi & Haddadin Fig. 6: r on the loaded joint against the applied torque, per cut-off and observer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = arrays["runs"]
    observers = list(dict.fromkeys(o for o, _ in runs))
    cutoffs = list(dict.fromkeys(c for _, c in runs))
    fig, ax = plt.subplots(
        len(cutoffs),
        len(observers),
        figsize=(2.6 * len(observers), 1.9 * len(cutoffs) + 0.8),
        squeeze=False,
        sharex=True,
    )
    for i, c in enumerate(cutoffs):
        for j, o in enumerate(observers):
            r, ext, th = runs[(o, c)]
            t = (np.arange(len(r)) * arrays["ts"] - 0.1) * 1e3
            a = ax[i, j]
            a.plot(t, ext, "k", lw=1.2, label="τ_ext")
            a.plot(t, r, "r", lw=0.9, label="r")
            a.plot(t, th, color="b", ls="--", lw=0.7)  # the threshold along the run (constant if static)
            a.plot(t, -np.asarray(th), color="b", ls="--", lw=0.7)
            if i == 0:
                a.set_title(o, fontsize=8)
            if j == 0:
                a.set_ylabel(f"{c:g} Hz (N m)", fontsize=8)
    for j in range(len(observers)):
        ax[-1, j].set_xlabel("ms from the event", fontsize=8)
    ax[0, 0].legend(fontsize=6)
    fig.suptitle(
        f"{robot}: residual on joint {arrays['joint'] + 1} vs the applied torque; dashed: threshold "
        "(like Birjandi & Haddadin Fig. 6)",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def elastic_collision(result: dict[str, Any], joint: int, path: Path) -> Path:
    """Like Kirchhoff (2011) Fig. 5.5: the moving joint's residual and contact torque, without and with the
    reaction, and the residual of the obstacle-free motion against the threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tr, j = result["traces"], joint - 1
    t = tr["time"]
    thr = result["settings"]["threshold"]
    fig, axes = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    for ax, name, title in (
        (axes[0], "no_reaction", "(a) without reaction"),
        (axes[1], "reaction", "(b) with reaction"),
    ):
        d = tr[name]
        ax.plot(t, d["r"][:, j], "tab:blue", lw=1.2, label=f"residual r{joint}")
        ax.plot(t, d["tau_contact"][:, j], "k--", lw=1.0, label=f"true contact torque, joint {joint}")
        k = result[name]["detection_sample"]
        if k >= 0:
            ax.axvline(t[k], color="tab:red", lw=0.8, label="detection")
        ax.set_ylabel("N m")
        ax.set_title(f"{title}: Kirchhoff (2011) Fig. 5.5", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    free = np.asarray(tr["free_r"])
    for i in range(free.shape[1]):
        axes[2].plot(t, free[:, i], lw=0.8, label=f"r{i + 1}")
    axes[2].axhline(thr, color="k", ls="--", lw=0.8, label="± threshold")
    axes[2].axhline(-thr, color="k", ls="--", lw=0.8)
    axes[2].set_ylabel("N m")
    axes[2].set_xlabel("t (s)")
    axes[2].legend(fontsize=7, ncol=free.shape[1] + 1, loc="upper left")
    axes[2].set_title("the same motion without the obstacle: every joint's residual and the threshold", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def identification_validation(v: dict[str, np.ndarray], path: Path, robot: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tau = v["tau"]
    n = tau.shape[1]
    keep = np.asarray(v.get("keep", np.ones(len(tau), bool)), bool)  # the samples the input checks left
    fig, grid = plt.subplots(n, 1, figsize=(9, 1.6 * n + 1), sharex=True, squeeze=False)
    ax = grid[:, 0]
    for i in range(n):
        if not np.all(keep):
            ax[i].fill_between(
                v["t"],
                0,
                1,
                where=~keep,
                transform=ax[i].get_xaxis_transform(),
                color="0.88",
                lw=0,
                label="left out (input checks)",
            )
        ax[i].plot(v["t"], tau[:, i], "k", lw=0.6, label="measured")
        ax[i].plot(v["t"], v["base"][:, i], "b", lw=0.8, label="base")
        ax[i].plot(v["t"], v["physical"][:, i], "g--", lw=0.8, label="physical")
        rms = np.sqrt(np.mean((tau[keep, i] - v["physical"][keep, i]) ** 2))
        ax[i].set_ylabel(f"τ{i + 1} (N m)")
        # in the panel's title row, not over the curves (whatever an arm's torques look like)
        ax[i].set_title(f"physical: RMS error {significant(rms)} N m", loc="right", fontsize=7, pad=2)
    outside_legend(ax[0], 4)
    ax[-1].set_xlabel("t (s), the validation run")
    fig.suptitle(f"{robot}: validation, measured vs predicted torque")
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def identification_fit(arrays: dict[str, Any], path: Path, robot: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tau = arrays["tau"]
    n = tau.shape[1]
    t = np.arange(len(tau)) * arrays["ts"]
    fig, ax = plt.subplots(n, 1, figsize=(9, 1.6 * n + 1), sharex=True)
    for i in range(n):
        ax[i].plot(t, tau[:, i], "k", lw=1.5, label="measured (parallel-filtered)")
        ax[i].plot(t, arrays["essential"][:, i], "r", lw=1, label="essential")
        ax[i].plot(t, arrays["base"][:, i], "b--", lw=1, label="base")
        ax[i].plot(t, arrays["physical"][:, i], "g--", lw=1, label="physical")
        ax[i].set_ylabel(f"τ{i + 1} (N m)")
    outside_legend(ax[0], 4)
    ax[-1].set_xlabel(
        "t (s), one averaged period" if arrays.get("periodic", True) else "t (s), the fitting run (decimated)"
    )
    fig.suptitle(f"{robot}: measured vs predicted torque (like Xu et al. (2020) Fig. 5)")
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def output_error_autocorrelation(results: dict[str, OEResult], path: Path, robot: str) -> Path:
    """Brunot et al. (2019) Figs. 1-3: the residual autocorrelation per joint (dots) and the 2 sigma bounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(results)
    n = results[methods[0]].autocorrelation.shape[1]
    fig, ax = plt.subplots(len(methods), n, figsize=(2.2 * n, 1.8 * len(methods) + 0.8), squeeze=False, sharex=True)
    for row, m in enumerate(methods):
        r = results[m]
        lags = np.arange(len(r.autocorrelation))
        for j in range(n):
            a = ax[row, j]
            a.plot(lags, r.autocorrelation[:, j], "r.", ms=3)
            a.axhline(r.bound, color="b", lw=0.8)
            a.axhline(-r.bound, color="b", lw=0.8)
            a.set_ylim(-1.05, 1.05)
            if row == 0:
                a.set_title(f"joint {j + 1}", fontsize=8)
            if j == 0:
                a.set_ylabel(m.upper(), fontsize=8)
    for j in range(n):
        ax[-1, j].set_xlabel("lag (samples)", fontsize=8)
    fig.suptitle(
        f"{robot}: residual autocorrelation (red) and 2σ bounds (blue), like Brunot et al. (2019) Figs. 1-3",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)
