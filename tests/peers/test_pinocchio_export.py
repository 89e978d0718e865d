"""The exported descriptions (codegen.model.export: `manipgen convert`, `identify --out`) are the same robot:
Pinocchio's own URDF parser on robot_to_urdf's output, and the peers' YAML reader on
robot_to_yaml's, against Pinocchio's model of the original YAML -- tip pose and joint torques
(rigid bodies, no rotor inertia or friction: URDF has neither). Standard-DH tables are the case
that needs care: their link frame sits off the joint axis by a (codegen.model.export.UrdfChain)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from codegen.model.description import load_robot
from codegen.model.export import robot_to_urdf, robot_to_yaml
from host_tools.studies.pinocchio_models import pin_model_from_yaml

from .peer_cases import YAML_CASES, case_params

TOL = 1e-9


def _rigid(model: pin.Model) -> pin.Model:
    model.armature = np.zeros(model.nv)
    return model


def _configuration(model: pin.Model, q: np.ndarray) -> np.ndarray:
    """Joint angles as the model's configuration: a continuous joint's is (cos q, sin q)."""
    out = []
    for joint, value in zip(list(model.joints)[1:], q):
        out += [np.cos(value), np.sin(value)] if joint.nq == 2 else [value]
    return np.array(out)


def _compare(case_id: str, ref: pin.Model, ref_tip: str, other: pin.Model, other_tip: str) -> None:
    rd, od = ref.createData(), other.createData()
    rng = np.random.default_rng(7)
    for _ in range(50):
        q, qd, qdd = rng.uniform(-3, 3, ref.nq), rng.normal(0, 1, ref.nv), rng.normal(0, 2, ref.nv)
        qo = _configuration(other, q)
        tau_ref, tau = pin.rnea(ref, rd, q, qd, qdd), pin.rnea(other, od, qo, qd, qdd)
        scale = max(1.0, float(np.linalg.norm(tau_ref)))
        assert np.linalg.norm(tau - tau_ref) <= TOL * scale, (case_id, tau, tau_ref)
        pin.framesForwardKinematics(ref, rd, q)
        pin.framesForwardKinematics(other, od, qo)
        a, b = rd.oMf[ref.getFrameId(ref_tip)], od.oMf[other.getFrameId(other_tip)]
        assert np.abs(a.homogeneous - b.homogeneous).max() <= TOL, case_id


@pytest.mark.parametrize("case", case_params(YAML_CASES))
def test_exported_urdf_is_the_same_robot(case, tmp_path: Path) -> None:
    robot = load_robot(case.spec)
    ref = _rigid(pin_model_from_yaml(case.yaml_path))  # an elastic arm: its links (drives have no URDF element)
    exported = pin.buildModelFromXML(robot_to_urdf(robot))
    exported.gravity.linear = np.array(robot.gravity)  # nor has gravity
    _compare(case.id, ref, "tip", exported, "tip")


@pytest.mark.parametrize("case", case_params(YAML_CASES))
def test_exported_yaml_is_the_same_robot(case, tmp_path: Path) -> None:
    robot = load_robot(case.spec)
    path = tmp_path / f"{case.id}.yaml"
    path.write_text(robot_to_yaml(robot))
    _compare(case.id, _rigid(pin_model_from_yaml(case.yaml_path)), "tip", _rigid(pin_model_from_yaml(path)), "tip")
