"""The host compiles a pipeline's step with its own flags (host_tools.bindings.build.STEP_FLAGS: -O3,
chosen for run time) and every unit for the host's instruction set (HOST_ISA: AVX2 where the
processor has it); the arithmetic must stay the plain -O2 build's (SSE2: the target's and the
suite's reference), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings import build
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.data.trajectories import generated_trajectory


def _adapting(robot):
    rt = load_rt("planar2", observer="adaptive_momentum")
    # 10 % model error on every parameter: the observer adapts at every sample (no detection holds it)
    rt.config["model.params"] = 1.1 * np.asarray(robot.standard_parameters(), float)
    rt.config["det.threshold"] = 1e30
    return rt


def test_the_host_step_flags_keep_the_o2_bits_of_an_adapting_observer(monkeypatch: pytest.MonkeyPatch) -> None:
    """planar2's adaptive_momentum (mg_rls_gain's covariance update, the vectorised loops) over a 2 s
    closed loop with model error: every output of the host build (its step flags, its instruction
    set) equals the plain -O2 build's, bit for bit."""
    robot = load_robot("planar2")
    rt = _adapting(robot)
    run = simulate(rt, generated_trajectory(robot, 2.0, rt.sample_period), record=True)
    assert np.any(np.frombuffer(rt.ffi.buffer(rt._rt.obs.dtheta), np.float64) != 0)  # it adapted
    monkeypatch.setattr(build, "STEP_FLAGS", ("-O2",))
    monkeypatch.setattr(build, "HOST_ISA", ())
    o2 = _adapting(robot)
    o2.reset()
    assert run.inputs is not None
    out = o2.run_inputs(run.inputs)
    assert set(out) == set(run.out)
    for name, values in run.out.items():
        assert out[name].tobytes() == values.tobytes(), name
    # the closed loop too: the plant's units (loopback, dynamics) are compiled for HOST_ISA as well
    closed = simulate(o2, generated_trajectory(robot, 2.0, o2.sample_period))
    for name, values in run.out.items():
        assert closed.out[name].tobytes() == values.tobytes(), name
    for name in ("q_true", "qd_true", "qdd_true"):
        assert closed.log.extra[name].tobytes() == run.log.extra[name].tobytes(), name
