"""The momentum form's regressors (codegen.blocks.adaptive.momentum_regressors, issue #47): CasADi's
reverse mode through the momentum recursions (Dynamics.momentum_terms, gravity, friction) against
the expression they replaced, the Jacobians of the kinetic energy's gradients (p = dT/dqd,
beta = g - dT/dq + friction), evaluated exactly in mpmath (codegen.model.exact), on a revolute and
a prismatic chain at random states; the mixed rows (p / T and beta / 2, what integral_predict asks
for) against the same reference scaled; and Y_b (K pi) against M(pi) qd from the composite rigid
body algorithm, an independent formula, with random parameters.

Tolerance: as tests/codegen/symbolic/test_momentum_terms.py's for p and dT/dq themselves. Each
regressor entry is the reverse sweep's adjoint (a joint's axis, or V_j x S_j, carried out over at
most n = 7 link transforms of a few operations each) dotted with a link's velocity terms and mapped
through the link frame's constant 10 x 10 transform: a path of at most ~200 double operations, each
rounding by at most eps = 2.2e-16 of a partial result no larger than the matrix's largest entry
times a factor of order one; 200 eps = 4.4e-14 of that largest entry, so 1e-13 of it. Scaling by the
constants 1 / T and 1 / 2 adds one rounding. A wrong sign, a missing link or a wrong column moves
entries by their own size."""

from __future__ import annotations

import casadi as cs
import numpy as np
import pytest

from codegen.blocks.adaptive import momentum_regressors
from codegen.blocks.context import Ctx
from codegen.model import exact
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from host_tools.bindings.rt import rt_options
from tests.tooling import ROOT

TOL = 1e-13  # of the matrix's largest entry (module docstring)
CHAINS = [
    "kuka_iiwa14",  # 7 revolute joints, rotor inertia, the arm
    str(ROOT / "tests" / "peers" / "data" / "mixed_mdh.yaml"),  # prismatic, revolute, prismatic, revolute
]


def _rel(got: cs.DM | np.ndarray, want: np.ndarray | cs.DM) -> float:
    g, w = np.array(got, dtype=float).ravel(), np.array(want, dtype=float).ravel()
    return float(np.max(np.abs(g - w)) / np.max(np.abs(w)))


@pytest.mark.parametrize("name", CHAINS, ids=lambda s: s.rsplit("/", 1)[-1])
def test_recursive_regressors_equal_the_energy_gradients(name: str) -> None:
    robot = load_robot(name)
    dyn = Dynamics(robot)
    ctx = Ctx(robot, dyn, rt_options("kalman", "adaptive_momentum", "none", False))
    cols = list(ctx.base.columns)
    energy = dyn.kinetic_energy(dyn.pi)
    beta = dyn.gravity(dyn.pi) - cs.gradient(energy, dyn.q) + dyn.friction(dyn.qd, dyn.pi)
    old = cs.Function(
        "old",
        [dyn.q, dyn.qd],
        [cs.jacobian(cs.gradient(energy, dyn.qd), dyn.pi)[:, cols], cs.jacobian(beta, dyn.pi)[:, cols]],
    )
    reference = exact.MpFunction(old)
    ts = ctx.ts
    ours = momentum_regressors(ctx)
    mixed = momentum_regressors(ctx, None, ((1 / ts, 0.0), (0.0, 0.5)))
    crba = cs.Function("crba", [dyn.q, dyn.qd, dyn.pi], [dyn.mass_matrix(dyn.pi) @ dyn.qd])
    rng = np.random.default_rng(5)
    nominal = np.array(robot.standard_parameters())
    k = np.array(ctx.base.k)
    worst = {"Y_p": 0.0, "Y_beta": 0.0, "Y_p / T": 0.0, "Y_beta / 2": 0.0, "Y_p K pi": 0.0}
    for _ in range(6):
        q, qd = rng.uniform(-np.pi, np.pi, dyn.n), rng.normal(0.0, 1.5, dyn.n)
        want = [np.array(m.tolist(), dtype=float) for m in reference(q, qd)]
        yp, yb = ours(q, qd)
        worst["Y_p"] = max(worst["Y_p"], _rel(yp, want[0]))
        worst["Y_beta"] = max(worst["Y_beta"], _rel(yb, want[1]))
        yp_t, yb_2 = mixed(q, qd)
        worst["Y_p / T"] = max(worst["Y_p / T"], _rel(yp_t, want[0] / ts))
        worst["Y_beta / 2"] = max(worst["Y_beta / 2"], _rel(yb_2, want[1] / 2))
        params = nominal * rng.uniform(0.5, 1.5, nominal.size)
        worst["Y_p K pi"] = max(worst["Y_p K pi"], _rel(np.array(yp) @ (k @ params), crba(q, qd, params)))
    assert max(worst.values()) < TOL, f"{name}: " + ", ".join(f"{key} {v:.2e}" for key, v in worst.items())
