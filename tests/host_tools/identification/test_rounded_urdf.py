"""An ordinary URDF identifies whatever its base-parameter structure (issue 45).

URDF files round pi/2. Written to 11 decimals (``1.57079632679``, xacro's habit) the angle is snapped
to pi/2 at load (codegen.model.urdf.QUARTER_TURN_TOL). Written to 9 decimals (``1.570796326``,
7.9e-10 off: beyond that tolerance, taken as written) the regrouping puts 1e-9 x IA2 into every base
parameter, and the friction ones are named FC1R, FV1R. Identification found a joint's Coulomb
column by the name ``FC<j>`` and stopped ("FC1 is not a base parameter"); it now finds the column
whose kept standard parameter is FC_j. Checked against the closed form: that column is
tanh(qd_j / scale) in joint j's equation and 0 in the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codegen.model.description import load_robot
from host_tools.identification.least_squares import model
from host_tools.identification.pipeline import with_coulomb_scales

LINK = (
    '<link name="{name}"><inertial><origin xyz="{c}" rpy="0 0 0"/><mass value="{m}"/>'
    '<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial></link>'
)
JOINT = (
    '<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
    '<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="40" velocity="2"/></joint>'
)


def rounded_urdf(half_pi: str = "1.570796326", pi: str = "3.141592653") -> str:
    """Three revolute joints whose frames are turned by pi/2 and pi as URDF files write them."""
    links = [
        LINK.format(name="l1", c="0 0.01 0.1", m=2.0, i=0.02),
        LINK.format(name="l2", c="0.15 0 0.01", m=1.5, i=0.012),
        LINK.format(name="l3", c="0.1 0.01 0", m=0.8, i=0.005),
    ]
    joints = [
        JOINT.format(name="j1", parent="base", child="l1", xyz="0 0 0.2", rpy="0 0 0"),
        JOINT.format(name="j2", parent="l1", child="l2", xyz="0 0.0016 0.2", rpy=f"-{half_pi} 0 {pi}"),
        JOINT.format(name="j3", parent="l2", child="l3", xyz="0.3 0 0", rpy=f"0 {pi} 0"),
    ]
    return '<robot name="rounded3"><link name="base"/>' + "".join(links + joints) + "</robot>"


def test_the_coulomb_columns_are_found_whatever_regrouped_into_them(tmp_path: Path) -> None:
    urdf, overlay = tmp_path / "rounded3.urdf", tmp_path / "overlay.yaml"
    urdf.write_text(rounded_urdf())
    overlay.write_text("coulomb: {model: tanh, velocity_scale: 0.05}\n")
    robot = load_robot(urdf, overlay=overlay)
    m = model(robot)
    # the trap itself: the rounded angles regroup into the friction parameters (FC1 -> FC1R)
    assert "FC1R" in m.names and "FC1" not in m.names, m.names
    # rounded at 1e-11 the angles are the quarter turns they stand for: nothing regroups into FC1
    fine = tmp_path / "fine.urdf"
    fine.write_text(rounded_urdf("1.57079632679", "3.14159265359"))
    assert "FC1" in model(load_robot(fine, overlay=overlay)).names
    columns = m.coulomb_columns()
    assert [m.names[c].rstrip("R") for c in columns] == ["FC1", "FC2", "FC3"]

    rng = np.random.default_rng(7)
    k = 50
    q, qd, qdd = (rng.uniform(-lim, lim, (k, 3)) for lim in (2.0, 1.0, 3.0))
    # the C's tanh against numpy's: both within an ulp or two of the exact value, |tanh| <= 1
    atol = 1e-14
    for scale, mc in ((0.05, m), (0.02, m.with_robot(with_coulomb_scales(robot, (0.02, 0.02, 0.02))))):
        y = mc.regressor(q, qd, qdd)
        for j, c in enumerate(columns):
            expected = np.zeros((k, 3))
            expected[:, j] = np.tanh(qd[:, j] / scale)
            np.testing.assert_allclose(y[:, :, c], expected, rtol=0, atol=atol, err_msg=f"FC{j + 1}, scale {scale}")
