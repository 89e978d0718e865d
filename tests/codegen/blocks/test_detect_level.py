"""The detection level in the step (issue 47): templates/rt/detect.c.j2 evaluates ``level`` without
its standstill part on every joint and ``standstill`` only where ks != 0. Composed that way, the two
functions give the bits of codegen.blocks.detect.level (the expression ``manipgen thresholds``
designs with) on every joint, with and without ks, at rest and moving, detecting or not."""

from __future__ import annotations

import itertools

import casadi as cs
import numpy as np

from codegen.blocks.context import Ctx
from codegen.blocks.detect import build, level
from codegen.blocks.options import RtOptions
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics


def test_level_then_standstill_where_ks_is_set_is_level_bit_for_bit() -> None:
    robot = load_robot("planar2")
    block = build(Ctx(robot, Dynamics(robot), RtOptions()))
    args = [cs.SX.sym(k) for k in ("qd", "qdd", "th", "kv", "ka", "ks", "vs")]
    whole = cs.Function("whole", args, [level(*args)])
    moving, standstill = block.fn("level").casadi, block.fn("standstill").casadi
    speeds = (0.0, -0.0, 1e-9, -3e-3, 0.02, 0.7, -5.0, 1e3, np.inf, np.nan)
    grid = list(
        itertools.product(
            speeds,  # qd_hat
            (0.0, -0.4, 12.0),  # qdd_hat
            (0.0, 0.3),  # threshold: not detecting, detecting
            (0.0, 0.1),  # kv
            (0.0, 0.2),  # ka
            (0.0, 0.05, 3.0),  # ks
            (1e-3, 0.02, 0.5),  # vs
        )
    )
    qd, qdd, th, kv, ka, ks, vs = (np.array(c) for c in zip(*grid))
    full = np.array(whole.map(len(grid))(qd, qdd, th, kv, ka, ks, vs)).ravel()
    n = robot.dof  # the all-joints function: the grid's points n at a time, one per joint
    assert len(grid) % n == 0
    per_joint = [c.reshape(-1, n).T for c in (qd, qdd, th, kv, ka)]
    split = np.array(moving.map(len(grid) // n)(*per_joint)).T.ravel()
    for i in np.flatnonzero(ks != 0):
        split[i] = float(standstill(split[i], th[i], qd[i], ks[i], vs[i]))
    assert np.isnan(full).sum() > 0  # the grid reaches NaN speeds: they must stay NaN
    same = (full.view(np.int64) == split.view(np.int64)) | (np.isnan(full) & np.isnan(split))
    assert same.all(), [grid[i] for i in np.flatnonzero(~same)][:5]
