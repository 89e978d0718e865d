#!/usr/bin/env python3
"""The model-based estimators (nlHG, SliMod) where the torque does not hold the model's friction at
the estimate (issue 43 item 3). Liu et al.'s loop (eq. 2: computed torque with the friction
compensated at the estimate) feeds them a torque that cancels their own friction term; with the
friction fed forward at the desired velocity, with a PID, or on a recorded log, it does not, and a
forward-Euler step of the LWA-4P's steep tanh Coulomb friction (T f'(0) / M = 2.6-11 at 125 Hz)
chattered at low speed. The generated observers now take the friction semi-implicitly
(codegen.blocks.estimator.semi_implicit_dynamics).

Prints the velocity ISE of FinDiff (the model-free peer, measured in the same run), nlHG and SliMod
with Liu et al.'s Table 4 gains at 10 mdeg, 125 Hz on Liu et al.'s test motion (the simulated plant
is the model) in three loops, and each loop's ISE against the paper's loop (goal: within 1.5x):

- paper: computed torque, friction at the estimate (host_tools.studies.paper_setups.VELOCITY_ESTIMATORS);
- friction fed forward: the same with ``ctl.friction_ff = 1`` (the friction at the desired velocity);
- PID + gravity: Kp = 100 M_jj(0), Kd = 13 M_jj(0) (N m/rad, N m s/rad: the paper's loop's bandwidth
  on the diagonal of the mass matrix at q = 0), Ki = 0.

    .venv/bin/python bench/model_based_friction.py [--robot schunk_lwa4p] [--json]   # ~1 min
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

from host_tools import load
from host_tools.bindings.source import RobotSource
from host_tools.studies.evaluate import PAPER, EstimatorRequest, Setup, evaluate
from host_tools.studies.paper_setups import PaperSetup

ESTIMATORS = ("findiff", "nlhg", "slimod")


def loops(robot: str) -> dict[str, PaperSetup]:
    m0 = np.diag(load(robot).mass_matrix(np.zeros(load(robot).dof)))
    pid = {"ctl.kp": list(100.0 * m0), "ctl.kd": list(13.0 * m0), "ctl.ki": 0.0, "ctl.i_max": 0.0}
    return {
        "paper (friction at the estimate)": PAPER,
        "friction fed forward": dataclasses.replace(PAPER, pinned={**PAPER.pinned, "ctl.friction_ff": 1.0}),
        "PID + gravity": dataclasses.replace(PAPER, controller="pid", pinned=pid),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--robot", default="schunk_lwa4p", help="a robot with Liu et al.'s gains: schunk_lwa4p")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    source = RobotSource.of(args.robot)
    requests = tuple(EstimatorRequest.parse(e) for e in ESTIMATORS)
    table: dict[str, dict[str, float | None]] = {}
    for name, loop in loops(args.robot).items():
        setup = Setup(source, resolution_mdeg=10.0, rate_hz=125.0, gains="paper", loop=loop)
        with ThreadPoolExecutor(1) as ex:  # nothing is tuned: the executor only runs the study's calls
            doc = evaluate(setup, requests, executor=ex).doc
        table[name] = {e: doc["estimators"][e]["ise_velocity"] for e in ESTIMATORS}
    if args.json:
        print(json.dumps(table, indent=1))
        return
    paper = next(iter(table.values()))
    print(f"{args.robot}, 10 mdeg, 125 Hz, Liu et al. Table 4 gains: velocity ISE, (rad/s)^2 s (x the paper's loop)")
    print(f"{'loop':34}" + "".join(f"{e:>20}" for e in ESTIMATORS))
    for name, row in table.items():
        cells = []
        for e in ESTIMATORS:
            v, ref = row[e], paper[e]
            cells.append("diverged" if v is None else f"{v:.3g} ({v / ref:.2f}x)" if ref else f"{v:.3g}")
        print(f"{name:34}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
