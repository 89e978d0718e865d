"""The gain margin of computed torque closed on the Kalman estimate, and the gains that keep it.

Computed torque, u = M_hat (qdd_d + Kp (q_d - q_hat) + Kd (qd_d - qd_hat)) + n_hat, leaves each
joint a double integrator under a PD law when M_hat = M. A model error scales the law by
M^-1 M_hat: on the diagonal an effective gain g = 1 +- the error. Fed the Kalman estimate, whose
q-dot lags the encoder, the sampled loop is stable only for g below a limit, its **gain margin**.
The Kalman is designed for R = the encoder's quantisation, so a coarse encoder makes it slow: on
planar2's 14-bit link-side encoders, Kp = 100, Kd = 13 and the Kalman's Q = 10 rad^2/s^6 leave a
margin of 1.10, so a model 10 % off puts the loop into a limit cycle whose q-dot error the
observers read as a residual; on the iiwa's 1.05e7 counts per turn the margin is 13.

``gain_margin`` computes it per joint on the exact sampled loop the loopback runs (the command of
sample k held over sample k, the estimate of sample k updated with that sample's position;
quantisation left out: the analysis is linear). It is a gain margin only (no phase or delay
margin), per joint (exact where M^-1 M_hat is a scalar times the identity), and without the
one-sample computation delay a drive may add: with that delay planar2's margin is 1.07 instead of
1.10, the iiwa's 10.8 instead of 13.4. ``scaled_gains`` keeps a margin of at least
``MARGIN`` = 2 (6 dB, the textbook's minimum for a loop whose plant is known to a few tens of per
cent): where the margin is short it lowers the loop's bandwidth at the same damping ratio
(Kp lambda^2, Kd lambda, the largest lambda <= 1 that gives the margin); a joint with the margin
already keeps its gains. The rule reads only the encoders, the rate and the gains, never a run.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from codegen.blocks import kalman

__all__ = ["MARGIN", "gain_margin", "scaled_gains"]

MARGIN = 2.0  # the smallest gain margin scaled_gains leaves (6 dB)
_G_MAX = 1e3  # margins above this are reported as this (the loop is then not the concern)


def _stable(ts: float, m: tuple[float, float, float], kp: float, kd: float, g: float) -> bool:
    """One joint's sampled loop at effective gain g: state (q, qd, the estimate's q, qd, qdd after
    sample k's update); u = -g (Kp q_hat + Kd qd_hat) held over the sample; the next sample's
    prediction F x_hat corrected by m times its innovation. Stable: every eigenvalue inside the
    unit circle."""
    f = np.array([[1.0, ts, ts * ts / 2], [0.0, 1.0, ts], [0.0, 0.0, 1.0]])
    u = np.zeros(5)
    u[2:5] = (-g * kp, -g * kd, 0.0)
    a = np.zeros((5, 5))
    a[0, 0], a[0, 1], a[1, 1] = 1.0, ts, 1.0
    a[0] += ts * ts / 2 * u
    a[1] += ts * u
    predicted = np.zeros((3, 5))
    predicted[:, 2:5] = f
    a[2:5] = predicted + np.outer(np.asarray(m), a[0] - predicted[0])
    return bool(np.abs(np.linalg.eigvals(a)).max() < 1.0)


@functools.lru_cache(maxsize=256)  # collide designs every observer's pipeline of a robot alike
def _margin(ts: float, m: tuple[float, float, float], kp: float, kd: float) -> float:
    """The largest g of the stable interval that starts near 0 (bisection after a log-spaced scan:
    the stable set of a PD loop with a low-pass estimate is one interval (0, g_max)); 0 if the loop
    is unstable at every g scanned."""
    grid = np.logspace(-3, math.log10(_G_MAX), 61)
    stable = [_stable(ts, m, kp, kd, float(g)) for g in grid]
    if not any(stable):
        return 0.0
    first = stable.index(True)
    if all(stable[first:]):
        return _G_MAX
    last = first + stable[first:].index(False) - 1
    lo, hi = float(grid[last]), float(grid[last + 1])
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _stable(ts, m, kp, kd, mid) else (lo, mid)
    return lo


def _checked(ts: float, q_var: float, cpr: np.ndarray, gear: np.ndarray, kp: np.ndarray, kd: np.ndarray) -> None:
    """One ValueError naming what is not positive (and finite): the analysis needs a loop to analyse."""
    named = {"sample period": ts, "Kalman Q": q_var, "encoder cpr": cpr, "gear ratio": gear, "Kp": kp, "Kd": kd}
    values = {name: np.asarray(v, float) for name, v in named.items()}
    bad = [name for name, v in values.items() if not np.all(np.isfinite(v) & (v > 0))]
    if bad:
        raise ValueError(f"loop margin: {', '.join(bad)} must be positive and finite")


def _kalman_rows(ts: float, q_var: float, cpr: np.ndarray, gear: np.ndarray) -> list[tuple[float, float, float]]:
    rows = kalman.design(ts, np.full(len(cpr), q_var), kalman.measurement_variances(cpr, gear))
    return [(float(r[0]), float(r[1]), float(r[2])) for r in np.asarray(rows).reshape(len(cpr), 3)]


def gain_margin(
    ts: float, q_var: float, cpr: np.ndarray, gear: np.ndarray, kp: np.ndarray, kd: np.ndarray
) -> np.ndarray:
    """Per joint, the gain margin of computed torque (gains kp, kd) on the Kalman estimate designed
    for jerk variance ``q_var`` (rad^2/s^6) and R the quantisation of encoders ``cpr`` through
    ``gear``, sampled at ``ts`` (s). ValueError if any of them is not positive."""
    _checked(ts, q_var, np.asarray(cpr, float), np.asarray(gear, float), np.asarray(kp, float), np.asarray(kd, float))
    rows = _kalman_rows(ts, q_var, np.asarray(cpr, float), np.asarray(gear, float))
    kp_, kd_ = (
        np.broadcast_to(np.asarray(kp, float), (len(rows),)),
        np.broadcast_to(np.asarray(kd, float), (len(rows),)),
    )
    return np.array([_margin(ts, m, float(p), float(d)) for m, p, d in zip(rows, kp_, kd_)])


def scaled_gains(
    ts: float, q_var: float, cpr: np.ndarray, gear: np.ndarray, kp: float, kd: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per joint (Kp lambda^2, Kd lambda) with lambda the largest in (0, 1] whose loop keeps a gain
    margin of ``MARGIN``; lambda is rounded down to 1e-3 so that the last bits of one machine's
    eigenvalues cannot move the gains a run uses. ValueError if an input is not positive or no lambda
    down to 1e-3 keeps the margin (an encoder so coarse that the loop would be all but open)."""
    _checked(ts, q_var, np.asarray(cpr, float), np.asarray(gear, float), np.asarray(kp, float), np.asarray(kd, float))
    rows = _kalman_rows(ts, q_var, np.asarray(cpr, float), np.asarray(gear, float))
    lams = []
    for m in rows:
        if _margin(ts, m, kp, kd) >= MARGIN:
            lams.append(1.0)
            continue
        lo, hi = 0.0, 1.0
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _margin(ts, m, kp * mid * mid, kd * mid) >= MARGIN else (lo, mid)
        lam = math.floor(lo * 1000.0) / 1000.0
        if lam <= 0.0:
            raise ValueError(
                f"loop margin: no gains down to 1e-3 of Kp = {kp:g}, Kd = {kd:g} keep a margin of {MARGIN:g}"
            )
        lams.append(lam)
    scale = np.array(lams)
    return kp * scale * scale, kd * scale
