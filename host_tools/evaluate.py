"""Estimator evaluation on the loopback (seed 000 §IV): every velocity estimator in the closed loop
with computed torque (Kp = 100, Kd = 13), at a given encoder resolution and sample rate, optionally
GA-tuned first; ISE of velocity (eq. 5) and of tracking, convergence time of a switch-on while
moving (Fig. 7), and the sensor-fault case (10 % of one axis's samples lost, §IV-C).

    manipgen evaluate schunk_lwa4p --resolution-mdeg 10 --rate-hz 125 --tune --out eval/
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegen.description import load_robot

from .loopback import SimulationError, simulate
from .rt import Realtime, load_rt
from .trajectories import Trajectory, generated_trajectory, seed000_test_trajectory
from .tune import GaSettings, Problem, TuneResult, apply_genome, gain_space, tune

ESTIMATORS = ("findiff", "movav", "lsf", "kalman", "linhg", "nlhg", "slimod")
GRIDS = {"movav": [f"movav:p={p}" for p in range(2, 7)],
         "lsf": [f"lsf:n={n},p=1" for n in range(3, 9)] + [f"lsf:n={n},p=2" for n in range(5, 9)]}
DEFAULTS = {"movav": "movav:p=2", "lsf": "lsf:n=4,p=1"}     # seed 000 Tables 4, 7, 8


@dataclass
class Setup:
    robot: str = "schunk_lwa4p"
    resolution_mdeg: float = 10.0
    rate_hz: float = 125.0
    faults: float = 0.1
    fault_axis: int = -1            # seed 000 §IV-C: axis 6
    seed: int = 0
    tune: bool = False
    generations: int = 20
    model_error: float = 0.0        # the simulated robot's parameters = the model's x (1 + model_error)

    def problems(self) -> list[str]:
        """What is wrong with this set-up (empty: fine)."""
        out = []
        if not (self.resolution_mdeg > 0 and np.isfinite(self.resolution_mdeg)):
            out.append(f"--resolution-mdeg must be positive, got {self.resolution_mdeg:g}")
        if not (0 < self.rate_hz <= 100000):
            out.append(f"--rate-hz must be in (0, 100000], got {self.rate_hz:g}")
        if not 0 <= self.faults < 1:
            out.append(f"--faults is a fraction of samples in [0, 1), got {self.faults:g}")
        if not self.model_error > -1:
            out.append(f"--model-error must be > -1 (parameters x (1 + e)), got {self.model_error:g}")
        if self.generations < 1:
            out.append(f"--generations must be >= 1, got {self.generations}")
        return out

    @property
    def sample_period(self) -> float:
        return 1.0 / self.rate_hz

    @property
    def cpr(self) -> float:
        return 360000.0 / self.resolution_mdeg

    @property
    def eps(self) -> float:
        """seed 000 fixes epsilon per set-up: 0.03 at 125 Hz (Tables 4, 7), 0.01 at 250 Hz (Table 8)."""
        return 0.01 if self.rate_hz >= 250 else 0.03


@dataclass
class Result:
    name: str
    ise_velocity: float
    ise_tracking: float
    convergence_s: float | None
    ise_faulty: float
    gains: dict[str, Any] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)
    curves: dict[str, np.ndarray] = field(default_factory=dict)   # for the figures, not the JSON
    per_axis: dict[str, list[float]] = field(default_factory=dict)   # ISE per joint


def test_trajectory(setup: Setup) -> Trajectory:
    if setup.robot == "schunk_lwa4p":
        return seed000_test_trajectory().resample(setup.sample_period)
    return generated_trajectory(load_robot(setup.robot), 60.0, setup.sample_period, seed=setup.seed)


def tuning_trajectory(setup: Setup) -> Trajectory:
    """Like seed 000 Fig. 2: a shorter, different motion (another seed of the generator)."""
    return generated_trajectory(load_robot(setup.robot), 20.0, setup.sample_period, seed=setup.seed + 1)


def fault_mask(setup: Setup, shape: tuple[int, int]) -> np.ndarray:
    valid = np.ones(shape, dtype=np.uint8)
    rng = np.random.default_rng(setup.seed + 7)
    valid[:, setup.fault_axis] = rng.random(shape[0]) >= setup.faults
    valid[:2] = 1
    return valid


def pipeline(setup: Setup, estimator: str) -> Realtime:
    rt = load_rt(setup.robot, estimator=estimator, observer="none", controller="computed_torque",
                 sample_period=setup.sample_period)
    rt.config["enc.cpr"] = setup.cpr * np.ones(rt.dof) / rt.config["enc.gear"]
    rt.config["ctl.kp"], rt.config["ctl.kd"] = 100.0, 13.0
    if estimator in ("linhg", "nlhg"):
        rt.config["est.eps"] = setup.eps
    if estimator == "kalman":
        design = next(b for b in rt.rt_manifest["blocks"] if b["kind"] == "est")["options"]
        rt.config.set_kalman(q_var=design["q_var"])          # R follows the set-up's resolution
    return rt


def plant_params(rt: Realtime, setup: Setup) -> np.ndarray:
    return np.asarray(rt.manifest["standard_parameters"], float) * (1.0 + setup.model_error)


def convergence_time(rt: Realtime, setup: Setup, speed: float = 0.3,
                     tol: float = 0.05) -> tuple[float | None, np.ndarray]:
    """Switch the estimator on while the joints move at constant speed (seed 000 Fig. 7): the time
    after which |qd_hat - qd| stays below tol x speed on every joint (None: never within 2 s), and
    the estimate of axis 2 over those 2 s."""
    ts = setup.sample_period
    k = int(round(2.0 / ts))
    q = np.arange(k)[:, None] * ts * speed * np.ones(rt.dof)
    counts = np.floor(q / (2 * np.pi / rt.config["enc.cpr"])).astype(np.int64)
    rt.reset()
    from host_tools import load
    dyn = load(setup.robot)
    qd = np.full(rt.dof, speed)
    tau = np.array([dyn.nonlinear_effects(qk, qd) for qk in q])   # the model's own torque: constant speed
    out = rt.run({"counts": counts, "tau": tau})
    bad = np.any(np.abs(out["qd_hat"] - speed) > tol * speed, axis=1)
    idx = np.flatnonzero(bad)
    curve = out["qd_hat"][:, min(1, rt.dof - 1)].copy()
    if len(idx) == 0:
        return 0.0, curve
    if idx[-1] >= k - 1:
        return None, curve
    return float((idx[-1] + 1) * ts), curve


def evaluate_one(setup: Setup, name: str, log: Any = print, out: Path | None = None,
                 executor: Any = None) -> Result:
    test, tuning = test_trajectory(setup), tuning_trajectory(setup)
    history: list[float] = []
    variant = DEFAULTS.get(name, name)
    if setup.tune and name in GRIDS:                       # integer gains: grid search (regenerates)
        scores = []
        for v in GRIDS[name]:
            rt = pipeline(setup, v)
            try:
                scores.append((float(simulate(rt, tuning, true_params=plant_params(rt, setup)).ise_velocity.sum()), v))
            except SimulationError:
                continue
        if not scores:
            raise SimulationError(f"{name}: every grid variant made the closed loop diverge")
        variant = min(scores)[1]
        history = [s for s, _ in scores]
    rt = pipeline(setup, variant)
    gains: dict[str, Any] = {"estimator": variant}
    if setup.tune and name in ("kalman", "linhg", "nlhg", "slimod"):
        genes = gain_space(name, rt.dof)
        problem = Problem(str(rt.folder), rt.config.to_dict(), genes, tuning, true_params=plant_params(rt, setup))
        t0 = time.perf_counter()
        res: TuneResult = tune(problem, GaSettings(generations=setup.generations), seed=setup.seed, executor=executor,
                               progress=lambda g, n, c: log(f"  {name}: generation {g}/{n}, best ISE {c:.4g}"))
        log(f"  {name}: tuned in {time.perf_counter() - t0:.1f} s ({res.evaluations} closed-loop runs)")
        apply_genome(rt, genes, res.genome)
        history = res.best
        for g in genes:
            gains.setdefault(g.key, np.asarray(rt.config[g.key]).tolist() if g.key != "est.q_var" else None)
        if name == "kalman":
            gains["est.q_var"] = [float(10 ** x) for x in res.genome]
    elif name in ("kalman", "linhg", "nlhg", "slimod"):
        for key in rt.config.keys():
            if key.startswith("est."):
                gains[key] = np.asarray(rt.config[key]).tolist()
    config = rt.config.to_dict()
    if out is not None:                       # the tuned (or default) gains, loadable by rt users
        out.mkdir(parents=True, exist_ok=True)
        rt.config.save(out / f"{name}.config.json")
        gains["config_file"] = f"{name}.config.json"
    curves: dict[str, np.ndarray] = {}
    per_axis: dict[str, list[float]] = {}
    axis = setup.fault_axis
    try:
        run = simulate(rt, test, true_params=plant_params(rt, setup))
        ise_v, ise_t = float(run.ise_velocity.sum()), float(run.ise_tracking.sum())
        per_axis = {"ise_velocity": run.ise_velocity.tolist(), "ise_tracking": run.ise_tracking.tolist()}
        err = run.log.extra["qd_true"] - run.out["qd_hat"]
        curves["time"] = test.time
        curves["cumulative_ise"] = np.cumsum(np.sum(err * err, axis=1)) * setup.sample_period
        curves["qd_true"], curves["qd_hat"] = run.log.extra["qd_true"][:, axis], run.out["qd_hat"][:, axis]
    except SimulationError:
        ise_v = ise_t = float("inf")
    for key, value in config.items():
        rt.config[key] = value
    try:
        bad = simulate(rt, test, true_params=plant_params(rt, setup), valid=fault_mask(setup, test.q.shape))
        faulty = float(bad.ise_velocity.sum())
        per_axis["ise_faulty"] = bad.ise_velocity.tolist()
        curves["qd_hat_faulty"], curves["qd_true_faulty"] = bad.out["qd_hat"][:, axis], bad.log.extra["qd_true"][:, axis]
    except SimulationError:
        faulty = float("inf")
    conv, curves["switch_on"] = convergence_time(rt, setup)
    return Result(name, ise_v, ise_t, conv, faulty, gains, history, curves, per_axis)


def evaluate(setup: Setup, estimators: tuple[str, ...] = ESTIMATORS, out: Path | None = None,
             log: Any = print, executor: Any = None) -> dict[str, Any]:
    """Evaluate (and with setup.tune, tune) the estimators; GA generations go through ``executor``
    (default: a process pool). Infinite costs (a diverged loop) are reported as null."""
    problems = setup.problems()
    if problems:
        raise ValueError("; ".join(problems))
    t0 = time.perf_counter()
    results = []
    for name in estimators:
        log(f"{name} ...")
        results.append(evaluate_one(setup, name, log, out, executor))
    doc = {"setup": {"robot": setup.robot, "resolution_mdeg": setup.resolution_mdeg, "rate_hz": setup.rate_hz,
                     "faults": setup.faults, "fault_axis": setup.fault_axis, "seed": setup.seed,
                     "model_error": setup.model_error,
                     "tuned": setup.tune, "trajectory": test_trajectory(setup).name,
                     "controller": "computed torque Kp = 100, Kd = 13"},
           "estimators": {r.name: {"ise_velocity": r.ise_velocity, "ise_tracking": r.ise_tracking,
                                   "convergence_s": r.convergence_s, "ise_faulty": r.ise_faulty,
                                   "per_axis": r.per_axis, "gains": r.gains, "history": r.history}
                          for r in results},
           "seconds": time.perf_counter() - t0}
    doc = _finite(doc)
    if out is not None:
        write_reports(doc, Path(out))
        figures(results, setup, Path(out))
    return doc


def _finite(x: Any) -> Any:
    """JSON has no Infinity: a diverged run's cost becomes None (null)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def _num(v: Any) -> str:
    return "diverged" if v is None else f"{v:.4g}"


def table(doc: dict[str, Any]) -> str:
    s = doc["setup"]
    error = f", plant parameters x {1 + s['model_error']:g}" if s.get("model_error") else ""
    lines = [f"Estimators on {s['robot']}, {s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz"
             f"{', GA-tuned' if s['tuned'] else ''}{error} (ISE: seed 000 eq. 5, summed over joints)", "",
             f"| estimator | ISE velocity | ISE tracking | convergence (s) | ISE, {s['faults']:.0%} lost on one axis |",
             "| --- | --: | --: | --: | --: |"]
    for name, r in doc["estimators"].items():
        conv = "—" if r["convergence_s"] is None else f"{r['convergence_s']:.3f}"
        lines.append(f"| {r['gains'].get('estimator', name)} | {_num(r['ise_velocity'])} | {_num(r['ise_tracking'])} | "
                     f"{conv} | {_num(r['ise_faulty'])} |")
    axes = [(name, r["per_axis"]["ise_velocity"]) for name, r in doc["estimators"].items()
            if r.get("per_axis", {}).get("ise_velocity")]
    if axes:
        n = len(axes[0][1])
        lines += ["", "ISE of the velocity estimate per axis:", "",
                  "| estimator | " + " | ".join(f"axis {i + 1}" for i in range(n)) + " |",
                  "| --- |" + " --: |" * n]
        lines += [f"| {name} | " + " | ".join("—" if v is None else f"{v:.3g}" for v in vals) + " |"
                  for name, vals in axes]
    return "\n".join(lines) + "\n"


def write_reports(doc: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluation.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / "evaluation.md").write_text(table(doc), encoding="utf-8")
    with open(out / "evaluation.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["estimator", "ise_velocity", "ise_tracking", "convergence_s", "ise_faulty"])
        for name, r in doc["estimators"].items():
            w.writerow([name, r["ise_velocity"], r["ise_tracking"], r["convergence_s"], r["ise_faulty"]])
    _plots(doc, out)


def _plots(doc: dict[str, Any], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = list(doc["estimators"])
    vals = [np.nan if doc["estimators"][n]["ise_velocity"] is None else doc["estimators"][n]["ise_velocity"]
            for n in names]
    faulty = [doc["estimators"][n]["ise_faulty"] for n in names]
    x = np.arange(len(names))
    ax[0].bar(x - 0.2, vals, 0.4, label="normal")
    ax[0].bar(x + 0.2, [np.nan if v is None else v for v in faulty], 0.4,
              label=f"{doc['setup']['faults']:.0%} lost on one axis")
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
    fig.savefig(out / "evaluation.png", dpi=110)
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
    ax[0].set_ylabel("velocity of the last axis (rad/s)" if setup.fault_axis == -1 else
                     f"velocity of axis {setup.fault_axis + 1} (rad/s)")
    ax[1].set_xlabel("t (s)")
    ax[1].set_ylabel("cumulative ISE")
    ax[1].set_yscale("log")
    ax[0].legend(fontsize=7)
    fig.suptitle(f"{setup.robot}, {setup.resolution_mdeg:g} mdeg, {setup.rate_hz:g} Hz (like seed 000 Fig. 5)")
    fig.tight_layout()
    fig.savefig(out / "fig5_estimates.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    ts = setup.sample_period
    for r in have:
        c = r.curves["switch_on"]
        ax.plot(np.arange(len(c)) * ts, c, label=r.name)
    ax.axhline(0.3, color="k", lw=2)
    ax.set_xlim(0, 0.6)
    ax.set_xlabel("t after switch-on (s)")
    ax.set_ylabel("velocity estimate, axis 2 (rad/s)")
    ax.set_title("switch-on at 0.3 rad/s (like seed 000 Fig. 7)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig7_switch_on.png", dpi=110)
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
    fig.savefig(out / "fig8_faults.png", dpi=110)
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
        vals = [np.nan if doc["estimators"][n]["ise_velocity"] is None else doc["estimators"][n]["ise_velocity"]
                for n in names]
        ax.bar(np.arange(len(names)) + (i - (len(docs) - 1) / 2) * width, vals, width,
               label=f"{s['resolution_mdeg']:g} mdeg, {s['rate_hz']:g} Hz")
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel("ISE of the velocity estimate")
    ax.set_title(f"{docs[0]['setup']['robot']}: resolution and sample rate (like seed 000 Fig. 9)")
    ax.legend()
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "fig9_setups.png", dpi=110)
    plt.close(fig)
