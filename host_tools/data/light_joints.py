"""Joints that a nearly singular mass matrix makes track badly (issue 45): a light wrist without
rotor inertia (the Kinova Jaco2's URDF) makes the arm's own loop look off its trajectory to the input
checks (host_tools.data.checks), on a noise-free recording too. ``light_joints(robot)`` finds such
joints from the description alone; ``warn_light_joints(robot)`` says so once, naming the joints, the
figures and the fix (the drives' rotor inertia, ``IA``, in an overlay).

The model (an estimate of one mechanism, not a simulation): the computed-torque loop
(codegen.blocks.controllers, Kp = CT_KP) computes the gravity torque g at the encoders' reading,
which is off by up to one count d_k per joint; the arm answers the torque error (dg/dq) d with the
acceleration M(q)^-1 (dg/dq) d, which the loop holds at a position error of that over Kp. On joint
j, in its own counts (an upper bound over the signs of the count errors):

    e_j(q) = sum_k |(M(q)^-1 dg/dq(q))_jk| d_k / (Kp d_j).

M^-1 is large along M's light direction, and where that direction is nearly singular (a wrist whose
two axes line up, with no rotor inertia to weigh it) the heavy links' gravity moves it: e_j peaks
there and is small elsewhere. The off_trajectory check leaves a joint alone up to OFF_FACTOR x its
median error over a run and at least OFF_FLOOR_COUNTS counts (off_trajectory_bound); a run visits
many configurations, so a joint is named when over configurations drawn within its limits
max e_j > off_trajectory_bound(median e_j, 1 count). Gravity-free descriptions have e = 0: this
mechanism is then absent, and nothing is said.

Checked against what was recorded: the Jaco2 (example-robot-data, tip j2s6s200_end_effector): e
peaks at 76 counts on joints 4 and 6 against bounds of 35 and 30; its recorded excitation run was
flagged on exactly those joints, at 0.014 rad (146 counts), the same order. With IA = 0.01 kg m^2 on
joints 4-6 (an overlay): 1.8 counts, nothing said, and the same recording passes the checks. cond(M)
alone does not tell them apart: the bundled iiwa's reaches 2.1e4 (the Jaco2's 1.4e4) and its e stays
at 0.58 of the bound at most (every bundled robot at most that; TALOS's left arm 0.85, the UR10's
URDF 0.09 with cond(M) up to 2.5e4).
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs
import numpy as np

from codegen.blocks.controllers import CT_KP
from codegen.blocks.encoder import link_counts_per_turn
from codegen.errors import warn
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from host_tools.data.checks import off_trajectory_bound

# configurations drawn within the joints' limits (a turn where a joint has none), in order from a
# fixed seed: the same answer every time. 256 draws put the Jaco2's peak at 76 counts (71-85 from
# other seeds, 90-96 over 2000 draws) against bounds of 28-36 whatever the draw: a factor 2 that the
# draw does not decide; 0.15 s for a 7-joint arm
DRAWS = 256
SEED = 0


@dataclass(frozen=True)
class LightJoint:
    joint: str  # its name in the description
    peak: float  # max e_j over the draws, counts
    bound: float  # off_trajectory_bound(median e_j, 1 count), counts
    cond: float  # cond(M) at the draw of the peak
    rotor_inertia: float  # the joint's IA, kg m^2 (kg)


def tracking_per_count(robot: Robot, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e, cond): e (draws, n), each joint's tracking error in its own counts per count of every
    joint's reading (the module docstring), and cond(M) (draws,) at the configurations q (draws, n).
    A singular M (a massless joint) gives e = inf there."""
    dyn = Dynamics(robot)
    pi = cs.SX(cs.DM(robot.standard_parameters()))
    g = dyn.gravity(pi)
    f = cs.Function("m_dg", [dyn.q], [dyn.mass_matrix(pi), cs.jacobian(g, dyn.q)]).map(len(q))
    m_all, dg_all = (np.array(v) for v in f(q.T))
    n = robot.dof
    step = 2.0 * np.pi / np.asarray(link_counts_per_turn(robot), float)  # rad (m) per count
    e, cond = np.full((len(q), n), np.inf), np.full(len(q), np.inf)
    for k in range(len(q)):
        m, dg = m_all[:, k * n : (k + 1) * n], dg_all[:, k * n : (k + 1) * n]
        lam = np.linalg.eigvalsh(m)
        if lam[0] <= 0.0:
            continue
        cond[k] = lam[-1] / lam[0]
        e[k] = np.abs(np.linalg.solve(m, dg)) @ step / (CT_KP * step)
    return e, cond


def light_joints(robot: Robot) -> list[LightJoint]:
    """The joints whose e peaks beyond what the off_trajectory check leaves alone (module docstring)."""
    lo = np.array([j.limits.q_min if np.isfinite(j.limits.q_min) else -np.pi for j in robot.joints])
    hi = np.array([j.limits.q_max if np.isfinite(j.limits.q_max) else np.pi for j in robot.joints])
    q = np.random.default_rng(SEED).uniform(lo, hi, (DRAWS, robot.dof))
    e, cond = tracking_per_count(robot, q)
    out = []
    for j, joint in enumerate(robot.joints):
        bound = off_trajectory_bound(float(np.median(e[:, j])), 1.0)
        k = int(np.argmax(e[:, j]))
        if e[k, j] > bound:
            out.append(LightJoint(joint.name, float(e[k, j]), bound, float(cond[k]), joint.IA))
    return out


def warn_light_joints(robot: Robot) -> list[LightJoint]:
    """One notice (codegen.errors.warn) naming the light joints, with the figures and the fix."""
    found = light_joints(robot)
    if found:
        names = ", ".join(f.joint for f in found)
        peaks = ", ".join(f"{f.peak:.3g}" for f in found)
        bounds = ", ".join(f"{f.bound:.3g}" for f in found)
        without = [f.joint for f in found if f.rotor_inertia == 0.0]
        fix = (
            f"{', '.join(without)} have no rotor inertia: give the drives' reflected rotor inertia (IA, "
            "kg m^2, 'armature') in an overlay (joints: NAME: {IA: ...}; README: overlays)"
            if without
            else "check their rotor inertia IA and the links' masses"
        )
        warn(
            robot.file,
            f"joints {names}",
            f"the mass matrix is nearly singular in some configurations (cond(M) {max(f.cond for f in found):.2g} "
            f"there): a one-count error of the encoders moves these joints by up to {peaks} counts through "
            f"the gravity torque in the computed-torque loop (Kp {CT_KP:g}/s^2), beyond the {bounds} counts "
            f"the input checks accept as tracking, so the arm's own runs look off-trajectory; {fix}",
        )
    return found
