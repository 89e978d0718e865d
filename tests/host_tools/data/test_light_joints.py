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


@pytest.mark.parametrize("command", ["demo", "record"])
def test_demo_and_record_give_the_notice_before_their_work(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """demo and record (like generate, verify and excite) name the light joints before any work: the
    work is stopped at its first step here (a refusal in its place), the notice is already out."""
    from codegen.errors import DescriptionError
    from tests.tooling import cli_in_process

    def stop(*_args: object, **_kwargs: object) -> None:
        raise DescriptionError("test", "", "stopped before the work")

    target = "host_tools.studies.demo.generate_into" if command == "demo" else "host_tools.bindings.rt.load_rt"
    monkeypatch.setattr(target, stop)
    out = ["--out", str(tmp_path / "run.npz")] if command == "record" else ["--out", str(tmp_path / "demo")]
    r = cli_in_process(capsys, command, str(kinova()), "--tip-link", TIP, *out)
    assert r.returncode == 2 and "stopped before the work" in r.stderr, r.stderr
    notices = [ln for ln in r.stderr.splitlines() if "nearly singular" in ln]
    assert len(notices) == 1 and "j2s6s200_joint_4, j2s6s200_joint_6" in notices[0], r.stderr
