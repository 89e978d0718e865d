"""The model-adaptive observer's covariance refresh spread over several samples (issue #47,
codegen.blocks.adaptive's SLICED_DOC): after a window of N samples, the generated C's sliced update
(W = G P over P's packed rows, S by rows, L and V by columns, the correction, P by packed rows) equals
the one-shot dense recursive least squares update of the window's snapshot (G, u = gain .* r, g_min,
taken from the C's own state when the window starts) computed here in numpy; the slice table covers
every row and column once, in order, within the budget; and the window's fractions are the decay of
N samples.

Tolerance 1e-9, normwise relative to the largest entry, as in test_adaptive_covariance.py: both sides
evaluate the same update in double from the same state in different orders (the symmetric product
over the packed triangle, zero entries skipped); each entry is a sum of at most n b = 22 products
(planar2) through a 2 x 2 Cholesky solve, so their difference is a few hundred eps times the
condition of S = G P G^T + lambda I, which lambda bounds (smallest eigenvalue >= lambda = 1e-3,
largest about |G|^2 |P| < 1e3 here): well below 1e-9. A slice that skips or repeats a row or column
moves the entries by their own size."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import casadi as cs
import numpy as np
import pytest

from codegen.blocks import adaptive, registry
from codegen.blocks.adaptive import SLICE_PHASES, momentum_regressors, nonzero_pattern, slice_costs, slice_schedule
from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from codegen.emit.cprint import reads_first, schedule
from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from host_tools.bindings.rt import rt_options
from tests.codegen.blocks.helpers import at, fresh_rt, reference
from tests.codegen.blocks.signals import inputs
from tests.codegen.blocks.test_adaptive_convergence import (
    test_two_link_error_vanishes_beyond_the_row_space as two_link_case,
)

ROBOT = "planar2"
SLICED = "adaptive_momentum"  # the momentum form, its sliced update (codegen.blocks.adaptive)
SLICED_FINE = "adaptive_momentum_sliced_fine"  # the same with the smallest budget (the most slices)
SLICED_MEASURED = "adaptive_momentum_measured_sliced"  # adaptive_momentum_measured with the sliced update


def _pattern(robot: str) -> np.ndarray:
    rb = load_robot(robot)
    ctx = Ctx(rb, Dynamics(rb), rt_options("kalman", "adaptive_momentum", "computed_torque", False))
    q, qd = cs.SX.sym("q", rb.dof), cs.SX.sym("qd", rb.dof)
    yp, yb = momentum_regressors(ctx)(q, qd)
    return nonzero_pattern(yp) | nonzero_pattern(yb)


@pytest.fixture
def sliced_observers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``adaptive_momentum`` with ``covariance="sliced"`` at the smallest budget, and
    ``adaptive_momentum_measured`` with it at the default one, registered for one test; the registry as
    it was afterwards."""
    base = registry.observers()["adaptive_momentum"]
    smallest = max(cost for _, _, cost in slice_costs(_pattern(ROBOT)))
    monkeypatch.setattr(registry, "_OBSERVERS", dict(registry._OBSERVERS))
    registry.register(dataclasses.replace(base, name=SLICED_FINE, build=_sliced_build(smallest, False), collide=0))
    measured = registry.observers()["adaptive_momentum_measured"]
    registry.register(dataclasses.replace(measured, name=SLICED_MEASURED, build=_sliced_build(None, True), collide=0))
    yield


def _sliced_build(budget: int | None, measured: bool) -> Callable[[Ctx], Block]:
    """adaptive_momentum's (``measured``: adaptive_momentum_measured's) build with the sliced update at ``budget``."""
    return lambda ctx: adaptive.build(
        ctx, lam=1e-3, measured=measured, integral=True, covariance="sliced", slice_budget=budget
    )


def _unpack(p: np.ndarray, nb: int) -> np.ndarray:
    """P from its packed upper triangle (row by row)."""
    full = np.zeros((nb, nb))
    full[np.triu_indices(nb)] = p
    return full + np.triu(full, 1).T


def _snapshot(gs: np.ndarray, robot: str) -> np.ndarray:
    """G (n x b) from the snapshot's stored entries: the regressor's pattern's non-zeros, row by row
    (codegen.blocks.adaptive.nonzeros), so independent of the block's own index tables."""
    pattern = _pattern(robot)
    g = np.zeros(pattern.shape)
    g[pattern] = gs  # numpy's boolean index runs row by row, as the stored entries
    return g


def _dense_update(start: dict[str, np.ndarray], lam: float) -> tuple[np.ndarray, np.ndarray]:
    """The one-shot dense update of a window's snapshot: dtheta_hat and P (full) after it."""
    g = _snapshot(start["gs"], ROBOT)
    nb = g.shape[1]
    p = _unpack(start["p"], nb)
    lower = np.linalg.cholesky(g @ p @ g.T + lam * np.eye(g.shape[0]))
    v = np.linalg.solve(lower, g @ p)
    dtheta = start["dtheta"] - v.T @ np.linalg.solve(lower, start["u"])
    return dtheta, p - float(start["gain_w"]) * (v.T @ v) + float(start["drift"]) * np.diag(start["p0"])


def _rel(c: np.ndarray, r: np.ndarray) -> float:
    return float(np.max(np.abs(c - r)) / max(float(np.max(np.abs(r))), 1e-300))


@pytest.mark.parametrize("observer", [SLICED, SLICED_FINE])
def test_a_window_is_the_dense_update_of_its_snapshot(observer: str, sliced_observers: None) -> None:
    rt = fresh_rt(ROBOT, "kalman", observer, "computed_torque")
    rt.config["det.threshold"] = 1e6  # never held: a window starts as soon as the last one ends
    nb = rt.state["obs"]["dtheta"].size
    k = 6 * (1 + len(slice_costs(_pattern(ROBOT)))) + 2  # at least 6 windows: no window has more slices than items
    ins = inputs(k, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=7, tau_scale=20.0)
    lam = float(rt.config["obs.lam"])
    start: dict[str, np.ndarray] | None = None
    checked, worst = 0, {"p": 0.0, "dtheta": 0.0}
    moved = 0
    for j in range(k):
        before = rt.state["obs"]["dtheta"].copy()
        rt.step(**at(ins, j))
        obs = rt.state["obs"]
        moved += int(not np.array_equal(before, obs["dtheta"]))
        if int(obs["slice"]) == 1:  # a window started on this sample: its snapshot
            start = {name: np.array(obs[name], float) for name in ("gs", "u", "gain_w", "p", "dtheta", "drift", "p0")}
        elif int(obs["slice"]) == 0 and start is not None:  # its last slice ran on this sample
            dtheta, p = _dense_update(start, lam)
            worst["dtheta"] = max(worst["dtheta"], _rel(obs["dtheta"], dtheta))
            worst["p"] = max(worst["p"], _rel(_unpack(obs["p"], nb), p))
            checked, start = checked + 1, None
    assert checked >= 5, checked
    assert max(worst.values()) <= 1e-9, worst
    # dtheta_hat moves once a window (at the correction's slice), not every sample
    assert 5 <= moved <= checked + 1, (moved, checked)


@pytest.mark.parametrize("robot", [ROBOT, "kuka_iiwa14"])
def test_the_slices_cover_every_row_once_within_the_budget(robot: str) -> None:
    pattern = _pattern(robot)
    n, nb = pattern.shape
    items = slice_costs(pattern)
    for budget in (None, max(cost for _, _, cost in items), 4 * n * nb):
        table, spent = slice_schedule(pattern, budget)
        cost = {(ph, i): c for ph, i, c in items}
        covered = [(ph, i) for ph, lo, hi in table for i in range(lo, hi)]
        assert covered == [(ph, i) for ph, i, _ in items]  # each row / column once, the phases in order
        assert all(sum(cost[ph, i] for i in range(lo, hi)) <= spent for ph, lo, hi in table)
        assert [ph for ph, _, _ in table].count(SLICE_PHASES["correct"]) == 1
    with pytest.raises(ValueError):
        slice_schedule(pattern, max(cost for _, _, cost in items) - 1)


# planar2's residual on these inputs (tau_scale 20) rises while the low-passes start, until the first
# window's correction (17 N m at sample 9 with N = 13), then stays at 1-18 N m (10th-99th percentile);
# so at 40 N m it crosses the suspect level (half) but not the threshold. LATCHED: a threshold
# 0.9 x the largest |r| before the first window's correction (_latched), so a joint goes above it
# (a firm hold: the window in flight is discarded) before that correction, and a collision latches
# the sample after
SUSPECT_ONLY, LATCHED = 40.0, -1.0
# the cases' adaptation is unlimited (obs.rate NO_RATE, the block's default until 2026-11-30): at the
# momentum form's default RATE these random torques are absorbed at 1 N m/s and r passes 40 N m
UNLIMITED = {"obs.rate": adaptive.NO_RATE}
CASES = {  # (every, threshold): windows done, discarded, held (a sample at the suspect level's hold)
    (0, 1e6): (True, False, False),
    (23, 1e6): (True, True, False),  # in.reset discards the window in flight
    (0, SUSPECT_ONLY): (True, False, True),  # suspect: no window starts, but the one in flight runs on
    (0, LATCHED): (False, True, True),  # a joint above its threshold discards the window in flight; latched, none after
}


def _latched(ins: dict[str, np.ndarray]) -> float:
    """0.9 x the largest |r| before the first window's correction has run, without detection."""
    rt = fresh_rt(ROBOT, "kalman", SLICED, "computed_torque")
    rt.config["det.threshold"] = 1e6
    rt.config["obs.rate"] = UNLIMITED["obs.rate"]
    corrected = [ph for ph, _, _ in _table()].index(SLICE_PHASES["correct"]) + 1
    peak = 0.0
    for j in range(len(ins["tau"])):
        before = int(rt.state["obs"]["slice"])
        c = rt.step(**at(ins, j))
        if before == corrected:  # its correction ran on this sample
            return 0.9 * peak
        peak = max(peak, float(np.max(np.abs(c["r"]))))
    raise AssertionError("no window reached its correction")


@pytest.mark.parametrize(("every", "threshold"), list(CASES))
def test_every_slice_equals_the_oracles(every: int, threshold: float, sliced_observers: None) -> None:
    """C and the oracle (tests/oracles/adaptive.py: each slice's rows or columns with numpy's products
    and factorisation) from identical states at every sample, with in.reset every ``every`` samples
    (not a multiple of the window) and the hold's cases (CASES). Tolerance: the module's 1e-9, per
    sample."""
    rt = fresh_rt(ROBOT, "kalman", SLICED, "computed_torque")
    k = 300
    ins = inputs(k, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=7, tau_scale=20.0)
    expected = CASES[every, threshold]
    if threshold == LATCHED:
        threshold = _latched(ins)
    rt.config["det.threshold"] = threshold
    rt.config["obs.rate"] = UNLIMITED["obs.rate"]
    ref = reference(ROBOT, "kalman", SLICED, "computed_torque")
    ref.set_config({"det.threshold": threshold, **UNLIMITED})
    worst = {"p": 0.0, "dtheta": 0.0, "v": 0.0, "r": 0.0}
    ends = {"done": 0, "discarded": 0, "held": 0}
    for j in range(k):
        step = dict(at(ins, j), reset=int(every > 0 and j > 0 and j % every == 0))
        ref.load_state(rt)
        before = int(rt.state["obs"]["slice"])
        o = ref.step(step)
        c = rt.step(**step)
        after = int(rt.state["obs"]["slice"])
        assert after == int(ref.data["st.obs.slice"])
        for name in ("p", "dtheta", "v"):
            worst[name] = max(worst[name], _rel(rt.state["obs"][name], ref.data["st.obs." + name]))
        worst["r"] = max(worst["r"], _rel(c["r"], o["r"]))
        if before > 0 and after == 0:
            ends["done" if before == len(_table()) else "discarded"] += 1
        ends["held"] += int(int(rt.state["obs"]["held"]) > 0 or bool(c["collision"]))
    assert max(worst.values()) <= 1e-9, worst
    done, discarded, held = expected
    assert (ends["done"] >= 3, ends["discarded"] > 0, ends["held"] > 0) == (done, discarded, held), ends


def _table() -> list[tuple[int, int, int]]:
    """SLICED's slice table (the default budget)."""
    return slice_schedule(_pattern(ROBOT))[0]


def test_the_window_fractions_are_the_decay_over_the_window(sliced_observers: None) -> None:
    """g_N = 1 - exp(-K N T): what is left after the window, 1 - g_N, is what N samples at
    exp(-K T) each leave, (exp(-K T))^N."""
    rt = fresh_rt(ROBOT, "kalman", SLICED, "computed_torque")
    rt.config["det.threshold"] = 1e6
    n_window = 1 + len(_table())
    ins = inputs(3, 2, rt.sample_period, float(rt.config["enc.cpr"][0]), seed=7, tau_scale=20.0)
    for j in range(3):
        rt.step(**at(ins, j))
    per_sample = np.exp(-np.asarray(rt.config["obs.k_o"], float) * rt.sample_period)
    left = 1.0 - float(rt.state["obs"]["gain_p"])
    # the power's N roundings and exp's own, each half an ulp of a number below 1: 1e-15 per sample
    assert abs(left - float(np.max(per_sample)) ** n_window) <= 1e-15 * (n_window + 1)


@pytest.mark.parametrize("wrong_link", [0, 1])
def test_two_link_error_vanishes_with_the_sliced_update(wrong_link: int, sliced_observers: None) -> None:
    """test_adaptive_convergence's planar2 case (one link's density 20 % off, exact qd; e_O below 1e-3
    of the direct residual after 3 s) with the sliced update: one update a window still takes the
    model error's part of the residual away beyond the regressor's row space."""
    two_link_case(wrong_link, SLICED_MEASURED)


@pytest.mark.parametrize("robot", [ROBOT, "kuka_iiwa14"])
def test_the_sliced_predict_writes_d_over_itself(robot: str) -> None:
    """The sliced build has no workspace w (its W is st.obs.v): its predict writes the next D over D,
    and, printed in schedule's order, reads each element of D before writing it, so the call is made
    in place (pipeline.RtEmitter._call) and not through a local copy of D on the stack. It keeps no G
    of its own (predict writes G into the snapshot, an optional output) and stores the snapshot and D
    as the regressor's entries that can be non-zero only (RAM, issue #47)."""
    rb = load_robot(robot)
    ctx = Ctx(rb, Dynamics(rb), rt_options("kalman", SLICED, "computed_torque", False))
    build = registry.observers()[SLICED].build
    assert build is not None
    block = build(ctx)
    fn = block.fn("predict")
    assert fn.function is not None
    fields = {f.name: f for f in block.state}
    assert "w" not in fields and "y" not in fields
    stored = int(_pattern(robot).sum())
    assert fields["gs"].shape == (stored,) and fields["d"].shape == (stored,) and fields["drift"].shape == ()
    assert [a.binding for a in fn.outputs if a.optional] == ["st.obs.gs"]
    assert "st.obs.d" in fn.writes
    order = schedule(fn.function)
    assert reads_first(fn.function, order, fn.reads.index("st.obs.d"), fn.writes.index("st.obs.d"))


def test_the_sliced_update_needs_the_momentum_form() -> None:
    """Only the momentum form's predict writes G into the window's snapshot (an optional output), so
    the q-double-dot form with covariance="sliced" is refused when built, not at the step's emission
    (where it met the template's condition for an output it does not have, or no st.obs.y)."""
    rb = load_robot(ROBOT)
    ctx = Ctx(rb, Dynamics(rb), rt_options("kalman", SLICED, "computed_torque", False))
    with pytest.raises(ValueError, match="momentum form"):
        adaptive.build(ctx, lam=1e-3, integral=False, covariance="sliced")
