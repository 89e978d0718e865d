"""The one parallel-axis formula (transform_inertial) and the rotation helpers, property-based."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.model import spatial

angles = st.floats(-np.pi, np.pi)
lengths = st.floats(-1.0, 1.0)


def pose(r: tuple[float, float, float], p: tuple[float, float, float]) -> np.ndarray:
    return spatial.homogeneous(spatial.rpy(*r), np.array(p))


def body(mass: float, com: tuple[float, float, float], d: tuple[float, float, float]) -> np.ndarray:
    return spatial.from_com(mass, np.array(com), np.diag(d))


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.1, 10),
    st.tuples(lengths, lengths, lengths),
    st.tuples(st.floats(0.01, 1), st.floats(0.01, 1), st.floats(0.01, 1)),
    st.tuples(angles, angles, angles),
    st.tuples(lengths, lengths, lengths),
    st.tuples(angles, angles, angles),
    st.tuples(lengths, lengths, lengths),
)
def test_transform_inertial_composes_and_inverts(m, com, d, r1, p1, r2, p2) -> None:
    p = body(m, com, d)
    t1, t2 = pose(r1, p1), pose(r2, p2)
    once = spatial.transform_inertial(p, t1 @ t2)
    twice = spatial.transform_inertial(spatial.transform_inertial(p, t2), t1)
    assert np.allclose(once, twice, atol=1e-10)
    assert np.allclose(spatial.transform_inertial(once, spatial.inverse(t1 @ t2)), p, atol=1e-10)
    # physical meaning: the mass and the inertia about the COM's eigenvalues are frame-invariant
    assert once[0] == m
    assert np.allclose(np.sort(np.linalg.eigvalsh(spatial.inertia_about_com(once))), np.sort(d), atol=1e-10)


def point_masses_inertia(masses: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Direct sum over point masses: the definition, independent of the parallel-axis formula."""
    i = np.zeros((3, 3))
    for m, r in zip(masses, points):
        i += m * (r @ r * np.eye(3) - np.outer(r, r))
    return i


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.1, 2), lengths, lengths, lengths), min_size=1, max_size=5),
    st.tuples(angles, angles, angles),
    st.tuples(lengths, lengths, lengths),
)
def test_transform_inertial_matches_point_masses(points, r, p) -> None:
    masses = np.array([q[0] for q in points])
    xyz = np.array([q[1:] for q in points])
    params_b = spatial.pack(masses.sum(), masses @ xyz, point_masses_inertia(masses, xyz))
    t = pose(r, p)
    xyz_a = (t[:3, :3] @ xyz.T).T + t[:3, 3]
    expected = spatial.pack(masses.sum(), masses @ xyz_a, point_masses_inertia(masses, xyz_a))
    assert np.allclose(spatial.transform_inertial(params_b, t), expected, atol=1e-10)


@given(
    st.sampled_from([(0, 0, 1), (0, 0, -1), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0)])
    | st.tuples(lengths, lengths, lengths).filter(lambda v: np.linalg.norm(v) > 0.1)
)
def test_z_to_axis(axis) -> None:
    a = np.array(axis, dtype=float)
    r = spatial.z_to_axis(a)
    assert np.allclose(r @ [0, 0, 1], a / np.linalg.norm(a), atol=1e-12)
    assert np.allclose(r.T @ r, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(r), 1.0)
