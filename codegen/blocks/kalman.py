"""Kalman filter on a per-axis triple integrator (seed 000 §II-C, Belanger 1992).

z = [q, qd, qdd], dz/dt = A z + Gamma w (w: jerk, zero-mean, variance Q per axis in rad^2/s^6, held
over a sample as c2d does), y = q + v with
Var(v) = R = dq^2 / 3 (seed 000's choice; dq = the encoder resolution at the joint). Discretised with zero-order
hold as MATLAB's c2d + dlqe do: A_d = exp(A T), Gamma_d = int_0^T exp(A s) ds Gamma, Q_d =
Gamma_d Q Gamma_d^T. The steady-state gain M = P C^T / (C P C^T + R), P the a-priori covariance from
the discrete Riccati equation, solved here at generation time (structured doubling) from the
robot YAML's ``kalman.q_var`` / ``kalman.r_var`` (default Q = 10, R from the encoder); a new
design (``manipgen evaluate --tune``, then ``manipgen export-config``) replaces it in the config.
Each sample: x- = A_d x; x = x- + M (q - x-_1) -- the current estimate x[k|k]. On a lost sample
(valid = 0) it predicts without updating.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import casadi as cs
import numpy as np

from codegen.model import exact
from codegen.model.robot import Robot

from . import registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs, reference

DEFAULT_Q = 10.0


def discrete_model(ts: float) -> tuple[np.ndarray, np.ndarray]:
    """(A_d, Gamma_d) of the triple integrator under zero-order hold (exact: A is nilpotent)."""
    a = np.array([[1.0, ts, ts * ts / 2.0], [0.0, 1.0, ts], [0.0, 0.0, 1.0]])
    g = np.array([ts**3 / 6.0, ts**2 / 2.0, ts])
    return a, g


def riccati(ts: float, q: float, r: float) -> Any:
    """A-priori covariance P = A P A' - A P C'(C P C' + R)^-1 C P A' + Qd (C = [1 0 0]) by the
    structured doubling algorithm (Chu et al. 2004), in mpmath at codegen.model.exact.DIGITS digits from
    the exact A_d, Gamma_d of ``ts``: the gain printed into the C is the same on every machine (a
    double-precision doubling differs in the last bits from one BLAS kernel to the next). Written
    here so that the tests can hold it against scipy's DARE. Returns an mpmath 3x3 matrix."""
    mp = exact.MP
    t, qv, rv = mp.mpf(float(ts)), mp.mpf(float(q)), mp.mpf(float(r))
    a = mp.matrix([[1, t, t * t / 2], [0, 1, t], [0, 0, 1]])
    g = mp.matrix([t**3 / 6, t**2 / 2, t])
    ak, hk = a.T, qv * (g * g.T)
    gk = mp.zeros(3, 3)
    gk[0, 0] = 1 / rv
    eye = mp.eye(3)
    tol = mp.mpf(10) ** (-(exact.DIGITS - 10))
    for _ in range(200):
        inv = mp.inverse(eye + gk * hk)
        wa, wg = inv * ak, inv * gk
        h_next = hk + ak.T * hk * wa
        gk = gk + ak * wg * ak.T
        ak = ak * wa
        if mp.mnorm(h_next - hk, 1) <= tol * max(mp.mpf(1), mp.mnorm(h_next, 1)):
            return (h_next + h_next.T) / 2
        hk = h_next
    raise ArithmeticError("Kalman Riccati equation did not converge")


def kalman_gain(ts: float, q: float, r: float) -> np.ndarray:
    """Steady-state innovation gain M (3,) for the current estimate, as MATLAB's dlqe; each entry
    rounded once from the mpmath solution."""
    return np.array(_gain(float(ts), float(q), float(r)))


@functools.lru_cache(maxsize=4096)  # run-time redesigns (tuning) repeat the same few designs
def _gain(ts: float, q: float, r: float) -> tuple[float, float, float]:
    p = riccati(ts, q, r)
    m0, m1, m2 = (float(p[i, 0] / (p[0, 0] + exact.MP.mpf(r))) for i in range(3))
    return m0, m1, m2


def measurement_variance(cpr: float, gear: float) -> float:
    """R = dq^2 / 3 with dq = 2 pi / (cpr gear) the joint-side resolution (seed 000 §II-C)."""
    return float((2 * exact.MP.pi / (exact.MP.mpf(float(cpr)) * exact.MP.mpf(float(gear)))) ** 2 / 3)


def design(ts: float, q_var: np.ndarray, r_var: np.ndarray) -> np.ndarray:
    """Gains (n, 3) for per-joint Q and R; both must be positive (ValueError otherwise)."""
    q, r = np.asarray(q_var, float), np.asarray(r_var, float)
    if not (np.all(np.isfinite(q)) and np.all(q > 0)):
        raise ValueError(f"Kalman q_var must be positive, got {q.tolist()}")
    if not (np.all(np.isfinite(r)) and np.all(r > 0)):
        raise ValueError(f"Kalman r_var must be positive, got {r.tolist()}")
    return np.array([kalman_gain(ts, a, b) for a, b in zip(q, r)])


def build(ctx: Ctx) -> Block:
    """The gain in the config comes from the design values (Block.options q_var, r_var) once the
    pipeline knows the final encoder config: pipeline.build_pipeline calls ``design``."""
    n, ts = ctx.n, ctx.ts
    ad, _ = discrete_model(ts)
    q, valid = ctx.sym("q"), ctx.sym("valid")
    xs, ks = cs.SX.sym("x", 3 * n), cs.SX.sym("k", 3 * n)
    x, k = cs.reshape(xs, 3, n), cs.reshape(ks, 3, n)
    xp = cs.mtimes(cs.DM(ad), x)
    innov = (q.T - xp[0, :]) * valid.T
    xn = xp + k * cs.repmat(innov, 3, 1)
    step = sx_function(
        "step",
        [("out.q", q), ("loc.valid", valid), ("st.est.x", xs), ("cfg.est.gain", ks)],
        [("out.q_hat", xn[0, :].T), ("out.qd_hat", xn[1, :].T), ("out.qdd_hat", xn[2, :].T), ("st.est.x", xn)],
        "predict, then update when valid",
    )
    init = sx_function("init", [("out.q", q)], [("st.est.x", cs.vertcat(q.T, cs.SX.zeros(2, n)))], "x := [q, 0, 0]")
    return Block(
        kind="est",
        name="kalman",
        doc=__doc__ or "",
        options={"q_var": (DEFAULT_Q,) * n},
        config=[
            Field(
                "gain",
                "real",
                (n, 3),
                "steady-state gain M per joint (a new design replaces it: manipgen evaluate --tune, export-config)",
                (0.0,) * (3 * n),
            )
        ],
        state=[Field("x", "real", (n, 3), "[q, qd, qdd] per joint")],
        outputs=outputs(n),
        functions=[init, step],
        reference=reference,
    )


def _finish(block: Block, blocks: list[Block], robot: Robot, given: registry.Design, ts: float) -> None:
    """The steady-state gain from q_var (given or default) and r_var (given, else the quantisation
    of the encoder the block reads: the motor channel's for the motor-side estimator)."""
    enc = next(b for b in blocks if b.kind == "enc")
    by_enc = {f.name: f.default_array() for f in enc.config}
    side = "motor_" if block.kind == "mest" else ""
    q_var = np.array(given["kalman.q_var"][0] if "kalman.q_var" in given else block.options["q_var"])
    # a joint without a motor encoder (motor_cpr 0): its theta is constant; any finite variance does
    cpr = np.where(by_enc[side + "cpr"] >= 1, by_enc[side + "cpr"], by_enc["cpr"])
    r_var = (
        np.array(given["kalman.r_var"][0])
        if "kalman.r_var" in given and not side
        else np.array([measurement_variance(c, g) for c, g in zip(cpr, by_enc[side + "gear"])])
    )
    gain = design(ts, q_var, r_var)
    block.options.update(q_var=tuple(q_var), r_var=tuple(r_var))
    by = {f.name: i for i, f in enumerate(block.config)}
    block.config[by["gain"]] = dataclasses.replace(block.config[by["gain"]], default=tuple(gain.ravel()))


SPEC = registry.Estimator(
    name="kalman",
    summary="Kalman filter, constant-jerk model, steady-state gain (seed 000 §II-C)",
    build=lambda ctx, choice: build(ctx),
    acceleration="always",
    genes=(registry.Gene("est.q_var", 1e-3, 1e5),),
    in_study=True,
    design_keys=("q_var", "r_var"),
    finish=_finish,
    default=True,
)
registry.register(SPEC)
