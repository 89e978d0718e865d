"""The loopback's Hunt-Crossley obstacle (Kirchhoff 2011 eq. 5.19, §5.3): planar2's tip swings down onto a
horizontal plane. The contact torque the C applies equals eq. 5.19 written here in numpy on the
recorded states; there is no tensile force; the momentum observer flags the impact, and the reflex
reaction (Kirchhoff 2011 §5.4) relieves the contact that the stop reaction keeps pressing."""

from __future__ import annotations

import numpy as np

from host_tools import load
from host_tools.bindings.loopback import Contact, simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.trajectories import Trajectory
from host_tools.studies.thresholds import design_thresholds

PLANE_Y = 0.5  # m: the tip (1.8 m from joint 1) reaches it at q1 = asin(0.5 / 1.8)


def _swing(ts: float) -> Trajectory:
    t = np.arange(0.0, 3.0 + ts / 2, ts)
    s = np.clip(t / 2.0, 0, 1)
    q1 = 1.0 - 1.2 * (10 * s**3 - 15 * s**4 + 6 * s**5)
    qd1 = np.where(t < 2.0, -1.2 * (30 * s**2 - 60 * s**3 + 30 * s**4) / 2.0, 0.0)
    qdd1 = np.where(t < 2.0, -1.2 * (60 * s - 180 * s**2 + 120 * s**3) / 4.0, 0.0)
    z = np.zeros_like(t)
    return Trajectory("swing", t, np.column_stack([q1, z]), np.column_stack([qd1, z]), np.column_stack([qdd1, z]))


def _run(reaction: int):
    rt = load_rt("planar2", estimator="kalman", observer="momentum", controller="computed_torque")
    traj = _swing(rt.sample_period)
    free = simulate(rt, traj).log  # the same swing without the obstacle
    rt.config["det.threshold"] = design_thresholds(rt, free, margin=1.5, skip=0.0, floor=0.2, static=True).threshold
    rt.config["det.reaction"] = reaction
    contact = Contact(point=(0.0, PLANE_Y, 0.0), normal=(0.0, 1.0, 0.0))
    return simulate(rt, traj, contact=contact), contact


def test_contact_torque_is_hunt_crossley() -> None:
    run, c = _run(reaction=0)
    dyn = load("planar2")
    q, qd = run.log.extra["q_true"], run.log.extra["qd_true"]
    n = np.array(c.normal)
    expected = np.zeros_like(q)
    force = np.zeros(len(q))
    for k in range(len(q)):
        p = dyn.tip_pose(q[k])[:3, 3]
        jv = dyn.tip_jacobian(q[k])[:3]
        x = n @ (np.array(c.point) - p)
        xd = -n @ (jv @ qd[k])
        if x > 0:
            force[k] = max(0.0, x**c.exponent * (c.stiffness + c.damping * xd))
        expected[k] = jv.T @ n * force[k]
    got = run.log.extra["tau_ext_true"]
    assert force.max() > 50.0  # N: the tip did hit the plane
    assert np.abs(got - expected).max() <= 1e-9 * np.abs(expected).max()
    assert np.all(force >= 0)  # no tensile force


def test_impact_is_detected_and_the_reflex_relieves_it() -> None:
    stop, _ = _run(reaction=1)
    reflex, _ = _run(reaction=2)
    first = int(np.flatnonzero(np.abs(stop.log.extra["tau_ext_true"]).max(axis=1) > 0)[0])
    for run in (stop, reflex):
        k = np.flatnonzero(run.out["collision"])
        assert k.size and first <= k[0] <= first + 50  # within 50 ms of the first touch
        assert run.out["link"][k[0]] >= 1
    # after detection, the reflex drives the arm out of the contact (Kirchhoff 2011 Fig. 5.5), the stop holds it
    late = slice(first + 500, None)
    assert (
        np.abs(reflex.log.extra["tau_ext_true"][late]).max() < 0.2 * np.abs(stop.log.extra["tau_ext_true"][late]).max()
    )
