"""The parameterised form (``params=`` standard or base vector) of every dynamics function.

- With the robot's own parameters it equals the constant-parameter form.
- With other parameters (each link's mass, centre of mass and inertia about the centre of mass
  perturbed by about +-10 % in Pinocchio, physically consistent; declared IA / FV / FC / FO
  perturbed too) it equals Pinocchio built with those parameters. The standard vector handed to
  the C is made from the very same pinocchio.Inertia objects (moved to the user's link frames).
"""

from __future__ import annotations

import numpy as np
import pytest

from .peer_cases import (
    DOUBLE_TOL,
    States,
    case_params,
    check_all,
    compare,
    compiled,
    own_parameters,
    perturbed_parameters,
    pin_model,
    random_states,
)

N_OWN_STATES = 300
N_PERTURBATIONS = 4
N_STATES_PER_PERTURBATION = 250

pytestmark = pytest.mark.parametrize("case", case_params())


def separable_only_as_sum(dyn) -> bool:
    """True when a base parameter regroups an offset FO with any other parameter: the constant
    column it shares (a prismatic joint's gravity, M and IA) fixes only gravity + friction."""
    names = dyn.standard_parameter_names
    return any(
        any(names[j].startswith("FO") for j in np.flatnonzero(row)) and np.count_nonzero(row) > 1
        for row in dyn.regrouping
    )


def test_parameterised_form_with_own_parameters_equals_constant_form(case, record_comparison):
    dyn = compiled(case.id)
    s = random_states(dyn.dof, N_OWN_STATES, case.seed + 3)
    tau = np.array([dyn.rnea(*x) for x in zip(s.q, s.qd, s.qdd)])
    calls = {
        "rnea": lambda q, qd, qdd, t, p: dyn.rnea(q, qd, qdd, params=p),
        "mass_matrix": lambda q, qd, qdd, t, p: dyn.mass_matrix(q, params=p),
        "coriolis_matrix": lambda q, qd, qdd, t, p: dyn.coriolis_matrix(q, qd, params=p),
        "coriolis": lambda q, qd, qdd, t, p: dyn.coriolis(q, qd, params=p),
        "gravity": lambda q, qd, qdd, t, p: dyn.gravity(q, params=p),
        "friction": lambda q, qd, qdd, t, p: dyn.friction(qd, params=p),
        # a base vector fixes only what the regressor sees: a constant gravity torque (prismatic
        # joint along a fixed axis) and an offset FO share one column, so only their sum is fixed
        "gravity + friction": lambda q, qd, qdd, t, p: dyn.gravity(q, params=p) + dyn.friction(qd, params=p),
        "nonlinear_effects": lambda q, qd, qdd, t, p: dyn.nonlinear_effects(q, qd, params=p),
        "forward_dynamics": lambda q, qd, qdd, t, p: dyn.forward_dynamics(q, qd, t, params=p),
    }
    comparisons = []
    for fname, call in calls.items():
        const = np.array([call(*x, None) for x in zip(s.q, s.qd, s.qdd, tau)])
        for label, p in (("standard", dyn.standard_parameters), ("base", dyn.base_parameters)):
            if label == "base" and fname in ("gravity", "friction") and separable_only_as_sum(dyn):
                continue
            par = np.array([call(*x, p) for x in zip(s.q, s.qd, s.qdd, tau)])
            comparisons.append(
                compare(case.id, f"{fname}(params=own {label}) vs constant form", par, const, DOUBLE_TOL, s)
            )
    check_all(comparisons, record_comparison)


def test_parameterised_form_matches_perturbed_pinocchio(case, record_comparison):
    dyn, base_model = compiled(case.id), pin_model(case.id)
    own = own_parameters(case, base_model)
    declared = case.declared_joint_parameters()
    rng = np.random.default_rng(case.seed + 4)
    results: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    def add(name: str, ours, ref) -> None:
        results.setdefault(name, []).append((np.asarray(ours), np.asarray(ref)))

    all_states = []
    for k in range(N_PERTURBATIONS):
        phys = perturbed_parameters(own, declared, rng)
        pi = phys.standard_vector(dyn.standard_parameter_names)
        assert np.linalg.norm(pi - dyn.standard_parameters) > 1e-3 * np.linalg.norm(pi)
        beta = dyn.regrouping @ pi
        ref = case.reference(phys.pin_model(case, base_model), phys.friction)
        s = random_states(dyn.dof, N_STATES_PER_PERTURBATION, case.seed + 10 + k)
        all_states.append(s)
        for q, qd, qdd in zip(s.q, s.qd, s.qdd):
            tau_ref = ref.rnea(q, qd, qdd)
            add("rnea(params=standard)", dyn.rnea(q, qd, qdd, params=pi), tau_ref)
            add("rnea(params=base = regrouping . standard)", dyn.rnea(q, qd, qdd, params=beta), tau_ref)
            add("regressor @ (regrouping . standard)", dyn.regressor(q, qd, qdd) @ beta, tau_ref)
            add(
                "regressor @ beta vs computeJointTorqueRegressor . pi",
                dyn.regressor(q, qd, qdd) @ beta,
                ref.regressor_torque(q, qd, qdd),
            )
            add("mass_matrix(params) vs crba", dyn.mass_matrix(q, params=pi), ref.crba(q))
            c_ref = ref.coriolis(q, qd)
            add("coriolis(params)", dyn.coriolis(q, qd, params=pi), c_ref)
            add("coriolis_matrix(params) @ qd", dyn.coriolis_matrix(q, qd, params=pi) @ qd, c_ref)
            add("gravity(params)", dyn.gravity(q, params=pi), ref.gravity(q))
            add("friction(params)", dyn.friction(qd, params=pi), ref.friction(qd))
            add("nonlinear_effects(params)", dyn.nonlinear_effects(q, qd, params=pi), ref.nonlinear_effects(q, qd))
            add(
                "forward_dynamics(params) vs aba",
                dyn.forward_dynamics(q, qd, tau_ref, params=pi),
                ref.aba(q, qd, tau_ref),
            )

    states = States(*(np.vstack([getattr(s, a) for s in all_states]) for a in ("q", "qd", "qdd")))
    comparisons = []
    for name, pairs in results.items():
        ours = np.array([a for a, _ in pairs])
        ref = np.array([b for _, b in pairs])
        comparisons.append(compare(case.id, f"perturbed: {name}", ours, ref, DOUBLE_TOL, states))
    check_all(comparisons, record_comparison)
