"""The main job, end to end: generate a robot's C, build it with its own Makefile, load it through
cffi, check it numerically, then run the real-time pipeline in a closed-loop loopback with a
collision and compare a few velocity estimators."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from codegen.blocks import findiff, kalman, linhg
from codegen.emit.generate import generate
from codegen.model.description import load_robot
from codegen.model.robot import Robot
from host_tools.bindings.compiled import CompiledDynamics
from host_tools.studies.identities import identity_checks


def demo(
    spec: str,
    out: str | None = None,
    states: int = 1000,
    base_link: str | None = None,
    tip_link: str | None = None,
    overlay: str | None = None,
) -> int:
    """``out``: the folder to generate into (default out/<robot>, as `manipgen generate`); the URDF
    chain arguments as for `manipgen generate`."""
    robot = load_robot(spec, base_link=base_link, tip_link=tip_link, overlay=overlay)
    folder = Path(out) if out else Path("out") / robot.c_name
    t0 = time.perf_counter()
    gen = generate(robot)
    gen.write(folder)
    t_gen = time.perf_counter() - t0
    print(
        f"[1/5] generated {robot.name} ({robot.dof} joints, {robot.n_standard} standard / "
        f"{gen.base.n_base} base parameters) into {folder}/ in {t_gen:.2f} s"
    )
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("error: no C compiler (cc/gcc) on PATH")
        return 1
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
        subprocess.run(
            [
                cc,
                "-std=c99",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Wpedantic",
                "-Wshadow",
                "-Werror",
                "-c",
                str(folder / f"{robot.c_name}_dynamics.c"),
                "-o",
                str(folder / f"{robot.c_name}_dynamics.o"),
            ],
            check=True,
        )
        how = "cc directly (make not found)"
    dyn = CompiledDynamics(folder)
    print(f"[2/5] built with {how} and loaded through cffi in {time.perf_counter() - t0:.2f} s")
    checks = identity_checks(dyn, states)
    print(f"[3/5] numeric identities over {states} random states (host_tools.studies.identities):")
    for c in checks:
        print(f"      {c.name:<30} {c.figure:9.3g}   {c.relation} {c.bound:.3g}   {'ok' if c.ok else 'FAIL'}")
    ok = all(c.ok for c in checks)
    flags = "".join(
        f" --{k} {v}" for k, v in (("base-link", base_link), ("tip-link", tip_link), ("overlay", overlay)) if v
    )
    ok = loopback(robot, spec + flags, folder) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _values(v: np.ndarray) -> str:
    """N m to the hundredth, as measured (numpy would switch a wide-ranging array to 2.000e-01)."""
    return "[" + " ".join(f"{x:.2f}" for x in v) + "]"


def loopback(robot: Robot, spec: str, folder: Path) -> bool:
    """Steps 4 and 5: the collision scenario and a short estimator table on the loopback. The run
    with the collision is saved (log and config) for `manipgen target run` (``spec``: the robot as
    that command takes it, name or path and chain flags)."""
    from host_tools.bindings.rt import load_rt
    from host_tools.studies.scenarios import collision, estimator_table

    t0 = time.perf_counter()
    rt = load_rt(robot)
    r = collision(robot, rt=rt)
    r.hit.log.save(folder / "collision_log.npz")
    rt.config.save(folder / "collision_config.json")
    rt_label = r.hit.log.robot
    expected = 1 + int(np.flatnonzero(np.max(np.abs(r.hit.log.extra["tau_ext_true"]), axis=0) > r.thresholds)[-1])
    print(
        f"[4/5] closed loop in C ({rt_label}: {r.free.log.time[-1]:.0f} s at {1 / r.free.log.sample_period:.0f} Hz, "
        f"RK4 plant, kalman + momentum observer + computed torque), {time.perf_counter() - t0:.1f} s:"
    )
    print(
        f"      thresholds from a contact-free run of another motion (1.5 x max |r| + 0.2 N m): {_values(r.thresholds)}"
    )
    print(
        f"      tip force of 30 N (for 0.3 s) from t = {r.onset_s:.2f} s: "
        + (
            f"detected at t = {r.detected_s:.3f} s ({r.delay_ms:.0f} ms), isolated link {r.link} "
            f"(expected {expected}: the highest joint the force loads), reaction: stop"
            if r.detected_s is not None
            else "NOT detected"
        )
        + ("; FALSE ALARM before the contact" if r.false_alarm else "; no false alarm before it")
    )
    print(f"      peak |r| during the contact (N m): {_values(r.peak_r)}")
    t = r.free.log.time
    window = (t >= 0.5) & (t < r.onset_s)
    err = np.abs(r.free.log.q_des - r.free.log.extra["q_true"])[window].max(axis=0)
    print(
        f"      tracking before the push (0.5 s <= t < {r.onset_s:g} s): max |q_d - q| = {err.max():.4f} rad "
        f"(joint {int(np.argmax(err)) + 1})"
    )
    print(
        f"      saved {folder / 'collision_log.npz'} and its config: replay it on a Cortex-M with\n"
        f"      manipgen target run {spec} --cpu cortex-m7 --input {folder / 'collision_log.npz'} "
        f"--config {folder / 'collision_config.json'}"
    )
    t0 = time.perf_counter()
    rows = estimator_table(
        robot, (findiff.FINDIFF.name, f"{findiff.MOVAV.name}:p=3", kalman.SPEC.name, linhg.SPEC.name)
    )
    print(f"[5/5] velocity estimators in the same loop, no contact ({time.perf_counter() - t0:.1f} s):")
    print("      estimator   ISE velocity (rad^2/s)   ISE tracking (rad^2 s)")
    for name, ise_v, ise_t in rows:
        print(f"      {name:<11} {ise_v:>22.4g} {ise_t:>24.4g}")
    return r.detected_s is not None and not r.false_alarm and r.link == expected
