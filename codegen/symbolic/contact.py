"""Hunt-Crossley contact of the tip with a plane obstacle (Kirchhoff 2011 eq. 5.19), for the loopback's
simulated robot: penetration x = n . (p0 - p_tip) (n the obstacle's outward unit normal, p0 a point
of its surface), its rate xd = -n . v_tip, the force f = max(0, x^e (k + lambda xd)) for x > 0 (no
tensile force; continuous at impact and separation) pushing the tip along n, and the joint torque
J_v^T n f it causes. Kirchhoff (2011): e = 1, k = 10 kN/m, lambda = 3/2 alpha k with alpha = 0.04 s/m
(eq. 5.21: restitution 1 - alpha v_i)."""

from __future__ import annotations

import casadi as cs

from codegen.symbolic.dynamics import Dynamics


def contact_function(dyn: Dynamics) -> cs.Function:
    """(q, qd, point[3], normal[3], k, lam, expo) -> (tau[n], force, depth)."""
    q, qd = dyn.q, dyn.qd
    point, normal = cs.SX.sym("point", 3), cs.SX.sym("normal", 3)
    k, lam, expo = cs.SX.sym("k"), cs.SX.sym("lam"), cs.SX.sym("expo")
    p = dyn.tip_pose[:3, 3]
    jv = dyn.tip_jacobian[:3, :]
    depth = cs.dot(normal, point - p)
    rate = -cs.dot(normal, cs.mtimes(jv, qd))
    x = cs.fmax(depth, 0)
    force = cs.fmax(0, x**expo * (k + lam * rate))
    tau = cs.mtimes(jv.T, normal) * force
    return cs.Function(
        "contact",
        [q, qd, point, normal, k, lam, expo],
        [tau, force, depth],
        ["q", "qd", "point", "normal", "k", "lam", "expo"],
        ["tau", "force", "depth"],
    )
