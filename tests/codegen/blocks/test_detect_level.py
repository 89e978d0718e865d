"""The detection level in the step (issue 47): templates/rt/detect.c.j2 evaluates ``level`` without
its standstill part on every joint (``constant`` instead where the configuration's every kv and ka
is 0) and ``standstill`` only where ks != 0. Composed that way, the functions give the bits of
codegen.blocks.detect.level (the expression ``manipgen thresholds`` designs with) on every joint,
with and without ks, at rest and moving, detecting or not; ``constant`` for finite q-dot and
q-ddot estimates (a non-finite one is a numeric fault: the step restarts)."""

from __future__ import annotations

import itertools

import casadi as cs
import numpy as np
import pytest

from codegen.blocks.context import Ctx
from codegen.blocks.detect import build, level
from codegen.blocks.options import RtOptions
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from tests.codegen.blocks.helpers import at, fresh_rt
from tests.codegen.blocks.signals import inputs


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

    # where kv = ka = 0 the step runs ``constant`` instead of ``level``: the same bits when q-dot and
    # q-ddot are finite (kv |qd| and ka |qdd| are +0 there)
    constant = block.fn("constant").casadi
    rest = np.flatnonzero((kv == 0) & (ka == 0) & np.isfinite(qd) & np.isfinite(qdd))
    rest = rest[: len(rest) - len(rest) % n]
    assert len(rest) > 0 and len(np.unique(qd[rest])) > 3
    via_constant = np.array(constant.map(len(rest) // n)(th[rest].reshape(-1, n).T)).T.ravel()
    for k, i in enumerate(rest):
        if ks[i] != 0:
            via_constant[k] = float(standstill(via_constant[k], th[i], qd[i], ks[i], vs[i]))
    assert (via_constant.view(np.int64) == full[rest].view(np.int64)).all()


@pytest.mark.parametrize(
    "kv,ka",
    [
        ((0.0, 0.0), (0.0, 0.0)),  # constant: the speed and acceleration parts skipped
        ((0.0, 0.0), (0.0, 0.3)),  # one joint's ka alone turns them on
        ((0.2, 0.0), (0.0, 0.0)),  # one joint's kv alone
    ],
)
def test_the_step_level_is_the_designed_level_whichever_parts_the_config_uses(
    kv: tuple[float, float], ka: tuple[float, float]
) -> None:
    """The C step's st.det.level after each sample of a moving arm, bit for bit against
    codegen.blocks.detect.level at the step's own q-dot and q-ddot estimates."""
    rt = fresh_rt("planar2", "kalman", "momentum", "none")
    th, ks, vs = np.array([0.5, 0.3]), np.array([0.0, 0.04]), np.array([0.02, 0.05])
    for key, v in {"det.threshold": th, "det.kv": kv, "det.ka": ka, "det.ks": ks, "det.vs": vs}.items():
        rt.config[key] = v
    rt.reset()
    ins = inputs(400, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=3, loss=0.0)
    args = [cs.SX.sym(k, 2) for k in ("qd", "qdd", "th", "kv", "ka", "ks", "vs")]
    designed = cs.Function("designed", args, [level(*args)])
    moving = 0
    for k in range(len(ins["counts"])):
        out = rt.step(**at(ins, k))
        got = np.ravel(rt.state["det"]["level"]).astype(float)
        want = np.array(designed(out["qd_hat"], out["qdd_hat"], th, kv, ka, ks, vs)).ravel()
        assert (got.view(np.int64) == want.view(np.int64)).all(), (k, got, want)
        moving += int(np.any(got != th))
    # the motion reaches the speed, acceleration and standstill parts on most samples
    assert moving > 300
