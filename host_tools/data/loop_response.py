"""The recording loop's own tracking error after a step of the desired acceleration (issue 45), for the
off_trajectory input check (host_tools.data.checks): a generated motion joins its sine, point-to-point
and trapezoidal pieces with acceleration steps (planar2's up to 3 rad/s^2), and the loop answers each
with a transient that is no departure from the desired motion.

The loop (manipgen's computed torque, codegen.blocks.controllers, with the Kalman estimator,
codegen.blocks.kalman), one joint, the model exact: the plant follows qdd = nu, nu = qdd_d +
Kp (q_d - q_hat) + Kd (qd_d - qd_hat) held over the sample; the estimator x_k = F x_(k-1) + M q_k,
F = (I - M c) A (A the triple integrator's step, c = [1 0 0], M the gain est.gain; q_hat, qd_hat =
x_0, x_1). It models the acceleration as a random walk, so a step of qdd_d is a jerk impulse it
follows only with its lag, and the controller acts on the lagging estimate. After a unit step of
qdd_d at k = 0 from a settled loop, in the errors e = q_d - q and y = x - (q_d, qd_d, qdd_d) (the
desired motion itself follows A exactly while its acceleration is constant):

    u_k = Kp y0_k + Kd y1_k                  (= qdd_d - nu: the plant's acceleration error)
    e_(k+1) = e_k + T ed_k + T^2/2 u_k,  ed_(k+1) = ed_k + T u_k
    y_(k+1) = F y_k - M e_(k+1),         e_0 = ed_0 = 0, y_0 = (0, 0, -1)

and h_k = e_k (s^2: rad per rad/s^2). The loop is linear in the desired motion, so its error is
h * (the steps of qdd_d); ``step_allowance`` bounds the part that the motion's jumps cause by
sum_i |jump_i| |h_(k-i)| (the triangle inequality), a jump being the step beyond the smooth change of
its neighbours. Checked against the loopback: planar2's shoulder, at rest until its desired acceleration
steps to 3.01 rad/s^2 at t = 0 (seed 0), peaks at 8.54 mrad 0.168 s later; 3.01 h peaks at 8.40 mrad
at 0.170 s. Gravity through the estimate's error and Coulomb friction at a reversal are not in h:
the check's own bound (OFF_FACTOR x the median) covers them as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from codegen.blocks import controllers, kalman
from codegen.blocks.kalman import discrete_model

# h is computed until the loop's slowest mode has decayed to TAIL of its start: a jump's response is then
# under 1% of its peak (planar2: the peak 2.8e-3 s^2, below 0.1 counts per rad/s^2 of step); its
# estimator-controller mode rings at 26 rad/s and decays at 0.64/s: 7.2 s
TAIL = 0.01
# s: a loop whose transient rings for longer is no working loop whose answer the check should excuse
# (planar2's, the slowest bundled, 7.2 s; the UR5's and the iiwa's 0.7 s)
LONGEST = 60.0


def computed_torque_kalman(kp: np.ndarray, kd: np.ndarray, gain: np.ndarray, ts: float) -> np.ndarray | None:
    """h (K, n), s^2: each joint's tracking error after a unit step of its desired acceleration (the module
    docstring), from the gains Kp, Kd (n,), the Kalman gain (n, 3) and the period; None where the loop is
    not stable (its closed-loop step matrix has a mode on or beyond the unit circle) or rings for longer
    than LONGEST."""
    a, _ = discrete_model(ts)
    c = np.array([1.0, 0.0, 0.0])
    n = len(kp)
    f = np.stack([(np.eye(3) - np.outer(gain[j], c)) @ a for j in range(n)])  # (n, 3, 3)
    radius = 0.0
    for j in range(n):  # the closed loop's step matrix on s = (e, ed, y) and its spectral radius
        s = np.zeros((5, 5))
        u = np.array([0.0, 0.0, kp[j], kd[j], 0.0])
        s[0] = np.array([1.0, ts, 0, 0, 0]) + ts * ts / 2 * u
        s[1] = np.array([0.0, 1.0, 0, 0, 0]) + ts * u
        s[2:, 2:] = f[j]
        s[2:] -= np.outer(gain[j], s[0])
        radius = max(radius, float(np.max(np.abs(np.linalg.eigvals(s)))))
    if radius >= 1.0 or np.log(TAIL) / np.log(radius) > LONGEST / ts:
        return None
    k_len = int(np.ceil(np.log(TAIL) / np.log(radius))) + 1
    h = np.zeros((k_len, n))
    e, ed, y = np.zeros(n), np.zeros(n), np.tile(np.array([[0.0], [0.0], [-1.0]]), (1, n))
    for k in range(k_len):
        h[k] = e
        u_k = kp * y[0] + kd * y[1]
        e, ed = e + ts * ed + ts * ts / 2 * u_k, ed + ts * u_k
        y = np.einsum("jab,bj->aj", f, y) - gain.T * e
    return h


def step_response_of(rt: Any) -> np.ndarray | None:
    """h of a loaded pipeline (host_tools.bindings.rt.Realtime) when it is computed torque with the Kalman
    estimator in its zero-order-hold form (from its config's gains); None for any other pipeline (its
    response is not modelled: the check keeps its bound alone)."""
    opts = rt.manifest["options"]["rt_options"]
    if opts["controller"] != controllers.COMPUTED_TORQUE.name or opts["estimator"] != kalman.SPEC.name:
        return None
    if dict(opts.get("estimator_params") or {}).get("tustin", 0):
        # Liu et al.'s Tustin form: its step A_z does not carry a constant acceleration exactly (its
        # position row adds T^2 a, not T^2 a / 2), so the error coordinates above do not hold: not modelled
        return None
    cfg = rt.config
    return computed_torque_kalman(
        np.asarray(cfg["ctl.kp"], float),
        np.asarray(cfg["ctl.kd"], float),
        np.asarray(cfg["est.gain"], float),
        float(rt.sample_period),
    )


def jumps(qdd_des: np.ndarray) -> np.ndarray:
    """The steps of the desired acceleration (K, n): its change over each sample less the median change
    over the two samples either side (a smooth motion's jerk x T, which the loop follows as its usual
    tracking error); the first sample's is its acceleration itself (the loop starts settled at rest)."""
    d = np.diff(np.asarray(qdd_des, float), axis=0, prepend=0.0)
    k = len(d)
    pad = np.full((k + 4, d.shape[1]), np.nan)
    pad[2:-2] = d
    around = np.stack([pad[0:k], pad[1 : k + 1], pad[3 : k + 3], pad[4 : k + 4]])
    smooth = np.nan_to_num(np.nanmedian(around, axis=0)) if k > 1 else np.zeros_like(d)
    out: np.ndarray = d - smooth
    return out


def step_allowance(qdd_des: np.ndarray, h: np.ndarray) -> np.ndarray:
    """sum_i |jump_i| |h_(k-i)| (K, n), rad or m: a bound on the loop's tracking error caused by the
    desired acceleration's steps (module docstring)."""
    # here, not at the top: scipy.signal costs every command that reads a log 1.2 s to import
    # (tests/host_tools/identification/test_zero_phase.py keeps it out of identify's imports)
    from scipy.signal import fftconvolve

    jump = np.abs(jumps(qdd_des))
    k = len(jump)
    out = np.zeros(jump.shape)
    for j in range(jump.shape[1]):
        out[:, j] = fftconvolve(jump[:, j], np.abs(h[:, j]))[:k]
    return np.maximum(out, 0.0)  # the FFT's rounding below zero where there is no jump
