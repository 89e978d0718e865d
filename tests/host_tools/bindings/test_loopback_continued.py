"""A closed-loop run that continues another (collide's check and collision runs continue its design
run): with ``tau0``, the last command of the run it continues, it is the whole run's second half bit
for bit; without it the pipeline saw the applied torque drop to 0 at its first sample, a 30 N m
torque mismatch on planar2's joint 1 (its gravity torque) that the model-adaptive observers took for
a collision (issue #46)."""

from __future__ import annotations

import numpy as np
import pytest

from host_tools.bindings.loopback import replay, simulate, tail
from host_tools.bindings.rt import load_rt
from host_tools.data.trajectories import Trajectory


def _motion(k: int, ts: float) -> Trajectory:
    t = np.arange(k) * ts
    w = 2 * np.pi * np.array([0.7, 1.1])
    q = 0.3 * np.sin(w * t[:, None])
    return Trajectory("two sines", t, q, 0.3 * w * np.cos(w * t[:, None]), -0.3 * w**2 * np.sin(w * t[:, None]))


def _part(m: Trajectory, sl: slice) -> Trajectory:
    return Trajectory(m.name, m.time[sl] - m.time[sl][0], m.q[sl], m.qd[sl], m.qdd[sl])


@pytest.mark.parametrize("observer", ["adaptive_momentum", "adaptive_measured"])
def test_a_continued_run_is_the_whole_runs_second_half(observer: str) -> None:
    """adaptive_measured reads the plant's q-ddot under the torque of the last sample: tau0 at the first."""
    rt = load_rt("planar2", "kalman", observer, "computed_torque")
    rt.config["det.threshold"] = 1e30
    ts, n = rt.sample_period, 300
    motion = _motion(2 * n, ts)
    whole = simulate(rt, motion)
    first = simulate(rt, _part(motion, slice(0, n)))
    state = rt.snapshot()
    # the plant's state at sample n: the loopback is causal, so one more sample of the same run has it
    x_n = simulate(rt, _part(motion, slice(0, n + 1))).log.extra
    q0, qd0 = x_n["q_true"][n], x_n["qd_true"][n]
    runs = {}
    for name, tau0 in (("with tau0", first.log.extra["tau_cmd"][-1]), ("without", None)):
        rt.restore(state)
        runs[name] = simulate(rt, _part(motion, slice(n, 2 * n)), reset=False, q0=q0, qd0=qd0, tau0=tau0)
    got = runs["with tau0"]
    np.testing.assert_array_equal(got.log.tau, whole.log.tau[n:])
    np.testing.assert_array_equal(got.out["r"], whole.out["r"][n:])
    np.testing.assert_array_equal(got.log.extra["q_true"], whole.log.extra["q_true"][n:])
    without = runs["without"].out["r"]
    assert not np.array_equal(without, whole.out["r"][n:])
    if observer == "adaptive_momentum":
        # without it the first sample sees no torque: the momentum form's r jumps by (1 - exp(-K T))
        # x the gravity torque (30 N m on joint 1); eq. 16's form with the plant's q-ddot saw the arm
        # fall freely under no torque instead, a consistent pair
        assert np.abs(without[0] - whole.out["r"][n]).max() > 1.0


def test_a_recorded_runs_tail_replayed_from_its_state_there_is_the_rest_of_the_run() -> None:
    """loopback.tail: a recorded run's samples from k on, replayed through the same pipeline from its
    state before sample k's step (kept by ``keep``), are the run's own outputs and log from k on, its
    time from 0; a run without its inputs, or a sample outside it, is refused."""
    rt = load_rt("planar2", "kalman", "adaptive_momentum", "computed_torque")
    rt.config["det.threshold"] = 1e30
    ts, k = rt.sample_period, 250
    motion = _motion(600, ts)
    whole = simulate(rt, motion, record=True, keep=(k,))
    rest = tail(whole, k)
    assert rest.inputs is not None and len(rest.inputs) == 600 - k and rest.log.time[0] == 0.0
    rt.restore(whole.states[k])
    again = replay(rt, rest, reset=False)
    assert again is not None
    for name, value in whole.out.items():
        assert again.out[name].tobytes() == value[k:].tobytes(), name
    for name in ("q_true", "qd_true", "tau_cmd"):
        assert again.log.extra[name].tobytes() == whole.log.extra[name][k:].tobytes(), name
    assert again.log.tau.tobytes() == whole.log.tau[k:].tobytes()
    np.testing.assert_array_equal(again.log.time, motion.time[k:] - motion.time[k])
    with pytest.raises(ValueError, match="recorded run"):
        tail(simulate(rt, motion), k)
    with pytest.raises(ValueError, match="0..599"):
        tail(whole, 600)
