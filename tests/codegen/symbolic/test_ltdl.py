"""Forward dynamics' LTDL factorisation (Featherstone 2005): ltdl_solve on a branched tree's parent
array against numpy, its pivots as the positive-definiteness test, and the generated C's -1 for an
M that is not positive definite."""

from __future__ import annotations

import casadi as cs
import numpy as np
import pytest

from codegen.symbolic.dynamics import ltdl_solve
from host_tools.bindings.compiled import ForwardDynamicsError, load

# a branched tree: 0 - 1 - 2 and 0 - 3 - {4, 5} (parent -1: the base)
PARENT = [-1, 0, 1, 0, 3, 3]


def _ancestors(i: int) -> list[int]:
    out = []
    while PARENT[i] >= 0:
        i = PARENT[i]
        out.append(i)
    return out


def _tree_matrix(d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """M = L^T D L with L unit lower triangular and non-zero only where j is an ancestor of i: M
    has the tree's branch-induced sparsity (zeros between unrelated joints)."""
    n = len(PARENT)
    low = np.eye(n)
    for i in range(n):
        for j in _ancestors(i):
            low[i, j] = rng.uniform(-0.5, 0.5)
    return low.T @ np.diag(d) @ low


def _solve(m: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ms, bs = cs.SX.sym("m", *m.shape), cs.SX.sym("b", b.size)
    f = cs.Function("f", [ms, bs], list(ltdl_solve(ms, bs, PARENT)))
    x, d = f(m, b)
    return np.asarray(x).ravel(), np.asarray(d).ravel()


def test_ltdl_solve_on_a_branched_tree_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    d = rng.uniform(1.0, 2.0, len(PARENT))
    m = _tree_matrix(d, rng)
    unrelated = [(2, 4), (1, 5), (2, 3)]
    assert all(abs(m[i, j]) < 1e-15 for i, j in unrelated), "the test matrix lost its tree sparsity"
    b = rng.uniform(-1.0, 1.0, len(PARENT))
    x, pivots = _solve(m, b)
    # a backward-stable factorisation solves to |dx| / |x| <= c n eps cond(M); c = 10 covers the
    # constant of LDL^T without pivoting on a positive definite M (Higham, ch. 10)
    tol = 10 * len(PARENT) * np.finfo(float).eps * np.linalg.cond(m)
    assert np.linalg.norm(x - np.linalg.solve(m, b)) <= tol * np.linalg.norm(x)
    # the pivots are D of M = L^T D L, built in
    assert np.allclose(pivots, d, rtol=tol, atol=0.0)


def test_ltdl_pivots_flag_an_indefinite_matrix() -> None:
    rng = np.random.default_rng(4)
    d = rng.uniform(1.0, 2.0, len(PARENT))
    d[3] = -0.5  # one negative eigen-direction: M is indefinite
    _, pivots = _solve(_tree_matrix(d, rng), np.ones(len(PARENT)))
    assert pivots.min() <= 0.0


def test_generated_forward_dynamics_returns_minus_one_without_positive_definite_m() -> None:
    dyn = load("planar2")
    pi = dyn.standard_parameters
    q, qd, tau = np.array([0.3, -0.7]), np.array([0.2, 0.1]), np.array([1.0, -2.0])
    qdd = dyn.forward_dynamics(q, qd, tau, params=pi)
    m = dyn.mass_matrix(q, params=pi)
    rhs = tau - dyn.nonlinear_effects(q, qd, params=pi)
    # a backward-stable solve leaves |M x - b| <= c n eps |M| |x| (c = 10, as above)
    tol = 10 * dyn.dof * np.finfo(float).eps * np.linalg.norm(m, 2) * np.linalg.norm(qdd)
    assert np.linalg.norm(m @ qdd - rhs) <= tol
    # every parameter negated: M(q) is negative definite, the last pivot already negative
    with pytest.raises(ForwardDynamicsError, match="not positive definite"):
        dyn.forward_dynamics(q, qd, tau, params=-pi)
