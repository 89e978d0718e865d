"""The plain least-squares baseline's columns for joint parameters a description does not identify
(issue #44: the iiwa identifies no rotor inertia, and its baseline was skipped until 2026-12-01)."""

from __future__ import annotations

import numpy as np

from host_tools.identification.baseline import independent_columns, joint_columns


def test_joint_columns_sit_in_their_own_joints_equation() -> None:
    """IA_j qdd_j, FV_j qd_j, FC_j tanh(qd_j / v_j), FO_j 1, parameter after parameter, each joint's
    column non-zero in its own equation only (closed forms of the docstring's definitions)."""
    rng = np.random.default_rng(3)
    qd, qdd = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    scale = np.array([0.01, 0.2])
    cols = joint_columns(["IA", "FV", "FC", "FO"], qd, qdd, scale)
    assert cols.shape == (5, 2, 8)
    expected = [qdd, qd, np.tanh(qd / scale), np.ones_like(qd)]
    # the Coulomb shape is CasADi's tanh (the fric block's expression), numpy's here: two libm
    # evaluations of a value in [-1, 1] agree to a few units of 1 ulp of 1 (eps); the others are copies
    for p, shape in enumerate(expected):
        for j in range(2):
            np.testing.assert_allclose(cols[:, j, 2 * p + j], shape[:, j], rtol=0, atol=4 * np.finfo(float).eps)
            np.testing.assert_array_equal(cols[:, 1 - j, 2 * p + j], 0.0)


def test_a_column_already_in_a_base_parameter_is_left_out() -> None:
    """A vertical first axis's rotor inertia multiplies qdd_1 in joint 1's equation alone, as its ZZ
    does: appended beside it, the column is in the span of the ones before and is left out; an
    independent one (joint 2's) stays, and the description's own columns always do."""
    rng = np.random.default_rng(4)
    k = 200
    qdd = rng.normal(size=(k, 2))
    base = np.zeros((k, 2, 2))
    base[:, 0, 0] = 2.0 * qdd[:, 0]  # ZZ1R: qdd_1 in joint 1's equation only
    base[:, :, 1] = rng.normal(size=(k, 2))  # another base parameter, in both equations
    ia = joint_columns(["IA"], np.zeros((k, 2)), qdd, np.ones(2))
    y = np.concatenate([base, ia], axis=2).reshape(2 * k, -1)
    assert independent_columns(y, 2) == [0, 1, 3]


def test_a_column_is_judged_against_the_kept_ones_only() -> None:
    """A column orthogonal to every kept one stays, even after a dependent column was left out
    before it (a reviewer's case: a QR without pivoting fills a dropped column's place with a
    direction of its own, and a later column along that direction looked dependent)."""
    a = np.array([1.0, 1.0, 0.0, 0.0]) / np.sqrt(2.0)
    c = np.array([1.0, -1.0, 0.0, 0.0]) / np.sqrt(2.0)  # orthogonal to a
    y = np.column_stack([a, 2.0 * a, c])
    assert independent_columns(y, 1) == [0, 2]
