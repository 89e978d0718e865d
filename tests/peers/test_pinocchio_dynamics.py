"""Generated C (double, constant-parameter form) against Pinocchio at 1000 random states per robot.

Robots: the bundled YAMLs (kuka_iiwa14, schunk_lwa4p, planar2, franka_panda once bundled) against
``pin_model_from_yaml``; the UR5 (base_link -> tool0) and the Panda (panda_link0 -> panda_link8,
fingers locked at 0) URDFs of example-robot-data through our URDF importer against
``pinocchio.buildModelFromUrdf`` (+ ``buildReducedModel``).
Rule (issue 2): ``||a - b|| <= 1e-9 ||b|| + 1e-12`` per state, b = Pinocchio (+ friction).
"""

from __future__ import annotations

import numpy as np
import pytest

from .peer_cases import (
    DOUBLE_TOL,
    PeerCase,
    case_params,
    check_all,
    compare,
    compiled,
    expected_parameter_names,
    own_parameters,
    pin_model,
    random_states,
)

N_STATES = 1000

pytestmark = pytest.mark.parametrize("case", case_params())


def setup(case: PeerCase):
    dyn = compiled(case.id)
    model = pin_model(case.id)
    assert dyn.dof == model.nv, f"{case.id}: dof {dyn.dof} but Pinocchio has nv = {model.nv}"
    ref = case.reference(model, case.friction(model))
    return dyn, ref, random_states(dyn.dof, N_STATES, case.seed)


def stack(fn, *columns) -> np.ndarray:
    return np.array([fn(*args) for args in zip(*columns)])


def test_standard_parameters_match_pinocchio(case: PeerCase, record_comparison) -> None:
    """Names in the documented order; values = Pinocchio's inertias moved to the user's link
    frames (+ IA, FV, FC, FO of the description); base = regrouping . standard."""
    dyn = compiled(case.id)
    model = pin_model(case.id)
    names = list(dyn.standard_parameter_names)
    expected = expected_parameter_names(model.nv, case.declared_joint_parameters())
    assert names == expected, f"{case.id}: standard parameter names {names} != {expected}"
    pi_ref = own_parameters(case, model).standard_vector(dyn.standard_parameter_names)
    c1 = compare(case.id, "standard_parameters", dyn.standard_parameters[None], pi_ref[None], (1e-12, 1e-15))
    c2 = compare(
        case.id,
        "base_parameters = regrouping . standard",
        dyn.base_parameters[None],
        (dyn.regrouping @ dyn.standard_parameters)[None],
        DOUBLE_TOL,
    )
    if not c1.ok:
        worst = np.argsort(-np.abs(dyn.standard_parameters - pi_ref))[:5]
        c1.message += "\n  largest differences: " + ", ".join(
            f"{names[k]}: ours {dyn.standard_parameters[k]:.9g} vs {pi_ref[k]:.9g}" for k in worst
        )
    check_all([c1, c2], record_comparison)


def test_rnea_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    dyn, ref, s = setup(case)
    ours = stack(dyn.rnea, s.q, s.qd, s.qdd)
    check_all(
        [compare(case.id, "rnea (+IA qdd + friction)", ours, stack(ref.rnea, s.q, s.qd, s.qdd), DOUBLE_TOL, s)],
        record_comparison,
    )


def test_crba_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    dyn, ref, s = setup(case)
    ours = stack(dyn.mass_matrix, s.q)
    comparisons = [
        compare(case.id, "mass_matrix vs crba (symmetrised, +IA)", ours, stack(ref.crba, s.q), DOUBLE_TOL, s),
        compare(case.id, "mass_matrix symmetry", ours, np.transpose(ours, (0, 2, 1)), DOUBLE_TOL, s),
    ]
    check_all(comparisons, record_comparison)


def test_coriolis_matrix_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    """C(q, qd) qd: dyn.coriolis and dyn.coriolis_matrix @ qd vs computeCoriolisMatrix @ qd."""
    dyn, ref, s = setup(case)
    b = stack(ref.coriolis, s.q, s.qd)
    cq = stack(dyn.coriolis, s.q, s.qd)
    Cq = np.einsum("kij,kj->ki", stack(dyn.coriolis_matrix, s.q, s.qd), s.qd)
    check_all(
        [
            compare(case.id, "coriolis (C qd)", cq, b, DOUBLE_TOL, s),
            compare(case.id, "coriolis_matrix @ qd", Cq, b, DOUBLE_TOL, s),
        ],
        record_comparison,
    )


def test_generalized_gravity_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    dyn, ref, s = setup(case)
    check_all(
        [compare(case.id, "gravity", stack(dyn.gravity, s.q), stack(ref.gravity, s.q), DOUBLE_TOL, s)],
        record_comparison,
    )


def test_nonlinear_effects_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    dyn, ref, s = setup(case)
    check_all(
        [
            compare(
                case.id,
                "nonlinear_effects (+ friction)",
                stack(dyn.nonlinear_effects, s.q, s.qd),
                stack(ref.nonlinear_effects, s.q, s.qd),
                DOUBLE_TOL,
                s,
            ),
            compare(case.id, "friction", stack(dyn.friction, s.qd), stack(ref.friction, s.qd), DOUBLE_TOL, s),
        ],
        record_comparison,
    )


def test_aba_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    """forward_dynamics(q, qd, tau) vs aba(q, qd, tau - friction), tau = rnea of the state."""
    dyn, ref, s = setup(case)
    tau = stack(ref.rnea, s.q, s.qd, s.qdd)
    ours = stack(dyn.forward_dynamics, s.q, s.qd, tau)
    check_all(
        [compare(case.id, "forward_dynamics vs aba", ours, stack(ref.aba, s.q, s.qd, tau), DOUBLE_TOL, s)],
        record_comparison,
    )


def test_joint_torque_regressor_matches_pinocchio(case: PeerCase, record_comparison) -> None:
    """Y_b(q, qd, qdd) . beta vs computeJointTorqueRegressor . pi_pin + IA qdd + friction."""
    dyn, ref, s = setup(case)
    Yb = stack(dyn.regressor, s.q, s.qd, s.qdd)
    assert Yb.shape[1:] == (dyn.dof, dyn.n_base)
    check_all(
        [
            compare(
                case.id,
                "regressor @ base_parameters",
                Yb @ dyn.base_parameters,
                stack(ref.regressor_torque, s.q, s.qd, s.qdd),
                DOUBLE_TOL,
                s,
            )
        ],
        record_comparison,
    )
