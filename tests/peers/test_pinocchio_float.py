"""The float build (precision="float") against Pinocchio in double.

Inputs are rounded to float32 before the call, and Pinocchio is evaluated (in double) at exactly
those rounded values, so the comparison measures the float arithmetic of the generated C only.
Rule (issue 2): ``||a - b|| <= 1e-4 ||b|| + 1e-6`` per state.
"""

from __future__ import annotations

import numpy as np
import pytest

from .peer_cases import FLOAT_TOL, case_params, check_all, compare, compiled, pin_model, random_states

N_STATES = 300

pytestmark = pytest.mark.parametrize("case", case_params())


def f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def test_float_build_matches_pinocchio(case, record_comparison) -> None:
    """rnea, crba, C qd, g, Y_b beta, nonlinear effects, aba, tip pose and Jacobian in float."""
    dyn, model = compiled(case.id, "float"), pin_model(case.id)
    assert dyn.dtype == np.float32
    ref = case.reference(model, case.friction(model))
    s = random_states(dyn.dof, N_STATES, case.seed + 5).astype(np.float32)
    beta32 = dyn.base_parameters.astype(np.float32).astype(float)
    rows: dict[str, tuple[list, list]] = {}

    def add(name: str, ours, pins) -> None:
        a, b = rows.setdefault(name, ([], []))
        a.append(np.asarray(ours, dtype=float))
        b.append(np.asarray(pins, dtype=float))

    for q, qd, qdd in zip(s.q, s.qd, s.qdd):
        q32, qd32, qdd32 = f32(q), f32(qd), f32(qdd)
        tau = ref.rnea(q, qd, qdd)
        add("float rnea", dyn.rnea(q32, qd32, qdd32), tau)
        add("float mass_matrix vs crba", dyn.mass_matrix(q32), ref.crba(q))
        c = ref.coriolis(q, qd)
        add("float coriolis (C qd)", dyn.coriolis(q32, qd32), c)
        add("float coriolis_matrix @ qd", dyn.coriolis_matrix(q32, qd32).astype(float) @ qd, c)
        add("float gravity", dyn.gravity(q32), ref.gravity(q))
        add(
            "float regressor @ base_parameters",
            dyn.regressor(q32, qd32, qdd32).astype(float) @ beta32,
            ref.regressor_torque(q, qd, qdd),
        )
        add("float nonlinear_effects", dyn.nonlinear_effects(q32, qd32), ref.nonlinear_effects(q, qd))
        # forward dynamics in torque space (backward error): M qdd_ours + n = tau within the
        # float rule; comparing qdd itself would scale the float rounding by cond(M) (~1e4
        # for the iiwa, whose links have tiny inertias and no rotor inertia).
        tau32 = f32(tau)
        qdd_f = dyn.forward_dynamics(q32, qd32, tau32).astype(float)
        add(
            "float forward_dynamics: crba . qdd + nle vs tau",
            ref.crba(q) @ qdd_f + ref.nonlinear_effects(q, qd),
            tau32.astype(float),
        )
        add("float tip_pose", dyn.tip_pose(q32), ref.tip_pose(q))
        add("float tip_jacobian", dyn.tip_jacobian(q32), ref.tip_jacobian(q))

    check_all(
        [compare(case.id, name, np.array(a), np.array(b), FLOAT_TOL, s) for name, (a, b) in rows.items()],
        record_comparison,
    )
