"""The main job, end to end: generate a robot's C, build it with its own Makefile, load it through
cffi, check it numerically, then run the real-time pipeline in a closed-loop loopback with a
collision and compare a few velocity estimators. Each step returns what it did; `manipgen demo`
(host_tools.cli.demo) reports them one by one (host_tools.reports.demo)."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codegen.blocks import findiff, kalman, linhg
from codegen.emit.generate import generate
from codegen.model.robot import Robot
from host_tools.bindings.compiled import CompiledDynamics
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.studies.identities import Check
from host_tools.studies.scenarios import (
    HELD_S,
    MOTION_SHARE,
    CollisionResult,
    Fit,
    Motion,
    estimator_table,
    fit_push,
    fit_to_limits,
    saturated,
)

STRICT = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror")
ESTIMATORS = (findiff.FINDIFF.name, f"{findiff.MOVAV.name}:p=3", kalman.SPEC.name, linhg.SPEC.name)


@dataclass
class Generation:
    n_base: int  # base parameters
    seconds: float


def generate_into(robot: Robot, folder: Path) -> Generation:
    """Step 1: the robot's C into ``folder``."""
    t0 = time.perf_counter()
    gen = generate(robot)
    gen.write(folder)
    return Generation(gen.base.n_base, time.perf_counter() - t0)


@dataclass
class Build:
    how: str  # make (or up to date), or the compiler directly
    dynamics: CompiledDynamics
    seconds: float


def build(robot: Robot, folder: Path) -> Build | None:
    """Step 2: the folder built with its own Makefile (the compiler directly without make) and
    loaded through cffi; None without a C compiler (cc/gcc)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    t0 = time.perf_counter()
    make = shutil.which("make")
    if make is not None:
        lib = folder / f"lib{robot.c_name}.a"
        before = lib.stat().st_mtime_ns if lib.is_file() else None
        subprocess.run([make, "-s", "-C", str(folder), f"CC={cc}"], check=True)
        how = "make (gcc, -std=c99 -Wall -Wextra -Wpedantic -Wshadow -Werror)"
        if before is not None and lib.stat().st_mtime_ns == before:
            how = "make (up to date: nothing to build)"
    else:
        dynamics = folder / f"{robot.c_name}_dynamics"
        subprocess.run([cc, *STRICT, "-c", f"{dynamics}.c", "-o", f"{dynamics}.o"], check=True)
        how = "cc directly (make not found)"
    dyn = CompiledDynamics(folder)
    return Build(how, dyn, time.perf_counter() - t0)


@dataclass
class Loopback:
    """Step 4: the collision scenario on the loopback."""

    result: CollisionResult
    rt: Realtime  # its pipeline (config: the run's)
    fit: Fit  # the motion's speed and the push, fitted to the limits
    expected: int  # the highest joint the force loads (1-based)
    tracking: np.ndarray  # max |q_d - q| per joint before the push, from 0.5 s
    saturated_free: np.ndarray  # samples per joint with tau_cmd at the limit, contact-free run
    saturated_hit: np.ndarray  # the same in the run with the push and the stop
    saturated_held: np.ndarray  # the same from HELD_S after the push's end (the stop holds the arm)
    seconds: float

    def failures(self) -> list[str]:
        """Each failed check with its figure and its limit (empty: all passed)."""
        r, fit, out = self.result, self.fit, []
        if not fit.motion_fits:
            j = int(np.argmax(fit.motion_peak / fit.tau_max))
            out.append(
                f"motion within the torque limits: joint {j + 1} needs {fit.motion_peak[j]:.3g} N m at "
                f"{fit.motion.speed:.2g} x the velocity limits, limit {MOTION_SHARE:g} x {fit.tau_max[j]:.3g} N m"
            )
        if self.saturated_free.any():
            j = int(np.argmax(self.saturated_free))
            out.append(
                f"contact-free run unsaturated: {int(self.saturated_free.sum())} samples with tau_cmd at the "
                f"limit (joint {j + 1}: {int(self.saturated_free[j])} at {fit.tau_max[j]:.3g} N m), limit 0"
            )
        if self.saturated_held.any():
            j = int(np.argmax(self.saturated_held))
            out.append(
                f"the stop holds the arm after the push: {int(self.saturated_held.sum())} samples with tau_cmd "
                f"at the limit from {HELD_S:g} s after a {fit.force:.3g} N push (joint {j + 1}: "
                f"{int(self.saturated_held[j])} at {fit.tau_max[j]:.3g} N m), limit 0"
            )
        if self.expected == 0:
            out.append(
                f"push loads a joint above its threshold: peak |J^T F| / threshold "
                f"{np.max(np.max(np.abs(r.hit.log.extra['tau_ext_true']), axis=0) / r.thresholds):.2f} (> 1)"
            )
        if r.detected_s is None:
            out.append(f"push detected: not detected, peak |r| / threshold {np.max(r.peak_r / r.thresholds):.2f} (> 1)")
        if r.false_alarm:
            out.append(f"no false alarm: flagged at t = {r.detected_s:.3f} s, before the push at {r.onset_s:.2f} s")
        if r.detected_s is not None and r.link != self.expected:
            out.append(f"isolated link: {r.link}, expected {self.expected} (the highest joint the force loads)")
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()


def loopback(robot: Robot) -> Loopback:
    """Step 4: a tip force during a closed-loop run (kalman + momentum observer + computed torque),
    motion and push fitted to the description's limits (scenarios.fit_to_limits)."""
    t0 = time.perf_counter()
    rt = load_rt(robot)
    fit = fit_to_limits(robot, rt.sample_period)
    r, fit, hit, held = fit_push(robot, rt, fit)
    loaded = np.flatnonzero(np.max(np.abs(r.hit.log.extra["tau_ext_true"]), axis=0) > r.thresholds)
    expected = 1 + int(loaded[-1]) if len(loaded) else 0
    t = r.free.log.time
    window = (t >= 0.5) & (t < r.onset_s)
    err = np.abs(r.free.log.q_des - r.free.log.extra["q_true"])[window].max(axis=0)
    tau_max = np.asarray(rt.config["ctl.tau_max"], float) if "ctl.tau_max" in rt.config.keys() else fit.tau_max
    free = saturated(r.free.log.extra["tau_cmd"], tau_max)
    return Loopback(r, rt, fit, expected, err, free, hit, held, time.perf_counter() - t0)


def failures(checks: list[Check], loop: Loopback) -> list[str]:
    """The demo's failed checks, each with its figure and its limit."""
    out = [f"{c.name}: {c.figure:.3g}, limit {c.relation} {c.bound:.3g}" for c in checks if not c.ok]
    return out + loop.failures()


def estimators(robot: Robot, motion: Motion) -> tuple[list[tuple[str, float, float]], float]:
    """Step 5: (estimator, ISE velocity, ISE tracking) of a few estimators in the same loop without
    contact (the motion scaled as ``motion``, step 4's), and the seconds it took."""
    t0 = time.perf_counter()
    rows = estimator_table(robot, ESTIMATORS, motion=motion)
    return rows, time.perf_counter() - t0
