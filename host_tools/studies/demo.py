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
from host_tools.studies.scenarios import CollisionResult, collision, estimator_table

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
    expected: int  # the highest joint the force loads (1-based)
    tracking: np.ndarray  # max |q_d - q| per joint before the push, from 0.5 s
    seconds: float

    @property
    def ok(self) -> bool:
        r = self.result
        return r.detected_s is not None and not r.false_alarm and r.link == self.expected


def loopback(robot: Robot) -> Loopback:
    """Step 4: a tip force during a closed-loop run (kalman + momentum observer + computed torque)."""
    t0 = time.perf_counter()
    rt = load_rt(robot)
    r = collision(robot, rt=rt)
    expected = 1 + int(np.flatnonzero(np.max(np.abs(r.hit.log.extra["tau_ext_true"]), axis=0) > r.thresholds)[-1])
    t = r.free.log.time
    window = (t >= 0.5) & (t < r.onset_s)
    err = np.abs(r.free.log.q_des - r.free.log.extra["q_true"])[window].max(axis=0)
    return Loopback(r, rt, expected, err, time.perf_counter() - t0)


def estimators(robot: Robot) -> tuple[list[tuple[str, float, float]], float]:
    """Step 5: (estimator, ISE velocity, ISE tracking) of a few estimators in the same loop without
    contact, and the seconds it took."""
    t0 = time.perf_counter()
    rows = estimator_table(robot, ESTIMATORS)
    return rows, time.perf_counter() - t0
