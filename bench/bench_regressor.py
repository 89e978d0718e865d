"""The stacked base regressor of a log (identification's inner loop): the generated C's batch loop
(``<robot>_regressor_batch`` through cffi, what ``least_squares.Model.stacked`` runs) against CasADi's
virtual machine on the same expression (``Function.map``, what identification ran before), same
inputs, same run; plus their largest difference (both evaluate the same graph: expected 0).

    .venv/bin/python bench/bench_regressor.py          # ~1 min

Runs: Liu et al.'s LWA-4P FinDiff_run1 (../shared/data/lwa4p, or $MANIPGEN_SHARED_DATA/lwa4p; its
encoder positions, velocities and accelerations by central differences) and the iiwa's synthetic
identification run (a random Fourier excitation, 6 periods at the description's 1 kHz).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import casadi as cs
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dynamics import print_table  # noqa: E402

from codegen.model.description import load_robot  # noqa: E402
from codegen.symbolic.dynamics import Dynamics  # noqa: E402
from host_tools.data.formats import read_log  # noqa: E402
from host_tools.identification.excitation import random_excitation  # noqa: E402
from host_tools.identification.least_squares import model  # noqa: E402
from host_tools.identification.pipeline import positions, synthetic_log  # noqa: E402

DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", REPO.parent / "shared" / "data")) / "lwa4p"


def best_of(f: Callable[[], np.ndarray], repeat: int = 5) -> tuple[float, np.ndarray]:
    times, out = [], np.zeros(0)
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def compare(name: str, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> list[str]:
    robot = load_robot(name)
    m = model(robot)
    dyn = Dynamics(robot)
    vm = cs.Function("y", [dyn.q, dyn.qd, dyn.qdd], [cs.cse(dyn.regressor(list(m.base.columns)))])
    k, n = q.shape

    def casadi_vm() -> np.ndarray:
        wide = np.array(vm.map(k)(q.T, qd.T, qdd.T))
        return wide.reshape(n, k, -1).transpose(1, 0, 2).reshape(k * n, -1)

    t_c, ours = best_of(lambda: m.stacked(q, qd, qdd))
    t_vm, ref = best_of(casadi_vm)
    return [
        name,
        f"{k}",
        f"{t_vm * 1e3:.1f}",
        f"{t_c * 1e3:.1f}",
        f"{t_vm / t_c:.1f}x",
        f"{np.max(np.abs(ours - ref)):.1e}",
    ]


def main() -> None:
    rows = []
    run = DATA / "4ms_FinDiff_run1.mat"
    if run.is_file():
        log = read_log(run, load_robot("schunk_lwa4p")).log
        q = positions(load_robot("schunk_lwa4p"), log)
        qd = np.gradient(q, log.sample_period, axis=0)
        qdd = np.gradient(qd, log.sample_period, axis=0)
        rows.append(compare("schunk_lwa4p", q, qd, qdd))
    else:
        print(f"(no {run}: the LWA-4P row is left out)")
    robot = load_robot("kuka_iiwa14")
    exc = random_excitation(robot, 0)
    log = synthetic_log(robot, exc, periods=6, torque_noise=0.2, seed=0)
    truth = log.extra
    rows.append(compare("kuka_iiwa14", truth["q_true"], truth["qd_true"], truth["qdd_true"]))
    print_table(
        ["run", "samples", "CasADi VM (ms)", "generated C (ms)", "speed-up", "max |difference|"],
        rows,
        "lrrrrr",
    )


if __name__ == "__main__":
    main()
