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
from host_tools.bindings.compiled import CompiledDynamics


def demo(spec: str, out: str | None = None, states: int = 1000) -> int:
    """``out``: the folder to generate into (default out/<robot>, as `manipgen generate`)."""
    robot = load_robot(spec)
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
    rng = np.random.default_rng(0)
    worst = {"forward_dynamics(rnea) - qdd": 0.0, "Y_b beta - rnea": 0.0, "M - M^T": 0.0}
    min_eig = np.inf
    for _ in range(states):
        q = rng.uniform(-np.pi, np.pi, robot.dof)
        qd, qdd = rng.normal(0, 1, robot.dof), rng.normal(0, 3, robot.dof)
        tau = dyn.rnea(q, qd, qdd)
        m = dyn.mass_matrix(q)
        rel: list[float] = [
            float(np.linalg.norm(dyn.forward_dynamics(q, qd, tau) - qdd) / np.linalg.norm(qdd)),
            float(np.linalg.norm(dyn.regressor(q, qd, qdd) @ dyn.base_parameters - tau) / np.linalg.norm(tau)),
            float(np.linalg.norm(m - m.T) / np.linalg.norm(m)),
        ]
        for k, r in zip(worst, rel):
            worst[k] = max(worst[k], r)
        min_eig = min(min_eig, float(np.linalg.eigvalsh(m).min()))
    print(f"[3/5] numeric check over {states} random states (worst relative error):")
    for k, v in worst.items():
        print(f"      {k:<30} {v:.2e}")
    print(f"      smallest eigenvalue of M(q)    {min_eig:.4g} (> 0: positive definite)")
    ok = max(worst.values()) < 1e-9 and min_eig > 0
    ok = loopback(spec, folder) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def loopback(spec: str, folder: Path) -> bool:
    """Steps 4 and 5: the collision scenario and a short estimator table on the loopback. The run
    with the collision is saved (log and config) for `manipgen target run`."""
    from host_tools.bindings.rt import load_rt
    from host_tools.studies.scenarios import collision, estimator_table

    t0 = time.perf_counter()
    rt = load_rt(spec)
    r = collision(spec, rt=rt)
    r.hit.log.save(folder / "collision_log.npz")
    rt.config.save(folder / "collision_config.json")
    rt_label = r.hit.log.robot
    expected = 1 + int(np.flatnonzero(np.max(np.abs(r.hit.log.extra["tau_ext_true"]), axis=0) > r.thresholds)[-1])
    print(
        f"[4/5] closed loop in C ({rt_label}: {r.free.log.time[-1]:.0f} s at {1 / r.free.log.sample_period:.0f} Hz, "
        f"RK4 plant, kalman + momentum observer + computed torque), {time.perf_counter() - t0:.1f} s:"
    )
    print(
        f"      thresholds from a contact-free run of another motion (1.5 x max |r| + 0.2 N m): "
        f"{np.round(r.thresholds, 2)}"
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
    print(f"      peak |r| during the contact (N m): {np.round(r.peak_r, 2)}")
    print(
        f"      saved {folder / 'collision_log.npz'} and its config: replay it on a Cortex-M with\n"
        f"      manipgen target run {spec} --cpu cortex-m7 --input {folder / 'collision_log.npz'} "
        f"--config {folder / 'collision_config.json'}"
    )
    t0 = time.perf_counter()
    rows = estimator_table(spec, (findiff.FINDIFF.name, f"{findiff.MOVAV.name}:p=3", kalman.SPEC.name, linhg.SPEC.name))
    print(f"[5/5] velocity estimators in the same loop, no contact ({time.perf_counter() - t0:.1f} s):")
    print("      estimator   ISE velocity (rad^2/s)   ISE tracking (rad^2 s)")
    for name, ise_v, ise_t in rows:
        print(f"      {name:<11} {ise_v:>22.4g} {ise_t:>24.4g}")
    return r.detected_s is not None and not r.false_alarm and r.link == expected
