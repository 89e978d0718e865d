"""`manipgen demo`'s steps as text (host_tools.studies.demo) and the collision run it saves."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from host_tools.studies.scenarios import HELD_S, MOTION_SHARE, PUSH_N, PUSH_TRIES

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


def _fitted(loop: Loopback) -> list[str]:
    """The motion and push fitted to the limits (host_tools.studies.scenarios.fit_to_limits), and
    the samples with tau_cmd at the limit."""
    f = loop.fit
    share = f.motion_peak / f.tau_max
    j = int(np.argmax(share))
    load = (
        f"peak |tau| of the motion {share[j]:.2f} x the torque limit (joint {j + 1}), <= {MOTION_SHARE:g}"
        if np.isfinite(f.tau_max).any()
        else "no torque limits in the description"
    )
    centre = "the middle" if f.motion.centre is None else _values(f.motion.centre) + " rad"

    def sat(counts: np.ndarray) -> str:
        joints = ", ".join(f"joint {i + 1}: {int(c)}" for i, c in enumerate(counts) if c)
        return f"{int(counts.sum())}" + (f" ({joints})" if joints else "")

    return [
        f"      fitted to the description's limits: motion at {f.motion.speed:.2g} x the velocity and "
        f"acceleration limits, {f.motion.span:.2g} of each range around {centre} ({load});",
        f"      push {f.force:.3g} N ({PUSH_N:g} N, halved while tau_cmd stays at a limit from {HELD_S:g} s after "
        f"the push: {PUSH_TRIES} runs at most)",
        f"      samples with |tau_cmd| at the torque limit: {sat(loop.saturated_free)} contact-free, "
        f"{sat(loop.saturated_hit)} with the push and the stop ({sat(loop.saturated_held)} from {HELD_S:g} s "
        "after the push)",
    ]


def collided(loop: Loopback, saved: tuple[Path, Path], spec: str) -> str:
    """Step 4 (``spec``: the robot as `manipgen target run` takes it, name or path and chain flags)."""
    r = loop.result
    log, config = saved
    return "\n".join(
        [
            f"[4/5] closed loop in C ({r.hit.log.robot}: {r.free.log.time[-1]:.0f} s at "
            f"{1 / r.free.log.sample_period:.0f} Hz, RK4 plant, kalman + momentum observer + computed torque), "
            f"{loop.seconds:.1f} s:",
            *_fitted(loop),
            "      thresholds from a contact-free run of another motion (1.5 x max |r| + 0.2 N m): "
            f"{_values(r.thresholds)}",
            f"      tip force of {loop.fit.force:.3g} N (for 0.3 s) from t = {r.onset_s:.2f} s: "
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
