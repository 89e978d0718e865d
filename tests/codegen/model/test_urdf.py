"""URDF import: chain extraction, fixed-joint merging, locked off-chain joints, overlay, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from codegen.blocks.options import realtime_defaults
from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from codegen.model.export import robot_to_yaml
from tests.tooling import ROOT

INERTIAL = """<inertial><origin xyz="{x} 0 0" rpy="0 0 0"/><mass value="{m}"/>
  <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>"""


def tree_urdf() -> str:
    """base -> (rev a) -> l1 -> (fixed) -> l1b -> (cont b) -> l2 -> (fixed) -> tool,
    with a gripper finger (prismatic) off the chain on l2."""

    def link(name: str, m: float, x: float) -> str:
        return f'<link name="{name}">{INERTIAL.format(m=m, x=x)}</link>'

    return textwrap.dedent(f"""\
    <robot name="tree">
      <link name="base"/>
      {link("l1", 2.0, 0.2)}{link("l1b", 0.5, 0.1)}{link("l2", 1.5, 0.3)}
      {link("tool", 0.3, 0.05)}{link("finger", 0.1, 0.02)}
      <joint name="a" type="revolute"><parent link="base"/><child link="l1"/>
        <origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 0 1"/>
        <limit lower="-2" upper="2" effort="50" velocity="3"/></joint>
      <joint name="fix1" type="fixed"><parent link="l1"/><child link="l1b"/>
        <origin xyz="0.4 0 0" rpy="1.5707963267948966 0 0"/></joint>
      <joint name="b" type="continuous"><parent link="l1b"/><child link="l2"/>
        <origin xyz="0.1 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/><limit effort="20" velocity="4"/></joint>
      <joint name="toolj" type="fixed"><parent link="l2"/><child link="tool"/>
        <origin xyz="0.5 0 0" rpy="0 0 0"/></joint>
      <joint name="grip" type="prismatic"><parent link="l2"/><child link="finger"/>
        <origin xyz="0.45 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
        <limit lower="0" upper="0.04" effort="10" velocity="0.1"/></joint>
    </robot>""")


@pytest.fixture()
def urdf(tmp_path: Path) -> Path:
    p = tmp_path / "tree.urdf"
    p.write_text(tree_urdf())
    return p


def test_chain_fixed_merge_and_locked_finger(urdf: Path, tmp_path: Path) -> None:
    robot = load_robot(urdf, base_link="base", tip_link="tool")
    assert [j.name for j in robot.joints] == ["a", "b"]
    assert robot.joints[1].limits.q_min == -np.inf  # continuous: no position limits
    assert robot.joints[0].limits.q_max == 2.0 and robot.joints[0].limits.tau == 50.0
    # link 1 = l1 + l1b (fixed); link 2 = l2 + tool + finger (locked at 0)
    assert robot.links[0][0] == pytest.approx(2.5) and robot.links[1][0] == pytest.approx(1.9)
    # first moment of link 2 about l2's frame (x axis): 1.5*0.3 + 0.3*(0.5+0.05) + 0.1*(0.45+0.02)
    assert robot.links[1][1] == pytest.approx(1.5 * 0.3 + 0.3 * 0.55 + 0.1 * 0.47)
    locked = tmp_path / "lock.yaml"
    locked.write_text("locked: {grip: 0.04}\n")
    moved = load_robot(urdf, base_link="base", tip_link="tool", overlay=locked)
    # the finger moved +0.04 along y of l2: MY grows by 0.1 * 0.04
    assert moved.links[1][2] - robot.links[1][2] == pytest.approx(0.1 * 0.04)


def test_overlay_sets_what_urdf_cannot_say(urdf: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        textwrap.dedent("""\
        name: my_arm
        sample_period: 0.002
        joint_parameters: [IA, FV, FC, FO]
        joints:
          a: {IA: 0.3, FV: 1.5, FC: 2.0, FO: -0.1, gear_ratio: 100, limits: {qdd: 10},
              encoder: {cpr: 4096, side: motor, bits: 16, signed: false}}
        """)
    )
    robot = load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)
    a = robot.joints[0]
    assert (robot.name, robot.sample_period) == ("my_arm", 0.002)
    assert (a.IA, a.FV, a.FC, a.FO, a.gear_ratio) == (0.3, 1.5, 2.0, -0.1, 100.0)
    assert a.limits.qdd == 10 and a.limits.q_max == 2.0  # overlay adds to the URDF limits
    assert a.encoder is not None and a.encoder.bits == 16 and not a.encoder.signed


def test_overlay_errors_name_the_field(urdf: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("joints:\n  nope: {FV: 1}\n")
    with pytest.raises(DescriptionError, match=r"overlay.yaml:2: joints.nope: unknown field"):
        load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)


def test_not_a_serial_chain(urdf: Path) -> None:
    with pytest.raises(DescriptionError, match="not a serial chain"):
        load_robot(urdf, base_link="l2", tip_link="l1")
    with pytest.raises(DescriptionError, match="choose the tip link"):
        load_robot(urdf)
    with pytest.raises(DescriptionError, match="no link named 'hand'"):
        load_robot(urdf, tip_link="hand")


def test_malformed_urdf(tmp_path: Path) -> None:
    p = tmp_path / "bad.urdf"
    p.write_text("<robot name='x'><link name='a'>")
    with pytest.raises(DescriptionError, match=r"bad.urdf:1: not well-formed XML"):
        load_robot(p)


def test_convert_round_trip_gives_the_same_dynamics(urdf: Path, tmp_path: Path) -> None:
    from host_tools import load

    robot = load_robot(urdf, base_link="base", tip_link="tool")
    frozen = tmp_path / "frozen.yaml"
    frozen.write_text(robot_to_yaml(robot))
    a, b = load(urdf, base_link="base", tip_link="tool"), load(frozen)
    rng = np.random.default_rng(3)
    for _ in range(50):
        q, qd, qdd = rng.uniform(-3, 3, 2), rng.normal(0, 1, 2), rng.normal(0, 2, 2)
        assert np.allclose(a.rnea(q, qd, qdd), b.rnea(q, qd, qdd), rtol=1e-12, atol=1e-12)
        assert np.allclose(a.tip_pose(q), b.tip_pose(q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "name, chain", [("franka_panda", ("panda_link0", "panda_link8")), ("ur5", ("base_link", "tool0"))]
)
def test_bundled_urdf_robots_match_their_urdf(name: str, chain: tuple[str, str]) -> None:
    """robots/franka_panda.yaml and robots/ur5.yaml are the conversions of example-robot-data's
    URDFs (+ overlays): links, joint frames and the overlay's joint parameters."""
    from host_tools.studies.pinocchio_models import panda_urdf_path, ur_urdf_path

    root = ROOT
    urdf = panda_urdf_path() if name == "franka_panda" else ur_urdf_path("ur5")
    fresh = load_robot(
        urdf, base_link=chain[0], tip_link=chain[1], overlay=root / "robots" / "overlays" / f"{name}.yaml"
    )
    bundled = load_robot(name)
    assert np.allclose(np.array(fresh.links), np.array(bundled.links), rtol=1e-14, atol=1e-15)
    for a, b in zip(fresh.joints, bundled.joints):
        assert np.allclose(a.pre_matrix @ a.post_matrix, b.pre_matrix @ b.post_matrix, atol=1e-15)
        assert (a.IA, a.FV, a.FC, a.gear_ratio, a.encoder) == (b.IA, b.FV, b.FC, b.gear_ratio, b.encoder)


ELASTIC_OVERLAY = """\
joints:
  a: {gear_ratio: 50, encoder: {cpr: 262144, side: link},
      elastic: {motor_inertia: 0.2, stiffness: 80, damping: 0.4, motor_viscous: 0.5, motor_coulomb: 0.1,
                motor_encoder: {cpr: 4096}}}
  b: {FV: 0.1, elastic: {motor_inertia: 0.05, stiffness: 20, coupling: {a: 0.3}, motor_encoder: {cpr: 4096}}}
"""


def test_overlay_declares_elastic_drives(urdf: Path, tmp_path: Path) -> None:
    """The overlay's elastic blocks (by URDF joint name) give the same drives as a robot YAML: the
    coupled dynamics is the rigid forward dynamics driven by (I + A)^T tau_el (Kirchhoff 2011 eq. 3.24)
    and the motors' eq. 3.23; `manipgen convert` keeps them."""
    from host_tools import load

    overlay = tmp_path / "elastic.yaml"
    overlay.write_text(ELASTIC_OVERLAY)
    robot = load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)
    a, b = (j.elastic for j in robot.joints)
    assert a is not None and b is not None and robot.elastic
    assert (a.stiffness, a.damping, b.coupling) == (80.0, 0.4, ((0, 0.3),))
    assert a.motor_encoder is not None and a.motor_encoder.cpr == 4096 and a.motor_encoder.side == "motor"
    assert realtime_defaults(robot).options.controller == "state_feedback"
    dyn = load(urdf, base_link="base", tip_link="tool", overlay=overlay)
    frozen = tmp_path / "frozen.yaml"
    frozen.write_text(robot_to_yaml(robot))
    again = load(frozen)
    coupling = np.array([[0.0, 0.0], [0.3, 0.0]])
    rng = np.random.default_rng(5)
    for _ in range(20):
        q, qd, th, thd, tm = rng.uniform(-1, 1, (5, 2))
        tau_el = np.array([80.0, 20.0]) * (th - q - coupling @ q) + np.array([0.4, 0.0]) * (thd - qd - coupling @ qd)
        qdd, thdd = dyn.elastic_forward_dynamics(q, qd, th, thd, tm)
        assert np.allclose(qdd, dyn.forward_dynamics(q, qd, (np.eye(2) + coupling).T @ tau_el), rtol=1e-12, atol=1e-12)
        motor = (tm - np.array([0.5, 0.0]) * thd - np.array([0.1, 0.0]) * np.sign(thd) - tau_el) / np.array([0.2, 0.05])
        assert np.allclose(thdd, motor, rtol=1e-12, atol=1e-12)
        for x, y in zip(again.elastic_forward_dynamics(q, qd, th, thd, tm), (qdd, thdd)):
            assert np.allclose(x, y, rtol=1e-12, atol=1e-12)


def test_overlay_elastic_errors_name_the_field(urdf: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "half.yaml"
    overlay.write_text("joints:\n  a: {elastic: {motor_inertia: 0.1, stiffness: 10}}\n")
    with pytest.raises(DescriptionError, match=r"half.yaml.*joints.b: elastic: give every joint"):
        load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)
    overlay.write_text(
        "joints:\n  a: {elastic: {motor_inertia: 0.1, stiffness: 10}}\n"
        "  b: {elastic: {motor_inertia: 0.1, stiffness: 10, coupling: {c: 1}}}\n"
    )
    with pytest.raises(DescriptionError, match=r"joints.b.elastic.coupling"):
        load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)


def test_overlay_couplings_accept_urdf_joint_names(tmp_path: Path) -> None:
    """URDF joint names need not be C identifiers: the coupling names them as the URDF does."""
    urdf = tmp_path / "names.urdf"
    urdf.write_text(tree_urdf().replace('"a"', '"Joint-A"').replace('"b"', '"Joint-B"'))
    overlay = tmp_path / "elastic.yaml"
    overlay.write_text(
        ELASTIC_OVERLAY.replace("  a:", "  Joint-A:")
        .replace("  b:", "  Joint-B:")
        .replace("coupling: {a:", "coupling: {Joint-A:")
    )
    robot = load_robot(urdf, base_link="base", tip_link="tool", overlay=overlay)
    assert robot.joints[1].elastic is not None and robot.joints[1].elastic.coupling == ((0, 0.3),)


DYNAMICS_URDF = """<robot name="damped">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.2 0 0" rpy="0 0 0"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.3" rpy="0 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="50" velocity="3"/>
    <dynamics damping="{damping}" friction="1.25"/></joint>
  <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.4 0 0" rpy="0 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="20" velocity="3"/>
    <dynamics damping="0" friction="0"/></joint>
</robot>"""


def test_urdf_dynamics_become_viscous_and_coulomb_friction(tmp_path: Path) -> None:
    """<dynamics damping friction> are the joint's viscous FV and Coulomb FC (as Pinocchio reads them:
    Model.damping, Model.friction), with one notice naming them; an overlay's FV/FC win; a negative
    value is one error naming the field; a non-zero one the overlay does not declare is refused."""
    p = tmp_path / "damped.urdf"
    p.write_text(DYNAMICS_URDF.format(damping=0.75))
    with pytest.warns(Warning) as caught:
        robot = load_robot(p)
    notices = [str(w.message) for w in caught if "dynamics" in str(w.message)]
    assert len(notices) == 1 and "a: FV 0.75, FC 1.25" in notices[0], notices
    assert (robot.joints[0].FV, robot.joints[0].FC) == (0.75, 1.25)
    assert (robot.joints[1].FV, robot.joints[1].FC) == (0.0, 0.0)

    overlay = tmp_path / "ov.yaml"
    overlay.write_text("joints:\n  a: {FV: 0.1}\n")
    robot = load_robot(p, overlay=overlay)
    assert (robot.joints[0].FV, robot.joints[0].FC) == (0.1, 1.25)

    overlay.write_text("joint_parameters: [IA, FC]\n")
    with pytest.raises(DescriptionError, match=r"joint\[a\]\.dynamics\.damping.*FV is not in"):
        load_robot(p, overlay=overlay)

    p.write_text(DYNAMICS_URDF.format(damping=-0.5))
    with pytest.raises(DescriptionError, match=r"damped\.urdf.*joint\[a\]\.dynamics\.damping.*>= 0"):
        load_robot(p)


def test_angles_rounded_by_the_file_are_quarter_turns(tmp_path: Path) -> None:
    """A URDF's 1.57079632679 (pi/2 rounded at 1e-11 by its writer) is pi/2: the same model as the
    exact angle, with one notice naming the joint; 1.5708 (3.7e-6 off, beyond the 1e-10 rad the
    snapping allows) is taken as written."""
    exact_file, rounded_file, coarse_file = (tmp_path / f"{n}.urdf" for n in ("exact", "rounded", "coarse"))
    exact_file.write_text(tree_urdf())
    rounded_file.write_text(tree_urdf().replace('rpy="1.5707963267948966 0 0"', 'rpy="1.57079632679 0 0"'))
    coarse_file.write_text(tree_urdf().replace('rpy="1.5707963267948966 0 0"', 'rpy="1.5708 0 0"'))
    assert "1.57079632679 0 0" in rounded_file.read_text() and "1.5708 0 0" in coarse_file.read_text()
    exact = load_robot(exact_file, base_link="base", tip_link="tool")
    with pytest.warns(Warning) as caught:
        rounded = load_robot(rounded_file, base_link="base", tip_link="tool")
    notices = [str(w.message) for w in caught if "pi/2" in str(w.message)]
    assert len(notices) == 1 and "joint[fix1] (4.9e-12 rad off)" in notices[0], notices
    assert [(j.pre, j.post) for j in rounded.joints] == [(j.pre, j.post) for j in exact.joints]
    assert rounded.links == exact.links
    coarse = load_robot(coarse_file, base_link="base", tip_link="tool")
    assert [j.pre for j in coarse.joints] != [j.pre for j in exact.joints]
