"""Design-time arithmetic that every machine reproduces bit for bit.

Every number that generation prints into a file (transforms, inertial parameters, base-parameter
coefficients and values, Kalman gains, FIR taps) is computed here, never with numpy's linear algebra
or SIMD maths: BLAS kernels (OpenBLAS picks one per CPU, with or without FMA, and sums in an order
that depends on the kernel and the thread count), numpy's SIMD transcendental functions and glibc's
FMA variants of sin/cos all change the last bits from one machine to the next.

Two exact tools, each deterministic on any machine because it is pure integer arithmetic:
- ``fractions.Fraction`` for rational work (products, sums, small solves): a float is an exact
  dyadic rational, so a chain of products and sums of floats is exact and rounded once, at the end,
  by ``Fraction.__float__`` (correctly rounded).
- an mpmath context at ``DIGITS`` decimal digits for what is not rational (sin, cos, tanh, square
  roots, iterations such as the Riccati doubling, solves of large systems), rounded once to the
  nearest double. mpmath's results depend only on its inputs and its precision; with 50 digits a
  result rounds to the same double as the exact value unless the exact value lies within 1e-34
  (relative) of a rounding boundary, and even then every machine rounds the same mpmath value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import casadi as cs
import mpmath
import numpy as np

DIGITS = 50
MP = mpmath.MPContext()  # our own context: the global mpmath.mp precision is the user's
MP.dps = DIGITS


# --- scalars ------------------------------------------------------------------------------------


def to_mp(v: Any) -> Any:
    """A float, Fraction or mpf as an mpf of the context (a Fraction exactly to DIGITS digits)."""
    return MP.mpf(v.numerator) / v.denominator if isinstance(v, Fraction) else MP.mpf(v)


def cos(t: float) -> float:
    return float(MP.cos(MP.mpf(float(t))))


def sin(t: float) -> float:
    return float(MP.sin(MP.mpf(float(t))))


def atan2(y: float, x: float) -> float:
    return float(MP.atan2(MP.mpf(float(y)), MP.mpf(float(x))))


def hypot(x: float, y: float) -> float:
    return float(MP.hypot(MP.mpf(float(x)), MP.mpf(float(y))))


def sqrt(x: float | Fraction) -> float:
    return float(MP.sqrt(to_mp(x if isinstance(x, Fraction) else float(x))))


# --- rational matrices --------------------------------------------------------------------------


def rational(a: Any) -> np.ndarray:
    """An object array of Fractions holding exactly the values of the float array ``a``."""
    arr = np.asarray(a, dtype=float)
    out = np.empty(arr.shape, dtype=object)
    for idx, v in np.ndenumerate(arr):
        if not np.isfinite(v):
            raise ValueError(f"exact arithmetic needs finite numbers, got {v}")
        out[idx] = Fraction(float(v))
    return out


def rounded(a: np.ndarray) -> np.ndarray:
    """Each entry of an object array (Fraction or mpf) rounded once to a double."""
    out = np.empty(np.shape(a), dtype=float)
    for idx, v in np.ndenumerate(np.asarray(a, dtype=object)):
        out[idx] = float(v)
    return out


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact product of object arrays (Python's + and * in a fixed order: no BLAS)."""
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[1] != b2.shape[0]:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not multiply")
    out = np.empty((a2.shape[0], b2.shape[1]), dtype=object)
    for i in range(a2.shape[0]):
        for j in range(b2.shape[1]):
            s: Any = Fraction(0)
            for k in range(a2.shape[1]):
                s += a2[i, k] * b2[k, j]
            out[i, j] = s
    if a.ndim == 1 and b.ndim == 1:
        return out.reshape(())
    if a.ndim == 1:
        return out.reshape(-1)
    if b.ndim == 1:
        return out.reshape(-1)
    return out


def matmul(*ms: Any) -> np.ndarray:
    """The product of float matrices (or vectors), exact, rounded once."""
    acc = rational(ms[0])
    for m in ms[1:]:
        acc = _mm(acc, rational(m))
    return rounded(acc)


def norm(v: Any) -> float:
    """Euclidean norm, correctly rounded from the exact sum of squares."""
    r = rational(v).ravel()
    return sqrt(sum((x * x for x in r), Fraction(0)))


def cross(a: Any, b: Any) -> np.ndarray:
    x, y = rational(a), rational(b)
    return rounded(
        np.array([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]], dtype=object)
    )


def solve_rational(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b, exactly (Gauss-Jordan on object arrays of Fractions; small systems only)."""
    n = a.shape[0]
    rhs = b.reshape(n, -1)
    m = np.concatenate([a, rhs], axis=1).astype(object)
    for c in range(n):
        piv = next((r for r in range(c, n) if m[r, c] != 0), None)
        if piv is None:
            raise ZeroDivisionError("singular matrix")
        if piv != c:
            m[[c, piv]] = m[[piv, c]]
        m[c] = m[c] / m[c, c]
        for r in range(n):
            if r != c and m[r, c] != 0:
                m[r] = m[r] - m[r, c] * m[c]
    x = m[:, n:]
    return x.reshape(b.shape)


def inv(a: Any) -> np.ndarray:
    """The inverse of a small float matrix, exact, rounded once."""
    r = rational(a)
    return rounded(solve_rational(r, rational(np.eye(r.shape[0]))))


# --- mpmath matrices ----------------------------------------------------------------------------


def from_mp(m: Any) -> np.ndarray:
    """An mpmath matrix rounded once to a float array."""
    return np.array([[float(m[i, j]) for j in range(m.cols)] for i in range(m.rows)])


def solve_consistent(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b for a consistent system with more rows than unknowns (a of full column rank),
    in mpmath: Gaussian elimination with partial pivoting over all rows (ties: the first row, so the
    path is the same on every machine). Returns the object array of mpf; raises ZeroDivisionError
    when a is rank deficient to the working precision."""
    n = a.shape[1]
    rows = [[to_mp(v) for v in ra] + [to_mp(v) for v in rb] for ra, rb in zip(a, b)]
    scale = max((abs(v) for r in rows for v in r[:n]), default=MP.mpf(0))
    eps = scale * MP.mpf(10) ** (-DIGITS // 2)
    for c in range(n):
        piv = max(range(c, len(rows)), key=lambda r: abs(rows[r][c]))
        if abs(rows[piv][c]) <= eps:
            raise ZeroDivisionError("rank deficient")
        rows[c], rows[piv] = rows[piv], rows[c]
        head = rows[c]
        inv_p = 1 / head[c]
        for r in range(c + 1, len(rows)):
            f = rows[r][c] * inv_p
            if f:
                rows[r] = [x - f * y for x, y in zip(rows[r], head)]
    x = [[MP.mpf(0)] * (len(rows[0]) - n) for _ in range(n)]
    for c in reversed(range(n)):
        for k in range(len(x[c])):
            acc = rows[c][n + k] - MP.fsum(rows[c][j] * x[j][k] for j in range(c + 1, n))
            x[c][k] = acc / rows[c][c]
    return np.array(x, dtype=object).reshape(n, -1)


# --- CasADi functions evaluated in mpmath -------------------------------------------------------

_UNARY: dict[int, Callable[[Any], Any]] = {
    cs.OP_ASSIGN: lambda x: x,
    cs.OP_NEG: lambda x: -x,
    cs.OP_SQ: lambda x: x * x,
    cs.OP_TWICE: lambda x: 2 * x,
    cs.OP_INV: lambda x: 1 / x,
    cs.OP_SIN: lambda x: MP.sin(x),
    cs.OP_COS: lambda x: MP.cos(x),
    cs.OP_TAN: lambda x: MP.tan(x),
    cs.OP_SQRT: lambda x: MP.sqrt(x),
    cs.OP_EXP: lambda x: MP.exp(x),
    cs.OP_LOG: lambda x: MP.log(x),
    cs.OP_TANH: lambda x: MP.tanh(x),
    cs.OP_FABS: lambda x: abs(x),
    cs.OP_SIGN: lambda x: MP.sign(x),
    cs.OP_ATAN: lambda x: MP.atan(x),
    cs.OP_ASIN: lambda x: MP.asin(x),
    cs.OP_ACOS: lambda x: MP.acos(x),
}
_BINARY: dict[int, Callable[[Any, Any], Any]] = {
    cs.OP_ADD: lambda x, y: x + y,
    cs.OP_SUB: lambda x, y: x - y,
    cs.OP_MUL: lambda x, y: x * y,
    cs.OP_DIV: lambda x, y: x / y,
    cs.OP_POW: lambda x, y: MP.power(x, y),
    cs.OP_CONSTPOW: lambda x, y: MP.power(x, y),
    cs.OP_ATAN2: lambda x, y: MP.atan2(x, y),
    cs.OP_FMIN: lambda x, y: min(x, y),
    cs.OP_FMAX: lambda x, y: max(x, y),
    cs.OP_IF_ELSE_ZERO: lambda c, x: x if c != 0 else MP.mpf(0),
    cs.OP_LT: lambda x, y: MP.mpf(int(x < y)),
    cs.OP_LE: lambda x, y: MP.mpf(int(x <= y)),
    cs.OP_EQ: lambda x, y: MP.mpf(int(x == y)),
    cs.OP_NE: lambda x, y: MP.mpf(int(x != y)),
    cs.OP_COPYSIGN: lambda x, y: abs(x) if y >= 0 else -abs(x),
}


class MpFunction:
    """A CasADi SX Function evaluated in mpmath at ``DIGITS`` digits (its instruction list replayed):
    the same expression the generated C evaluates, free of libm's and BLAS's last bits."""

    def __init__(self, f: cs.Function) -> None:
        if not f.is_a("SXFunction"):
            f = f.expand()
        self.f = f
        self.code = [
            (
                f.instruction_id(k),
                f.instruction_input(k),
                f.instruction_output(k),
                f.instruction_constant(k) if f.instruction_id(k) == cs.OP_CONST else None,
            )
            for k in range(f.n_instructions())
        ]
        for op, *_ in self.code:
            if op not in _UNARY and op not in _BINARY and op not in (cs.OP_CONST, cs.OP_INPUT, cs.OP_OUTPUT):
                raise NotImplementedError(f"CasADi operation {op} in {f.name()} has no exact evaluation")
        self.sizes = [(f.size1_out(i), f.size2_out(i)) for i in range(f.n_out())]
        self.sparsity = [f.sparsity_out(i) for i in range(f.n_out())]
        self.in_nz = [f.sparsity_in(i).nnz() for i in range(f.n_in())]

    def __call__(self, *args: Sequence[Any] | np.ndarray) -> list[Any]:
        """Inputs: dense column-major values (floats, Fractions or mpf) per input; outputs: mpmath
        matrices (dense)."""
        ins = [[to_mp(v) for v in np.asarray(a, dtype=object).ravel(order="F")] for a in args]
        for k, (got, want) in enumerate(zip(ins, self.in_nz)):
            if len(got) != want:
                raise ValueError(f"{self.f.name()}: input {k} has {len(got)} values, expects {want}")
        w: dict[int, Any] = {}
        outs = [MP.matrix(r, c) for r, c in self.sizes]
        nz_rc = [list(zip(*sp.get_triplet())) for sp in self.sparsity]
        for op, i, o, const in self.code:
            if op == cs.OP_INPUT:
                w[o[0]] = ins[i[0]][i[1]]
            elif op == cs.OP_OUTPUT:
                r, c = nz_rc[o[0]][o[1]]
                outs[o[0]][r, c] = w[i[0]]
            elif op == cs.OP_CONST:
                w[o[0]] = MP.mpf(const)
            elif op in _UNARY:
                w[o[0]] = _UNARY[op](w[i[0]])
            else:
                w[o[0]] = _BINARY[op](w[i[0]], w[i[1]])
        return outs
