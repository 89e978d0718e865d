"""biorob4's elastic forward dynamics (generated C) against the same model on Pinocchio: the link
side by ``pinocchio.aba`` driven by (I + A)^T tau_el minus the joint friction, the motors by
Kirchhoff (2011) eq. 3.23 in numpy, tau_el by eq. 3.25 with the coupling of eq. 3.10 -- all from the YAML
read by the tests' own loader."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from host_tools import load
from host_tools.studies.pinocchio_models import friction_torque, load_yaml, num, pin_model_from_yaml

from .peer_cases import ROBOTS_DIR


def test_biorob4_elastic_forward_dynamics_against_pinocchio() -> None:
    path = ROBOTS_DIR / "biorob4.yaml"
    doc = load_yaml(path)
    drives = [j["elastic"] for j in doc["joints"]]
    k, d = (np.array([num(e[key]) for e in drives]) for key in ("stiffness", "damping"))
    im, dv, dc = (
        np.array([num(e[key]) for e in drives]) for key in ("motor_inertia", "motor_viscous", "motor_coulomb")
    )
    names = [j["name"] for j in doc["joints"]]
    a = np.zeros((4, 4))
    for i, e in enumerate(drives):
        for other, factor in (e.get("coupling") or {}).items():
            a[i, names.index(other)] = num(factor)
    v = num(doc["coulomb"]["velocity_scale"])
    model = pin_model_from_yaml(path)
    data = model.createData()
    dyn = load("biorob4")
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(300):
        q, qd, th, thd, tm = rng.uniform(-1.5, 1.5, (5, 4))
        th = q + 0.1 * th
        tau_el = k * (th - q - a @ q) + d * (thd - qd - a @ qd)
        qdd = pin.aba(model, data, q, qd, (np.eye(4) + a).T @ tau_el - friction_torque(path, qd))
        thdd = (tm - dv * thd - dc * np.tanh(thd / v) - tau_el) / im
        got_q, got_th = dyn.elastic_forward_dynamics(q, qd, th, thd, tm)
        assert np.allclose(dyn.elastic_torque(q, qd, th, thd), tau_el, rtol=1e-12, atol=1e-12)
        for got, ref in ((got_q, qdd), (got_th, thdd)):
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            worst = max(worst, err)
            assert np.linalg.norm(got - ref) <= 1e-9 * np.linalg.norm(ref) + 1e-12
    print(f"biorob4 elastic forward dynamics vs Pinocchio aba: worst relative error {worst:.2e}")


def test_biorob4_parameterised_elastic_dynamics_against_pinocchio() -> None:
    """The _p form (the loopback's plant): every link's ten parameters scaled by its own factor in
    both models (Pinocchio: mass and rotational inertia scaled, centre of mass kept)."""
    path = ROBOTS_DIR / "biorob4.yaml"
    model = pin_model_from_yaml(path)
    dyn = load("biorob4")
    rng = np.random.default_rng(11)
    scale = rng.uniform(0.7, 1.3, 4)
    params = np.array(dyn.manifest["standard_parameters"], float)
    names = dyn.manifest["standard_parameter_names"]
    for i, name in enumerate(names):
        link = int("".join(ch for ch in name if ch.isdigit()))
        if not name.startswith(("FV", "FC", "FO", "IA")):
            params[i] *= scale[link - 1]
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        model.inertias[j] = pin.Inertia(inertia.mass * scale[j - 1], inertia.lever, inertia.inertia * scale[j - 1])
    data = model.createData()
    for _ in range(50):
        q, qd, th, thd, tm = rng.uniform(-1.5, 1.5, (5, 4))
        th = q + 0.1 * th
        tau = (np.eye(4) + _coupling()).T @ dyn.elastic_torque(q, qd, th, thd) - friction_torque(path, qd)
        qdd_ref = pin.aba(model, data, q, qd, tau)
        qdd, thdd = dyn.elastic_forward_dynamics(q, qd, th, thd, tm, params=params)
        _, thdd_const = dyn.elastic_forward_dynamics(q, qd, th, thd, tm)
        assert np.linalg.norm(qdd - qdd_ref) <= 1e-9 * np.linalg.norm(qdd_ref)
        assert np.array_equal(thdd, thdd_const)  # the drives are the description's either way
    # and it is not the constant form
    assert np.linalg.norm(dyn.elastic_forward_dynamics(q, qd, th, thd, tm)[0] - qdd) > 1e-3 * np.linalg.norm(qdd)


def _coupling() -> np.ndarray:
    doc = load_yaml(ROBOTS_DIR / "biorob4.yaml")
    names = [j["name"] for j in doc["joints"]]
    a = np.zeros((4, 4))
    for i, j in enumerate(doc["joints"]):
        for other, factor in (j["elastic"].get("coupling") or {}).items():
            a[i, names.index(other)] = num(factor)
    return a


def test_biorob4_motor_rest_against_pinocchio_gravity() -> None:
    """The controller's theta_d and the loopback's rest start (eq. 3.28 with the coupling): the
    motors at (I + A) q + K^-1 (I + A)^-T g(q) with Pinocchio's g; its rate by central differences."""
    path = ROBOTS_DIR / "biorob4.yaml"
    model = pin_model_from_yaml(path)
    data = model.createData()
    k = np.array([num(j["elastic"]["stiffness"]) for j in load_yaml(path)["joints"]])
    a = np.eye(4) + _coupling()
    dyn = load("biorob4")
    rng = np.random.default_rng(3)
    for _ in range(30):
        q, qd = rng.uniform(-1.5, 1.5, (2, 4))
        theta = a @ q + np.linalg.solve(a.T, pin.computeGeneralizedGravity(model, data, q)) / k
        got, rate = dyn.motor_rest(q, qd)
        assert np.allclose(got, theta, rtol=1e-12, atol=1e-12)
        h = 1e-6
        fd = (dyn.motor_rest(q + h * qd, qd)[0] - dyn.motor_rest(q - h * qd, qd)[0]) / (2 * h)
        assert np.allclose(rate, fd, rtol=1e-6, atol=1e-8)
