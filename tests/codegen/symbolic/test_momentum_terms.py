"""The momentum observer's recursions (Dynamics.momentum_terms: p = M qd and dT/dq = C' qd;
Dynamics.gravity from composite first moments) against independent formulas evaluated exactly:
the kinetic energy's gradients (CasADi's reverse mode on T) and the Newton-Euler recursion at
qd = qdd = 0, both replayed in mpmath (codegen.model.exact), on revolute and prismatic chains with
random parameters.

Tolerance: the recursions evaluate each output along a path of at most ~200 double operations
for a 7-joint arm (velocities out, momenta in, one cross product), each rounding by at most
eps = 2.2e-16 of a partial result no larger than the vector's largest term times a factor of order
one; 200 eps = 4.4e-14 of that largest term, so 1e-13 of it. The measured worst is 2e-15."""

from __future__ import annotations

import casadi as cs
import numpy as np
import pytest

from codegen.model import exact
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from tests.tooling import ROOT

TOL = 1e-13  # of the vector's largest term (module docstring)
CHAINS = [
    "kuka_iiwa14",  # 7 revolute joints, rotor inertia
    "planar2",
    str(ROOT / "tests" / "peers" / "data" / "mixed_mdh.yaml"),  # prismatic, revolute, prismatic, revolute
    str(ROOT / "tests" / "corpus" / "ok" / "hostile_names.yaml"),  # ends in a prismatic joint
]


@pytest.mark.parametrize("name", CHAINS, ids=lambda s: s.rsplit("/", 1)[-1])
def test_recursions_equal_the_energy_gradients_and_newton_euler(name: str) -> None:
    robot = load_robot(name)
    dyn = Dynamics(robot)
    n, pi = dyn.n, dyn.pi
    energy = dyn.kinetic_energy(pi)
    reference = exact.MpFunction(
        cs.Function(
            "reference",
            [dyn.q, dyn.qd, pi],
            [
                cs.gradient(energy, dyn.qd),
                cs.gradient(energy, dyn.q),
                dyn.rigid_body_torque(cs.SX.zeros(n), cs.SX.zeros(n), pi),
            ],
        )
    )
    momentum, dtdq = dyn.momentum_terms(pi)
    ours = cs.Function("ours", [dyn.q, dyn.qd, pi], [momentum, dtdq, dyn.gravity(pi)])
    rng = np.random.default_rng(3)
    nominal = np.array(robot.standard_parameters())
    worst = [0.0, 0.0, 0.0]
    for _ in range(8):
        q, qd = rng.uniform(-np.pi, np.pi, n), rng.normal(0.0, 1.5, n)
        params = nominal * rng.uniform(0.5, 1.5, nominal.size)  # any parameters: the formulas are linear in them
        for k, (got, want) in enumerate(zip(ours(q, qd, params), reference(q, qd, params))):
            w = np.array([float(x) for x in want])
            err = np.max(np.abs(np.array(got).ravel() - w)) / np.max(np.abs(w))
            worst[k] = max(worst[k], float(err))
    assert max(worst) < TOL, f"{name}: worst relative errors p {worst[0]:.2e}, dT/dq {worst[1]:.2e}, g {worst[2]:.2e}"
