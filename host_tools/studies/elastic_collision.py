"""The collision test of Kirchhoff (2011) §5.3 on an elastic arm: the tau_el momentum observer (eq. 5.10)
detects a Hunt-Crossley contact and the admittance reaction (eq. 5.1) moves the arm out of it.

Kirchhoff (2011): the arm starts vertical, joint 2 is driven to 120 degrees; an obstacle is placed so that
the tip touches it at the height of l1 (the arm horizontal, its q2 = 90 degrees); Hunt-Crossley
contact n = 1, k = 10 kN/m, alpha = 0.04 (penetration x = l1 - e_z); threshold 0.1 N m; reaction
q_d = q_col + int K_R r, K_R = 0.03 I. Fig. 5.5: without reaction the residual rises until the
motor torque saturates; with it the residual falls back after the detection (about a second).

Our joint 2 is 0 with the arm horizontal (standard DH of the bundled biorob4), so the same motion is
q2 from +90 degrees (vertical) by 120 degrees to -30 degrees; the obstacle is the plane z = l1
(the tip's height with q2 = 0), normal +z. Each joint's threshold is the same 0.1 N m (Kirchhoff 2011
compares the norm; per joint isolates too). The motion without the obstacle shows how far the
residual stays below it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from codegen.blocks import momentum
from codegen.model.robot import Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import Contact, Run, simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory
from host_tools.studies.paper_setups import ELASTIC_COLLISION


@dataclass(frozen=True)
class ScenarioSettings:
    joint: int = 2  # 1-based: the joint that moves
    start: float = np.pi / 2  # rad: vertical
    travel: float = -2 * np.pi / 3  # rad: Kirchhoff's 120 degrees, towards the obstacle
    rest: float = 0.5  # s still before the move
    duration: float = 2.0  # s of the move (quintic, rest to rest)
    after: float = 3.0  # s after the move
    threshold: float = 0.1  # N m (Kirchhoff 2011)
    k_r: float = 0.03  # rad/s per N m (Kirchhoff's K_R)


def trajectory(rt: Realtime, s: ScenarioSettings) -> Trajectory:
    """Rest, a rest-to-rest quintic of joint ``s.joint`` over ``s.travel``, rest."""
    ts = rt.sample_period
    t = np.arange(int(round((s.rest + s.duration + s.after) / ts))) * ts
    u = np.clip((t - s.rest) / s.duration, 0.0, 1.0)
    moving = (t > s.rest) & (t < s.rest + s.duration)
    q, qd, qdd = (np.zeros((len(t), rt.dof)) for _ in range(3))
    j = s.joint - 1
    q[:, j] = s.start + s.travel * (10 * u**3 - 15 * u**4 + 6 * u**5)
    qd[:, j] = s.travel * (30 * u**2 - 60 * u**3 + 30 * u**4) / s.duration * moving
    qdd[:, j] = s.travel * (60 * u - 180 * u**2 + 120 * u**3) / s.duration**2 * moving
    return Trajectory("Kirchhoff (2011) §5.3", t, q, qd, qdd)


def obstacle(robot: Robot) -> Contact:
    """The plane z = l1 (the tip's height with the moving joint at 0: the arm horizontal), normal +z."""
    dyn = load(robot)
    q = np.zeros(dyn.manifest["dof"])
    l1 = float(np.asarray(dyn.tip_pose(q)).reshape(4, 4)[2, 3])
    return Contact(point=(0.0, 0.0, l1), normal=(0.0, 0.0, 1.0))


def _run(rt: Realtime, traj: Trajectory, contact: Contact | None, reaction: int, s: ScenarioSettings) -> Run:
    rt.config["det.threshold"] = [s.threshold] * rt.dof
    rt.config["det.reaction"] = reaction
    rt.config["det.k_r"] = [s.k_r] * rt.dof
    return simulate(rt, traj, contact=contact)


# the pipeline's (estimator, observer, controller): the description's velocity estimator (the
# bundled biorob4's: EWLR, Kirchhoff's weighted linear regression), the tau_el momentum observer
CHOICES = (None, momentum.SPEC.name, ELASTIC_COLLISION.controller)


def scenario(robot: Robot, s: ScenarioSettings = ScenarioSettings()) -> dict[str, Any]:
    """Three runs on ``robot`` in Kirchhoff's set-up (paper_setups.ELASTIC_COLLISION): without the
    obstacle, into it without reaction, into it with the reflex. Returns the figures (JSON-ready)
    and the traces (``traces``: numpy, for the plot)."""
    if not robot.elastic:
        raise ValueError(f"{robot.name}: the scenario needs an elastic arm (the tau_el momentum observer)")
    rt = load_rt(robot, *CHOICES)
    ELASTIC_COLLISION.apply(rt.config, robot)
    if not 1 <= s.joint <= rt.dof:
        raise ValueError(f"{robot.name}: the scenario moves joint {s.joint}; the arm has joints 1..{rt.dof}")
    if not (s.threshold > 0 and s.k_r >= 0 and np.isfinite(s.threshold) and np.isfinite(s.k_r)):
        raise ValueError(f"the threshold must be positive and K_R >= 0, got {s.threshold:g}, {s.k_r:g}")
    traj = trajectory(rt, s)
    wall = obstacle(robot)
    ts = rt.sample_period
    free = _run(rt, traj, None, 0, s)
    skip = int(round(0.1 / ts))  # the estimators' start
    out: dict[str, Any] = {
        "settings": asdict(s),
        "obstacle_height_m": wall.point[2],
        "free_max_abs_r": np.abs(free.out["r"][skip:]).max(axis=0).tolist(),
        "free_false_alarm": bool(free.out["collision"][skip:].any()),
    }
    traces: dict[str, Any] = {"time": traj.time, "free_r": free.out["r"]}
    j = s.joint - 1
    for name, reaction in (("no_reaction", 0), ("reaction", 2)):
        run = _run(rt, traj, wall, reaction, s)
        tau_c = run.log.extra["tau_ext_true"]
        touching = np.flatnonzero(np.abs(tau_c).max(axis=1) > 0)
        fired = np.flatnonzero(run.out["collision"])
        k0 = int(touching[0]) if len(touching) else -1
        kd = int(fired[0]) if len(fired) else -1
        r = run.out["r"]
        one_s = slice(kd, kd + int(round(1.0 / ts))) if kd >= 0 else slice(0, 0)
        # the last sample of the run with some joint's |r| above its threshold: how long after the
        # detection the contact's torque took to dissipate (Kirchhoff 2011 §5.3: about one second)
        above = np.flatnonzero(np.any(np.abs(r) > s.threshold, axis=1)) if kd >= 0 else np.zeros(0, int)
        out[name] = {
            "contact_sample": k0,
            "contact_s": k0 * ts if k0 >= 0 else None,
            "detection_sample": kd,
            "above_threshold_s": (int(above[-1]) - kd) * ts if len(above) else None,
            "delay_ms": (kd - k0) * ts * 1e3 if kd >= 0 and k0 >= 0 else None,
            "link": int(run.out["link"][-1]),
            "max_contact_torque": float(np.abs(tau_c[:, j]).max()),
            "max_abs_r": float(np.abs(r[:, j]).max()),
            "r_1s_after_detection": float(abs(r[one_s][-1, j])) if kd >= 0 else None,
            "r_end": float(r[-1, j]),  # signed: r estimates the contact torque
            "contact_torque_end": float(tau_c[-1, j]),
            "motor_torque_end": float(abs(run.log.tau[-1, j])),
            "in_contact_at_end": bool(np.abs(tau_c[-1]).max() > 0),
        }
        traces[name] = {"r": r, "tau_contact": tau_c, "collision": run.out["collision"], "q": run.log.extra["q_true"]}
    out["traces"] = traces
    return out
