"""The main job, end to end: generate a robot's C, build it with its own Makefile, load it through
cffi and check it numerically (later issues extend this with the closed-loop loopback)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from codegen.description import load_robot
from codegen.emit import generate

from .compiled import CompiledDynamics


def demo(spec: str, out: str = "out", states: int = 1000) -> int:
    robot = load_robot(spec)
    folder = Path(out) / robot.c_name
    t0 = time.perf_counter()
    gen = generate(robot)
    gen.write(folder)
    t_gen = time.perf_counter() - t0
    print(f"[1/3] generated {robot.name} ({robot.dof} joints, {robot.n_standard} standard / "
          f"{gen.base.n_base} base parameters) into {folder}/ in {t_gen:.2f} s")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("error: no C compiler (cc/gcc) on PATH")
        return 1
    t0 = time.perf_counter()
    make = shutil.which("make")
    if make is not None:
        subprocess.run([make, "-s", "-C", str(folder), f"CC={cc}"], check=True)
        how = "make (gcc, -std=c99 -Wall -Wextra -Wpedantic -Wshadow -Werror)"
    else:
        subprocess.run([cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow",
                        "-Werror", "-c", str(folder / f"{robot.c_name}_dynamics.c"), "-o",
                        str(folder / f"{robot.c_name}_dynamics.o")], check=True)
        how = "cc directly (make not found)"
    dyn = CompiledDynamics(folder)
    print(f"[2/3] built with {how} and loaded through cffi in {time.perf_counter() - t0:.2f} s")
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
            float(np.linalg.norm(m - m.T) / np.linalg.norm(m))]
        for k, r in zip(worst, rel):
            worst[k] = max(worst[k], r)
        min_eig = min(min_eig, float(np.linalg.eigvalsh(m).min()))
    print(f"[3/3] numeric check over {states} random states (worst relative error):")
    for k, v in worst.items():
        print(f"      {k:<30} {v:.2e}")
    print(f"      smallest eigenvalue of M(q)    {min_eig:.4g} (> 0: positive definite)")
    ok = max(worst.values()) < 1e-9 and min_eig > 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
