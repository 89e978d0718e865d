"""The float32 build of a robot's real-time pipeline against the double build, over long closed-loop runs.

    from codegen.model.description import load_robot
    from host_tools.studies.precision import compare
    c = compare(load_robot("kuka_iiwa14"), seconds=60.0)
    print(c.table())                     # per output: max |error|, range, error / range, bound, drift

What is compared: a contact-free closed loop (the double build's ``<robot>_loopback``: RK4 plant,
its encoders, the double pipeline as the controller) makes the input stream -- raw encoder counts,
the torque applied over the previous sample, the desired trajectory -- and BOTH builds of the pipeline
replay that same stream open loop (``Realtime.run``), their states running on across chunks. The
real-valued inputs are rounded to float32 first and both builds get those rounded values, so the
difference is the float arithmetic alone (and the float config: gains and parameters as the float
build stores them), not a different plant. Closing the loop with the float build's own loopback
would also integrate the plant in float32 and let the two runs part by an encoder count now and
then; the comparison would then measure the plant, not the controller.

The motion is periodic (``cycle_trajectory``: the generated Liu et al.-like motion and back), so
windows of one cycle see the same motion and the error of the last window against the first shows
drift. Long runs are simulated in chunks that continue exactly (the plant restarts from the state
the run reached; the generator's C state is replayed to that sample), so 1 h at 1 kHz needs only a
chunk's memory.

Bounds (u = 2^-24, the float32 unit roundoff), per joint, first order, all worst case:
  q          encoder read: 4 roundings of |q| + |offset| (the count is exact below 2^24).
  q_hat ...  Kalman, either variant the block generates: the step is x- = A x, x = x- + M (q - c x-),
             c = [1 0 0], so the float error obeys e_k = Phi e_{k-1} + w_k, Phi = (I - M c) A (the
             filter's own error dynamics, stable), and |e| <= sum_k |Phi^k| |w| (the l1 norm of its
             impulse response), w = the roundings of one step (``kalman_rounding``, read off the
             nonzero entries of A). A and M are the generated block's (``kalman_step_matrix``: the
             block's ``kalman.discrete_model`` with its manifest's ``tustin`` option; M: the config's
             ``est.gain``): zero-order hold, A = A_d = [[1, T, T^2/2], [0, 1, T], [0, 0, 1]]; Liu et
             al.'s c2d 'tustin' + dlqe (``kalman:tustin=1``), the block steps z = [C_d x, x_2, x_3]
             with A = A_z = S A_d S^-1 = [[1, T, T^2], [0, 1, T], [0, 0, 1]] and M_z = S M (S = [C_d;
             0 1 0; 0 0 1], C_d = [1, T/2, T^2/4]): Phi_z = (I - M_z c) A_z = S (I - M C_d) A_d S^-1
             since c S = C_d -- the dlqe filter's error dynamics (same poles), in the coordinates of
             its outputs. The zero-order-hold Phi with Tustin's gain is a different, wrong matrix
             (on the LWA 4P its bound of qd_hat is 4x too wide).
  tau_cmd    computed torque rnea(q_hat, qd_hat, nu): its sensitivities to q_hat and qd_hat (finite
             differences of the double dynamics along the run, plus M (Kp, Kd) through nu) times
             the Kalman bounds, plus the float rule of the dynamics functions (issue 2, held against
             Pinocchio in tests/peers: 1e-4 ||tau|| + 1e-6).
  r          momentum observer r = K_O (p - p0 - I), I_k = I_{k-1} + T (tau - beta + r_{k-1}): the
             rounding of I is corrected by r's own feedback (pole 1 - K_O T), so
             |dr| <= 2 K_O |dp| + |dbeta| + u max|I| / T + 2 u (K_O (|p| + |I|) + |tau| + |beta|),
             dp and dbeta by the same sensitivities-times-estimate-bounds plus the float rule.
  Coulomb    with sign(qd) friction (the iiwa's, the LWA 4P's) the model is discontinuous: where the
             double q̇̂_j lies within its float bound of 0, the two builds may take opposite signs,
             and tau_cmd_j differs by up to 2 FC_j; r_j takes a kick of K_O T 2 FC_j that decays at
             1 - K_O T per sample. These samples ("ambiguous") get that term added.
Elastic arms (state-feedback controller, spring-torque observer): q, q_hat, qd_hat, qdd_hat and the
motor estimates are bounded; tau_cmd and r are measured only (bound None).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from codegen.blocks import kalman
from codegen.model.robot import Robot
from host_tools.bindings.compiled import load
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory, generated_trajectory

U = 2.0**-24  # float32 unit roundoff
FLOAT_RULE = (1e-4, 1e-6)  # issue 2: float dynamics functions, ||a - b|| <= 1e-4 ||b|| + 1e-6
MARGIN = 2.0  # first-order analysis, sensitivities sampled along the run


def cycle_trajectory(robot: Robot, ts: float, half: float = 10.0, seed: int = 0) -> Trajectory:
    """One period of a periodic motion: the generated trajectory (rest to rest) and the same path
    back in reverse time (q(T - t), -qd(T - t), qdd(T - t)); 2 ``half`` s long, starting at rest."""
    g = generated_trajectory(robot, half, ts, seed=seed)
    q = np.vstack([g.q, g.q[::-1][1:-1]])
    qd = np.vstack([g.qd, -g.qd[::-1][1:-1]])
    qdd = np.vstack([g.qdd, g.qdd[::-1][1:-1]])
    return Trajectory(f"cycle({g.name})", np.arange(len(q)) * ts, q, qd, qdd)


def _piece(cycle: Trajectory, start: int, count: int) -> Trajectory:
    idx = (start + np.arange(count)) % len(cycle.time)
    ts = float(cycle.time[1] - cycle.time[0])
    return Trajectory(cycle.name, (start + np.arange(count)) * ts, cycle.q[idx], cycle.qd[idx], cycle.qdd[idx])


def closed_loop_stream(
    gen: Realtime, cycle: Trajectory, samples: int, chunk: int, substeps: int = 4
) -> Iterator[dict[str, np.ndarray]]:
    """The step inputs of a contact-free closed loop (``gen`` as the controller, its detection
    reaction off) along the periodic ``cycle``, ``chunk`` samples at a time, continued exactly: each
    chunk simulates one sample more, whose plant state starts the next chunk, and the generator's
    state is brought to the chunk's end by replaying its inputs (bit for bit the loop's own step).
    Real inputs are rounded to float32 (both builds then see the same values)."""
    gen.config["det.reaction"] = 0
    gen.reset()
    start: dict[str, Any] = {}
    last_tau: np.ndarray | None = None
    done = 0
    while done < samples:
        k = min(chunk, samples - done)
        before = gen.snapshot()
        run = simulate(gen, _piece(cycle, done, k + 1), substeps=substeps, reset=False, **start)
        log, x = run.log, run.log.extra
        ins: dict[str, np.ndarray] = {key: np.asarray(v)[:k] for key, v in log.inputs().items()}
        ins["tau"] = ins["tau"].copy()
        if last_tau is not None:
            ins["tau"][0] = last_tau  # the loopback starts a call with in.tau = 0
        last_tau = np.asarray(x["tau_cmd"])[k - 1].copy()
        for key in ("tau", "q_des", "qd_des", "qdd_des"):
            ins[key] = ins[key].astype(np.float32)
        gen.restore(before)
        gen.run(ins)  # the generator's state at the chunk's end
        start = {"q0": x["q_true"][k], "qd0": x["qd_true"][k]}
        if "theta_true" in x:
            start.update(theta0=x["theta_true"][k], thetad0=x["thetad_true"][k])
        done += k
        yield ins


E1 = np.array([1.0, 0.0, 0.0])  # c: the Kalman step's innovation reads the predicted position (both forms)


def kalman_step_matrix(ref: Realtime, kind: str = "est") -> np.ndarray | None:
    """The prediction matrix A of the generated pipeline's Kalman block ``kind`` (``est``; ``mest``: an
    elastic arm's motor side) as the block builds its step: ``kalman.discrete_model`` with the
    block's own ``tustin`` option from the manifest (zero-order hold: A_d; Tustin: A_z, in the
    coordinates whose first entry is C_d x). None when that block is not a Kalman filter."""
    block = next((b for b in ref.rt_manifest["blocks"] if b["kind"] == kind), None)
    if block is None or block["name"] != kalman.SPEC.name:
        return None
    return kalman.discrete_model(ref.sample_period, bool(block["options"].get("tustin", 0)))[0]


def kalman_error_dynamics(gain: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Phi = (I - M c) A: the step x- = A x, x = x- + M (q - c x-) maps a state error e to Phi e."""
    return (np.eye(3) - np.outer(np.asarray(gain, float), E1)) @ np.asarray(a, float)


def kalman_error_l1(gain: np.ndarray, a: np.ndarray, tol: float = 1e-14, max_steps: int = 10**6) -> np.ndarray:
    """sum_k |Phi^k| (3 x 3, elementwise) of ``kalman_error_dynamics``: the worst-case gain from a
    per-step error w to the estimate [q, qd, qdd]."""
    flat = tuple(float(v) for v in np.ravel(gain)) + tuple(float(v) for v in np.ravel(a))
    return _l1(flat, tol, max_steps).copy()


@lru_cache(maxsize=64)
def _l1(gain_and_a: tuple[float, ...], tol: float, max_steps: int) -> np.ndarray:
    phi = kalman_error_dynamics(np.array(gain_and_a[:3]), np.reshape(gain_and_a[3:], (3, 3)))
    if max(abs(np.linalg.eigvals(phi))) >= 1.0:
        raise ValueError("the Kalman gain does not give a stable filter")
    total, power = np.zeros((3, 3)), np.eye(3)
    for _ in range(max_steps):
        total += np.abs(power)
        power = power @ phi
        if np.max(np.abs(power)) < tol:
            break
    return total


def kalman_rounding(gain: np.ndarray, a: np.ndarray, q_in: float, scale: np.ndarray, innovation: float) -> np.ndarray:
    """w: the worst-case float32 error one Kalman step adds to [q, qd, qdd] (first order), read off
    the step's shape x- = A x, x = x- + M (q - x-_1). ``q_in``: the bound of the position the
    filter reads (the encoder's); ``scale``: max |q|, |qd|, |qdd| of the estimate; ``innovation``:
    max |q - x-_1|. Prediction row i: per off-diagonal entry A_ij != 0 one product (2 roundings of
    |A_ij| s_j: the stored constant and the product; a diagonal 1 is no product) and one sum, each
    partial sum at most |A_i| s; the update carries those through I - M c, reads q_in through M,
    rounds |M| innovation 3 times (the difference -- exact by Sterbenz where q and x-_1 are within a
    factor 2 --, the stored gain, the product) and its sum once (u s)."""
    m, s, a = np.asarray(gain, float), np.asarray(scale, float), np.abs(np.asarray(a, float))
    products = (a != 0) & ~np.eye(3, dtype=bool)
    pred = U * (products.sum(axis=1) * (a @ s) + 2 * (a * products) @ s)
    through = np.abs(np.eye(3) - np.outer(m, E1)) @ pred
    return through + np.abs(m) * q_in + U * s + 3 * U * np.abs(m) * innovation


def kalman_bound(gain: np.ndarray, a: np.ndarray, q_in: float, scale: np.ndarray, innovation: float) -> np.ndarray:
    """Worst-case float32 error of one joint's Kalman estimate [q, qd, qdd] (first order): sum_k
    |Phi^k| w (``kalman_error_l1`` @ ``kalman_rounding``) for the step's prediction matrix ``a``
    (``kalman_step_matrix``)."""
    return kalman_error_l1(gain, a) @ kalman_rounding(gain, a, q_in, scale, innovation)


def _jac(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, h: np.ndarray, shift: bool = False) -> np.ndarray:
    """|df/dx| by forward differences; ``shift``: between x + h and x + 2 h (both on the side of h,
    so a sign() jump at x = 0 is not differentiated)."""
    f0 = f(x + h * 0.0) if not shift else None
    cols = []
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h[j]
        a = f(x + e) if shift else f0
        b = f(x + 2 * e) if shift else f(x + e)
        cols.append((b - a) / h[j])
    return np.abs(np.array(cols).T)


@dataclass
class Channel:
    """One output's comparison, per joint (arrays of length n, or of the output's width)."""

    name: str
    max_abs: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    bound: np.ndarray | None = None  # smooth bound (without the Coulomb term)
    worst_ratio: float = 0.0  # max over samples of |error| / (bound + Coulomb term)
    beyond_coulomb: np.ndarray | None = None  # max of |error| - Coulomb term (tau_cmd, r)
    window_max: list[np.ndarray] = field(default_factory=list)  # per window (beyond the Coulomb term)
    window_median: list[np.ndarray] = field(default_factory=list)

    @property
    def range(self) -> np.ndarray:
        return self.hi - self.lo

    @property
    def relative(self) -> float:
        """max_j |error_j| / range_j over joints that move."""
        rng = self.range
        ok = rng > 0
        return float(np.max(self.max_abs[ok] / rng[ok])) if np.any(ok) else 0.0


@dataclass
class Comparison:
    robot: str
    label: str
    seconds: float
    samples: int
    wall_seconds: float
    channels: dict[str, Channel]
    ambiguous: np.ndarray  # samples per joint where sign(qd_hat) may differ
    flips: np.ndarray  # samples per joint where it did
    flag_mismatch: int  # samples where collision / above differ
    r_float_window_max: list[float]  # max |r| of the float build per window
    count_exact: bool  # every count magnitude below 2^24

    def drift(self, name: str, stat: str = "max", windows: int = 1) -> float:
        """Error in the last ``windows`` windows over the first ``windows`` (max over joints)."""
        w = getattr(self.channels[name], "window_" + stat)
        first = np.max(np.array(w[:windows]), axis=0)
        last = np.max(np.array(w[-windows:]), axis=0)
        return float(np.max(last) / max(float(np.max(first)), 1e-30))

    def summary(self) -> str:
        first, last = self.r_float_window_max[0], self.r_float_window_max[-1]
        return (
            f"{self.robot} ({self.label}): {self.seconds:g} s = {self.samples} samples in "
            f"{self.wall_seconds:.1f} s; sign(qd_hat) ambiguous on {int(self.ambiguous.sum())} joint-samples, "
            f"flipped on {int(self.flips.sum())}; collision/above flags differ on {self.flag_mismatch} "
            f"samples; float max |r| first window {first:.3g}, last {last:.3g} N m; "
            f"error drift (last / first window, max over outputs): max {self.worst_drift('max'):.2f}, "
            f"median {self.worst_drift('median'):.2f}"
        )

    def worst_drift(self, stat: str = "max", windows: int = 1) -> float:
        vals = [self.drift(k, stat, windows) for k, ch in self.channels.items() if np.max(ch.max_abs) > 0]
        return max(vals) if vals else 0.0

    def table(self, header: bool = True) -> str:
        rows = []
        if header:
            rows.append(
                "| robot | output | max abs error | beyond Coulomb | range | error / range | bound "
                "| error / bound | first window | last window |"
            )
            rows.append("| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: |")
        for ch in self.channels.values():
            first = float(np.max(ch.window_max[0])) if ch.window_max else 0.0
            last = float(np.max(ch.window_max[-1])) if ch.window_max else 0.0
            bound = "—" if ch.bound is None else f"{float(np.max(ch.bound)):.2g}"
            ratio = "—" if ch.bound is None else f"{ch.worst_ratio:.2f}"
            beyond = "" if ch.beyond_coulomb is None else f"{float(np.max(ch.beyond_coulomb)):.3g}"
            rows.append(
                f"| {self.robot} | {ch.name} | {float(np.max(ch.max_abs)):.3g} | {beyond} | "
                f"{float(np.max(ch.range)):.3g} | {ch.relative:.2g} | {bound} | {ratio} | "
                f"{first:.3g} | {last:.3g} |"
            )
        return "\n".join(rows)


def _sensitivities(
    robot: Robot, rt: Realtime, outs: dict[str, np.ndarray], stride: int, upto: int
) -> dict[str, np.ndarray]:
    """Per joint maxima along the first ``upto`` samples of the run (every ``stride``-th: one cycle
    of the periodic motion covers every state it visits) of the first-order error gains of
    tau_cmd, p and beta w.r.t. q_hat and qd_hat, and of |tau|, |p|, |beta| (double dynamics)."""
    dyn = load(robot)
    n = rt.dof
    kp, kd = np.asarray(rt.config["ctl.kp"], float), np.asarray(rt.config["ctl.kd"], float)
    hq = np.full(n, 1e-6)
    acc: dict[str, list[np.ndarray]] = {}
    for k in range(0, min(upto, len(outs["q_hat"])), stride):
        q, qd = outs["q_hat"][k].astype(float), outs["qd_hat"][k].astype(float)
        nu = (outs["qdd_d"][k] + kp * (outs["q_d"][k] - q) + kd * (outs["qd_d"][k] - qd)).astype(float)
        hqd = np.where(qd >= 0, 1e-6, -1e-6)  # one-sided, away from a sign() jump
        zero = np.zeros(n)
        mass = np.array([dyn.rnea(q, zero, e) - dyn.rnea(q, zero, zero) for e in np.eye(n)]).T
        mass = np.abs(mass)

        def beta(qq: np.ndarray, vv: np.ndarray) -> np.ndarray:
            return np.asarray(dyn.gravity(qq) - dyn.coriolis_matrix(qq, vv).T @ vv + dyn.friction(vv))

        def mom(qq: np.ndarray, vv: np.ndarray) -> np.ndarray:
            return np.asarray(dyn.rnea(qq, zero, vv) - dyn.rnea(qq, zero, zero))  # noqa: B023 (called within this iteration)

        tau = dyn.rnea(q, qd, nu)
        vals = {
            "tau_q": _jac(lambda x: dyn.rnea(x, qd, nu), q, hq) + mass * kp,  # noqa: B023 (called within this iteration)
            "tau_qd": _jac(lambda x: dyn.rnea(q, x, nu), qd, hqd, shift=True) + mass * kd,  # noqa: B023 (called within this iteration)
            "p_q": _jac(lambda x: mom(x, qd), q, hq),  # noqa: B023 (called within this iteration)
            "p_qd": mass,
            "beta_q": _jac(lambda x: beta(x, qd), q, hq),  # noqa: B023 (called within this iteration)
            "beta_qd": _jac(lambda x: beta(q, x), qd, hqd, shift=True),  # noqa: B023 (called within this iteration)
            "tau": np.full(n, np.max(np.abs(tau))),
            "p": np.full(n, np.max(np.abs(mom(q, qd)))),
            "beta": np.full(n, np.max(np.abs(beta(q, qd)))),
        }
        for key, v in vals.items():
            acc.setdefault(key, []).append(v)
    return {key: np.max(np.array(v), axis=0) for key, v in acc.items()}


@dataclass
class _Model:
    """What the bounds need of the double build: the Coulomb friction FC per joint (zero without
    sign() friction), the observer gain K_O, the sample period."""

    fc: np.ndarray
    k_o: np.ndarray
    ts: float


def _model(robot: Robot, ref: Realtime) -> _Model:
    n = ref.dof
    names = list(ref.manifest["standard_parameter_names"])
    params = np.asarray(ref.config["model.params"], float)
    fc = (
        np.array([params[names.index(f"FC{j + 1}")] if f"FC{j + 1}" in names else 0.0 for j in range(n)])
        if robot.coulomb.model == "sign"
        else np.zeros(n)
    )
    return _Model(fc, np.asarray(ref.config["obs.k_o"], float) * np.ones(n), ref.sample_period)


def _encoder_bounds(ref: Realtime, scales: dict[str, np.ndarray], rigid: bool) -> dict[str, np.ndarray]:
    """The encoder reads' bounds (4 roundings of |q| + |offset|) and the desired trajectory's copies."""
    bounds = {"q": 4 * U * (scales["q"] + np.abs(np.asarray(ref.config["enc.offset"], float)))}
    if not rigid:
        bounds["theta"] = 4 * U * (scales["theta"] + np.abs(np.asarray(ref.config["enc.motor_offset"], float)))
    for key in ("q_d", "qd_d", "qdd_d"):
        bounds[key] = U * scales[key]  # copies of the (identical) inputs, no reaction
    return bounds


def _kalman_bounds(
    ref: Realtime, od: dict[str, np.ndarray], scales: dict[str, np.ndarray], rigid: bool
) -> dict[str, np.ndarray]:
    """The Kalman estimates' bounds (``kalman_bound`` per joint, with the prediction matrix of the
    variant generated), link side and, on an elastic arm, motor side; none for another estimator."""
    bounds: dict[str, np.ndarray] = {}
    for pre, pos in (("", "q"), ("theta", "theta")):
        a = kalman_step_matrix(ref, "mest" if pre else "est")
        if a is None or (pre and (rigid or f"{pre}_hat" not in od)):
            continue
        hat = [f"{pre}_hat", f"{pre}d_hat", f"{pre}dd_hat"] if pre else ["q_hat", "qd_hat", "qdd_hat"]
        x = np.stack([od[h] for h in hat], axis=-1).astype(float)  # (K, n, 3)
        innovation = np.max(np.abs(od[pos][1:] - x[:-1] @ a[0]), axis=0)  # q - x-_1
        gain = np.asarray(ref.config["mest.gain" if pre else "est.gain"], float)
        qin = 4 * U * (scales[pos] + np.abs(np.asarray(ref.config["enc.motor_offset" if pre else "enc.offset"], float)))
        b = np.array(
            [
                kalman_bound(gain[j], a, float(qin[j]), np.array([scales[h][j] for h in hat]), float(innovation[j]))
                for j in range(ref.dof)
            ]
        )
        for i, h in enumerate(hat):
            bounds[h] = b[:, i]
    return bounds


def _model_bounds(
    model: _Model,
    sens: dict[str, np.ndarray],
    bounds: dict[str, np.ndarray],
    scales: dict[str, np.ndarray],
    amb: np.ndarray,
    r_kick: np.ndarray,
) -> dict[str, np.ndarray]:
    """tau_cmd's and r's bounds (added to ``bounds``) from the estimates' bounds through the
    sensitivities; returns the Coulomb terms of the ``amb``iguous samples (``r_kick``: r's term
    carried across chunks, updated)."""
    k_o, ts, fc = model.k_o, model.ts, model.fc
    dq, dv = bounds["q_hat"], bounds["qd_hat"]
    rule = FLOAT_RULE[0] * sens["tau"] + FLOAT_RULE[1]
    bounds["tau_cmd"] = MARGIN * (sens["tau_q"] @ dq + sens["tau_qd"] @ dv + rule)
    dp = sens["p_q"] @ dq + sens["p_qd"] @ dv + FLOAT_RULE[0] * sens["p"] + FLOAT_RULE[1]
    db = sens["beta_q"] @ dq + sens["beta_qd"] @ dv + FLOAT_RULE[0] * sens["beta"] + FLOAT_RULE[1]
    i_max = sens["p"] + scales["r"] / k_o
    bounds["r"] = MARGIN * (
        2 * k_o * (dp + FLOAT_RULE[1])
        + db
        + U * i_max / ts
        + 2 * U * (k_o * (sens["p"] + i_max) + sens["tau"] + sens["beta"])
    )
    from scipy.signal import lfilter  # here: scipy.signal takes 1.2 s to import (see imu_sensors)

    kick = np.zeros_like(amb, dtype=float)  # the flips' worst case, decaying
    for j in range(len(fc)):
        kick[:, j], _ = lfilter(
            [k_o[j] * ts * 2 * fc[j]],
            [1.0, -(1 - k_o[j] * ts)],
            amb[:, j].astype(float),
            zi=[(1 - k_o[j] * ts) * r_kick[j]],
        )
        r_kick[j] = kick[-1, j]
    return {"tau_cmd": amb * 2 * fc, "r": kick}


def _record(
    ch: Channel, od: np.ndarray, of: np.ndarray, bound: np.ndarray | None, extra: np.ndarray | None, per_window: int
) -> None:
    """One chunk of an output into its channel: errors, range, bound, ratio, windows."""
    err = np.abs(od.astype(float) - of.astype(float))
    ch.max_abs = np.maximum(ch.max_abs, np.max(err, axis=0))
    ch.lo = np.minimum(ch.lo, np.min(od, axis=0))
    ch.hi = np.maximum(ch.hi, np.max(od, axis=0))
    if extra is not None:
        over = np.max(np.maximum(err - extra, 0.0), axis=0)
        ch.beyond_coulomb = over if ch.beyond_coulomb is None else np.maximum(ch.beyond_coulomb, over)
    if bound is not None:
        ch.bound = bound if ch.bound is None else np.maximum(ch.bound, bound)
        allowed = bound + (extra if extra is not None else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(allowed > 0, err / allowed, np.where(err > 0, np.inf, 0.0))
        ch.worst_ratio = max(ch.worst_ratio, float(np.max(ratio)))
    smooth = np.maximum(err - extra, 0.0) if extra is not None else err
    for w in range(0, len(err), per_window):  # per window, without the Coulomb term
        ch.window_max.append(np.max(smooth[w : w + per_window], axis=0))
        ch.window_median.append(np.median(smooth[w : w + per_window], axis=0))


def compare(
    robot: Robot,
    seconds: float = 60.0,
    window: float = 20.0,
    chunk: float = 60.0,
    estimator: str = kalman.SPEC.name,
    substeps: int = 4,
    half_cycle: float = 10.0,
    stride: int = 50,
    perturb: Callable[[dict[str, np.ndarray]], object] | None = None,
) -> Comparison:
    """Double against float build of ``robot``'s pipeline (``estimator`` + the description's observer
    and controller) over ``seconds`` of a contact-free closed loop; statistics per ``window`` s
    (a multiple of the cycle 2 ``half_cycle`` keeps the motion of every window the same), simulated
    ``chunk`` s at a time. ``perturb`` (tests only) may alter the float outputs of each chunk."""
    t_start = time.perf_counter()
    gen = load_rt(robot, estimator=estimator)
    ref, flt = Realtime(gen.folder), load_rt(robot, estimator=estimator, precision="float")
    ts, n = gen.sample_period, gen.dof
    for rt in (ref, flt):
        rt.config["det.reaction"] = 0
        rt.reset()
    rigid = not bool(gen.manifest.get("elastic"))
    total = int(round(seconds / ts))
    per_window = int(round(window / ts))
    per_chunk = max(per_window, int(round(chunk / ts)) // per_window * per_window)
    cycle = cycle_trajectory(robot, ts, half_cycle)
    names = [
        k
        for k in ref.output_dtype.names or ()
        if ref.output_dtype[k].base.kind == "f" and not (rigid and k.startswith("theta"))
    ]  # a rigid arm's theta outputs stay 0
    channels = {
        k: Channel(k, np.zeros(m), np.full(m, np.inf), np.full(m, -np.inf))
        for k in names
        for m in (ref.output_dtype[k].shape[0],)
    }
    model = _model(robot, ref)
    scales: dict[str, np.ndarray] = {}
    sens: dict[str, np.ndarray] | None = None
    ambiguous, flips = np.zeros(n, np.int64), np.zeros(n, np.int64)
    flag_mismatch, r_windows = 0, []
    r_kick = np.zeros(n)  # Coulomb-flip term of r, carried across chunks
    count_exact = True
    for ins in closed_loop_stream(gen, cycle, total, per_chunk, substeps):
        od, of = ref.run(ins), flt.run(ins)
        if perturb is not None:
            perturb(of)
        count_exact &= bool(np.all(np.abs(ins["counts"]) < 2**24))
        for key in names:  # running scales: max |.| of the double outputs
            scales[key] = np.maximum(scales.get(key, 0.0), np.max(np.abs(od[key]), axis=0))
        if rigid and sens is None:
            sens = _sensitivities(robot, ref, od, stride, len(cycle.time))
        bounds = _encoder_bounds(ref, scales, rigid)
        bounds.update(_kalman_bounds(ref, od, scales, rigid))  # any Kalman variant; others: measured only
        amb = np.zeros_like(od["qd_hat"], dtype=bool)
        if "qd_hat" in bounds:
            amb = np.abs(od["qd_hat"]) <= bounds["qd_hat"]
            ambiguous += amb.sum(axis=0)
        flips += (np.sign(od["qd_hat"]) != np.sign(of["qd_hat"])).sum(axis=0)
        extra: dict[str, np.ndarray] = {}
        if rigid and sens is not None and "qd_hat" in bounds and "tau_cmd" in od:
            extra = _model_bounds(model, sens, bounds, scales, amb, r_kick)
        for key, ch in channels.items():
            _record(ch, od[key], of[key], bounds.get(key), extra.get(key), per_window)
        for w in range(0, len(of["r"]), per_window):
            r_windows.append(float(np.max(np.abs(of["r"][w : w + per_window]))))
        flag_mismatch += int(
            np.sum(od["collision"] != of["collision"]) + np.sum(np.any(od["above"] != of["above"], axis=1))
        )
    return Comparison(
        robot.name,
        ref.label,
        total * ts,
        total,
        time.perf_counter() - t_start,
        channels,
        ambiguous,
        flips,
        flag_mismatch,
        r_windows,
        count_exact,
    )
