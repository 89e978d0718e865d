"""The notice of joints that a nearly singular mass matrix makes track badly (host_tools.data.light_joints).

The joints expected come from what was recorded, not from this code: the Kinova Jaco2's noise-free
excitation run (example-robot-data's URDF, no rotor inertia) was flagged off-trajectory on joints 4
and 6 and on no other, and passed the checks with IA = 0.01 kg m^2 on joints 4-6 (issue 45)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from codegen.errors import DescriptionWarning
from codegen.model.description import load_robot
from host_tools.data.light_joints import light_joints, warn_light_joints
from host_tools.studies.pinocchio_models import example_robot_data_dir

TIP = "j2s6s200_end_effector"


def kinova() -> Path:
    return example_robot_data_dir() / "kinova_description" / "robots" / "kinova.urdf"


def test_a_light_wrist_without_rotor_inertia_is_named_once_with_the_fix() -> None:
    robot = load_robot(kinova(), tip_link=TIP)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = warn_light_joints(robot)
    assert [f.joint for f in found] == ["j2s6s200_joint_4", "j2s6s200_joint_6"]
    assert all(f.peak > f.bound and f.rotor_inertia == 0.0 for f in found)
    notices = [w for w in caught if issubclass(w.category, DescriptionWarning)]
    assert len(notices) == 1, [str(w.message) for w in caught]
    text = str(notices[0].message)
    assert "kinova.urdf" in text and "j2s6s200_joint_4" in text and "j2s6s200_joint_6" in text
    assert "IA" in text and "overlay" in text and "cond(M)" in text and "\n" not in text


def test_rotor_inertia_in_an_overlay_or_a_large_cond_alone_says_nothing(tmp_path: Path) -> None:
    """The same URDF with the wrist's rotor inertia in an overlay; and the bundled iiwa, whose
    cond(M) (up to 2e4) exceeds the Jaco2's but whose gravity does not move its light direction."""
    overlay = tmp_path / "rotors.yaml"
    overlay.write_text("joints:\n" + "".join(f"  j2s6s200_joint_{j}: {{IA: 0.01}}\n" for j in (4, 5, 6)))
    for robot in (load_robot(kinova(), tip_link=TIP, overlay=overlay), load_robot("kuka_iiwa14")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DescriptionWarning)
            assert warn_light_joints(robot) == [], robot.name
    assert light_joints(load_robot("planar2")) == []


@pytest.mark.parametrize("name", ["ur5", "schunk_lwa4p"])
def test_arms_with_rotor_inertia_on_every_joint_say_nothing(name: str) -> None:
    """Bundled arms whose descriptions give rotor inertia on every joint: nothing named."""
    robot = load_robot(name)
    assert all(j.IA > 0 for j in robot.joints)
    assert light_joints(robot) == []
