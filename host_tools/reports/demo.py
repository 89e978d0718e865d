"""`manipgen demo`'s steps as text (host_tools.studies.demo) and the collision run it saves."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from codegen.model.robot import Robot
    from host_tools.studies.demo import Build, Generation, Loopback
    from host_tools.studies.identities import Check


def _values(v: np.ndarray) -> str:
    """N m to the hundredth, as measured (numpy would switch a wide-ranging array to 2.000e-01)."""
    return "[" + " ".join(f"{x:.2f}" for x in v) + "]"


def generated(robot: Robot, g: Generation, folder: Path) -> str:
    return (
        f"[1/5] generated {robot.name} ({robot.dof} joints, {robot.n_standard} standard / "
        f"{g.n_base} base parameters) into {folder}/ in {g.seconds:.2f} s"
    )


def built(b: Build) -> str:
    return f"[2/5] built with {b.how} and loaded through cffi in {b.seconds:.2f} s"


def identities(checks: list[Check], states: int) -> str:
    lines = [f"[3/5] numeric identities over {states} random states (host_tools.studies.identities):"]
    lines += [
        f"      {c.name:<30} {c.figure:9.3g}   {c.relation} {c.bound:.3g}   {'ok' if c.ok else 'FAIL'}" for c in checks
    ]
    return "\n".join(lines)


def save_collision(loop: Loopback, folder: Path) -> tuple[Path, Path]:
    """The run with the collision (log) and its config, for `manipgen target run`."""
    log, config = folder / "collision_log.npz", folder / "collision_config.json"
    loop.result.hit.log.save(log)
    loop.rt.config.save(config)
    return log, config


def collided(loop: Loopback, saved: tuple[Path, Path], spec: str) -> str:
    """Step 4 (``spec``: the robot as `manipgen target run` takes it, name or path and chain flags)."""
    r = loop.result
    log, config = saved
    return "\n".join(
        [
            f"[4/5] closed loop in C ({r.hit.log.robot}: {r.free.log.time[-1]:.0f} s at "
            f"{1 / r.free.log.sample_period:.0f} Hz, RK4 plant, kalman + momentum observer + computed torque), "
            f"{loop.seconds:.1f} s:",
            "      thresholds from a contact-free run of another motion (1.5 x max |r| + 0.2 N m): "
            f"{_values(r.thresholds)}",
            f"      tip force of 30 N (for 0.3 s) from t = {r.onset_s:.2f} s: "
            + (
                f"detected at t = {r.detected_s:.3f} s ({r.delay_ms:.0f} ms), isolated link {r.link} "
                f"(expected {loop.expected}: the highest joint the force loads), reaction: stop"
                if r.detected_s is not None
                else "NOT detected"
            )
            + ("; FALSE ALARM before the contact" if r.false_alarm else "; no false alarm before it"),
            f"      peak |r| during the contact (N m): {_values(r.peak_r)}",
            f"      tracking before the push (0.5 s <= t < {r.onset_s:g} s): max |q_d - q| = "
            f"{loop.tracking.max():.4f} rad (joint {int(np.argmax(loop.tracking)) + 1})",
            f"      saved {log} and its config: replay it on a Cortex-M with\n"
            f"      manipgen target run {spec} --cpu cortex-m7 --input {log} --config {config}",
        ]
    )


def estimated(rows: list[tuple[str, float, float]], seconds: float) -> str:
    lines = [
        f"[5/5] velocity estimators in the same loop, no contact ({seconds:.1f} s):",
        "      estimator   ISE velocity (rad^2/s)   ISE tracking (rad^2 s)",
    ]
    lines += [f"      {name:<11} {ise_v:>22.4g} {ise_t:>24.4g}" for name, ise_v, ise_t in rows]
    return "\n".join(lines)
