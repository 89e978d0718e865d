"""A threshold term for the friction error the velocity estimate's error can cause, tried offline
(issue #44, the hostile UR5's false alarms at its sine end; docs/realtime.md "Hostile logs").

Not in the generated C: this measures whether the term would hold before anyone builds it. Per joint,

    b(t) = low-pass_K( max(|f(qd_hat + e) - f(qd_hat)|, |f(qd_hat) - f(qd_hat - e)|) )

with f the description's friction (viscous + Coulomb, its tanh or sign shape), e the velocity
estimate's largest error on the design run (against a zero-phase reference: a 4th-order Butterworth
low-pass at 20 Hz of q_hat run forwards and backwards, then the gradient over the stamps), and
low-pass_K the momentum observer's first-order response (gain obs.k_o): a bound of the friction
error passed through a filter with a positive impulse response bounds the filtered error. The
envelope is designed (the defaults) on max(0, |r| - b), and another run raises a false alarm where
|r| > level + b. Hostile runs (`manipgen record R --hostile`): seed 1 (30 s, NPZ route) designs,
seeds 2-4 (20 s, CSV route) are checked, as in tests/host_tools/data/test_hostile_logs.py.
The same runs also take threshold_margins.py's shape-per-joint rule (docs/real-data.md).

    .venv/bin/python bench/friction_error_bound.py [--robots ur5 franka_panda kuka_iiwa14] [--cache DIR]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.signal import butter, filtfilt
from threshold_margins import SHAPE_PER_JOINT, shape_per_joint

from codegen.model.description import Robot, load_robot
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.cli import main as cli
from host_tools.data.checks import check_log, with_settling
from host_tools.data.formats import read_log
from host_tools.data.logs import Log
from host_tools.studies import thresholds as T

RUNS = ((1, 30.0, "npz"), (2, 20.0, "csv"), (3, 20.0, "csv"), (4, 20.0, "csv"))  # seed, seconds, route
REFERENCE_HZ = 20.0  # the zero-phase reference's cut-off (the test motions stay below 1 Hz)


def friction(robot: Robot) -> Callable[[np.ndarray], np.ndarray]:
    """The description's viscous + Coulomb friction, f(qd) (K, n) -> (K, n)."""
    values = dict(zip(robot.standard_parameter_names, robot.standard_parameters()))
    fv = np.array([values.get(f"FV{j + 1}", 0.0) for j in range(robot.dof)], float)
    fc = np.array([values.get(f"FC{j + 1}", 0.0) for j in range(robot.dof)], float)
    if robot.coulomb.model == "tanh":
        scale = robot.coulomb.velocity_scale[0]
        return lambda v: fv * v + fc * np.tanh(v / scale)
    return lambda v: fv * v + fc * np.sign(v)


def low_pass(x: np.ndarray, k: np.ndarray, ts: float) -> np.ndarray:
    """The momentum observer's first-order response to x (K, n), per joint gain k."""
    a = np.exp(-k * ts)
    y = np.zeros_like(x)
    for i in range(1, len(x)):
        y[i] = a * y[i - 1] + (1 - a) * x[i]
    return y


def error_bound(rt: Realtime, log: Log, use: np.ndarray) -> np.ndarray:
    """Per joint, the largest |qd_hat - reference| over the used samples of the design run."""
    outs = T.replay(rt, log)
    b, a = butter(4, REFERENCE_HZ * 2 * rt.sample_period)
    reference = np.gradient(filtfilt(b, a, np.asarray(outs["q_hat"], float), axis=0), log.time, axis=0)
    return np.max(np.abs(np.asarray(outs["qd_hat"], float) - reference)[use], axis=0)


def run(name: str, cache: Path) -> None:
    robot = load_robot(name)
    rt = load_rt(robot)
    f = friction(robot)
    k = np.asarray(rt.config["obs.k_o"], float) * np.ones(robot.dof)
    data = []
    for seed, seconds, route in RUNS:
        stem = cache / f"{name}_{seed}"
        if not stem.with_suffix(".csv").exists():
            args = ["record", name, "--hostile", "--duration", str(seconds), "--seed", str(seed)]
            assert cli([*args, "--out", str(stem.with_suffix(".csv")), "--out", str(stem.with_suffix(".npz"))]) == 0
        log = read_log(str(stem.with_suffix(f".{route}")), robot).log
        left_out = with_settling(check_log(log, robot, stem.name).flagged, log.sample_period)
        outs, k0 = T.replay_residual(rt, log, 0.5)
        use = (np.arange(len(log)) >= k0) & ~left_out
        data.append((log, outs, k0, left_out, use))
    log, outs, k0, left_out, use = data[0]
    e = error_bound(rt, log, use)

    def bound(o: dict[str, np.ndarray]) -> np.ndarray:
        qd = np.asarray(o["qd_hat"], float)
        step = np.maximum(np.abs(f(qd + e) - f(qd)), np.abs(f(qd) - f(qd - e)))
        return low_pass(step, k, rt.sample_period)

    print(f"{name}: e = {', '.join(f'{v:.4f}' for v in e)} rad/s")
    for label, with_bound in (("default", False), ("with the bound", True), (SHAPE_PER_JOINT, False)):
        o = dict(outs)
        if with_bound:
            o["r"] = np.maximum(0.0, np.abs(np.asarray(outs["r"], float)) - bound(outs))
        if label == SHAPE_PER_JOINT:  # threshold_margins' rule, on these runs too (docs/real-data.md)
            design = shape_per_joint(o, k0, rt.sample_period, left_out)
        else:
            design = T.design_from_outputs(o, k0, rt.sample_period, exclude=left_out)
        total = design.threshold_mean.sum() + (bound(outs)[use].mean(axis=0).sum() if with_bound else 0.0)
        alarms, worst = 0, 0.0
        for _, other, _, _, other_use in data[1:]:
            level = T.threshold_along(other, design) + (bound(other) if with_bound else 0.0)
            r, level = np.abs(np.asarray(other["r"], float))[other_use], level[other_use]
            alarms += int(np.sum(r > level))
            worst = max(worst, float(np.max(r / level)))
        print(
            f"  {label:33s} sum of mean thresholds {total:7.2f} N m, on seeds 2-4: worst {worst:.3f}, {alarms} samples"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="*", default=["ur5", "franka_panda", "kuka_iiwa14"])
    parser.add_argument("--cache", default="out/friction_error_bound")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    for name in args.robots:
        run(name, cache)


if __name__ == "__main__":
    main()
