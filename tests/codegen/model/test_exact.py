"""codegen.model.exact: the design-time arithmetic that every machine reproduces -- each tool against an
independent reference (sympy's exact rationals, mpmath at 100 digits, CasADi's own evaluation)."""

from __future__ import annotations

from fractions import Fraction

import casadi as cs
import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.model import exact


def _correctly_rounded(x: sp.Rational) -> float:
    """The double nearest an exact rational (sympy's evaluation at 60 digits, then one rounding)."""
    return float(sp.Float(x, 60))


def test_matmul_is_the_exact_product_rounded_once() -> None:
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=(4, 4)) * 10.0 ** rng.integers(-6, 6, (4, 4)) for _ in range(3))
    got = exact.matmul(a, b, c)
    ra, rb, rc = (sp.Matrix(m.shape[0], m.shape[1], [sp.Rational(float(v)) for v in m.ravel()]) for m in (a, b, c))
    want = ra * rb * rc
    assert all(got[i, j] == _correctly_rounded(want[i, j]) for i in range(4) for j in range(4))
    # numpy's product of the same matrices rounds at every step (and sums in a BLAS kernel's order)
    assert np.allclose(got, a @ b @ c, rtol=1e-9, atol=1e-9 * np.abs(a @ b @ c).max())


def test_inverse_norm_and_cross_are_correctly_rounded() -> None:
    a = np.array([[1.0, 0.1, 0.0], [0.3, 1.0, 0.2], [0.0, 0.7, 1.0]])
    inv = sp.Matrix(3, 3, [sp.Rational(float(v)) for v in a.ravel()]).inv()
    got = exact.inv(a)
    assert all(got[i, j] == _correctly_rounded(inv[i, j]) for i in range(3) for j in range(3))
    v = np.array([0.1, 0.2, 0.3])
    with mpmath.workdps(100):
        want = float(mpmath.sqrt(sum(mpmath.mpf(float(x)) ** 2 for x in v)))
    assert exact.norm(v) == want
    x, y = np.array([0.1, 0.7, -1.3]), np.array([2.0, -0.3, 0.9])
    assert np.array_equal(
        exact.cross(x, y),
        np.array(
            [
                _correctly_rounded(
                    sp.Rational(float(p)) * sp.Rational(float(q)) - sp.Rational(float(r)) * sp.Rational(float(s))
                )
                for p, q, r, s in ((x[1], y[2], x[2], y[1]), (x[2], y[0], x[0], y[2]), (x[0], y[1], x[1], y[0]))
            ]
        ),
    )


@pytest.mark.parametrize("t", [0.1, 1.0, np.pi / 3, 2.5, -7.25, 1e-8, 100.0])
def test_sine_and_cosine_round_the_100_digit_value(t: float) -> None:
    with mpmath.workdps(100):
        assert exact.cos(t) == float(mpmath.cos(mpmath.mpf(t)))
        assert exact.sin(t) == float(mpmath.sin(mpmath.mpf(t)))


@pytest.mark.parametrize("y,x", [(0.3, 0.4), (-1.0, 1e-9), (2.0, -3.5), (-0.7, -0.2)])
def test_atan2_and_hypot_round_the_100_digit_value(y: float, x: float) -> None:
    with mpmath.workdps(100):
        assert exact.atan2(y, x) == float(mpmath.atan2(mpmath.mpf(y), mpmath.mpf(x)))
        assert exact.hypot(x, y) == float(mpmath.hypot(mpmath.mpf(x), mpmath.mpf(y)))


def test_solve_consistent_recovers_an_exact_relation() -> None:
    """An overdetermined system with an exact solution: rows of random states, b = a x for rational x."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (9, 4))
    x = np.array(
        [
            [Fraction(1, 3), Fraction(-2, 7)],
            [Fraction(5, 2), Fraction(0)],
            [Fraction(-1), Fraction(3, 11)],
            [Fraction(1, 8), Fraction(9, 5)],
        ],
        dtype=object,
    )
    b = exact._mm(exact.rational(a), x)  # exact right-hand sides
    got = exact.rounded(exact.solve_consistent(exact.rational(a), b))
    assert np.array_equal(got, exact.rounded(x))
    with pytest.raises(ZeroDivisionError):
        exact.solve_consistent(exact.rational(np.column_stack([a[:, 0], 2 * a[:, 0]])), b)


def test_mpfunction_agrees_with_casadi_and_refuses_what_it_cannot_evaluate() -> None:
    x = cs.SX.sym("x", 3)
    expr = cs.vertcat(
        cs.sin(x[0]) * x[1] ** 2 - cs.cos(x[2]) / x[1],
        cs.tanh(x[2]) + cs.sqrt(x[1]),
        cs.fmax(x[0], x[2]) * cs.exp(x[0]) + cs.atan2(x[1], x[0]),
        cs.fabs(-x[2]) * 2,
    )
    f = cs.Function("f", [x], [expr])
    value = [0.3, 1.7, -0.4]
    got = exact.from_mp(exact.MpFunction(f)(value)[0]).ravel()
    want = np.array(f(value)).ravel()
    assert np.allclose(got, want, rtol=1e-14, atol=0)  # CasADi's double evaluation: a few ulp
    with pytest.raises(ValueError, match="input 0 has 2 values"):
        exact.MpFunction(f)([1.0, 2.0])
    y = cs.SX.sym("y")
    with pytest.raises(NotImplementedError, match="no exact evaluation"):
        exact.MpFunction(cs.Function("g", [y], [cs.erf(y)]))
