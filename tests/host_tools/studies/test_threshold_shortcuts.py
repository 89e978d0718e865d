"""The static threshold's shortcuts (issue #46: collide's threshold design evaluated detect.level and
its regressor sample by sample through CasADi, a third of a planar2 collide's CPU): threshold_along
and static_regressor give the mapped CasADi functions' values bit for bit, and take the mapped path
where the shortcut's premise (a static part only, finite motion) does not hold."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from host_tools.studies.thresholds import (
    Thresholds,
    _cutting_planes,
    _mapped,
    _masked_held_out_ratios,
    envelope,
    held_out_ratios,
    regressor,
    static_regressor,
    threshold_along,
)


def _static(threshold: np.ndarray) -> Thresholds:
    n = len(threshold)
    zero = np.zeros(n)
    # the fields threshold_along reads; the design's record (margins, held-out ratios, ...) is not read
    return Thresholds(threshold, zero, zero, zero, np.full(n, 0.01), *([None] * 16))  # type: ignore[arg-type]


def _mapped_level(d: Thresholds, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """detect.level per joint through the mapped CasADi function (threshold_along before issue #46;
    since 2026-12-02 it evaluates one vector expression per joint, _level_along)."""
    f = _mapped(0, len(qd))
    cols = []
    for j in range(qd.shape[1]):
        c = np.array([[d.threshold[j]], [d.kv[j]], [d.ka[j]], [d.ks[j]]])
        cols.append(np.asarray(f(qd[None, :, j], qdd[None, :, j], c, d.vs[j])).ravel())
    return np.column_stack(cols)


def test_the_static_shortcuts_are_the_mapped_functions_bit_for_bit() -> None:
    """Joint motions with standstill (qd 0 and -0.0), tiny and large values; thresholds > 0, 0 and < 0
    (a joint that does not detect: level 0); then a NaN qd_hat on one joint and a speed part on
    another, which take the mapped path (NaN stays NaN)."""
    rng = np.random.default_rng(11)
    k = 3000
    qd = rng.standard_normal((k, 4)) * np.array([1e-3, 1.0, 30.0, 1e3])
    qdd = rng.standard_normal((k, 4)) * np.array([1e-6, 10.0, 1e3, 1e5])
    qd[::7, 0], qd[1::7, 1], qdd[::5, 2] = 0.0, -0.0, -0.0
    design = _static(np.array([0.37, 0.0, -0.5, 2.1e-3]))
    got = threshold_along({"qd_hat": qd, "qdd_hat": qdd}, design)
    assert got.tobytes() == _mapped_level(design, qd, qdd).tobytes()
    assert np.array_equal(got[0], [0.37, 0.0, 0.0, 2.1e-3])
    qd[5, 3] = np.nan
    speed = replace(design, kv=np.array([0.2, 0.0, 0.0, 0.0]))
    got = threshold_along({"qd_hat": qd, "qdd_hat": qdd}, speed)
    want = _mapped_level(speed, qd, qdd)
    # NaN where the mapped function's is NaN, every other entry bit for bit: the vector evaluation
    # (_level_along) makes a NaN of its own from a NaN input (x86's default NaN, sign bit set), where
    # the mapped one passes the input's on; a NaN's sign is no number's
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[5, 3])
    assert got[~np.isnan(got)].tobytes() == want[~np.isnan(want)].tobytes()
    assert np.ptp(got[:, 0]) > 0  # the speed part acts
    for j in range(3):
        x = regressor(qd[:, j], qdd[:, j], 0.01)
        x[:, 1:] = 0.0
        assert static_regressor(qd[:, j], qdd[:, j], 0.01).tobytes() == x.tobytes()


def test_the_level_along_a_run_is_the_mapped_functions_bit_for_bit() -> None:
    """Every part of the level (speed, acceleration, standstill with its exp), thresholds > 0, 0 and
    < 0, motions with standstill (0 and -0.0), tiny, large and infinite values: threshold_along's
    vector evaluation gives the mapped per-sample function's bits (the exp and every sum alike)."""
    rng = np.random.default_rng(5)
    k = 4000
    qd = rng.standard_normal((k, 5)) * np.array([1e-4, 0.01, 1.0, 30.0, 1e3])
    qdd = rng.standard_normal((k, 5)) * np.array([1e-6, 1.0, 10.0, 1e3, 1e5])
    qd[::11, 0], qd[1::11, 1], qdd[::13, 2] = 0.0, -0.0, -0.0
    qd[7, 3], qdd[9, 4], qd[12, 4] = np.inf, -np.inf, -np.inf
    n = qd.shape[1]
    design = replace(
        _static(np.array([0.37, 0.0, -0.5, 2.1e-3, 4.0])),
        kv=np.array([0.2, 0.3, 0.0, 1e-3, 0.05]),
        ka=np.array([0.0, 0.01, 0.02, 1e-5, 0.0]),
        ks=np.array([0.5, 0.0, 0.1, 3.0, 0.7]),
        vs=np.array([0.01, 0.02, 0.005, 0.1, 1.0]),
    )
    got = threshold_along({"qd_hat": qd, "qdd_hat": qdd}, design)
    want = _mapped_level(design, qd, qdd)
    assert got.shape == (k, n) and got.tobytes() == want.tobytes()
    assert np.isinf(got[7, 3]) and np.all(got[:, 1:3] == 0.0)  # a joint at threshold <= 0 never detects
    assert np.isnan(got[9, 4])  # 0 x -inf: NaN, as the mapped function makes it
    assert np.ptp(got[20:, 0]) > 0 and np.ptp(got[20:, 4]) > 0  # the speed and standstill parts act


@pytest.mark.parametrize("seed", range(2))
def test_the_static_envelope_is_the_linear_programmes_solution_bit_for_bit(seed: int) -> None:
    """envelope's static design (one constant column) takes its programme's tightest bound without
    the solver: the same coefficients, bit for bit, as the cutting planes through HiGHS give, for
    residuals of every scale and shape (ties at the top, a floor above them, held-out parts)."""
    rng = np.random.default_rng(seed)
    k = 5000
    shapes = [
        np.abs(rng.standard_normal(k)),
        rng.pareto(1.5, k),  # a heavy tail
        np.round(np.abs(rng.standard_normal(k)) * 8) / 8,  # many ties, the largest among them
        np.abs(rng.standard_normal(k)) * np.exp(rng.uniform(-20, 10)),
    ]
    x = static_regressor(np.zeros(k), np.zeros(k), 0.01)
    for r in shapes:
        for low in (0.0, 0.01 * r.max(), 1.7 * r.max()):
            for part in (slice(None), slice(0, k // 3), slice(k // 5, k)):
                rp, xp = r[part], x[part]
                scale = float(rp.max())
                solved = _cutting_planes(xp[:, :1], rp, rp / scale, xp[:, :1].mean(axis=0), low / scale)
                want = np.zeros(x.shape[1])
                want[0] = solved[0] * scale
                want[0] += max(0.0, float(np.max(rp - xp[:, 0] * want[0])))
                assert envelope(rp, xp, low).tobytes() == want.tobytes(), (seed, low, part)


def _masked_held_out(r: np.ndarray, x: np.ndarray, low: float, blocks: int, run: np.ndarray | None) -> np.ndarray:
    """The held-out ratios as defined (held_out_ratios' general path, the masked fits), on the
    groups held_out_ratios forms: the blocks of one run, or the runs."""
    labels = np.zeros(len(r), int) if run is None else run
    runs = np.unique(labels)
    one_run = len(runs) == 1
    groups = np.array_split(np.arange(len(r)), blocks) if one_run else [np.flatnonzero(labels == u) for u in runs]
    return _masked_held_out_ratios(r, x, low, blocks, groups, one_run)


@pytest.mark.parametrize("seed", range(3))
def test_the_static_held_out_ratios_are_the_masked_fits_bit_for_bit(seed: int) -> None:
    """held_out_ratios of a static regressor takes each fit from the other blocks' largest |r|: the
    same ratios, bit for bit, as fitting the envelope on the masked samples, for residuals of every
    scale and shape (ties at the top, a block of zeros, a floor above them), one run in blocks or
    several runs each held out in turn; a NaN in r stays NaN."""
    rng = np.random.default_rng(seed)
    k = 4000
    shapes = [
        np.abs(rng.standard_normal(k)),
        rng.pareto(1.5, k),
        np.round(np.abs(rng.standard_normal(k)) * 8) / 8,
        np.abs(rng.standard_normal(k)) * np.exp(rng.uniform(-20, 10)),
    ]
    shapes[0][: k // 5] = 0.0  # a block with no residual: its own ratio 0, the others' fit unchanged
    for constant in (1.0, 0.37):
        x = static_regressor(np.zeros(k), np.zeros(k), 0.01) * constant
        for r in shapes:
            for low in (0.0, 0.01 * r.max(), 1.7 * r.max()):
                for run in (None, np.repeat(np.arange(3), [k // 2, k // 4, k - k // 2 - k // 4])):
                    got = held_out_ratios(r, x, low, 5, run)
                    assert got.tobytes() == _masked_held_out(r, x, low, 5, run).tobytes(), (seed, low, constant)
    r = np.abs(rng.standard_normal(k))
    r[k // 3] = np.nan
    x = static_regressor(np.zeros(k), np.zeros(k), 0.01)
    with np.errstate(invalid="ignore", divide="ignore"):  # a fit on a NaN maximum: envelope's floor, here 0
        got, want = held_out_ratios(r, x, 0.0, 4), _masked_held_out(r, x, 0.0, 4, None)
    assert np.array_equal(got, want, equal_nan=True) and np.isnan(got).any()


def test_an_infinite_static_row_takes_the_masked_fits() -> None:
    """A static row of constant inf is not the shortcut's: r_i / scale / inf is NaN at a residual of
    -inf (or one overflowing to -inf) but 0 at the maximum, so the blocks' maxima would not give the
    masked fits (here with a floor below 0); held_out_ratios takes the masked fits for it."""
    x = np.zeros((4, 4))
    x[:, 0] = np.inf
    for r in (np.array([1.0, 2.0, -np.inf, 0.5]), np.array([1e-300, 2e-300, -1e300, 0.5e-300])):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            got, want = held_out_ratios(r, x, -1.0, 4), _masked_held_out(r, x, -1.0, 4, None)
        assert got.tobytes() == want.tobytes(), r
