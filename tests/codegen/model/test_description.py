"""Robot descriptions: YAML schema, conventions, validation errors (file + field + line)."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from codegen.errors import DescriptionError
from codegen.model.description import load_robot, robot_from_yaml
from codegen.resources import bundled_robots

LINK = "link: {mass: 1.0, com: [0.1, 0, 0], inertia: [0.01, 0, 0, 0.02, 0, 0.02]}"


def write(tmp_path: Path, text: str, name: str = "robot.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def two_joint(joint2_extra: str = "", link2: str = LINK, top: str = "") -> str:
    return f"""\
name: test_arm
convention: mdh
{top}
joints:
  - name: j1
    type: revolute
    mdh: {{alpha: 0, a: 0, theta: 0, d: 0.3}}
    {LINK}
  - name: j2
    type: revolute
    mdh: {{alpha: pi/2, a: 0.1, theta: 0, d: 0}}
    {link2}
    {joint2_extra}
"""


def test_bundled_robots_load() -> None:
    assert {"kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2", "ur5"} <= set(bundled_robots())
    dofs = {name: load_robot(name).dof for name in ("kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2", "ur5")}
    assert dofs == {"kuka_iiwa14": 7, "franka_panda": 7, "schunk_lwa4p": 6, "planar2": 2, "ur5": 6}


def test_parameter_vector_layout(tmp_path: Path) -> None:
    robot = robot_from_yaml(write(tmp_path, two_joint("FV: 0.5", top="joint_parameters: [FV, FC]")))
    assert robot.standard_parameter_names[:12] == (
        "M1",
        "MX1",
        "MY1",
        "MZ1",
        "XX1",
        "XY1",
        "XZ1",
        "YY1",
        "YZ1",
        "ZZ1",
        "FV1",
        "FC1",
    )
    pi = robot.standard_parameters()
    # COM given about the centre of mass: first moment m c, XX about the origin = xx + m (cy^2 + cz^2)
    assert pi[1] == pytest.approx(0.1) and pi[4] == pytest.approx(0.01)
    assert pi[7] == pytest.approx(0.02 + 1.0 * 0.1**2)
    assert pi[robot.standard_parameter_names.index("FV2")] == 0.5


@pytest.mark.parametrize(
    "mutation, field, message",
    [
        (lambda t: t.replace("mass: 1.0, com: [0.1", "mass: -1.0, com: [0.1", 1), "joints[0].link.mass", "positive"),
        (
            lambda t: t.replace("{mass: 1.0, com: [0.1, 0, 0], ", "{com: [0.1, 0, 0], ", 1),
            "joints[0].link.mass",
            "missing",
        ),
        (
            lambda t: t.replace("inertia: [0.01, 0, 0, 0.02, 0, 0.02]", "inertia: [0.01, 0.5, 0, 0.02, 0, 0.02]", 1),
            "joints[0].link",
            "not positive definite",
        ),
        (lambda t: t.replace("type: revolute", "type: spherical", 1), "joints[0].type", "unknown joint type"),
        (lambda t: t.replace("d: 0.3", "d: .nan", 1), "joints[0].mdh.d", "finite"),
        (lambda t: t.replace("d: 0.3", "d: 0.3, r: 1", 1), "joints[0].mdh.r", "unknown field"),
        (lambda t: t.replace("mdh: {alpha: 0, a: 0", "dh: {alpha: 0, a: 0", 1), "joints[0].dh", "convention"),
        (lambda t: t.replace("convention: mdh", "convention: xyz"), "convention", "mdh, dh or urdf"),
    ],
)
def test_bad_yaml_names_file_field_and_line(tmp_path: Path, mutation, field: str, message: str) -> None:
    path = write(tmp_path, mutation(two_joint()))
    with pytest.raises(DescriptionError) as err:
        robot_from_yaml(path)
    text = str(err.value)
    assert str(path) in text and field in text and message in text, text
    assert err.value.line is not None
    line = path.read_text().splitlines()[err.value.line - 1]
    assert field.split(".")[-1].split("[")[0] in line or field.startswith("joints[0].link") and "link" in line


def test_undeclared_joint_parameter_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, two_joint("FO: 0.2", top="joint_parameters: [FV, FC]"))
    with pytest.raises(DescriptionError, match=r"joints\[1\]\.FO.*not listed in joint_parameters"):
        robot_from_yaml(path)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\njoints: [\n  - a: 1\n")
    with pytest.raises(DescriptionError) as err:
        robot_from_yaml(path)
    assert "YAML syntax error" in str(err.value) and err.value.line is not None


def test_unknown_robot_name() -> None:
    with pytest.raises(DescriptionError, match="not a bundled robot"):
        load_robot("no_such_robot")


def test_names_are_sanitised(tmp_path: Path) -> None:
    text = two_joint().replace("name: test_arm", 'name: "evil */ #include <stdlib.h>"')
    robot = robot_from_yaml(write(tmp_path, text))
    assert robot.name == "evil_include_stdlib_h"
    # over 12 characters: the C prefix is the first 7, "_" and 4 hex digits of the name's SHA-256
    assert re.fullmatch(r"evil_in_[0-9a-f]{4}", robot.c_name)


def test_dh_and_mdh_describe_the_same_arm(tmp_path: Path) -> None:
    """The Schunk LWA-4P's standard-DH table rewritten as MDH (Craig) gives the same dynamics."""
    from host_tools import load

    dh = load_robot("schunk_lwa4p")
    # standard DH -> MDH: joint i's MDH (alpha, a) are DH (alpha, a) of joint i-1; link params in
    # DH frame i (distal) are re-expressed in MDH frame i (the joint frame) by the constant transform.
    from codegen.model import spatial

    kin = [dict(j.kinematics) for j in dh.joints]
    lines = [
        "name: lwa4p_mdh",
        "convention: mdh",
        "gravity: [0, 0, -9.81]",
        "joint_parameters: [IA, FV, FC]",
        "coulomb: {model: tanh, velocity_scale: 0.01}",
        "joints:",
    ]
    for i, (joint, link) in enumerate(zip(dh.joints, dh.links)):
        prev = kin[i - 1] if i else {"alpha": 0.0, "a": 0.0}
        # DH frame i seen from MDH frame i: Tx(a_i) Rx(alpha_i)
        t = spatial.trans(x=kin[i]["a"]) @ spatial.homogeneous(spatial.rot_x(kin[i]["alpha"]))
        p = spatial.transform_inertial(np.array(link), t)
        lines += [
            f"  - name: j{i + 1}",
            "    type: revolute",
            f"    mdh: {{alpha: {prev['alpha']!r}, a: {prev['a']!r}, theta: {kin[i]['theta']!r}, d: {kin[i]['d']!r}}}",
            f"    IA: {joint.IA!r}",
            f"    FV: {joint.FV!r}",
            f"    FC: {joint.FC!r}",
            "    link: {"
            + ", ".join(
                f"{k}: {float(v)!r}" for k, v in zip(("M", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ"), p)
            )
            + "}",
        ]
    mdh_path = write(tmp_path, "\n".join(lines) + "\n", "lwa4p_mdh.yaml")
    a, b = load("schunk_lwa4p"), load(mdh_path)
    rng = np.random.default_rng(1)
    for _ in range(50):
        q, qd, qdd = rng.uniform(-3, 3, 6), rng.normal(0, 1, 6), rng.normal(0, 2, 6)
        ta, tb = a.rnea(q, qd, qdd), b.rnea(q, qd, qdd)
        assert np.linalg.norm(ta - tb) <= 1e-9 * np.linalg.norm(ta)
    assert a.n_base == b.n_base


def test_prismatic_joint_and_gravity_vector(tmp_path: Path) -> None:
    """A vertical prismatic joint carrying a revolute link, gravity along -x (a wall mount):
    closed form: joint 1 (along z) feels no gravity, joint 2 (about z) carries m2 g c cos/sin."""
    from host_tools import load

    text = """\
    name: slider
    convention: mdh
    gravity: [-9.81, 0, 0]
    joint_parameters: []
    joints:
      - {name: lift, type: prismatic, mdh: {alpha: 0, a: 0, theta: 0, d: 0.2},
         link: {mass: 3.0, com: [0, 0, 0], inertia: [0.1, 0, 0, 0.1, 0, 0.1]}}
      - {name: turn, type: revolute, mdh: {alpha: 0, a: 0.5, theta: 0, d: 0},
         link: {mass: 2.0, com: [0.4, 0, 0], inertia: [0.01, 0, 0, 0.05, 0, 0.05]}}
    """
    dyn = load(write(tmp_path, text))
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.uniform(-2, 2, 2)
        qd, qdd = rng.normal(0, 1, 2), rng.normal(0, 1, 2)
        m1, m2, c, izz = 3.0, 2.0, 0.4, 0.05 + 2.0 * 0.4**2
        # link 2 rotates about the vertical axis; its COM at c (cos q2, sin q2) from the axis
        tau1 = (m1 + m2) * qdd[0]
        tau2 = izz * qdd[1] + m2 * 9.81 * c * (-math.sin(q[1]))  # gravity -x: V = m g x
        expected = np.array([tau1, tau2])
        got = dyn.rnea(q, qd, qdd)
        assert np.allclose(got, expected, rtol=1e-12, atol=1e-12), (got, expected)
    pose = dyn.tip_pose(np.array([0.1, 0.0]))
    assert np.allclose(pose[:3, 3], [0.5, 0.0, 0.3])


@pytest.mark.parametrize("written, scales", [("0.01", (0.01,)), ("[0.01, 0.002]", (0.01, 0.002))])
def test_coulomb_scale_per_joint_or_one_for_all(tmp_path: Path, written: str, scales: tuple[float, ...]) -> None:
    """coulomb.velocity_scale: one number for every joint, or one per joint; each joint's friction
    is FC tanh(qd_i / v_i), and the exported YAML keeps the form it was given."""
    from codegen.model.export import robot_to_yaml
    from host_tools import load

    text = two_joint(top=f"joint_parameters: [FV, FC]\ncoulomb: {{model: tanh, velocity_scale: {written}}}")
    text = text.replace("    type: revolute\n", "    type: revolute\n    FC: 2.0\n")
    robot = robot_from_yaml(write(tmp_path, text))
    assert robot.coulomb.velocity_scale == scales
    qd = np.array([0.003, 0.003])  # tanh(0.3) = 0.29 vs tanh(1.5) = 0.91: the scales matter here
    np.testing.assert_allclose(
        load(write(tmp_path, text)).friction(qd), 2.0 * np.tanh(qd / np.broadcast_to(scales, 2)), rtol=1e-14
    )
    again = robot_from_yaml(write(tmp_path, robot_to_yaml(robot), "again.yaml"))
    assert again.coulomb == robot.coulomb
    assert f"velocity_scale: {written}" in robot_to_yaml(robot)


@pytest.mark.parametrize(
    "section, terms",
    [
        ("friction: {model: general}", (("dahl", "load", "stribeck", "smooth", "offset"),) * 2),
        ("friction: {terms: [stribeck, dahl]}", (("dahl", "stribeck"),) * 2),
        ("friction: {terms: {j2: [load]}}", ((), ("load",))),
        ("friction: {terms: {1: [stribeck]}}", (("stribeck",), ())),
        ("friction: {model: description}", ()),
        # a description with its own FO: general leaves the offset term out (two constants would add up)
        (
            "joint_parameters: [IA, FV, FC, FO]\nfriction: {model: general}",
            (("dahl", "load", "stribeck", "smooth"),) * 2,
        ),
    ],
)
def test_friction_terms_per_joint(tmp_path: Path, section: str, terms: tuple[tuple[str, ...], ...]) -> None:
    """friction: the terms beyond viscous + Coulomb the generated code has, per joint (#47), kept by
    the exported YAML."""
    from codegen.model.export import robot_to_yaml

    robot = robot_from_yaml(write(tmp_path, two_joint(top=section)))
    assert robot.friction_terms == terms
    assert robot_from_yaml(write(tmp_path, robot_to_yaml(robot), "again.yaml")).friction_terms == terms


@pytest.mark.parametrize(
    "section, field, message",
    [
        (
            "friction: {terms: [coulomb]}",
            "friction.terms",
            "expected a list of terms from dahl, load, stribeck, smooth, offset",
        ),
        ("friction: {terms: {j3: [dahl]}}", "friction.terms.j3", "no joint named 'j3'; joints: j1, j2"),
        ("friction: {terms: {3: [dahl]}}", "friction.terms.3", "joint number must be 1..2, got 3"),
        ("friction: {model: general, terms: [dahl]}", "friction", "give either model: general"),
        ("friction: {model: stribeck}", "friction.model", "must be 'general' or 'description'"),
        ("friction: {stribeck: 1}", "friction.stribeck", "unknown field"),
        (
            "joint_parameters: [IA, FV, FC, FO]\nfriction: {terms: {j2: [offset]}}",
            "friction.terms",
            "offset: joint_parameters identifies FO",
        ),
    ],
)
def test_bad_friction_section_names_file_and_field(tmp_path: Path, section: str, field: str, message: str) -> None:
    path = write(tmp_path, two_joint(top=section))
    with pytest.raises(DescriptionError) as err:
        robot_from_yaml(path)
    text = str(err.value)
    assert str(path) in text and field in text and message in text, text
