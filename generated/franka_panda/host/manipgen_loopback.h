/* manipgen_loopback.h - generic parts of the host's closed-loop simulation (copied into every
 * generated folder's host/): the classic Runge-Kutta step (also with output-error identification's
 * sensitivities), the encoder's quantiser, the actuation
 * delay, and the IMUs (the accelerometers' mean acceleration; per axis the internal low-pass, then
 * the converter). Robot-independent; the generated
 * <robot>_loopback.c supplies the plant's derivative and the sensors' geometry.
 * Include after defining MG_REAL (the real type) and MG_FLOOR (floor or floorf), and after
 * manipgen_linalg.h (mg_acceleration_sensitivities solves with its Cholesky factor).
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

/* The acceleration of a rigid plant, q'' = f(q, qd) under an input held over the step, and with
 * nc > 0 its derivative dqdd (n x nc, row-major) from those of q and qd, sq and sqd (n x nc) -- the
 * sensitivities of output-error identification; 0 on success, else non-zero (the step stops). */
typedef int (*mg_acceleration_t)(void *context, const MG_REAL *q, const MG_REAL *qd, const MG_REAL *sq,
                                 const MG_REAL *sqd, MG_REAL *qdd, MG_REAL *dqdd);

/* One classic Runge-Kutta step of length h of q' = qd, qd' = f(q, qd) in place, with the
 * sensitivities sq, sqd (n x nc) carried through the same stages: the exact derivative of this
 * discrete step (Brunot et al. 2019). Stage s at t + c_s h, c = (0, 1/2, 1/2, 1); then
 * x += h/6 w_s k_s, w = (1, 2, 2, 1), added stage by stage. work: 10 (n + n nc) values. Returns 0, or
 * f's first non-zero result (the state is then part-way). */
static inline int mg_rk4_sensitivities(mg_acceleration_t f, void *context, size_t n, size_t nc, MG_REAL *q,
                                       MG_REAL *qd, MG_REAL *sq, MG_REAL *sqd, MG_REAL h, MG_REAL *work)
{
    static const MG_REAL c[4] = {(MG_REAL)0, (MG_REAL)0.5, (MG_REAL)0.5, (MG_REAL)1};
    static const MG_REAL w[4] = {(MG_REAL)1, (MG_REAL)2, (MG_REAL)2, (MG_REAL)1};
    const size_t ns = n * nc;
    MG_REAL *kq = work, *kv = work + 4 * n, *tq = work + 8 * n, *tv = work + 9 * n;
    MG_REAL *dkq = work + 10 * n, *dkv = dkq + 4 * ns, *tsq = dkq + 8 * ns, *tsv = dkq + 9 * ns;
    size_t s, i;
    for (s = 0; s < 4; ++s) {
        for (i = 0; i < n; ++i) {
            tq[i] = s ? q[i] + c[s] * h * kq[(s - 1) * n + i] : q[i];
            tv[i] = s ? qd[i] + c[s] * h * kv[(s - 1) * n + i] : qd[i];
            kq[s * n + i] = tv[i];
        }
        for (i = 0; i < ns; ++i) {
            tsq[i] = s ? sq[i] + c[s] * h * dkq[(s - 1) * ns + i] : sq[i];
            tsv[i] = s ? sqd[i] + c[s] * h * dkv[(s - 1) * ns + i] : sqd[i];
            dkq[s * ns + i] = tsv[i];
        }
        {
            const int bad = f(context, tq, tv, tsq, tsv, &kv[s * n], &dkv[s * ns]);
            if (bad != 0) {
                return bad;
            }
        }
    }
    for (i = 0; i < n; ++i) {
        for (s = 0; s < 4; ++s) {
            q[i] += h / 6 * w[s] * kq[s * n + i];
            qd[i] += h / 6 * w[s] * kv[s * n + i];
        }
    }
    for (i = 0; i < ns; ++i) {
        for (s = 0; s < 4; ++s) {
            sq[i] += h / 6 * w[s] * dkq[s * ns + i];
            sqd[i] += h / 6 * w[s] * dkv[s * ns + i];
        }
    }
    return 0;
}

/* The sensitivities of a rigid plant's acceleration qdd = M^-1 (u - n(q, qd)) (output-error
 * identification, Brunot et al. 2019): dqdd = M^-1 (su - A [sq; sqd] - Y_b[:, cols]) (n x nc,
 * row-major), with the factor of M (mg_cholesky_factor: manipgen_linalg.h, included first), A = d rnea
 * / d(q, qd) at fixed qdd (n x 2n), the base regressor yb (n x nb) whose columns cols are the
 * parameters, and the sensitivities of q, qd and u (sq, sqd, su: n x nc). */
static inline void mg_acceleration_sensitivities(size_t n, size_t nc, size_t nb, const MG_REAL *m_factor,
                                                 const MG_REAL *a, const MG_REAL *yb, const int32_t *cols,
                                                 const MG_REAL *sq, const MG_REAL *sqd, const MG_REAL *su,
                                                 MG_REAL *dqdd)
{
    size_t i, j, c;
    for (i = 0; i < n; ++i) {
        for (c = 0; c < nc; ++c) {
            MG_REAL acc = su[i * nc + c] - yb[i * nb + (size_t)cols[c]];
            for (j = 0; j < n; ++j) {
                acc -= a[i * 2 * n + j] * sq[j * nc + c] + a[i * 2 * n + n + j] * sqd[j * nc + c];
            }
            dqdd[i * nc + c] = acc;
        }
    }
    for (c = 0; c < nc; ++c) {
        mg_cholesky_substitute((int)n, m_factor, dqdd + c, (int)nc);
    }
}

/* out (n x nc) = jac[:, 0:n] s1 + jac[:, n:2n] s2 + jac[:, 2n:3n] s3: a function of three n-vectors'
 * Jacobian (jac, n x 3n row-major) applied to their sensitivities (each n x nc) */
static inline void mg_chain3(size_t n, size_t nc, const MG_REAL *jac, const MG_REAL *s1, const MG_REAL *s2,
                             const MG_REAL *s3, MG_REAL *out)
{
    size_t i, j, k;
    for (i = 0; i < n; ++i) {
        for (k = 0; k < nc; ++k) {
            MG_REAL acc = 0;
            for (j = 0; j < n; ++j) {
                acc += jac[i * 3 * n + j] * s1[j * nc + k] + jac[i * 3 * n + n + j] * s2[j * nc + k]
                       + jac[i * 3 * n + 2 * n + j] * s3[j * nc + k];
            }
            out[i * nc + k] = acc;
        }
    }
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

/* The actuation delay: a ring of `ring` commands of n values (pending, ring x n; ring > the largest
 * delay) receives sample k's command cmd (NULL: a pipeline without a controller commands 0), and
 * applied = the command of sample k - delay, or tau0 before the first one. */
static inline void mg_delay(size_t n, long k, long delay, long ring, MG_REAL *pending, const MG_REAL *cmd,
                            const MG_REAL *tau0, MG_REAL *applied)
{
    MG_REAL *slot = &pending[(size_t)(k % ring) * n];
    size_t i;
    for (i = 0; i < n; ++i) {
        slot[i] = cmd != NULL ? cmd[i] : 0;
    }
    for (i = 0; i < n; ++i) {
        applied[i] = k >= delay ? pending[(size_t)((k - delay) % ring) * n + i] : tau0[i];
    }
}

/* The accelerometers' front end: the mean joint acceleration over the sample just ended, from the
 * joint rates qd now and qd_last a period ago (then qd_last = qd); at a run's first sample, with no
 * rate before it (fresh), the instantaneous qdd. A sensor averages what it sees over its sample: the
 * value at one instant would alias a sign friction's chattering acceleration (docs/collision.md). */
static inline void mg_mean_acceleration(size_t n, int fresh, const MG_REAL *qd, const MG_REAL *qdd, MG_REAL period,
                                        MG_REAL *qd_last, MG_REAL *mean)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        mean[i] = fresh ? qdd[i] : (qd[i] - qd_last[i]) / period;
        qd_last[i] = qd[i];
    }
}

/* One sample of m IMUs: per axis (the 3 m gyroscope axes, then the 3 m accelerometer axes) the exact
 * reading + bias + white noise (noise NULL: none) through its half's filter f[half] and converter
 * (mg_imu_axis: lsb[half], range[half]); settle: start each filter at rest at its input first (a
 * run's first sample). z: 2 states per axis; y: the 6 m readings. */
static inline void mg_imu_sample(size_t m, int settle, const MG_REAL f[2][5], const MG_REAL lsb[2],
                                 const MG_REAL range[2], const MG_REAL *exact, const MG_REAL *bias,
                                 const MG_REAL *noise, MG_REAL (*z)[2], MG_REAL *y)
{
    const size_t gyroscopes = m * 3u; /* axes: the gyroscopes', then as many accelerometers' */
    size_t j;
    for (j = 0; j < 2u * gyroscopes; ++j) {
        const size_t half = j < gyroscopes ? 0 : 1;
        const MG_REAL v = exact[j] + bias[j] + (noise != NULL ? noise[j] : 0);
        if (settle) {
            mg_imu_settle(f[half], z[j], v);
        }
        y[j] = mg_imu_axis(f[half], z[j], v, lsb[half], range[half]);
    }
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
