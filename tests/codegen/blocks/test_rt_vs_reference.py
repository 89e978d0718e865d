"""The generated C step against the pipeline's oracle (tests/oracles: the same CasADi expressions,
the plumbing written again in numpy, in the tests only).

Continuous blocks run free for 10 000 plausible samples (quantised smooth motion, 5 % lost samples,
torques) and must agree to 1e-9 normwise (absolute floor 1), plus, for the IMU estimator, what its
fusion's conditioning makes of the C's and the oracle's sin and cos differing in the last bits.
Blocks with sign/threshold logic are compared step by step from identical states: free-running, they
may part ways at a switching instant.
"""

from __future__ import annotations

import numpy as np
import pytest

from host_tools.bindings.rt import Realtime
from tests.codegen.blocks.helpers import (
    ESTIMATORS,
    at,
    fresh_rt,
    only_steps,
    reference,
    reference_outputs,
    step_by_step,
    worst_from_identical_states,
    worst_rel_err,
)
from tests.codegen.blocks.signals import inputs

K = 10_000
CONTINUOUS = [e for e in ESTIMATORS if e != "slimod"]


def _cpr(rt) -> float:
    return float(rt.config["enc.cpr"][0])


@pytest.mark.parametrize("estimator", CONTINUOUS)
def test_free_running_matches_reference(estimator: str) -> None:
    rt = fresh_rt("planar2", estimator, "momentum", "computed_torque")
    rt.config["det.threshold"] = 1e6  # no detection: the continuous part only
    ref = reference("planar2", estimator)
    ref.set_config({"det.threshold": 1e6})
    ins = inputs(K, 2, rt.sample_period, _cpr(rt), seed=11)
    out = rt.run(only_steps(ins))
    expected = reference_outputs(ref, [at(ins, k) for k in range(K)])
    worst = {name: worst_rel_err(out[name], v) for name, v in expected.items()}
    assert max(worst.values()) <= 1e-9 + _fusion_bound(rt, estimator), worst
    assert np.all(np.isfinite(out["qd_hat"]))


def _fusion_bound(rt: Realtime, estimator: str) -> float:
    """What the IMU fusion's conditioning adds to the bound. Its acceleration update weighs a prior of
    variance prior_qdd^2 against accelerometers of variance noise_acc^2: a relative change eps of its
    inputs moves its output by up to (prior_qdd / noise_acc)^2 eps of its scale (planar2's defaults:
    (100 / 0.025)^2 = 1.6e7). The C's sin and cos (manipgen_linalg.h's, within 2 ulp) and the
    oracle's (the C library's, through CasADi) differ by up to eps = 2 * 2^-52 of the value each
    step; twice that for the readings' model and their kinematics, each computed with them: 1.4e-8
    at the defaults (8.96e-9 measured, sample 5214, qdd_imu). The other estimators have no such solve."""
    if estimator != "imu":
        return 0.0
    ratio = float(np.max(rt.config["est.prior_qdd"])) / float(rt.config["est.noise_acc"])
    return 2.0 * ratio**2 * 2.0 * 2.0**-52


@pytest.mark.parametrize("controller", ["computed_torque", "pid"])
def test_seven_dof_matches_reference(controller: str) -> None:
    rt = fresh_rt("kuka_iiwa14", "kalman", "momentum", controller)
    rt.config["det.threshold"] = 1e6
    ref = reference("kuka_iiwa14", "kalman", "momentum", controller)
    ref.set_config({"det.threshold": 1e6})
    ins = inputs(K, 7, rt.sample_period, _cpr(rt), seed=5, tau_scale=20.0)
    out = rt.run(only_steps(ins))
    expected = reference_outputs(ref, [at(ins, k) for k in range(K)])
    assert max(worst_rel_err(out[n], v) for n, v in expected.items()) <= 1e-9


@pytest.mark.parametrize(
    "robot,estimator", [("planar2", "slimod"), ("schunk_lwa4p", "slimod"), ("schunk_lwa4p", "nlhg")]
)
def test_step_by_step_from_identical_states(robot: str, estimator: str) -> None:
    rt = fresh_rt(robot, estimator, "momentum", "computed_torque")
    ref = reference(robot, estimator)
    n = rt.dof
    ins = inputs(2000, n, rt.sample_period, _cpr(rt), seed=2, tau_scale=3.0)
    assert worst_from_identical_states(rt, ref, ins, 2000) <= 1e-9


@pytest.mark.parametrize("reaction", [0, 1, 2])
def test_detection_and_reaction_step_by_step(reaction: int) -> None:
    """Static arm, torque mismatch steps make the residual cross thresholds up and down."""
    rt = fresh_rt("planar2", "findiff", "momentum", "computed_torque")
    ref = reference("planar2", "findiff")
    cfg = {
        "det.threshold": [0.5, 0.3],
        "det.kv": [0.1, 0.1],
        "det.ka": [0.2, 0.1],
        "det.ks": [0.05, 0.0],  # joint 2 without the standstill part: the step skips its exp there
        "det.vs": [0.02, 0.01],
        "det.release": 0.6,
        "det.debounce": [3, 5],
        "det.reaction": reaction,
        "det.k_r": [0.05, 0.02],
        "obs.k_o": [50.0, 80.0],
    }
    for key, v in cfg.items():
        rt.config[key] = v
    rt.reset()
    ref.set_config(cfg)
    k_total = 3000
    ins = inputs(k_total, 2, rt.sample_period, _cpr(rt), seed=9, loss=0.0, tau_scale=0.0)
    ins["counts"][:] = ins["counts"][0]
    ext = np.zeros((k_total, 2))
    ext[500:900, 1] = 0.8  # on link 2: both residuals move
    ext[1500:1520, 0] = 2.0  # short pulse on joint 1 only
    ext[2000:2600, 0] = -1.0
    from host_tools import load

    dyn = load("planar2")
    q0 = np.array(rt.step(**at(ins, 0))["q"])
    rt.reset()
    ins["tau"] = dyn.gravity(q0)[None, :] - ext
    reset = np.zeros(k_total, dtype=np.uint8)
    reset[1400] = reset[1900] = 1
    worst, flags = step_by_step(rt, ref, ins, reset)
    assert worst == 0.0 or worst <= 1e-12
    assert flags[499, 0] == 0 and flags[700, 0] == 1 and flags[700, 1] == 2  # isolated: link 2
    assert flags[1401:1500, 0].max() == 0  # reset cleared it
    assert flags[1510, 0] == 1 and flags[1510, 1] == 1  # the pulse, link 1
    assert flags[2300, 0] == 1 and flags[2300, 1] == 1


def test_every_registered_block_has_an_oracle() -> None:
    """The pipeline's oracle runs each block by its registered oracle (a block without one fails the
    comparison by name): every estimator, observer and controller of the registry has one, and so do
    the encoder, the friction terms and the detection."""
    from codegen.blocks import registry
    from tests.oracles import ORACLES

    specs = {**registry.estimators(), **registry.observers(), **registry.controllers()}
    built = {name for name, spec in specs.items() if getattr(spec, "build", None) is not None}
    assert built | {"encoder", "terms", "threshold"} <= set(ORACLES), sorted(built - set(ORACLES))
