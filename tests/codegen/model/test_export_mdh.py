"""`manipgen convert --convention mdh` (codegen.model.export.MdhChain): the modified-DH table written
for a robot is the same robot. Each bundled robot (mdh, dh and urdf descriptions), the UR5/UR10
URDFs of example-robot-data and the peers' mixed arms (prismatic joints, a payload) are converted,
written and read back, against the original through the expressions the C is printed from:
inverse dynamics, mass matrix, tip pose and tip Jacobian. (`manipgen verify --reference` checks
such a table's generated C against Pinocchio on the URDF: tests/host_tools/studies/test_verify.py.)"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from codegen.model.export import robot_to_yaml
from host_tools.cli import main
from tests.tooling import TESTS

BUNDLED = ("kuka_iiwa14", "schunk_lwa4p", "ur5", "franka_panda", "planar2", "biorob4")
UR_URDFS = ("ur5_robot", "ur10_robot")
MIXED = ("mixed_mdh", "mixed_dh")  # tests/peers/data: prismatic joints, tilted axes, a payload

# eps * n * cond = 2.2e-16 * 7 * ~10 ~ 1.5e-14 (double rounding through two expression trees of
# depth ~n joints): 1e-9 leaves 5 orders of margin (3 over the table's 1e-12 snapping), and any
# wrong frame, sign or offset moves the dynamics by far more (test_the_comparison_sees_...: > 1e-3).
RTOL, ATOL = 1e-9, 1e-12
STATES = 200


def ur_urdf(name: str) -> Path:
    """example-robot-data's ur_description/urdf/<name>.urdf (installed as a cmeel package)."""
    for entry in sys.path:
        path = Path(entry, "cmeel.prefix", "share", "example-robot-data", "robots", "ur_description", "urdf")
        if (path / f"{name}.urdf").is_file():
            return path / f"{name}.urdf"
    pytest.skip("example-robot-data is not installed")


def source(spec: str) -> tuple[str | Path, str | None, str | None]:
    """A bundled name, a mixed arm or a UR URDF name: its path, base link and tip link."""
    if spec in MIXED:
        return TESTS / "peers" / "data" / f"{spec}.yaml", None, None
    return (spec, None, None) if spec in BUNDLED else (ur_urdf(spec), "base_link", "tool0")


class Symbolic:
    """A robot's CasADi expressions (codegen.symbolic.dynamics) evaluated numerically: the same
    functions the generated C prints (tests/codegen/emit/test_generated_c.py holds C = CasADi), without the cost
    of generating and compiling a folder per converted table."""

    def __init__(self, robot: Any) -> None:
        import casadi as cs

        from codegen.symbolic.dynamics import Dynamics

        d = Dynamics(robot)
        pi = cs.DM(robot.standard_parameters())
        self.dof = robot.dof
        self._rnea = cs.Function("rnea", [d.q, d.qd, d.qdd], [cs.substitute(d.rnea(d.pi), d.pi, pi)])
        self._m = cs.Function("m", [d.q], [cs.substitute(d.mass_matrix(d.pi), d.pi, pi)])
        self._pose = cs.Function("pose", [d.q], [d.tip_pose])
        self._jac = cs.Function("tip_jacobian", [d.q], [d.tip_jacobian])

    def rnea(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        return np.array(self._rnea(q, qd, qdd)).ravel()

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._m(q))

    def tip_pose(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._pose(q))

    def tip_jacobian(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._jac(q))


def worst_errors(a: Any, b: Any, seed: int = 1) -> dict[str, float]:
    """The worst normwise relative error of b against a (ATOL in the denominator: a zero reference)
    over STATES random states, per function."""
    rng = np.random.default_rng(seed)
    worst = dict.fromkeys(("rnea", "mass_matrix", "tip_pose", "tip_jacobian"), 0.0)
    for _ in range(STATES):
        q, qd, qdd = rng.uniform(-np.pi, np.pi, a.dof), rng.uniform(-2, 2, a.dof), rng.uniform(-5, 5, a.dof)
        pairs = {
            "rnea": (a.rnea(q, qd, qdd), b.rnea(q, qd, qdd)),
            "mass_matrix": (a.mass_matrix(q), b.mass_matrix(q)),
            "tip_pose": (a.tip_pose(q), b.tip_pose(q)),
            "tip_jacobian": (a.tip_jacobian(q), b.tip_jacobian(q)),
        }
        for name, (x, y) in pairs.items():
            err = np.linalg.norm(y - x) / (np.linalg.norm(x) + ATOL / RTOL)
            worst[name] = max(worst[name], float(err))
    return worst


def converted(spec: str, tmp_path: Path) -> tuple[Any, Path]:
    robot = load_robot(*source(spec))
    out = tmp_path / f"{robot.name}_mdh.yaml"
    out.write_text(robot_to_yaml(robot, convention="mdh"))
    return robot, out


@pytest.mark.parametrize("spec", BUNDLED + UR_URDFS + MIXED)
def test_the_mdh_table_is_the_same_robot(spec: str, tmp_path: Path) -> None:
    robot, path = converted(spec, tmp_path)
    back = load_robot(path)
    assert back.convention == "mdh"
    # everything but the geometry is carried over as it was
    assert (back.name, back.gravity, back.sample_period, back.joint_parameters, back.coulomb) == (
        robot.name,
        robot.gravity,
        robot.sample_period,
        robot.joint_parameters,
        robot.coulomb,
    )
    for j0, j1 in zip(robot.joints, back.joints, strict=True):
        assert replace(j1, pre=j0.pre, post=j0.post, kinematics=j0.kinematics) == j0
    worst = worst_errors(Symbolic(robot), Symbolic(back))
    print(f"{spec}: worst relative error " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) <= RTOL, worst


def test_the_comparison_sees_a_wrong_convention(tmp_path: Path) -> None:
    """The same table read as standard DH is another robot: the check above would catch it."""
    _, path = converted("ur5", tmp_path)
    relabelled = tmp_path / "ur5_as_dh.yaml"
    relabelled.write_text(path.read_text().replace("convention: mdh", "convention: dh").replace("mdh: {", "dh: {"))
    assert load_robot(relabelled).convention == "dh"
    assert worst_errors(Symbolic(load_robot(path)), Symbolic(load_robot(relabelled)))["rnea"] > 1e-3


TINY_URDF = """<?xml version="1.0"?>
<robot name="tiny">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0 0 0.1"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="arm"/>
    <origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/>
  </joint>
</robot>
"""


def tiny(tmp_path: Path, xyz: str, rpy: str, axis: str) -> Path:
    path = tmp_path / "tiny.urdf"
    path.write_text(TINY_URDF.format(xyz=xyz, rpy=rpy, axis=axis))
    return path


@pytest.mark.parametrize(
    ("xyz", "rpy", "axis"),
    [
        ("0 0 0", "0 0 0", "1 0 0"),  # along the base x axis
        ("0 0 0", "0 0.3 0", "0 0 1"),  # tilted towards it
        ("0 0.1 0", "0 0 0", "0 0 1"),  # normal to it, but past it
        ("0.2 0 0.1", "0 0 0", "0 1 0"),  # normal to it, but above it
    ],
)
def test_a_first_axis_out_of_reach_is_refused(tmp_path: Path, xyz: str, rpy: str, axis: str) -> None:
    path = tiny(tmp_path, xyz, rpy, axis)
    with pytest.raises(DescriptionError, match="first axis is not reachable by MDH from the base frame") as err:
        robot_to_yaml(load_robot(path), convention="mdh")
    assert err.value.file == str(path)
    assert "joint 1 (j1)" in str(err.value)


def test_a_first_axis_within_reach(tmp_path: Path) -> None:
    """Normal to the base x axis and through it: alpha and a reach it."""
    text = robot_to_yaml(load_robot(tiny(tmp_path, "0.2 0 0", "0 0 0", "0 1 0")), convention="mdh")
    assert "    mdh: {alpha: -pi/2, a: 0.2, theta: 0.0, d: 0.0}" in text


def test_convert_writes_mdh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    urdf, out = ur_urdf("ur10_robot"), tmp_path / "ur10_mdh.yaml"
    args = ["convert", str(urdf), "--base-link", "base_link", "--tip-link", "tool0", "-o", str(out)]
    assert main([*args, "--convention", "mdh"]) == 0
    assert "convert --convention mdh" in out.read_text().splitlines()[0]
    assert load_robot(out).convention == "mdh"
    default = tmp_path / "ur10.yaml"
    assert main([*args[:-1], str(default)]) == 0
    assert load_robot(default).convention == "urdf"
    capsys.readouterr()
    assert main(["convert", str(tiny(tmp_path, "0 0.1 0", "0 0 0", "0 0 1")), "--convention", "mdh"]) == 2
    assert "not reachable by MDH" in capsys.readouterr().err
