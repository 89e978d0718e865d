"""Controllers and reactions against closed forms built from other generated functions:
computed torque = M(q) nu + n(q, qd) with the composite-rigid-body M (not the step's Newton-Euler
pass), PID + g(q) summed in numpy, saturation, the reflex integral and the sliding-mode z_eq."""

from __future__ import annotations

import numpy as np
import pytest

from host_tools import load
from tests.codegen.blocks.helpers import fresh_rt


def _pair(rt, c0, c1, **kw):
    """Reset, feed two samples; the second one's outputs (findiff: qd_hat = (q1 - q0) / T)."""
    rt.reset()
    rt.step(c0, **kw)
    return rt.step(c1, **kw)


@pytest.mark.parametrize("friction_ff", [1.0, 0.0])
def test_computed_torque_is_m_nu_plus_n(friction_ff: float) -> None:
    """u = M(q) nu + c(q, qd) + g(q) + f, the friction f fed forward at the desired velocity (the
    default, 1) or compensated at the estimated one (0)."""
    dyn = load("kuka_iiwa14")
    rt = fresh_rt("kuka_iiwa14", "findiff", "none", "computed_torque")
    assert rt.config["ctl.friction_ff"] == 1.0  # the default
    rt.config["ctl.friction_ff"] = friction_ff
    rt.config["ctl.kp"] = np.linspace(80, 140, 7)
    rt.config["ctl.kd"] = np.linspace(10, 16, 7)
    rt.config["ctl.tau_max"] = 1e6
    rpc, ts = 2 * np.pi / (rt.config["enc.cpr"] * rt.config["enc.gear"]), rt.sample_period
    rng = np.random.default_rng(0)
    for _ in range(50):
        c0 = rng.integers(-30000, 30000, 7)
        c1 = c0 + rng.integers(-60, 60, 7)
        q_des, qd_des, qdd_des = rng.normal(0, 0.5, 7), rng.normal(0, 1, 7), rng.normal(0, 3, 7)
        out = _pair(rt, c0, c1, q_des=q_des, qd_des=qd_des, qdd_des=qdd_des)
        q, qd = c1 * rpc, (c1 * rpc - c0 * rpc) / ts
        nu = qdd_des + rt.config["ctl.kp"] * (q_des - q) + rt.config["ctl.kd"] * (qd_des - qd)
        f = dyn.friction(qd_des) if friction_ff else dyn.friction(qd)
        u = dyn.mass_matrix(q) @ nu + dyn.nonlinear_effects(q, qd) - dyn.friction(qd) + f
        assert np.allclose(out["tau_cmd"], u, rtol=1e-9, atol=1e-9)


def test_torque_saturates_at_tau_max() -> None:
    dyn = load("kuka_iiwa14")
    rt = fresh_rt("kuka_iiwa14", "findiff", "none", "computed_torque")
    limit = np.array([320, 320, 176, 176, 110, 40, 40.0])
    assert np.allclose(rt.config["ctl.tau_max"], limit)  # from the description's limits
    q_des = np.array([3.0, -2.0, 0.1, 2.5, 0.05, -3.0, 0.02])
    out = _pair(rt, np.zeros(7), np.zeros(7), q_des=q_des)
    q = np.zeros(7)
    unsat = dyn.mass_matrix(q) @ (rt.config["ctl.kp"] * q_des) + dyn.nonlinear_effects(q, q)
    assert np.allclose(out["tau_cmd"], np.clip(unsat, -limit, limit), rtol=1e-12)
    assert np.sum(np.abs(out["tau_cmd"]) == limit) >= 3 and np.sum(np.abs(out["tau_cmd"]) < limit) >= 2


def test_pid_with_gravity_compensation_and_clamped_integral() -> None:
    dyn = load("planar2")
    rt = fresh_rt("planar2", "findiff", "none", "pid")
    kp, kd, ki, i_max = np.array([50.0, 20]), np.array([5.0, 2]), np.array([30.0, 10]), np.array([0.01, 1.0])
    for key, v in (("ctl.kp", kp), ("ctl.kd", kd), ("ctl.ki", ki), ("ctl.i_max", i_max), ("ctl.tau_max", 1e6)):
        rt.config[key] = v
    rt.reset()
    rpc, ts = 2 * np.pi / (rt.config["enc.cpr"] * rt.config["enc.gear"]), rt.sample_period
    counts = np.array([[100, -50], [101, -52], [103, -55], [106, -59], [110, -64]] * 20)
    q_des = np.array([0.2, -0.1])
    integ = np.zeros(2)
    prev = None
    for c in counts:
        out = rt.step(c, q_des=q_des, qd_des=[0.1, 0.0])
        q = c * rpc
        qd = np.zeros(2) if prev is None else (q - prev) / ts
        integ = np.clip(integ + ts * (q_des - q), -i_max, i_max)
        u = kp * (q_des - q) + kd * (np.array([0.1, 0.0]) - qd) + ki * integ + dyn.gravity(q)
        assert np.allclose(out["tau_cmd"], u, rtol=1e-9, atol=1e-9)
        prev = q
    assert abs(integ[0]) == i_max[0]  # the clamp was reached


def test_reflex_reaction_integrates_k_r_r() -> None:
    dyn = load("planar2")
    rt = fresh_rt("planar2", "findiff", "momentum", "computed_torque")
    for key, v in (("det.threshold", 0.5), ("det.debounce", 1), ("det.reaction", 2), ("det.k_r", [0.05, 0.02])):
        rt.config[key] = v
    rt.reset()
    k = 600
    counts = np.tile([[2000, 1000]], (k, 1))
    q = counts[0] * 2 * np.pi / (rt.config["enc.cpr"] * rt.config["enc.gear"])
    ext = np.zeros((k, 2))
    ext[100:, 0] = 2.0
    out = rt.run({"counts": counts, "tau": dyn.gravity(q) - ext, "q_des": np.tile(q, (k, 1))})
    first = int(np.argmax(out["collision"]))
    assert out["link"][first] == 1 and first > 100
    after = slice(first, k)
    assert np.allclose(out["qd_d"][after], rt.config["det.k_r"] * out["r"][after], rtol=1e-12)
    integral = np.cumsum(rt.sample_period * rt.config["det.k_r"] * out["r"][after], axis=0)
    assert np.allclose(out["q_d"][after], q + integral, rtol=1e-12, atol=1e-12)
    assert np.all(out["qdd_d"][after] == 0)


def test_sliding_mode_disturbance_integrates_alpha1_sign() -> None:
    rt = fresh_rt("planar2", "slimod", "none", "none")
    f_plus = np.array([25.0, 12.0])
    rt.config["est.f_plus"] = f_plus
    rt.reset()
    counts = np.floor(np.arange(500)[:, None] * [[0.8, -0.5]]).astype(np.int64)
    out = rt.run({"counts": counts})
    steps = np.abs(np.diff(out["z_eq"], axis=0))
    expected = rt.sample_period * 1.1 * f_plus  # alpha1 = 1.1 f+, |sgn| = 1 (or 0)
    assert np.all(np.isclose(steps, expected, rtol=1e-9) | (steps == 0))
    assert np.allclose(
        rt.state["est"]["alpha"],
        np.column_stack([1.1 * f_plus, 1.5 * np.sqrt(f_plus), 1.9 * np.cbrt(f_plus)]),
        rtol=1e-15,
    )
