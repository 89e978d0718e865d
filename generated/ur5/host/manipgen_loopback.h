/* manipgen_loopback.h - generic parts of the host's closed-loop simulation (copied into every
 * generated folder's host/): the classic Runge-Kutta step, the encoder's quantiser and an IMU
 * axis (internal low-pass, then the converter). Robot-independent; the generated
 * <robot>_loopback.c supplies the plant's derivative and the sensors' geometry.
 * Include after defining MG_REAL (the real type) and MG_FLOOR (floor or floorf).
 * C99, no heap, no globals, no recursion. Host-only: never compiled for the target.
 */
#ifndef MANIPGEN_LOOPBACK_H
#define MANIPGEN_LOOPBACK_H

#include <stddef.h>
#include <stdint.h>

/* dx/dt = f(x) of a state of s values; 0 on success, else non-zero (the step goes on, and reports it) */
typedef int (*mg_derivative_t)(void *context, const MG_REAL *x, MG_REAL *dx);

/* One classic Runge-Kutta step of length h of dx/dt = f(x), in place: x += h/6 (k1 + 2 k2 + 2 k3 + k4).
 * work: 5 s values (k1, k2, k3, k4 and the stage point). Returns the OR of f's results. */
static inline int mg_rk4(mg_derivative_t f, void *context, size_t s, MG_REAL *x, MG_REAL h, MG_REAL *work)
{
    MG_REAL *k1 = work, *k2 = work + s, *k3 = work + 2 * s, *k4 = work + 3 * s, *t = work + 4 * s;
    size_t i;
    int bad = 0;
    bad |= f(context, x, k1);
    for (i = 0; i < s; ++i) { t[i] = x[i] + h / 2 * k1[i]; }
    bad |= f(context, t, k2);
    for (i = 0; i < s; ++i) { t[i] = x[i] + h / 2 * k2[i]; }
    bad |= f(context, t, k3);
    for (i = 0; i < s; ++i) { t[i] = x[i] + h * k3[i]; }
    bad |= f(context, t, k4);
    for (i = 0; i < s; ++i) {
        x[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    }
    return bad;
}

/* An encoder's count: the floor of the real-valued count c, saturated at +-4e18, so that a
 * diverged plant (or NaN) gives +-4e18 counts and never an undefined conversion. */
static inline int64_t mg_quantise(MG_REAL c)
{
    c = MG_FLOOR(c);
    if (!(c > (MG_REAL)-4.0e18 && c < (MG_REAL)4.0e18)) {
        return c > 0 ? (int64_t)4000000000000000000 : -(int64_t)4000000000000000000;
    }
    return (int64_t)c;
}

/* z of a unity-gain second-order filter f (b0 b1 b2 a1 a2, transposed direct form II) at rest
 * under the constant input u */
static inline void mg_imu_settle(const MG_REAL f[5], MG_REAL z[2], MG_REAL u)
{
    z[1] = (f[2] - f[4]) * u;
    z[0] = (f[1] - f[3]) * u + z[1];
}

/* One IMU axis: the internal second-order low-pass f (transposed direct form II, state z), then
 * the converter: the nearest multiple of lsb, clipped to -range .. range - lsb. */
static inline MG_REAL mg_imu_axis(const MG_REAL f[5], MG_REAL z[2], MG_REAL u, MG_REAL lsb, MG_REAL range)
{
    const MG_REAL y = f[0] * u + z[0];
    const MG_REAL top = range / lsb;
    MG_REAL c;
    z[0] = f[1] * u - f[3] * y + z[1];
    z[1] = f[2] * u - f[4] * y;
    c = MG_FLOOR(y / lsb + (MG_REAL)0.5);
    if (!(c < top - 1)) {
        c = top - 1;
    }
    if (!(c > -top)) {
        c = -top;
    }
    return c * lsb;
}

/* A whole sampled signal through one IMU axis (mg_imu_axis), its filter settled at the first
 * value: k values of u read into y, each stride values apart (a column of a row-major array). For
 * a host that simulates the plant elsewhere (host_tools.bindings.imu_sensors: the PyBullet peer)
 * and reads its sensors afterwards through the same chain as the loopback. */
static inline void mg_imu_column(long k, const MG_REAL f[5], const MG_REAL *u, long stride, MG_REAL lsb,
                                 MG_REAL range, MG_REAL *y)
{
    if (k > 0) {
        MG_REAL z[2];
        long i;
        mg_imu_settle(f, z, u[0]);
        for (i = 0; i < k; ++i) {
            y[i * stride] = mg_imu_axis(f, z, u[i * stride], lsb, range);
        }
    }
}

#endif /* MANIPGEN_LOOPBACK_H */
