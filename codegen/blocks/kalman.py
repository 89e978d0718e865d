"""Kalman filter on a per-axis triple integrator (Liu et al. §II-C, Belanger 1992).

z = [q, qd, qdd], dz/dt = A z + Gamma w (w: jerk, zero-mean, variance Q per axis in rad^2/s^6, held
over a sample as c2d does), y = q + v with
Var(v) = R = dq^2 / 3 (Liu et al.'s choice; dq = the encoder resolution at the joint). Discretised with zero-order
hold as MATLAB's c2d + dlqe do: A_d = exp(A T), Gamma_d = int_0^T exp(A s) ds Gamma, Q_d =
Gamma_d Q Gamma_d^T. The steady-state gain M = P C^T / (C P C^T + R), P the a-priori covariance from
the discrete Riccati equation, solved here at generation time (structured doubling) from the
robot YAML's ``kalman.q_var`` / ``kalman.r_var`` (default Q = 10, R from the encoder); a new
design (``manipgen evaluate --tune``, then ``manipgen export-config``) replaces it in the config.
Each sample: x- = A_d x; x = x- + M (q - x-_1) -- the current estimate x[k|k]. On a lost sample
(valid = 0) it predicts without updating.

``kalman:tustin=1`` is Liu et al.'s own filter, the one its recorded Experiment 1 output holds (to
4e-5 rad/s with Table 8's Q, docs/evaluation.md; ``manipgen evaluate --gains paper`` selects it):
MATLAB's c2d with the bilinear (Tustin) method, then dlqe with the continuous noise input G =
[0 0 1]'. Tustin maps A to the same A_d (A is nilpotent) but the measurement to C_d = C (I - A T/2)^-1
= [1, T/2, T^2/4], and dlqe's process noise is G Q G' = diag(0, 0, Q) (no T, no integration over
the sample). Its state is read as [q, qd, qdd] a half sample earlier: the velocity output lags the
zero-order-hold filter's by T/2. In the coordinates z = [C_d x, x_2, x_3] the step keeps the same
shape: z- = A_z z with A_z = [[1, T, T^2], [0, 1, T], [0, 0, 1]], z = z- + M_z (q - z-_1), M_z =
[C_d M, M_2, M_3].
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import casadi as cs
import numpy as np

from codegen.model import exact
from codegen.model.robot import Robot

from . import registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs

DEFAULT_Q = 10.0


def discrete_model(ts: float, tustin: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(A_d, Gamma_d) of the triple integrator under zero-order hold (exact: A is nilpotent); with
    ``tustin`` the step matrix A_z of the Tustin form's coordinates (module docstring) and G."""
    if tustin:
        return np.array([[1.0, ts, ts * ts], [0.0, 1.0, ts], [0.0, 0.0, 1.0]]), np.array([0.0, 0.0, 1.0])
    a = np.array([[1.0, ts, ts * ts / 2.0], [0.0, 1.0, ts], [0.0, 0.0, 1.0]])
    g = np.array([ts**3 / 6.0, ts**2 / 2.0, ts])
    return a, g


def riccati(ts: float, q: float, r: float, tustin: bool = False) -> Any:
    """A-priori covariance P = A P A' - A P C'(C P C' + R)^-1 C P A' + Qd by the structured doubling
    algorithm (Chu et al. 2004), in mpmath at codegen.model.exact.DIGITS digits from the exact A_d of
    ``ts`` and C = [1 0 0], Qd = Q Gamma_d Gamma_d' (zero-order hold), or with ``tustin`` C_d = [1, T/2,
    T^2/4], Qd = diag(0, 0, Q) (Liu et al.'s c2d 'tustin' + dlqe): the gain printed into the C is the
    same on every machine (a double-precision doubling differs in the last bits from one BLAS kernel
    to the next). Written here so that the tests can hold it against scipy's DARE. Returns an mpmath
    3x3 matrix."""
    mp = exact.MP
    t, qv, rv = mp.mpf(float(ts)), mp.mpf(float(q)), mp.mpf(float(r))
    a = mp.matrix([[1, t, t * t / 2], [0, 1, t], [0, 0, 1]])
    g = mp.matrix([0, 0, 1]) if tustin else mp.matrix([t**3 / 6, t**2 / 2, t])
    c = measurement_row(t, tustin)
    ak, hk = a.T, qv * (g * g.T)
    gk = (c * c.T) / rv
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


def measurement_row(t: Any, tustin: bool) -> Any:
    """C (column, mpmath) of the discrete model: [1 0 0], or Tustin's C (I - A T/2)^-1 = [1, T/2, T^2/4]."""
    mp = exact.MP
    return mp.matrix([1, t / 2, t * t / 4]) if tustin else mp.matrix([1, 0, 0])


def kalman_gain(ts: float, q: float, r: float, tustin: bool = False) -> np.ndarray:
    """Steady-state innovation gain M (3,) for the current estimate, as MATLAB's dlqe; each entry
    rounded once from the mpmath solution. With ``tustin``: M_z = [C_d M, M_2, M_3], the gain in the
    step's coordinates (module docstring)."""
    return np.array(_gain(float(ts), float(q), float(r), bool(tustin)))


@functools.lru_cache(maxsize=4096)  # run-time redesigns (tuning) repeat the same few designs
def _gain(ts: float, q: float, r: float, tustin: bool) -> tuple[float, float, float]:
    mp = exact.MP
    p = riccati(ts, q, r, tustin)
    c = measurement_row(mp.mpf(ts), tustin)
    pc = p * c
    m = pc / ((c.T * pc)[0, 0] + mp.mpf(r))
    m0 = (c.T * m)[0, 0]  # C_d M: the update of z_1 = C_d x (= M_1 when C = [1 0 0])
    return float(m0), float(m[1]), float(m[2])


def measurement_variance(cpr: float, gear: float) -> float:
    """R = dq^2 / 3 with dq = 2 pi / (cpr gear) the joint-side resolution (Liu et al. §II-C)."""
    return float((2 * exact.MP.pi / (exact.MP.mpf(float(cpr)) * exact.MP.mpf(float(gear)))) ** 2 / 3)


def measurement_variances(cpr: Any, gear: Any) -> np.ndarray:
    """measurement_variance per joint, of the encoders' counts per revolution and gear ratios."""
    return np.array([measurement_variance(c, g) for c, g in zip(cpr, gear)])


def design(ts: float, q_var: np.ndarray, r_var: np.ndarray, tustin: bool = False) -> np.ndarray:
    """Gains (n, 3) for per-joint Q and R; both must be positive (ValueError otherwise)."""
    q, r = np.asarray(q_var, float), np.asarray(r_var, float)
    if not (np.all(np.isfinite(q)) and np.all(q > 0)):
        raise ValueError(f"Kalman q_var must be positive, got {q.tolist()}")
    if not (np.all(np.isfinite(r)) and np.all(r > 0)):
        raise ValueError(f"Kalman r_var must be positive, got {r.tolist()}")
    return np.array([kalman_gain(ts, a, b, tustin) for a, b in zip(q, r)])


def build(ctx: Ctx, tustin: bool = False) -> Block:
    """The gain in the config comes from the design values (Block.options q_var, r_var) once the
    pipeline knows the final encoder config: pipeline.build_pipeline calls ``design``."""
    n, ts = ctx.n, ctx.ts
    ad, _ = discrete_model(ts, tustin)
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
        options={"q_var": (DEFAULT_Q,) * n, **({"tustin": 1} if tustin else {})},
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
        else measurement_variances(cpr, by_enc[side + "gear"])
    )
    gain = design(ts, q_var, r_var, bool(block.options.get("tustin", 0)))
    block.options.update(q_var=tuple(q_var), r_var=tuple(r_var))
    by = {f.name: i for i, f in enumerate(block.config)}
    block.config[by["gain"]] = dataclasses.replace(block.config[by["gain"]], default=tuple(gain.ravel()))


def _redesign(
    ts: float, options: Mapping[str, float], enc: Mapping[str, Any], given: Mapping[str, Any]
) -> dict[str, Any]:
    """est.gain for the jerk variance q_var per joint (rad^2/s^6) and the measurement variance r_var
    (rad^2; default: the quantisation of the config's encoder, (2 pi / (cpr gear))^2 / 3)."""
    n = len(enc["enc.cpr"])
    q_var = np.broadcast_to(np.asarray(given["q_var"], float), (n,))
    r_var = (
        np.broadcast_to(np.asarray(given["r_var"], float), (n,))
        if given.get("r_var") is not None
        else measurement_variances(enc["enc.cpr"], enc["enc.gear"])
    )
    return {"est.gain": design(ts, q_var, r_var, bool(options.get("tustin", 0)))}


def _check(opts: Any) -> str | None:
    return (
        None
        if opts.get("tustin", 0) in (0, 1)
        else "tustin must be 0 (zero-order hold) or 1 (Liu et al.'s c2d 'tustin')"
    )


SPEC = registry.Estimator(
    name="kalman",
    summary="Kalman filter, constant-jerk model, steady-state gain (Liu et al. §II-C)",
    build=lambda ctx, choice: build(ctx, tustin=bool(dict(choice.params).get("tustin", 0))),
    options={"tustin": int},  # no default: the plain name stays the zero-order-hold filter's label
    check=_check,
    acceleration="always",
    genes=(registry.Gene("est.q_var", 1e-3, 1e5),),
    in_study=True,
    design_keys=("q_var", "r_var"),
    finish=_finish,
    redesign=_redesign,
    default=True,
)
registry.register(SPEC)
