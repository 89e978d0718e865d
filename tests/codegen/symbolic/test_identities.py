"""Identities of the generated C (double): Y pi = rnea, M SPD, Mdot - 2C skew, fdyn inverts rnea,
parameterised form = constant form."""

from __future__ import annotations

import numpy as np
import pytest

from host_tools import load

ROBOTS = ["kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2"]


def states(dof: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.uniform(-np.pi, np.pi, dof), rng.normal(0, 1.5, dof), rng.normal(0, 4, dof)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / (np.linalg.norm(b) + 1e-300))


@pytest.mark.parametrize("name", ROBOTS)
def test_identities(name: str) -> None:
    dyn = load(name)
    worst = dict.fromkeys(
        [
            "Y_b beta = rnea",
            "M symmetric",
            "fdyn(rnea) = qdd",
            "Mdot - 2C skew",
            "param form = const form",
            "C qd = coriolis",
            "rnea = M qdd + n",
        ],
        0.0,
    )
    for q, qd, qdd in states(dyn.dof, 300, 5):
        tau = dyn.rnea(q, qd, qdd)
        m = dyn.mass_matrix(q)
        worst["Y_b beta = rnea"] = max(
            worst["Y_b beta = rnea"], rel(dyn.regressor(q, qd, qdd) @ dyn.base_parameters, tau)
        )
        worst["M symmetric"] = max(worst["M symmetric"], rel(m, m.T))
        assert np.linalg.eigvalsh(m).min() > 0, "M not positive definite"
        worst["fdyn(rnea) = qdd"] = max(worst["fdyn(rnea) = qdd"], rel(dyn.forward_dynamics(q, qd, tau), qdd))
        worst["rnea = M qdd + n"] = max(worst["rnea = M qdd + n"], rel(m @ qdd + dyn.nonlinear_effects(q, qd), tau))
        c = dyn.coriolis_matrix(q, qd)
        worst["C qd = coriolis"] = max(worst["C qd = coriolis"], rel(c @ qd, dyn.coriolis(q, qd)))
        h = 1e-6  # Mdot by a central difference along qd
        mdot = (dyn.mass_matrix(q + h * qd) - dyn.mass_matrix(q - h * qd)) / (2 * h)
        s = mdot - 2 * c
        worst["Mdot - 2C skew"] = max(worst["Mdot - 2C skew"], float(np.linalg.norm(s + s.T) / np.linalg.norm(mdot)))
        for fn, args in (
            ("rnea", (q, qd, qdd)),
            ("mass_matrix", (q,)),
            ("gravity", (q,)),
            ("coriolis", (q, qd)),
            ("friction", (qd,)),
        ):
            a = getattr(dyn, fn)(*args)
            b = getattr(dyn, fn)(*args, params=dyn.standard_parameters)
            worst["param form = const form"] = max(worst["param form = const form"], rel(b, a))
    tol = {"Mdot - 2C skew": 1e-7}
    bad = {k: v for k, v in worst.items() if v > tol.get(k, 1e-11)}
    assert not bad, f"{name}: worst relative errors {bad}"


@pytest.mark.parametrize("name", ["kuka_iiwa14", "schunk_lwa4p"])
def test_base_parameters_drive_every_function(name: str) -> None:
    """Any function evaluated with the base vector (embedded as a standard vector) gives the
    robot's dynamics: the base parameters carry all of it."""
    dyn = load(name)
    for q, qd, qdd in states(dyn.dof, 50, 6):
        assert rel(dyn.rnea(q, qd, qdd, params=dyn.base_parameters), dyn.rnea(q, qd, qdd)) < 1e-11
        assert rel(dyn.mass_matrix(q, params=dyn.base_parameters), dyn.mass_matrix(q)) < 1e-11
        assert rel(dyn.forward_dynamics(q, qd, dyn.rnea(q, qd, qdd), params=dyn.base_parameters), qdd) < 1e-9


def test_wrong_parameter_length_is_a_clear_error() -> None:
    dyn = load("planar2")
    with pytest.raises(ValueError, match=r"params must have 26 \(standard\) or 11 \(base\)"):
        dyn.rnea(np.zeros(2), np.zeros(2), np.zeros(2), params=np.zeros(5))
