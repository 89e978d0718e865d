"""Tip pose and tip Jacobian of the generated C against Pinocchio at 1000 random configurations.

Our tip: the YAML ``tip`` offset of the last link frame (frame ``tip`` of ``pin_model_from_yaml``),
or the URDF tip link's frame, in our base frame (the URDF base link). Pinocchio: the frame placement
from ``framesForwardKinematics`` and ``computeFrameJacobian(..., LOCAL_WORLD_ALIGNED)`` (rows
[v; omega] of the frame origin, world axes), both moved to the base link's axes.
"""

from __future__ import annotations

import numpy as np
import pytest

from .peer_cases import DOUBLE_TOL, case_params, check_all, compare, compiled, pin_model, random_states

N_STATES = 1000

pytestmark = pytest.mark.parametrize("case", case_params())


def test_frame_placement_matches_pinocchio(case, record_comparison) -> None:
    dyn, model = compiled(case.id), pin_model(case.id)
    ref = case.reference(model, case.friction(model))
    s = random_states(dyn.dof, N_STATES, case.seed + 1)
    ours = np.array([dyn.tip_pose(q) for q in s.q])
    pins = np.array([ref.tip_pose(q) for q in s.q])
    check_all(
        [
            compare(case.id, "tip_pose vs frame placement (4x4)", ours, pins, DOUBLE_TOL, s),
            compare(
                case.id,
                "tip_pose rotation orthonormal",
                np.einsum("kji,kjl->kil", ours[:, :3, :3], ours[:, :3, :3]),
                np.broadcast_to(np.eye(3), (len(s), 3, 3)),
                DOUBLE_TOL,
                s,
            ),
        ],
        record_comparison,
    )


def test_frame_jacobian_matches_pinocchio(case, record_comparison) -> None:
    dyn, model = compiled(case.id), pin_model(case.id)
    ref = case.reference(model, case.friction(model))
    s = random_states(dyn.dof, N_STATES, case.seed + 2)
    ours = np.array([dyn.tip_jacobian(q) for q in s.q])
    pins = np.array([ref.tip_jacobian(q) for q in s.q])
    assert ours.shape[1:] == (6, dyn.dof)
    check_all(
        [
            compare(case.id, "tip_jacobian vs getFrameJacobian(LOCAL_WORLD_ALIGNED)", ours, pins, DOUBLE_TOL, s),
            compare(case.id, "tip_jacobian linear rows [v]", ours[:, :3], pins[:, :3], DOUBLE_TOL, s),
            compare(case.id, "tip_jacobian angular rows [omega]", ours[:, 3:], pins[:, 3:], DOUBLE_TOL, s),
        ],
        record_comparison,
    )
