"""The physical fit's per-equation weights (host_tools.identification.physical.retrieve ``weights``,
c1c0bfa: identify passes the base fit's per-joint WLS weights): they weigh the objective, the
objective reported stays the unweighted norm in N m, and a weights array that is not one per
equation is refused in one error (a per-joint array broadcast into numpy's shape error; one value
was taken silently)."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.identification.least_squares import Model, model
from host_tools.identification.physical import PhysicalSettings, retrieve

NOISE = np.array([0.01, 1.0])  # N m per joint: joint 1 precise, joint 2 noisy


def _observation() -> tuple[Model, np.ndarray, np.ndarray, np.ndarray]:
    """planar2's stacked base regressor at 400 random samples, the description's torque plus
    Gaussian noise of NOISE per joint, and the least-squares values of every base parameter."""
    m = model(load_robot("planar2"))
    rng = np.random.default_rng(5)
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (400, 2)) for _ in range(3))
    y = m.stacked(q, qd, qdd)
    tau = y @ m.true_base() + (rng.normal(size=(400, 2)) * NOISE).reshape(-1)
    beta, *_ = np.linalg.lstsq(y, tau, rcond=None)
    return m, y, tau, beta


def test_the_weights_weigh_the_objective_and_the_objective_reported_is_in_newton_metres() -> None:
    """Unweighted, the fit trades the precise joint 1 for the noisy joint 2 (RMS 0.063 N m against its
    noise 0.01); with the weights 1 / noise^2, joint 1's RMS is its noise. Either way the reported
    objective is |tau - Y K pi(mu)|, N m (no extra columns here: ``extra`` None)."""
    m, y, tau, beta = _observation()
    settings = PhysicalSettings(starts=1, agreeing=1)
    every = list(range(len(m.names)))
    weights = np.tile(1.0 / NOISE**2, len(tau) // 2)
    rms = {}
    for key, w in (("unweighted", None), ("weighted", weights)):
        r = retrieve(m.robot, m.base.k, every, y, tau, beta, settings, weights=w)
        residual = tau - y @ (m.base.k @ r.standard)
        assert r.objective == pytest.approx(float(np.linalg.norm(residual)), rel=1e-12)
        rms[key] = np.sqrt(np.mean(residual.reshape(-1, 2) ** 2, axis=0))
    assert rms["unweighted"][0] > 3 * NOISE[0], rms
    assert rms["weighted"][0] < 1.1 * NOISE[0], rms


@pytest.mark.parametrize("shape", ["per joint", "one value", "one short"])
def test_weights_not_one_per_equation_are_refused(shape: str) -> None:
    m, y, tau, beta = _observation()
    w = {"per joint": 1.0 / NOISE**2, "one value": np.ones(1), "one short": np.ones(len(tau) - 1)}[shape]
    with pytest.raises(ValueError, match="the physical fit's weights: one per equation, 800"):
        retrieve(m.robot, m.base.k, list(range(len(m.names))), y, tau, beta, PhysicalSettings(starts=1), weights=w)


def test_the_signed_box_frees_the_friction_signs_only() -> None:
    """With friction terms beside them (``signed``), an FV or FC estimated negative may go as low as
    -(3 |estimate| + 1); a negative rotor-inertia estimate does not free IA (M(q) = ... + diag(IA)
    could lose its definiteness), and without terms every joint parameter stays >= 0."""
    from host_tools.identification.physical import bounds

    robot = load_robot("planar2")
    estimates = {"IA1": -0.5, "FV1": -0.2, "FC1": -0.5, "FC2": 0.3}
    for signed, want in ((True, {"IA1": 0.0, "FV1": -1.6, "FC1": -2.5, "FC2": 0.0}), (False, {})):
        names, lo, _ = bounds(robot, PhysicalSettings(), estimates, signed=signed)
        for name, low in zip(names, lo):
            if name[:2] in ("IA", "FV", "FC"):
                assert low == pytest.approx(want.get(name, 0.0), abs=1e-12), (signed, name, low)
