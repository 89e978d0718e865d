"""The FIR derivative family (Liu et al. §II-B; Brown et al. 1992): one structure, coefficients
computed here at generation time, qd_hat_k = sum_j c_j q_{k-j} (j = 0 .. n-1).

* ``lsf`` LSF(n, p): least-squares polynomial of order p through the last n samples, its derivative
  at the newest sample (and its second derivative when p >= 2). Exact for polynomials of degree <= p.
* ``bde`` BDE(n): backward difference expansion, (1/T) sum_{m=1..n} nabla^m q / m: the derivative of
  the polynomial interpolating the last n + 1 samples. Exact for degree <= n.
* ``tse`` TSE(n): Taylor series expansion, (1/T) sum_{m=1..n} nabla^m q / m!: higher derivatives taken
  as backward differences. Exact for degree <= min(n, 2) (the truncated series is not a polynomial
  interpolation beyond that).
* ``ewlr`` EWLR(n, lam): exponentially weighted linear regression over the last n samples, weight
  lam^j for q_{k-j}; the slope of the fitted line (Kirchhoff 2011 §5.3). Exact for degree <= 1.
LSF(n=2, p=1), BDE(1) and TSE(1) are the finite difference; LSF(n=3, p=1) is the moving average with
p = 2 (Liu et al. §IV-B writes them LSF1/2 and LSF1/3).
LSF, BDE and TSE coefficients are exact rationals (sympy), EWLR's too (Fractions), rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import casadi as cs
import numpy as np

from codegen.model import exact

from . import registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs

if TYPE_CHECKING:
    import sympy as sp


def _lsf_rows(n: int, p: int) -> sp.Matrix:
    import sympy as sp  # here: only generation needs it (a 0.2 s import)

    v = sp.Matrix(n, p + 1, lambda j, m: sp.Integer(-j) ** m)
    return (v.T * v).inv() * v.T  # rows: polynomial coefficients per unit-step time


def _backward(m: int) -> list[sp.Rational]:
    """nabla^m q_k as coefficients of q_{k-j}."""
    import sympy as sp  # here: only generation needs it (a 0.2 s import)

    return [sp.Integer((-1) ** j * math.comb(m, j)) for j in range(m + 1)]


def coefficients(name: str, n: int, p: int = 1, lam: float = 1.0) -> tuple[np.ndarray, np.ndarray | None]:
    """(velocity coefficients times T, acceleration coefficients times T^2 or None), newest first."""
    import sympy as sp  # here: only generation needs it (a 0.2 s import)

    if name == "lsf":
        rows = _lsf_rows(n, p)
        vel = np.array([float(x) for x in rows[1, :]])
        acc = np.array([float(2 * x) for x in rows[2, :]]) if p >= 2 else None
        return vel, acc
    if name in ("bde", "tse"):
        c = [sp.Integer(0)] * (n + 1)
        for m in range(1, n + 1):
            w = sp.Rational(1, m) if name == "bde" else sp.Rational(1, math.factorial(m))
            for j, b in enumerate(_backward(m)):
                c[j] += w * b
        return np.array([float(x) for x in c]), None
    if name == "ewlr":
        # exact weighted least squares in Fractions (codegen.model.exact): lam^k and the normal equations
        # are rational in the float lam, so the taps round once and are the same on every machine
        lam_q = Fraction(float(lam))
        v = np.array([[Fraction(1), Fraction(-k)] for k in range(n)], dtype=object)
        vw = (v * np.array([lam_q**k for k in range(n)], dtype=object)[:, None]).T
        rows = exact.solve_rational(vw.dot(v), vw)
        return exact.rounded(rows[1]), None
    raise ValueError(name)


def build(ctx: Ctx, name: str, n: int, p: int = 1, lam: float = 1.0) -> Block:
    vel, acc = coefficients(name, n, p, lam)
    taps = len(vel)
    order = n
    n = ctx.n
    q = ctx.sym("q")
    hist = cs.SX.sym("hist", n * (taps - 1))
    h = cs.vertcat(q.T, cs.reshape(hist, taps - 1, n))  # taps x n, row j = q_{k-j}
    ts = ctx.ts
    qd = cs.mtimes(cs.DM(vel / ts).T, h).T
    qdd = cs.mtimes(cs.DM(acc / ts**2).T, h).T if acc is not None else cs.SX.zeros(n)
    step = sx_function(
        "step",
        [("out.q", q), ("st.est.hist", hist)],
        [("out.q_hat", q), ("out.qd_hat", qd), ("out.qdd_hat", qdd), ("st.est.hist", h[: taps - 1, :])],
        f"{name} FIR derivative",
    )
    init = sx_function("init", [("out.q", q)], [("st.est.hist", cs.repmat(q.T, taps - 1, 1))], "history := q")
    label = {
        "lsf": f"LSF({order},{p})",
        "bde": f"BDE({order})",
        "tse": f"TSE({order})",
        "ewlr": f"EWLR({order},{lam:g})",
    }[name]
    return Block(
        kind="est",
        name=name,
        doc=(__doc__ or "") + f"\nThis build: {label}; velocity "
        f"coefficients x T_s, newest first: {', '.join(f'{c:.10g}' for c in vel)}.",
        options={"taps": taps, "velocity": tuple(vel), "acceleration": None if acc is None else tuple(acc)},
        state=[Field("hist", "real", (n, taps - 1), "q_{k-1} ... q_{k-n+1} per joint")],
        outputs=outputs(n),
        functions=[init, step],
    )


def _lsf(o: Mapping[str, float]) -> str | None:
    n, p = o["n"], o["p"]
    return None if 0 < p < n <= 64 else f"lsf: need 0 < p < n <= 64 (order p, samples n), got n={n:g} p={p:g}"


def _expansion(name: str, summary: str, default_order: int) -> registry.Estimator:
    """BDE(n) or TSE(n): one option, the order n in 1..8 (Liu et al. Table 5)."""

    def check(o: Mapping[str, float]) -> str | None:
        return None if 1 <= o["n"] <= 8 else f"{name}: order n must be in 1..8, got {o['n']:g}"

    return registry.Estimator(
        name=name,
        summary=f"{summary} (Liu et al. Table 5)",
        build=lambda ctx, c: build(ctx, name, int(c.get("n"))),
        options={"n": int},
        defaults={"n": default_order},
        check=check,
    )


def _ewlr(o: Mapping[str, float]) -> str | None:
    n, lam = o["n"], o["lam"]
    return (
        None if 2 <= n <= 64 and 0 < lam <= 1 else f"ewlr: need 2 <= n <= 64 and 0 < lam <= 1, got n={n:g} lam={lam:g}"
    )


registry.register(
    registry.Estimator(
        name="lsf",
        summary="least-squares polynomial fit LSF(n, p) (Liu et al. §II-B)",
        build=lambda ctx, c: build(ctx, "lsf", int(c.get("n")), int(c.get("p"))),
        options={"n": int, "p": int},
        defaults={"n": 4, "p": 1},
        check=_lsf,
        acceleration="with p >= 2",
        grid=tuple(f"lsf:n={n},p=1" for n in range(3, 9)) + tuple(f"lsf:n={n},p=2" for n in range(5, 9)),
        in_study=True,
    ),
    _expansion("bde", "backward difference expansion BDE(n)", 2),
    _expansion("tse", "Taylor series expansion TSE(n)", 3),
    registry.Estimator(
        name="ewlr",
        summary="exponentially weighted linear regression EWLR(n, lam) (Kirchhoff 2011 §5.3)",
        build=lambda ctx, c: build(ctx, "ewlr", int(c.get("n")), lam=c.get("lam")),
        options={"n": int, "lam": float},
        defaults={"n": 10, "lam": 0.8},
        check=_ewlr,
    ),
)
