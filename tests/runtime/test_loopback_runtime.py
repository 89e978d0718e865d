"""runtime/manipgen_loopback.h through cffi: the loopback's Runge-Kutta step, encoder quantiser and
IMU axis, against closed forms and scipy (independent of the generated code that includes them)."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from scipy import signal

from host_tools.bindings.build import build_runtime

PRELUDE = """
#include <math.h>
#define MG_REAL double
#define MG_SQRT sqrt
#define MG_FLOOR floor
"""
NEEDS = ("manipgen_linalg.h",)  # mg_acceleration_sensitivities solves with its Cholesky factor
# test drivers: dx/dt = -x (state of 1), and x'' = -x as (x, v) (state of 2); a derivative that fails
EPILOGUE = """
static int decay(void *context, const double *x, double *dx) { (void)context; dx[0] = -x[0]; return 0; }
static int oscillator(void *context, const double *x, double *dx)
{ (void)context; dx[0] = x[1]; dx[1] = -x[0]; return 0; }
static int failing(void *context, const double *x, double *dx)
{ int *calls = (int *)context; (void)x; dx[0] = 0; return ++*calls == 3; }
int rk4_decay(double *x, double h) { double work[5]; return mg_rk4(decay, NULL, 1, x, h, work); }
int rk4_oscillator(double *x, double h) { double work[10]; return mg_rk4(oscillator, NULL, 2, x, h, work); }
int rk4_failing(double *x, int *calls) { double work[5]; return mg_rk4(failing, calls, 1, x, 0.1, work); }
/* q'' = -a q, and the sensitivity to a: d(q'')/da = -q - a dq/da */
static int spring(void *context, const double *q, const double *qd, const double *sq, const double *sqd,
                  double *qdd, double *dqdd)
{ const double a = *(const double *)context; (void)qd; (void)sqd; qdd[0] = -a * q[0];
  if (dqdd != NULL) { dqdd[0] = -q[0] - a * sq[0]; } return 0; }
int rk4_spring(double a, double h, int steps, size_t nc, double *q, double *qd, double *sq, double *sqd)
{ double work[10 * (1 + 1)]; int k;
  for (k = 0; k < steps; ++k) { if (mg_rk4_sensitivities(spring, &a, 1, nc, q, qd, sq, sqd, h, work) != 0) return -1; }
  return 0; }
void imu_sample(size_t m, int settle, const double *f, const double *lsb, const double *range, const double *exact,
                const double *bias, const double *noise, double *z, double *y)
{ mg_imu_sample(m, settle, (const double (*)[5])f, lsb, range, exact, bias, noise, (double (*)[2])z, y); }
"""
DECLARATIONS = """
int rk4_decay(double *x, double h);
int rk4_oscillator(double *x, double h);
int rk4_failing(double *x, int *calls);
int64_t mg_quantise(double c);
void mg_imu_settle(const double f[5], double z[2], double u);
double mg_imu_axis(const double f[5], double z[2], double u, double lsb, double range);
void mg_imu_column(long k, const double f[5], const double *u, long stride, double lsb, double range, double *y);
void mg_delay(size_t n, long k, long delay, long ring, double *pending, const double *cmd, const double *tau0,
              double *applied);
void mg_mean_acceleration(size_t n, int fresh, const double *qd, const double *qdd, double period, double *qd_last,
                          double *mean);
void imu_sample(size_t m, int settle, const double *f, const double *lsb, const double *range, const double *exact,
                const double *bias, const double *noise, double *z, double *y);
int rk4_spring(double a, double h, int steps, size_t nc, double *q, double *qd, double *sq, double *sqd);
void mg_chain3(size_t n, size_t nc, const double *jac, const double *s1, const double *s2, const double *s3,
               double *out);
void mg_acceleration_sensitivities(size_t n, size_t nc, size_t nb, const double *m_factor, const double *a,
                                   const double *yb, const int32_t *cols, const double *sq, const double *sqd,
                                   const double *su, double *dqdd);
int mg_cholesky_factor(int n, double *a);
"""
EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def lib() -> ModuleType:
    return build_runtime("manipgen_loopback.h", DECLARATIONS, PRELUDE, EPILOGUE, NEEDS).lib


@pytest.mark.parametrize("h", [1e-3, 0.01, 0.1, 0.5])
def test_rk4_on_a_linear_system_is_its_fourth_order_taylor_polynomial(lib: ModuleType, h: float) -> None:
    """On dx/dt = -x, one classic RK4 step multiplies x by 1 - h + h^2/2 - h^3/6 + h^4/24 exactly (in
    exact arithmetic); the C does about 20 roundings of terms at most |x|, so 20 eps relative."""
    x = np.array([1.7])
    assert lib.rk4_decay(_ptr(x), h) == 0
    expected = 1.7 * (1 - h + h**2 / 2 - h**3 / 6 + h**4 / 24)
    assert x[0] == pytest.approx(expected, rel=20 * EPS, abs=0)


def test_rk4_converges_at_fourth_order(lib: ModuleType) -> None:
    """x'' = -x over one period: the global error of RK4 scales with h^4 (halving h divides it by
    16; accept 13-19, far from the 4 of a second-order method or the 32 of a fifth)."""
    errors = []
    for steps in (40, 80):
        x = np.array([1.0, 0.0])
        for _ in range(steps):
            lib.rk4_oscillator(_ptr(x), 2 * math.pi / steps)
        errors.append(float(np.hypot(x[0] - 1.0, x[1])))
    assert 13 < errors[0] / errors[1] < 19


def test_rk4_reports_a_failed_derivative_and_evaluates_all_four_stages(lib: ModuleType) -> None:
    calls = np.zeros(1, dtype=np.intc)
    x = np.array([1.0])
    from_c = lib.rk4_failing(_ptr(x), _int_ptr(calls))
    assert from_c != 0 and calls[0] == 4


@pytest.mark.parametrize(
    ("c", "count"),
    [(0.0, 0), (0.999, 0), (-0.001, -1), (12345.5, 12345), (-7.0, -7), (3.9e18, int(3.9e18))],
)
def test_quantise_is_the_floor(lib: ModuleType, c: float, count: int) -> None:
    assert lib.mg_quantise(c) == count


@pytest.mark.parametrize(
    ("c", "count"),
    [
        (5e18, 4 * 10**18),
        (math.inf, 4 * 10**18),
        (-5e18, -(4 * 10**18)),
        (-math.inf, -(4 * 10**18)),
        (math.nan, -(4 * 10**18)),
    ],
)
def test_quantise_saturates_a_diverged_plant(lib: ModuleType, c: float, count: int) -> None:
    """Beyond +-4e18 (and NaN) a defined count, never an out-of-range conversion."""
    assert lib.mg_quantise(c) == count


def _lowpass() -> np.ndarray:
    b, a = signal.butter(2, 0.2)
    return np.array([b[0], b[1], b[2], a[1], a[2]])


def test_imu_axis_filters_like_scipy_then_rounds_to_the_lsb(lib: ModuleType) -> None:
    """The axis' low-pass is scipy's lfilter of the same coefficients (transposed direct form II, as
    lfilter is): after rounding to an lsb of 2^-20 the two differ by at most half an lsb (plus the
    filters' rounding, far below it)."""
    f = _lowpass()
    u = np.sin(np.linspace(0, 12, 400)) + 0.3 * np.cos(np.linspace(0, 77, 400))
    z = np.zeros(2)
    lsb = 2.0**-20
    read = np.array([lib.mg_imu_axis(_ptr(f), _ptr(z), float(v), lsb, 1e3) for v in u])
    expected = signal.lfilter([f[0], f[1], f[2]], [1.0, f[3], f[4]], u)
    assert np.max(np.abs(read - expected)) <= 0.5 * lsb * (1 + 1e-9)
    assert np.all(np.round(read / lsb) == read / lsb)  # whole multiples of the lsb


def test_imu_axis_clips_to_its_range(lib: ModuleType) -> None:
    """A converter of range 2 and lsb 0.5 reads -2 .. 1.5 (range - lsb)."""
    f = np.array([1.0, 0.0, 0.0, 0.0, 0.0])  # no filtering: y = u
    z = np.zeros(2)
    reads = [lib.mg_imu_axis(_ptr(f), _ptr(z), u, 0.5, 2.0) for u in (10.0, 1.6, 0.74, -1.9, -10.0)]
    assert reads == [1.5, 1.5, 0.5, -2.0, -2.0]


def test_imu_settle_starts_the_filter_at_rest(lib: ModuleType) -> None:
    """After settling at u, a unity-gain filter fed u stays at u (to rounding: far below the lsb)."""
    f = _lowpass()
    z = np.zeros(2)
    lib.mg_imu_settle(_ptr(f), _ptr(z), 0.75)
    lsb = 2.0**-30
    reads = [lib.mg_imu_axis(_ptr(f), _ptr(z), 0.75, lsb, 1e3) for _ in range(50)]
    assert np.max(np.abs(np.array(reads) - 0.75)) <= lsb


def _ffi() -> Any:
    return build_runtime("manipgen_loopback.h", DECLARATIONS, PRELUDE, EPILOGUE, NEEDS).ffi


def _ptr(a: np.ndarray) -> object:
    return _ffi().cast("double *", a.ctypes.data)


def _int_ptr(a: np.ndarray) -> object:
    return _ffi().cast("int *", a.ctypes.data)


def test_imu_column_is_scipys_filter_at_rest_then_the_converter(lib: ModuleType) -> None:
    """A column of a row-major array (stride 3) through mg_imu_column: scipy's lfilter started at
    rest at the first value (lfilter_zi), rounded to the lsb and clipped to -range .. range - lsb --
    the chain written out independently. Rounding may differ only where the filtered value lies
    within the filters' rounding (1e-12 of an lsb) of a half step: one step at most, rarely."""
    f = _lowpass()
    rng = np.random.default_rng(7)
    u = np.cumsum(rng.normal(size=(500, 3)), axis=0) * 0.05
    y = np.zeros_like(u)
    lsb, full = 2.0**-8, 1.0  # the walk leaves +-1: the clipping is exercised
    lib.mg_imu_column(
        len(u),
        _ptr(f),
        _ffi().cast("double *", u.ctypes.data) + 1,
        3,
        lsb,
        full,
        _ffi().cast("double *", y.ctypes.data) + 1,
    )
    b, a = f[:3], np.array([1.0, f[3], f[4]])
    filtered, _ = signal.lfilter(b, a, u[:, 1], zi=signal.lfilter_zi(b, a) * u[0, 1])
    top = full / lsb
    expected = np.clip(np.floor(filtered / lsb + 0.5), -top, top - 1) * lsb
    steps = np.abs(y[:, 1] - expected) / lsb
    assert steps.max() <= 1 and np.mean(steps > 0) < 0.01, (steps.max(), np.mean(steps > 0))
    assert np.all(y[:, [0, 2]] == 0)  # the other columns untouched
    assert np.min(y[:, 1]) == -full or np.max(y[:, 1]) == full - lsb  # it clipped


@pytest.mark.parametrize("delay", [0, 1, 3])
def test_delay_applies_the_command_of_delay_samples_ago_and_tau0_before(lib: ModuleType, delay: int) -> None:
    """Over 12 samples of commands k + joint / 10 through a ring of 4: sample k feels sample k - delay's
    command, and tau0 before the first one; a pipeline without a controller (cmd NULL) commands 0."""
    n, ring = 2, 4
    pending, applied = np.full(ring * n, np.nan), np.zeros(n)
    tau0 = np.array([-1.0, -2.0])
    for k in range(12):
        cmd = np.array([k + 0.0, k + 0.1])
        lib.mg_delay(n, k, delay, ring, _ptr(pending), _ptr(cmd), _ptr(tau0), _ptr(applied))
        want = tau0 if k < delay else np.array([k - delay + 0.0, k - delay + 0.1])
        assert np.array_equal(applied, want), (k, applied, want)
    lib.mg_delay(n, 12, delay, ring, _ptr(pending), _ffi().NULL, _ptr(tau0), _ptr(applied))
    assert np.array_equal(applied, np.zeros(n)) if delay == 0 else np.array_equal(applied, [12 - delay, 12.1 - delay])


def test_mean_acceleration_is_the_rate_change_over_the_period_but_at_a_fresh_start(lib: ModuleType) -> None:
    qd, qdd, last, mean = np.array([1.0, -2.0]), np.array([5.0, 6.0]), np.zeros(2), np.zeros(2)
    lib.mg_mean_acceleration(2, 1, _ptr(qd), _ptr(qdd), 0.001, _ptr(last), _ptr(mean))
    assert np.array_equal(mean, qdd) and np.array_equal(last, qd)
    qd2 = np.array([1.002, -2.003])
    lib.mg_mean_acceleration(2, 0, _ptr(qd2), _ptr(qdd), 0.001, _ptr(last), _ptr(mean))
    assert np.array_equal(mean, (qd2 - qd) / 0.001) and np.array_equal(last, qd2)


def test_imu_sample_runs_each_axis_through_its_halfs_chain(lib: ModuleType) -> None:
    """Two IMUs (12 axes): the gyroscope axes through the first filter and converter, the
    accelerometer axes through the second, each with its bias and noise, settled at the first sample:
    the same as mg_imu_axis axis by axis (tested above against scipy)."""
    m, rng = 2, np.random.default_rng(11)
    f = np.concatenate([_lowpass(), np.array([0.5, 0.5, 0.0, 0.0, 0.0])])  # the accelerometers' a 2-tap mean
    lsb, full = np.array([2.0**-12, 2.0**-6]), np.array([8.0, 64.0])
    bias = rng.normal(size=6 * m) * 0.01
    z, zz = np.zeros(6 * m * 2), np.zeros((6 * m, 2))
    for k in range(20):
        exact, noise, y = rng.normal(size=6 * m), rng.normal(size=6 * m) * 1e-3, np.zeros(6 * m)
        lib.imu_sample(
            m, k == 0, _ptr(f), _ptr(lsb), _ptr(full), _ptr(exact), _ptr(bias), _ptr(noise), _ptr(z), _ptr(y)
        )
        for j in range(6 * m):
            half = 0 if j < 3 * m else 1
            fj, zj = np.ascontiguousarray(f[5 * half : 5 * half + 5]), zz[j]
            v = exact[j] + bias[j] + noise[j]
            if k == 0:
                lib.mg_imu_settle(_ptr(fj), _ptr(zj), v)
            want = lib.mg_imu_axis(_ptr(fj), _ptr(zj), v, lsb[half], full[half])
            zz[j] = zj
            assert y[j] == want, (k, j)
    y0 = np.zeros(6 * m)
    exact = np.ones(6 * m)
    lib.imu_sample(
        m, 1, _ptr(f), _ptr(lsb), _ptr(full), _ptr(exact), _ptr(np.zeros(6 * m)), _ffi().NULL, _ptr(z), _ptr(y0)
    )
    assert np.all(np.abs(y0 - 1.0) <= lsb[np.repeat([0, 1], 3 * m)])  # no noise: settled at 1, read within an lsb


def _spring(lib: ModuleType, a: float, nc: int) -> tuple[float, float, float, float]:
    q, qd, sq, sqd = (np.array([v]) for v in (1.0, 0.0, 0.0, 0.0))
    assert lib.rk4_spring(a, 0.01, 300, nc, _ptr(q), _ptr(qd), _ptr(sq), _ptr(sqd)) == 0
    return float(q[0]), float(qd[0]), float(sq[0]), float(sqd[0])


def test_rk4_sensitivities_are_the_derivative_of_the_discrete_steps(lib: ModuleType) -> None:
    """q'' = -a q over 300 steps of 10 ms: the carried sensitivity dq/da equals the central difference
    of two runs at a +- d (the steps' own derivative, not the ODE's). d = 1e-5: the difference's
    truncation is d^2 / 6 times the third derivative in a (order 10: 2e-10) and its rounding
    eps |q| / d ~ 2e-11, so 1e-8 relative to |dq/da| (order 1) holds with a margin of fifty. The
    state does not depend on carrying them."""
    a, d = 2.0, 1e-5
    q, qd, sq, sqd = _spring(lib, a, 1)
    assert (q, qd) == _spring(lib, a, 0)[:2]
    up, down = _spring(lib, a + d, 0), _spring(lib, a - d, 0)
    assert sq == pytest.approx((up[0] - down[0]) / (2 * d), rel=1e-8)
    assert sqd == pytest.approx((up[1] - down[1]) / (2 * d), rel=1e-8)
    assert abs(sq) > 0.1


def test_chain3_applies_a_jacobian_of_three_vectors_to_their_sensitivities(lib: ModuleType) -> None:
    """out = J[:, :n] s1 + J[:, n:2n] s2 + J[:, 2n:] s3: sums of 3n products of order-1 terms, 1e-14 each."""
    rng = np.random.default_rng(2)
    n, nc = 3, 4
    jac, s1, s2, s3 = rng.normal(size=(n, 3 * n)), *(rng.normal(size=(n, nc)) for _ in range(3))
    out = np.zeros((n, nc))
    lib.mg_chain3(n, nc, _ptr(jac), _ptr(s1), _ptr(s2), _ptr(s3), _ptr(out))
    want = jac[:, :n] @ s1 + jac[:, n : 2 * n] @ s2 + jac[:, 2 * n :] @ s3
    assert np.max(np.abs(out - want)) < 1e-14 * 3 * n


def test_acceleration_sensitivities_solve_m_against_the_chain_rule(lib: ModuleType) -> None:
    """dqdd = M^-1 (su - A [sq; sqd] - Y[:, cols]) with M factored by mg_cholesky_factor, against
    numpy's solve: M of condition below 10, entries of order 1, so 1e-12 relative holds with margin."""
    rng = np.random.default_rng(4)
    n, nc, nb = 3, 2, 5
    b = rng.normal(size=(n, n))
    m = b @ b.T / n + np.eye(n)
    a, yb = rng.normal(size=(n, 2 * n)), rng.normal(size=(n, nb))
    cols = np.array([4, 1], dtype=np.int32)
    sq, sqd, su = (rng.normal(size=(n, nc)) for _ in range(3))
    factor, out = m.copy(), np.zeros((n, nc))
    assert lib.mg_cholesky_factor(n, _ptr(factor)) == 0
    lib.mg_acceleration_sensitivities(
        n, nc, nb, _ptr(factor), _ptr(a), _ptr(yb), _ffi().cast("int32_t *", cols.ctypes.data), _ptr(sq),
        _ptr(sqd), _ptr(su), _ptr(out),
    )  # fmt: skip
    want = np.linalg.solve(m, su - a[:, :n] @ sq - a[:, n:] @ sqd - yb[:, cols])
    assert np.max(np.abs(out - want)) <= 1e-12 * max(1.0, float(np.max(np.abs(want))))
