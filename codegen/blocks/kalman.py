"""Kalman filter on a per-axis triple integrator (seed 000 §II-C, Belanger 1992).

z = [q, qd, qdd], dz/dt = A z + Gamma w (w: jerk, white, spectral density Q per axis), y = q + v with
Var(v) = R = dq^2 / 3 (seed 000's choice; dq = the encoder resolution). Discretised with zero-order
hold as MATLAB's c2d + dlqe do: A_d = exp(A T), Gamma_d = int_0^T exp(A s) ds Gamma, Q_d =
Gamma_d Q Gamma_d^T. The steady-state gain M = P C^T / (C P C^T + R), P the a-priori covariance from
the discrete Riccati equation, solved here at generation time (structured doubling; the host redoes
it when Q or R change: ``kalman_gain``). Each sample: x- = A_d x; x = x- + M (q - x-_1) -- the
current estimate x[k|k]. On a lost sample (valid = 0) it predicts without updating.
"""

from __future__ import annotations

import casadi as cs
import numpy as np

from .base import Block, Field, per_joint, sx_function
from . import encoder
from .context import Ctx
from .estimator import outputs, reference

DEFAULT_Q = 10.0


def discrete_model(ts: float) -> tuple[np.ndarray, np.ndarray]:
    """(A_d, Gamma_d) of the triple integrator under zero-order hold (exact: A is nilpotent)."""
    a = np.array([[1.0, ts, ts * ts / 2.0], [0.0, 1.0, ts], [0.0, 0.0, 1.0]])
    g = np.array([ts ** 3 / 6.0, ts ** 2 / 2.0, ts])
    return a, g


def riccati(a: np.ndarray, c: np.ndarray, qd: np.ndarray, r: float, tol: float = 1e-14) -> np.ndarray:
    """A-priori covariance P = A P A' - A P C'(C P C' + R)^-1 C P A' + Qd by the structured doubling
    algorithm (Chu et al. 2004): written here so that the tests can hold it against scipy's DARE."""
    ak, gk, hk = a.T.copy(), np.outer(c, c) / r, qd.copy()
    eye = np.eye(len(a))
    for _ in range(200):
        w = np.linalg.solve(eye + gk @ hk, np.column_stack([ak, gk]))
        wa, wg = w[:, :len(a)], w[:, len(a):]
        h_next = hk + ak.T @ hk @ wa
        gk = gk + ak @ wg @ ak.T
        ak = ak @ wa
        if np.max(np.abs(h_next - hk)) <= tol * max(1.0, np.max(np.abs(h_next))):
            return 0.5 * (h_next + h_next.T)
        hk = h_next
    raise ArithmeticError("Kalman Riccati equation did not converge")


def kalman_gain(ts: float, q: float, r: float) -> np.ndarray:
    """Steady-state innovation gain M (3,) for the current estimate, as MATLAB's dlqe."""
    a, g = discrete_model(ts)
    c = np.array([1.0, 0.0, 0.0])
    p = riccati(a, c, q * np.outer(g, g), r)
    return p[:, 0] / (p[0, 0] + r)


def build(ctx: Ctx, q_var: tuple[float, ...] | None = None) -> Block:
    n, ts = ctx.n, ctx.ts
    qv = per_joint(q_var if q_var is not None else DEFAULT_Q, n)
    rv = []
    for j in ctx.robot.joints:
        e = j.encoder
        cpr = e.cpr * (j.gear_ratio if e.side == "motor" else 1.0) if e is not None else encoder.DEFAULT_CPR
        rv.append((2.0 * np.pi / cpr) ** 2 / 3.0)
    gain = np.array([kalman_gain(ts, a, b) for a, b in zip(qv, rv)])
    ad, _ = discrete_model(ts)
    q, valid = ctx.sym("q"), ctx.sym("valid")
    xs, ks = cs.SX.sym("x", 3 * n), cs.SX.sym("k", 3 * n)
    x, k = cs.reshape(xs, 3, n), cs.reshape(ks, 3, n)
    xp = cs.mtimes(cs.DM(ad), x)
    innov = (q.T - xp[0, :]) * valid.T
    xn = xp + k * cs.repmat(innov, 3, 1)
    step = sx_function("step", [("out.q", q), ("loc.valid", valid), ("st.est.x", xs), ("cfg.est.gain", ks)],
                       [("out.q_hat", xn[0, :].T), ("out.qd_hat", xn[1, :].T), ("out.qdd_hat", xn[2, :].T),
                        ("st.est.x", xn)], "predict, then update when valid")
    init = sx_function("init", [("out.q", q)], [("st.est.x", cs.vertcat(q.T, cs.SX.zeros(2, n)))],
                       "x := [q, 0, 0]")
    return Block(kind="est", name="kalman", doc=__doc__ or "",
                 config=[Field("gain", "real", (n, 3), "steady-state gain M per joint (from q_var, r_var)",
                               tuple(gain.ravel())),
                         Field("q_var", "real", (n,), "design: jerk noise spectral density Q (rad^2/s^5)", qv),
                         Field("r_var", "real", (n,), "design: measurement noise variance R (rad^2)", tuple(rv))],
                 state=[Field("x", "real", (n, 3), "[q, qd, qdd] per joint")],
                 outputs=outputs(n), functions=[init, step], reference=reference)
