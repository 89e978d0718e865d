"""The model-adaptive observers' covariance update (issue #47, codegen.blocks.adaptive's
COVARIANCE_DOC): the C's structured update (rows reversed, S = J L L^T J, each block's columns solved
from their first non-zero row, P packed) against the oracle's dense update (tests/oracles/adaptive.py:
the standard L L^T, no zero pattern, P's diagonal blocks kept), state by state; and ``link``'s blocks
are the serial chain's links.

Tolerance 1e-9, normwise relative to the largest entry: both sides evaluate the same update in double
from the same state, in different orders (J L L^T J against L L^T, zero entries skipped or not); each
entry is a sum of at most n b = 22 products (planar2) through a 2 x 2 Cholesky solve, so their
difference is a few hundred eps times the condition of S = Y P Y^T + lambda I, which lambda bounds
(S's smallest eigenvalue >= lambda = 1e-3, its largest about |Y|^2 |P| < 1e3 here): well below 1e-9.
A dropped regressor entry or a wrong block offset moves the entries by their own size."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import casadi as cs
import numpy as np
import pytest

from codegen.blocks import adaptive, registry
from codegen.blocks.adaptive import covariance_blocks, covariance_of, momentum_regressors, nonzero_pattern
from codegen.blocks.context import Ctx
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from host_tools.bindings.rt import rt_options
from tests.codegen.blocks.helpers import at, fresh_rt, reference
from tests.codegen.blocks.signals import inputs
from tests.oracles.adaptive import pack

ROBOT = "planar2"


def _rel(c: np.ndarray, r: np.ndarray) -> float:
    c, r = np.asarray(c, float), np.asarray(r, float)
    return float(np.max(np.abs(c - r)) / max(float(np.max(np.abs(r))), 1e-300))


LINK = "adaptive_momentum_link"  # the momentum form with P per link, registered for these tests only


@pytest.fixture
def link_observer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``adaptive_momentum`` with ``covariance="link"`` registered as LINK for one test (its block and
    oracle are adaptive_momentum's); the registry as it was afterwards."""
    base = registry.observers()["adaptive_momentum"]
    monkeypatch.setattr(registry, "_OBSERVERS", dict(registry._OBSERVERS))
    registry.register(
        dataclasses.replace(
            base,
            name=LINK,
            build=lambda ctx: adaptive.build(ctx, lam=1e-3, integral=True, covariance="link"),
            collide=0,
        )
    )
    yield


@pytest.mark.parametrize("observer", [LINK, "adaptive_momentum", "adaptive", "adaptive_momentum_essential"])
def test_structured_update_equals_the_dense_one_kept_to_the_blocks(observer: str, link_observer: None) -> None:
    rt = fresh_rt(ROBOT, "kalman", observer, "computed_torque")
    rt.config["det.threshold"] = 1e6  # never held: the adaptation runs every sample
    ref = reference(ROBOT, "kalman", observer, "computed_torque")
    ref.set_config({"det.threshold": 1e6})
    k = 200
    ins = inputs(k, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=7, tau_scale=20.0)
    worst = {"p": 0.0, "dtheta": 0.0, "r": 0.0}
    for j in range(k):
        ref.load_state(rt)
        o = ref.step(at(ins, j))
        c = rt.step(**at(ins, j))
        worst["p"] = max(worst["p"], _rel(rt.state["obs"]["p"], ref.data["st.obs.p"]))
        worst["dtheta"] = max(worst["dtheta"], _rel(rt.state["obs"]["dtheta"], ref.data["st.obs.dtheta"]))
        worst["r"] = max(worst["r"], _rel(c["r"], o["r"]))
    assert max(worst.values()) <= 1e-9, worst
    # the adaptation did run: dtheta_hat moved and P left its prior
    assert np.abs(rt.state["obs"]["dtheta"]).max() > 0
    cov = covariance_of(next(b for b in ref.pipe.blocks if b.kind == "obs"))
    assert not np.allclose(rt.state["obs"]["p"], pack(np.diag(ref.data["st.obs.p0"]), cov))


def test_link_blocks_are_the_links() -> None:
    """``link``'s blocks hold the base parameters of one link and its joint (named ...<joint>[R]):
    the serial chain's pattern, joint j's torque reads the parameters of links j and beyond only."""
    robot = load_robot(ROBOT)
    ctx = Ctx(robot, Dynamics(robot), rt_options("kalman", "adaptive_momentum", "computed_torque", False))
    q, qd = cs.SX.sym("q", robot.dof), cs.SX.sym("qd", robot.dof)
    yp, yb = momentum_regressors(ctx)(q, qd)
    cov = covariance_blocks(nonzero_pattern(yp) | nonzero_pattern(yb), "link")
    names = ctx.base.names
    col = cov["col"]
    assert sorted(col) == list(range(len(names)))
    links = [{names[c].rstrip("R")[-1] for c in col[start : start + size]} for start, size, _, _ in cov["blocks"]]
    assert links == [{"1"}, {"2"}]
    # link 1's block reaches joint 1 only (reversed row 1); link 2's both joints (from reversed row 0)
    assert [lo for _, _, lo, _ in cov["blocks"]] == [1, 0]
    assert cov["size"] == sum(size**2 for _, size, _, _ in cov["blocks"])
    dense = covariance_blocks(nonzero_pattern(yp) | nonzero_pattern(yb), "dense")
    assert dense["blocks"] == [(0, len(names), 0, 0)] and dense["col"] == list(range(len(names)))


DIRECT_LINK = "adaptive_link"  # eq. 16's direct form with P per link, registered for this test only


@pytest.fixture
def direct_link_observer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``adaptive`` with ``covariance="link"`` registered as DIRECT_LINK for one test (its oracle is
    adaptive's); the registry as it was afterwards."""
    base = registry.observers()["adaptive"]
    monkeypatch.setattr(registry, "_OBSERVERS", dict(registry._OBSERVERS))
    registry.register(
        dataclasses.replace(
            base, name=DIRECT_LINK, build=lambda ctx: adaptive.build(ctx, lam=0.1, covariance="link"), collide=0
        )
    )
    yield


@pytest.mark.parametrize("observer", ["adaptive", DIRECT_LINK])
def test_the_direct_forms_rate_limit_holds_from_the_first_sample(observer: str, direct_link_observer: None) -> None:
    """The direct form's rate limit (RATE_DOC, issue #46) scales the fractions g so that |g .* r|_2 <=
    rate T, which bounds what a correction moves, S (S + lambda I)^-1 (g .* r), by rate T; a restart
    (the first sample, in.reset) removes the whole residual it sees (g = 1), but under the same limit
    (the block's ``restart`` function): absorbed at once, its jump of dtheta_hat along P_0 would have
    to be unlearnt at ``rate``. State by state against the oracle on the dense update and the
    block-diagonal one, with the limit binding; the first sample's move is at most rate T where the
    unlimited restart moves the torque by more than 100 rate T."""
    rate = 40.0  # N m/s: rate T = 0.04 N m, under most of the corrections below (checked)
    k = 200
    runs: dict[float, list[float]] = {}
    for limit in (rate, adaptive.NO_RATE):
        rt = fresh_rt(ROBOT, "kalman", observer, "computed_torque")
        rt.config["det.threshold"] = 1e6  # never held: the adaptation runs every sample
        rt.config["obs.rate"] = limit
        ref = reference(ROBOT, "kalman", observer, "computed_torque")  # its config is rt's (load_state)
        ins = inputs(k, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=7, tau_scale=20.0)
        worst = {"dtheta": 0.0, "r": 0.0, "gain": 0.0}
        moves = []
        for j in range(k):
            ref.load_state(rt)
            before = np.array(rt.state["obs"]["dtheta"], copy=True)
            o = ref.step(at(ins, j))
            c = rt.step(**at(ins, j))
            after = np.asarray(rt.state["obs"]["dtheta"], float)
            worst["dtheta"] = max(worst["dtheta"], _rel(after, ref.data["st.obs.dtheta"]))
            worst["gain"] = max(worst["gain"], _rel(rt.state["obs"]["gain"], ref.data["st.obs.gain"]))
            worst["r"] = max(worst["r"], _rel(c["r"], o["r"]))
            # the torque this sample's correction moved, at its regressor
            moves.append(float(np.linalg.norm(ref.data["st.obs.y"].T @ (after - before))))
        assert max(worst.values()) <= 1e-9, (limit, worst)
        runs[limit] = moves
    step = rate * 1e-3
    limited, free = np.array(runs[rate]), np.array(runs[adaptive.NO_RATE])
    assert limited.max() <= step * (1 + 1e-9), limited.max()  # every correction, the restart's too
    assert free[0] > 100 * step, free[0]  # the restart the limit holds back
    assert np.mean(free[1:] > step) > 0.5  # the limit binds on most samples here, so it was exercised
