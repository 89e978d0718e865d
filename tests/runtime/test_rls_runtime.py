"""runtime/manipgen_linalg.h's covariance updates of the model-adaptive observer through cffi:
mg_rls_blocks (P in diagonal blocks), mg_rls_sliced (P dense, one update spread over slices) and
their priors, against recursive least squares written out in numpy (independent of the generated
code that calls them).

Tolerances: every case is built with S = G P G^T + lam I of condition number below 1e3 and entries of
order 1, so each result is a sum of at most n nb products of order-1 terms, a triangular solve and a
Cholesky factor of that S: a relative error of a few n nb cond(S) eps, about 1e-10 for n = 4, nb = 9
(eps 2.2e-16). 1e-9 relative to the largest entry leaves a margin of ten and still rejects any
wrong term (of order 1e-2 at least here)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.blocks.adaptive import sparse_rows
from host_tools.bindings.build import build_runtime

PRELUDE = """
#include <math.h>
#define MG_REAL double
#define MG_SQRT sqrt
"""
# a wrapper that lays out the sliced update's struct from flat arrays (cffi then needs no struct type)
EPILOGUE = """
void sliced_step(int n, int nb, const int *sched, int nsched, int corr, const int *rows, const int16_t *cols,
                 const int16_t *next, const double *p0, const double *drift, double *p, double *dtheta, double *gs,
                 double *v, double *s, double *u, double *gain_w, int32_t *slice, const double *g,
                 const double *gain, const double *r, double gain_p, double lam, int restart, unsigned freeze,
                 int hold, int firm)
{
    mg_rls_sliced_t x = { n, nb, (const int (*)[3])sched, nsched, corr, rows, cols, next, p0, drift, p, dtheta,
                          gs, v, s, u, gain_w, slice };
    if (*slice == 0) { /* as the generated step: G's stored entries, only where no window is in flight */
        int j;
        int e;
        for (j = 0; j < n; ++j) {
            for (e = rows[j]; e < rows[j + 1]; ++e) {
                gs[e] = g[(j * nb) + cols[e]];
            }
        }
    }
    mg_rls_sliced(&x, gain, r, gain_p, lam, restart, freeze, hold, firm);
}
void prior_packed(int nb, const double *p0, double *p)
{
    mg_rls_sliced_t x = { 0, nb, NULL, 0, 0, NULL, NULL, NULL, p0, NULL, p, NULL, NULL, NULL, NULL, NULL, NULL,
                          NULL };
    mg_rls_prior_packed(&x);
}
void prior_blocks(int nblk, const int *blk, const int *col, const double *p0, double *p, int np)
{
    mg_rls_prior_blocks(nblk, (const int (*)[4])blk, col, p0, p, np);
}
int rls_blocks(int n, int nb, int nblk, const int *blk, const int *col, const double *yt, double *p, double lam,
               double gain_p, const double *drift, const double *gain, const double *r, double *dtheta, double *w,
               double *s, double *u)
{
    return mg_rls_blocks(n, nb, nblk, (const int (*)[4])blk, col, yt, p, lam, gain_p, drift, gain, r, dtheta, w, s, u);
}
"""
DECLARATIONS = """
void sliced_step(int n, int nb, const int *sched, int nsched, int corr, const int *rows, const int16_t *cols,
                 const int16_t *next, const double *p0, const double *drift, double *p, double *dtheta, double *gs,
                 double *v, double *s, double *u, double *gain_w, int32_t *slice, const double *g,
                 const double *gain, const double *r, double gain_p, double lam, int restart, unsigned freeze,
                 int hold, int firm);
void prior_packed(int nb, const double *p0, double *p);
void prior_blocks(int nblk, const int *blk, const int *col, const double *p0, double *p, int np);
int rls_blocks(int n, int nb, int nblk, const int *blk, const int *col, const double *yt, double *p, double lam,
               double gain_p, const double *drift, const double *gain, const double *r, double *dtheta, double *w,
               double *s, double *u);
"""
N, NB = 4, 9
REL = 1e-9  # see the module's docstring


@pytest.fixture(scope="module")
def rt() -> Any:
    return build_runtime("manipgen_linalg.h", DECLARATIONS, PRELUDE, EPILOGUE)


def _p(rt: Any, a: np.ndarray, ctype: str = "") -> Any:
    return rt.ffi.cast(ctype or ("double *" if a.dtype == np.float64 else "int *"), a.ctypes.data)


def _rls(g: np.ndarray, p: np.ndarray, lam: float, gain: np.ndarray, r: np.ndarray, gain_p: float) -> tuple:
    """Recursive least squares, dense: dtheta's change and P's new value before the drift."""
    s = g @ p @ g.T + lam * np.eye(g.shape[0])
    lower = np.linalg.cholesky(s)
    v = np.linalg.solve(lower, g @ p)
    return -v.T @ np.linalg.solve(lower, gain * r), p - gain_p * v.T @ v


def _regressor(rng: np.random.Generator, first: list[int]) -> np.ndarray:
    """G (n x nb) with joint j's row zero before column first[j], as a serial arm's regressor."""
    g = rng.normal(size=(N, NB))
    for j, f in enumerate(first):
        g[j, :f] = 0
    return g


def _spd(rng: np.random.Generator, size: int) -> np.ndarray:
    a = rng.normal(size=(size, size))
    return a @ a.T / size + np.eye(size)


def _close(got: np.ndarray, want: np.ndarray) -> None:
    assert np.max(np.abs(got - want)) <= REL * max(1.0, float(np.max(np.abs(want)))), (got, want)


# P's blocks: base columns {0, 4, 7}, {1, 2}, {3, 5, 6, 8} at positions 0-2, 3-4, 5-8
COL = np.array([0, 4, 7, 1, 2, 3, 5, 6, 8], dtype=np.intc)
SIZES = (3, 2, 4)


def _blocks(first_row: tuple[int, int, int]) -> tuple[np.ndarray, int]:
    rows, start, off = [], 0, 0
    for size, lo in zip(SIZES, first_row, strict=True):
        rows.append([start, size, lo, off])
        start, off = start + size, off + size * size
    return np.array(rows, dtype=np.intc), off


@pytest.mark.parametrize("gain_p", [0.0, 0.7])
def test_rls_blocks_is_the_dense_update_with_p_kept_block_diagonal(rt: Any, gain_p: float) -> None:
    """With P block-diagonal, one mg_rls_blocks update is the dense recursive least squares' (the
    blocks' rows reversed, zero before each block's first reversed row as declared), then P's diagonal
    blocks kept plus the drift: what codegen.blocks.adaptive documents for the observer."""
    rng = np.random.default_rng(3)
    blk, np_ = _blocks((0, 1, 2))
    g = rng.normal(size=(N, NB))
    for (start, size, lo, _), cols in zip(blk, np.split(COL, np.cumsum(SIZES)[:-1]), strict=True):
        del start, size
        for m in range(lo):  # reversed row m is joint n - 1 - m: zero there, as declared
            g[N - 1 - m, cols] = 0
    full = np.zeros((NB, NB))
    for cols in np.split(COL, np.cumsum(SIZES)[:-1]):
        full[np.ix_(cols, cols)] = _spd(rng, cols.size)
    packed = np.concatenate([full[np.ix_(c, c)].ravel() for c in np.split(COL, np.cumsum(SIZES)[:-1])])
    drift, gain, r = rng.uniform(0, 0.1, NB), rng.uniform(0.2, 1, N), rng.normal(size=N)
    dtheta = rng.normal(size=NB)
    lam = 0.3
    yt = np.ascontiguousarray(g.T)
    w, s, u = np.zeros(N * NB), np.zeros(N * N), np.zeros(N)
    p, th = packed.copy(), dtheta.copy()
    ok = rt.lib.rls_blocks(
        N, NB, len(SIZES), _p(rt, blk), _p(rt, COL), _p(rt, yt), _p(rt, p), lam, gain_p, _p(rt, drift),
        _p(rt, gain), _p(rt, r), _p(rt, th), _p(rt, w), _p(rt, s), _p(rt, u),
    )  # fmt: skip
    assert ok == 1
    step, p_new = _rls(g, full, lam, gain, r, gain_p)
    _close(th, dtheta + step)
    p_new = p_new + np.diag(drift)
    _close(p, np.concatenate([p_new[np.ix_(c, c)].ravel() for c in np.split(COL, np.cumsum(SIZES)[:-1])]))
    assert p.size == np_


def test_rls_blocks_leaves_p_and_dtheta_when_s_is_not_positive_definite(rt: Any) -> None:
    rng = np.random.default_rng(4)
    blk, np_ = _blocks((0, 0, 0))
    p = np.concatenate([np.eye(k).ravel() for k in SIZES])
    th = rng.normal(size=NB)
    before = (p.copy(), th.copy())
    yt = np.zeros((NB, N))  # S = lam I with lam < 0
    w, s, u = np.zeros(N * NB), np.zeros(N * N), np.zeros(N)
    ones = np.ones(N)
    ok = rt.lib.rls_blocks(
        N, NB, len(SIZES), _p(rt, blk), _p(rt, COL), _p(rt, yt), _p(rt, p), -1.0, 1.0, _p(rt, np.zeros(NB)),
        _p(rt, ones), _p(rt, ones), _p(rt, th), _p(rt, w), _p(rt, s), _p(rt, u),
    )  # fmt: skip
    assert ok == 0 and np.array_equal(p, before[0]) and np.array_equal(th, before[1]) and p.size == np_


def test_priors_put_p0_on_the_diagonal(rt: Any) -> None:
    p0 = np.arange(1.0, NB + 1)
    blk, np_ = _blocks((0, 0, 0))
    p = np.full(np_, 7.0)
    rt.lib.prior_blocks(len(SIZES), _p(rt, blk), _p(rt, COL), _p(rt, p0), _p(rt, p), np_)
    want = np.concatenate([np.diag(p0[c]).ravel() for c in np.split(COL, np.cumsum(SIZES)[:-1])])
    assert np.array_equal(p, want)
    packed = np.full(NB * (NB + 1) // 2, 7.0)
    rt.lib.prior_packed(NB, _p(rt, p0), _p(rt, packed))
    assert np.array_equal(packed, np.diag(p0)[np.triu_indices(NB)])


W, S, V, CORRECT, P = 1, 2, 3, 4, 5
ONE_EACH = [(W, 0, NB), (S, 0, N), (V, 0, NB), (CORRECT, 0, 0), (P, 0, NB)]
FINE = [(W, 0, 2), (W, 2, 5), (W, 5, NB), (S, 0, 1), (S, 1, N), (V, 0, 4), (V, 4, NB), (CORRECT, 0, 0)]
FINE += [(P, 0, 3), (P, 3, 6), (P, 6, NB)]
FIRST = [0, 2, 3, 5]


class _Sliced:
    """The sliced update's state and a step through sliced_step (freeze on)."""

    def __init__(self, rt: Any, sched: list[tuple[int, int, int]], p: np.ndarray, dtheta: np.ndarray) -> None:
        self.rt, self.sched = rt, np.array(sched, dtype=np.intc)
        self.corr = [ph for ph, _, _ in sched].index(CORRECT) + 1
        # G stored from each row's first column that can be non-zero on (the runtime's index tables)
        tables = sparse_rows(np.arange(NB)[None, :] >= np.array(FIRST)[:, None])
        self.rows = np.array(tables["rows"], dtype=np.intc)
        self.cols, self.next = (np.array(tables[k], dtype=np.int16) for k in ("cols", "next"))
        self.p0, self.drift = np.arange(1.0, NB + 1), np.array([0.02])  # Q = drift P_0
        self.p, self.dtheta = p[np.triu_indices(NB)].copy(), dtheta.copy()
        self.gs, self.v, self.s, self.u = np.zeros(self.cols.size), np.zeros(N * NB), np.zeros(N * N), np.zeros(N)
        self.gain_w, self.slice = np.zeros(1), np.zeros(1, dtype=np.int32)

    def step(self, g: np.ndarray, gain: np.ndarray, r: np.ndarray, gain_p: float, lam: float, **flags: int) -> None:
        g = np.ascontiguousarray(g)
        f = {"restart": 0, "hold": 0, "firm": 0} | flags
        self.rt.lib.sliced_step(
            N, NB, _p(self.rt, self.sched), len(self.sched), self.corr, _p(self.rt, self.rows),
            _p(self.rt, self.cols, "int16_t *"), _p(self.rt, self.next, "int16_t *"),
            _p(self.rt, self.p0), _p(self.rt, self.drift), _p(self.rt, self.p), _p(self.rt, self.dtheta),
            _p(self.rt, self.gs), _p(self.rt, self.v), _p(self.rt, self.s), _p(self.rt, self.u),
            _p(self.rt, self.gain_w), _p(self.rt, self.slice, "int32_t *"), _p(self.rt, g), _p(self.rt, gain),
            _p(self.rt, r),
            gain_p, lam, f["restart"], 1, f["hold"], f["firm"],
        )  # fmt: skip

    def full_p(self) -> np.ndarray:
        upper = np.zeros((NB, NB))
        upper[np.triu_indices(NB)] = self.p
        return upper + np.triu(upper, 1).T


def _case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return _regressor(rng, FIRST), _spd(rng, NB), rng.normal(size=NB), rng.uniform(0.2, 1, N), rng.normal(size=N)


@pytest.mark.parametrize("sched", [ONE_EACH, FINE], ids=["one-slice-a-phase", "fine"])
def test_a_sliced_window_is_one_dense_update_of_its_snapshot(rt: Any, sched: list[tuple[int, int, int]]) -> None:
    """A window: the snapshot at its first sample, then one slice a sample; what later samples feed
    (another G, r) does not enter. At its end dtheta and P are the dense update's of the snapshot."""
    g, p, dtheta, gain, r = _case(5)
    x = _Sliced(rt, sched, p, dtheta)
    x.step(g, gain, r, 0.8, 0.3)
    assert x.slice[0] == 1
    for _ in sched:
        x.step(g * 3.0, gain, r + 1.0, 0.1, 0.3)  # later samples: other inputs, ignored by the window
    assert x.slice[0] == 0
    step, p_new = _rls(g, p, 0.3, gain, r, 0.8)
    _close(x.dtheta, dtheta + step)
    _close(x.full_p(), p_new + x.drift[0] * np.diag(x.p0))


def test_the_slicing_does_not_change_a_bit(rt: Any) -> None:
    """Each value is summed in the same order however the rows and columns are cut into slices."""
    g, p, dtheta, gain, r = _case(6)
    ends = []
    for sched in (ONE_EACH, FINE):
        x = _Sliced(rt, sched, p, dtheta)
        for _ in range(len(sched) + 1):
            x.step(g, gain, r, 0.5, 0.2)
        ends.append((x.dtheta.copy(), x.p.copy()))
    assert np.array_equal(ends[0][0], ends[1][0]) and np.array_equal(ends[0][1], ends[1][1])


@pytest.mark.parametrize(
    ("flags", "kept"),
    [({"restart": 1}, False), ({"firm": 1, "hold": 1}, False), ({"hold": 1}, True)],
    ids=["restart", "firm", "suspect"],
)
def test_a_window_is_discarded_before_its_correction_only_by_a_restart_or_a_firm_hold(
    rt: Any, flags: dict[str, int], kept: bool
) -> None:
    """Before the correction's slice has run, a restart or (with freeze) a latched collision or a
    joint above its threshold discards the window (dtheta and P untouched); the suspect level's hold
    does not. After the correction the window always completes."""
    g, p, dtheta, gain, r = _case(7)
    corr = FINE.index((CORRECT, 0, 0)) + 1
    for done in (1, corr - 1):  # early, and with the correction's slice next
        x = _Sliced(rt, FINE, p, dtheta)
        for _ in range(1 + done):  # the snapshot, then `done` slices
            x.step(g, gain, r, 0.8, 0.3)
        x.step(g, gain, r, 0.8, 0.3, **flags)  # firm: a firm hold is a hold
        assert (x.slice[0] == done + 2) if kept else (x.slice[0] == 0)
        if not kept:
            assert np.array_equal(x.dtheta, dtheta)
    late = _Sliced(rt, FINE, p, dtheta)
    for _ in range(FINE.index((CORRECT, 0, 0)) + 2):  # the snapshot and the slices through the correction
        late.step(g, gain, r, 0.8, 0.3)
    for _ in range(len(FINE)):
        late.step(g, gain, r, 0.8, 0.3, restart=1, firm=1, hold=1)
    step, _ = _rls(g, p, 0.3, gain, r, 0.8)
    _close(late.dtheta, dtheta + step)


def test_a_window_does_not_start_while_held_or_restarting(rt: Any) -> None:
    g, p, dtheta, gain, r = _case(8)
    x = _Sliced(rt, ONE_EACH, p, dtheta)
    x.step(g, gain, r, 0.8, 0.3, hold=1)
    x.step(g, gain, r, 0.8, 0.3, restart=1)
    assert x.slice[0] == 0


def test_a_failed_slice_starts_the_observer_again(rt: Any) -> None:
    """S not positive definite (lam < 0 with G = 0): dtheta 0, P = P_0, no window in flight."""
    _, p, dtheta, gain, r = _case(9)
    x = _Sliced(rt, ONE_EACH, p, dtheta)
    for _ in range(3):  # the snapshot, W, S; the factor fails at the next
        x.step(np.zeros((N, NB)), gain, r, 0.8, -1.0)
    x.step(np.zeros((N, NB)), gain, r, 0.8, -1.0)
    assert x.slice[0] == 0 and not x.dtheta.any()
    assert np.array_equal(x.p, np.diag(x.p0)[np.triu_indices(NB)])


def test_module_builds_for_float(rt: Any) -> None:
    """The same header in float (the firmware's precision) compiles with the wrappers."""
    lib: ModuleType = build_runtime(
        "manipgen_linalg.h", "", PRELUDE.replace("double", "float").replace("sqrt", "sqrtf"), ""
    ).lib
    assert lib is not None
