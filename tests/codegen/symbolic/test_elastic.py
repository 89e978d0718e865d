"""Series-elastic joints (issue #9, first part): the description, the elastic dynamics in generated C
(Kirchhoff 2011 eqs. 3.10, 3.23-3.25) against closed forms, and energy conservation of the coupled model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from host_tools import load
from tests.tooling import ROOT, cli_in_process

PENDULUM = """
name: sea1
convention: dh
gravity: [0.0, -9.81, 0.0]
joint_parameters: [FV]
coulomb: {model: tanh, velocity_scale: 0.05}
joints:
  - name: j1
    type: revolute
    dh: {theta: 0, d: 0, a: 0.5, alpha: 0}
    FV: 0.2
    elastic: {motor_inertia: 0.3, stiffness: 40.0, damping: 0.7, motor_viscous: 0.4, motor_coulomb: 0.25,
              motor_encoder: {cpr: 4096}}
    link: {mass: 2.0, com: [-0.25, 0, 0], inertia: [0.001, 0, 0, 0.04, 0, 0.04]}
"""


def test_one_elastic_joint_is_the_textbook_pendulum(tmp_path: Path) -> None:
    """Kirchhoff (2011) eqs. 3.21-3.22 for one joint: I qdd + d qd + m g l_c cos q = tau_el,
    I_m thetadd + d_vm thetad + d_Cm tanh(thetad / v) + tau_el = tau_m."""
    path = tmp_path / "sea1.yaml"
    path.write_text(PENDULUM)
    dyn = load(str(path))
    m, lc, i_c, g = 2.0, 0.25, 0.04, 9.81
    inertia = i_c + m * lc**2  # about the joint axis
    rng = np.random.default_rng(1)
    for q, qd, th, thd, tm in rng.uniform(-2, 2, (20, 5)):
        tau_el = 40.0 * (th - q) + 0.7 * (thd - qd)
        qdd = (tau_el - 0.2 * qd - m * g * lc * np.cos(q)) / inertia
        thdd = (tm - 0.4 * thd - 0.25 * np.tanh(thd / 0.05) - tau_el) / 0.3
        assert np.allclose(
            dyn.elastic_torque(*(np.array([v]) for v in (q, qd, th, thd))), tau_el, rtol=1e-13, atol=1e-12
        )
        got = dyn.elastic_forward_dynamics(*(np.array([v]) for v in (q, qd, th, thd, tm)))
        assert np.allclose(got[0], qdd, rtol=1e-12, atol=1e-11) and np.allclose(got[1], thdd, rtol=1e-12, atol=1e-11)


def test_biorob4_description() -> None:
    robot = load_robot("biorob4")
    assert robot.dof == 4 and robot.elastic and robot.convention == "dh"
    assert abs(sum(link[0] for link in robot.links) - 4.0) < 1e-12  # a 4 kg arm
    j4 = robot.joints[3].elastic
    assert j4 is not None and j4.coupling == ((2, -0.5),)  # eq. 3.10, over joint 3's pulley
    assert all(
        j.elastic is not None and j.elastic.motor_encoder is not None and j.elastic.motor_encoder.side == "motor"
        for j in robot.joints
    )


@pytest.mark.parametrize("lossless", [True, False])
def test_the_coupled_model_conserves_energy(lossless: bool, tmp_path: Path) -> None:
    """biorob4 without gravity, damping or friction and with tau_m = 0: the link's and the motors'
    kinetic energy plus the springs' potential 1/2 (theta - q - A q)^T K (theta - q - A q) must stay
    constant. It does only if the spring's torque reaches the coupled joint 3 too ((I + A)^T tau_el):
    with tau_el alone on the link side, joint 4's coupling would create energy."""
    doc = yaml.safe_load((ROOT / "robots" / "biorob4.yaml").read_text())
    doc["name"] = "biorob4_lossless" if lossless else "biorob4_free"
    doc["gravity"] = [0.0, 0.0, 0.0]
    for j in doc["joints"]:
        if lossless:
            j["FV"] = 0.0
            j["elastic"].update(damping=0.0, motor_viscous=0.0, motor_coulomb=0.0)
    path = tmp_path / "biorob4_lossless.yaml"
    path.write_text(yaml.safe_dump(doc))
    dyn = load(str(path))
    robot = load_robot(str(path))
    k = np.array([e.stiffness for e in robot.drives])
    im = np.array([e.motor_inertia for e in robot.drives])
    a = np.zeros((4, 4))
    a[3, 2] = -0.5

    def energy(x: np.ndarray) -> float:
        q, qd, th, thd = x.reshape(4, 4)
        d = th - q - a @ q
        return float(0.5 * qd @ dyn.mass_matrix(q) @ qd + 0.5 * thd @ (im * thd) + 0.5 * d @ (k * d))

    def f(x: np.ndarray) -> np.ndarray:
        q, qd, th, thd = x.reshape(4, 4)
        qdd, thdd = dyn.elastic_forward_dynamics(q, qd, th, thd, np.zeros(4))
        return np.concatenate([qd, qdd, thd, thdd])

    x = np.concatenate([[0.3, 0.8, -0.6, 0.4], [0.5, -0.3, 0.8, -1.0], [0.35, 0.75, -0.5, 0.2], np.zeros(4)])
    e0, h = energy(x), 2e-4
    worst, rise, last = 0.0, 0.0, e0
    for _ in range(2500):  # 0.5 s, classic RK4
        k1 = f(x)
        k2 = f(x + h / 2 * k1)
        k3 = f(x + h / 2 * k2)
        k4 = f(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        e = energy(x)
        worst, rise, last = max(worst, abs(e - e0)), max(rise, e - last), e
    assert np.abs(x[:4] - [0.3, 0.8, -0.6, 0.4]).max() > 0.05  # it moved
    if lossless:
        assert worst < 1e-7 * e0, (worst, e0)
    else:
        # the dampers (on the deflection rate, coupling included), the friction: energy only falls
        assert rise < 1e-9 * e0 and last < 0.9 * e0, (rise, last, e0)


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda d: d["joints"][1].pop("elastic"), "joints[1]"),
        (lambda d: d["joints"][0]["elastic"].update(stiffness=0), "stiffness"),
        (lambda d: d["joints"][0]["elastic"].update(motor_inertia=-1), "motor_inertia"),
        (lambda d: d["joints"][2]["elastic"].update(damping=-0.1), "damping"),
        (lambda d: d["joints"][3]["elastic"].update(coupling={"nope": 0.5}), "coupling"),
        (lambda d: d["joints"][3]["elastic"].update(coupling={"j4": 0.5}), "coupling"),
        (lambda d: d["joints"][0]["elastic"].update(spring=3), "spring"),
        (lambda d: d["joints"][0]["elastic"]["motor_encoder"].update(side="link"), "motor_encoder"),
        (lambda d: d["joints"][3]["elastic"].update(coupling={"j3": -0.5, "J3": 0.2}), "coupling"),
        (
            lambda d: (
                d["joints"][3]["elastic"].update(coupling={"j3": -2.0}),
                d["joints"][2]["elastic"].update(coupling={"j4": -0.5}),
            ),
            "coupling",
        ),
        (lambda d: d["joints"][0].update(IA=0.01), "IA"),
        (lambda d: d["joints"][0]["encoder"].update(side="motor"), "encoder"),
        (lambda d: d["joints"][1].update(torque_constant=-0.03), "torque_constant"),
        (lambda d: d["joints"][1].update(torque_constant=0), "torque_constant"),
        (lambda d: d["joints"][1].update(torque_constant="strong"), "torque_constant"),
    ],
)
def test_bad_elastic_descriptions_name_the_field(
    edit, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((ROOT / "robots" / "biorob4.yaml").read_text())
    edit(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(DescriptionError) as err:
        load_robot(str(path))
    assert str(path) in str(err.value) and field in str(err.value)
    r = cli_in_process(capsys, "info", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_the_pipeline_reads_both_encoders_of_an_elastic_arm() -> None:
    """biorob4's real-time step takes the description's motor encoders as its second channel: theta
    from the motor counts (2048 per motor turn through 100:1) and q from the link encoders, each
    within one count; a rigid arm's pipeline has no second channel at all (issue #26: no motor
    counts in, no theta out, no motor encoder in its config)."""
    from host_tools.bindings.rt import load_rt

    rt = load_rt("biorob4")
    assert np.all(rt.config["enc.motor_cpr"] == 2048) and np.all(rt.config["enc.motor_gear"] == 100)
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, 4)
    theta = q + rng.uniform(-0.05, 0.05, 4)
    out = rt.step(rt.encoder_counts(q)[0], motor_counts=rt.encoder_counts(theta)[1])
    assert np.all(np.abs(out["q"] - q) <= 2 * np.pi / 16384)
    assert np.all(np.abs(out["theta"] - theta) <= 2 * np.pi / (2048 * 100))
    assert np.abs(out["theta"] - out["q"]).max() > 10 * 2 * np.pi / 16384  # the spring's deflection shows
    rigid = load_rt("planar2")
    assert not any(k.startswith("enc.motor_") for k in rigid.config.keys())
    assert "motor_counts" not in (rigid.input_dtype.names or ()) and "theta" not in (rigid.output_dtype.names or ())


def test_actuator_regressor_reproduces_the_motor_dynamics() -> None:
    """Kirchhoff (2011) eq. 4.4: tau_m - I_m thetadd = Y_m [d_e, d_vm, k_e, d_Cm] per joint, for the motor
    accelerations the forward dynamics gives; and Y_m's entries are the deflection rate, thetad, the
    deflection (with joint 4's coupling to joint 3) and tanh(thetad / v)."""
    dyn = load("biorob4")
    robot = load_robot("biorob4")
    drives = robot.drives
    theta_m = np.concatenate([[e.damping, e.motor_viscous, e.stiffness, e.motor_coulomb] for e in drives])
    im = np.array([e.motor_inertia for e in drives])
    rng = np.random.default_rng(11)
    for q, qd, th, thd, tm in rng.uniform(-1, 1, (25, 5, 4)):
        y = dyn.motor_regressor(q, qd, th, thd)
        assert y.shape == (4, 16)
        _, thdd = dyn.elastic_forward_dynamics(q, qd, th, thd, tm)
        assert np.allclose(y @ theta_m, tm - im * thdd, rtol=1e-12, atol=1e-12)
        defl4 = th[3] - q[3] + 0.5 * q[2]
        assert np.allclose(y[3, 12:16], [thd[3] - qd[3] + 0.5 * qd[2], thd[3], defl4, np.tanh(thd[3] / 0.01)])
        assert np.all(y[0, 4:] == 0) and np.all(y[3, :12] == 0)  # block diagonal
