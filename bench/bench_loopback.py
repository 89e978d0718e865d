"""Wall time of the closed loop in C and of a full GA tuning (issue #4's figures).

    .venv/bin/python bench/bench_loopback.py            # ~2 min on 2 cores
    .venv/bin/python bench/bench_loopback.py --quick    # no GA

Peer, measured in the same run: the same closed loop orchestrated from Python (one cffi call of
rt_step per sample, the RK4 plant in numpy on the generated forward dynamics) -- what a user would
write without <robot>_loopback.
"""

from __future__ import annotations

import argparse
import os
import time

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

from codegen.model.description import load_robot
from host_tools import load
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import PipelineSource
from host_tools.data.trajectories import generated_trajectory
from host_tools.studies.tune import GaSettings, Problem, gain_space, tune


def python_loop(spec: str, rt, traj, substeps: int = 8) -> float:
    dyn = load(spec)
    rt.reset()
    q, qd = traj.q[0].copy(), traj.qd[0].copy()
    h = rt.sample_period / substeps
    applied = np.zeros(rt.dof)
    t0 = time.perf_counter()
    for k in range(len(traj.time)):
        out = rt.step(rt.encoder_counts(q)[0], tau=applied, q_des=traj.q[k], qd_des=traj.qd[k], qdd_des=traj.qdd[k])
        applied = out["tau_cmd"]
        for _ in range(substeps):
            f = lambda a, b: dyn.forward_dynamics(a, b, applied)  # noqa: E731, B023
            k1q, k1v = qd, f(q, qd)
            k2q, k2v = qd + h / 2 * k1v, f(q + h / 2 * k1q, qd + h / 2 * k1v)
            k3q, k3v = qd + h / 2 * k2v, f(q + h / 2 * k2q, qd + h / 2 * k2v)
            k4q, k4v = qd + h * k3v, f(q + h * k3q, qd + h * k3v)
            q = q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
            qd = qd + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print("| robot | rate | samples | C loopback (s) | Python-orchestrated loop (s) | ratio |")
    print("| --- | --: | --: | --: | --: | --: |")
    for spec in ("schunk_lwa4p", "kuka_iiwa14"):
        for rate in (125.0, 1000.0):
            rt = load_rt(spec, estimator="kalman", observer="momentum", sample_period=1 / rate)
            rt.config["det.threshold"] = 1e9
            traj = generated_trajectory(load_robot(spec), 20.0, 1 / rate)
            best = min(_timed(lambda: simulate(rt, traj)) for _ in range(3))  # noqa: B023 (called within this iteration)
            seconds = 20.0 if rate < 500 else 2.0  # the Python loop is slow: 2 s, scaled
            sub = generated_trajectory(load_robot(spec), seconds, 1 / rate)
            peer = python_loop(spec, rt, sub) * len(traj.time) / len(sub.time)
            note = "" if seconds == 20.0 else " (2 s run, scaled)"
            print(f"| {spec} | {rate:g} Hz | {len(traj.time)} | {best:.3f} | {peer:.1f}{note} | {peer / best:.0f}x |")
    if args.quick:
        return
    print()
    print(
        f"GA tuning (Liu et al. Table 3: population 60, 20 generations = 1200 closed-loop runs of 20 s), "
        f"{os.cpu_count()} worker processes:"
    )
    print("| robot | set-up | estimator | seconds | best ISE |")
    print("| --- | --- | --- | --: | --: |")
    for est in ("linhg", "kalman"):
        rt = load_rt("schunk_lwa4p", estimator=est, observer="none", sample_period=0.008)
        rt.config["enc.cpr"] = 36000.0
        traj = generated_trajectory(load_robot("schunk_lwa4p"), 20.0, 0.008, seed=1)
        problem = Problem(
            PipelineSource.of("schunk_lwa4p", estimator=est, observer="none", sample_period=0.008),
            rt.config.to_dict(),
            gain_space(est, rt.dof),
            traj,
        )
        t0 = time.perf_counter()
        res = tune(problem, GaSettings(), seed=0)
        print(f"| schunk_lwa4p | 10 mdeg, 125 Hz | {est} | {time.perf_counter() - t0:.1f} | {res.cost:.4g} |")
    print("\nGoal: <= 60 s per estimator (Liu et al. needed ~12 h per estimator on the robot).")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
