"""The model-adaptive observer adapting the essential base parameters only (issue #47,
codegen.blocks.adaptive ESSENTIAL_DOC): which parameters are kept, checked through the inverse
dynamics itself rather than the regressor the selection reads. (The generated C against the oracle,
state by state, is test_adaptive_covariance's, which runs adaptive_momentum_essential too.)

Each base parameter's score is the torque its prior-size error moves. Here it is measured by
perturbing the model: tau(pi + s_i e_col(i)) - tau(pi), rnea evaluated with the perturbed standard
parameter vector, where col(i) is the standard parameter base parameter i keeps (K[:, columns] = I,
so the perturbation moves base parameter i alone). rnea is linear in pi, so this equals the
regressor's column times s_i up to the rounding of two torques of the model's size (relative 1e-12
at most, against the 1e-9 slack below, far from the margins checked)."""

from __future__ import annotations

import casadi as cs
import numpy as np
import pytest

from codegen.blocks import adaptive
from codegen.blocks.context import Ctx
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.params import sample_states
from host_tools.bindings.rt import rt_options

FLOOR = 1e-3  # the block's default prior floor, the one the selection reads


def _ctx(name: str) -> Ctx:
    robot = load_robot(name)
    return Ctx(robot, Dynamics(robot), rt_options("kalman", "adaptive_momentum_essential", "computed_torque", False))


def _moved(ctx: Ctx) -> np.ndarray:
    """Per base parameter, the RMS over the selection's states of |tau(pi + s_i e) - tau(pi)|_2,
    s_i = max(|beta_i|, floor max |beta|) the prior's scale."""
    dyn, base = ctx.dyn, ctx.base
    pi = np.asarray(ctx.robot.standard_parameters(), float)
    assert np.array_equal(base.k[:, list(base.columns)], np.eye(base.n_base))
    beta = np.abs(base.values(pi))
    scale = np.maximum(beta, FLOOR * beta.max())
    f = cs.Function("tau", [dyn.q, dyn.qd, dyn.qdd, dyn.pi], [dyn.rnea(dyn.pi)]).map(adaptive.ESSENTIAL_SAMPLES)
    q, qd, qdd = sample_states(ctx.n, adaptive.ESSENTIAL_SAMPLES)
    nominal = np.array(f(q, qd, qdd, pi))
    moved = np.zeros(base.n_base)
    for i, c in enumerate(base.columns):
        p = pi.copy()
        p[c] += scale[i]
        d = np.array(f(q, qd, qdd, p)) - nominal
        moved[i] = np.sqrt(np.mean(np.sum(d**2, axis=0)))
    return moved


@pytest.mark.parametrize(("robot", "fraction"), [("planar2", 0.02), ("ur5", 0.05)])
def test_the_left_out_parameters_move_at_most_the_fraction(robot: str, fraction: float) -> None:
    ctx = _ctx(robot)
    kept = adaptive.essential_parameters(ctx, fraction, FLOOR)
    moved = _moved(ctx)
    left = [i for i in range(ctx.base.n_base) if i not in kept]
    assert left, "nothing left out: the test would not test the bound"
    total = float(np.sqrt(np.sum(moved**2)))
    rest = float(np.sqrt(np.sum(moved[left] ** 2)))
    assert rest <= fraction * total * (1 + 1e-9)
    # the fewest: every kept parameter moves more than every left-out one, and leaving out the
    # weakest kept one as well breaks the bound
    assert min(moved[kept]) > max(moved[left])
    weakest = min(kept, key=lambda i: moved[i])
    assert np.sqrt(rest**2 + moved[weakest] ** 2) > fraction * total * (1 - 1e-9)


def test_zero_keeps_every_parameter_and_a_bad_fraction_is_named() -> None:
    ctx = _ctx("planar2")
    assert adaptive.essential_parameters(ctx, 0.0, FLOOR) == list(range(ctx.base.n_base))
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="essential"):
            adaptive.essential_parameters(ctx, bad, FLOOR)


def test_the_observer_carries_the_kept_parameters_only() -> None:
    """adaptive_momentum_essential's state is sized for the kept parameters: dtheta_hat, the
    prior's variances and P (dense over them)."""
    ctx = _ctx("planar2")
    block = adaptive.build(ctx, lam=1e-3, integral=True, essential=adaptive.ESSENTIAL)
    kept = adaptive.essential_parameters(ctx, adaptive.ESSENTIAL, FLOOR)
    assert block.options["adapted"] == tuple(kept)
    sizes = {f.name: f.shape for f in block.state}
    assert sizes["dtheta"] == (len(kept),) and sizes["p0"] == (len(kept),)
    assert sizes["p"] == (len(kept) ** 2,)
