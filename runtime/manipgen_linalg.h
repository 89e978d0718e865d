/* manipgen runtime: small dense linear algebra for the generated code (hand-written, generic).
 *
 * Header-only, static inline: each generated folder includes it after defining MG_REAL (its
 * real type), so robots generated in different precisions link together without clashes.
 * No heap, no recursion, no globals; arrays are the caller's.
 */
#ifndef MANIPGEN_LINALG_H
#define MANIPGEN_LINALG_H

#if !defined(MG_REAL) || !defined(MG_SQRT)
#error "define MG_REAL (the real type) and MG_SQRT (its sqrt) before including manipgen_linalg.h"
#endif

#include <stddef.h>

/* In-place Cholesky factorisation A = L L^T of the symmetric positive definite n x n row-major
 * matrix a (lower triangle used and overwritten with L). Returns 0, or -1 if A is not positive
 * definite (a is then left unspecified). */
static inline int mg_cholesky_factor(int n, MG_REAL *a)
{
    int i;
    int j;
    int k;
    int status = 0;
    for (j = 0; (j < n) && (status == 0); ++j) {
        MG_REAL d = a[(j * n) + j];
        for (k = 0; k < j; ++k) {
            d -= a[(j * n) + k] * a[(j * n) + k];
        }
        if (!(d > (MG_REAL)0)) {
            status = -1;
        } else {
            d = (MG_REAL)MG_SQRT(d);
            a[(j * n) + j] = d;
            for (i = j + 1; i < n; ++i) {
                MG_REAL s = a[(i * n) + j];
                for (k = 0; k < j; ++k) {
                    s -= a[(i * n) + k] * a[(j * n) + k];
                }
                a[(i * n) + j] = s / d;
            }
        }
    }
    return status;
}

/* Solve L y = b in place (b <- y) with the factor of mg_cholesky_factor; b is the column of an
 * n x m row-major matrix starting at b with stride m (m = 1: a plain vector). The strided offsets
 * are formed in ptrdiff_t, the type a pointer offset has, not in int. */
static inline void mg_cholesky_forward(int n, const MG_REAL *l, MG_REAL *b, int m)
{
    int i;
    int k;
    for (i = 0; i < n; ++i) {
        MG_REAL s = b[(ptrdiff_t)i * m];
        for (k = 0; k < i; ++k) {
            s -= l[(i * n) + k] * b[(ptrdiff_t)k * m];
        }
        b[(ptrdiff_t)i * m] = s / l[(i * n) + i];
    }
}

/* Solve L L^T x = b in place (b <- x) with the factor of mg_cholesky_factor; b as in
 * mg_cholesky_forward. */
static inline void mg_cholesky_substitute(int n, const MG_REAL *l, MG_REAL *b, int m)
{
    int i;
    int k;
    mg_cholesky_forward(n, l, b, m); /* L y = b */
    for (i = n - 1; i >= 0; --i) {   /* backward: L^T x = y */
        MG_REAL s = b[(ptrdiff_t)i * m];
        for (k = i + 1; k < n; ++k) {
            s -= l[(k * n) + i] * b[(ptrdiff_t)k * m];
        }
        b[(ptrdiff_t)i * m] = s / l[(i * n) + i];
    }
}

/* Factorise a in place (see mg_cholesky_factor), then solve A x = b in place (b <- x).
 * Returns 0, or -1 if A is not positive definite (b is then left unspecified). */
static inline int mg_cholesky_solve(int n, MG_REAL *a, MG_REAL *b)
{
    const int status = mg_cholesky_factor(n, a);
    if (status == 0) {
        mg_cholesky_substitute(n, a, b, 1);
    }
    return status;
}

/* Recursive least squares (a Kalman filter on constant parameters) with n equations in m
 * parameters, in two parts. mg_rls_gain computes the gain from the regressor Y (n x m), given as
 * yt = Y^T (m x n row-major), and the parameter covariance p (m x m row-major, symmetric positive
 * definite, both triangles kept), then updates p:
 *   S = Y P Y^T + lam I = L L^T (s: L in its lower triangle),  V = L^-1 Y P (w, n x m),
 *   P -= gain_p V^T V (the information of the step, scaled by gain_p in 0..1; 0: none),
 *   P_ii += drift[i] (the parameters' random walk over the step).
 * Returns 0, or -1 if S is not positive definite (p then unchanged). */
static inline int mg_rls_gain(int n, int m, const MG_REAL *yt, MG_REAL *p, MG_REAL lam, MG_REAL gain_p,
                              const MG_REAL *drift, MG_REAL *w, MG_REAL *s)
{
    int i;
    int j;
    int k;
    int c;
    for (j = 0; j < n; ++j) { /* w = Y P, row by row over P's contiguous rows */
        MG_REAL *restrict wj = &w[(ptrdiff_t)j * m];
        for (c = 0; c < m; ++c) {
            wj[c] = (MG_REAL)0;
        }
        for (i = 0; i < m; ++i) {
            const MG_REAL y = yt[(i * n) + j];
            const MG_REAL *restrict pi = &p[(ptrdiff_t)i * m];
            if (y == (MG_REAL)0) { /* a serial arm's regressor: joint j's row has no column of the links before it */
                continue;
            }
            for (c = 0; c < m; ++c) {
                wj[c] += y * pi[c];
            }
        }
    }
    for (j = 0; j < n; ++j) { /* s = w Y^T + lam I */
        for (k = 0; k < n; ++k) {
            MG_REAL acc = (j == k) ? lam : (MG_REAL)0;
            for (c = 0; c < m; ++c) {
                acc += w[(j * m) + c] * yt[(c * n) + k];
            }
            s[(j * n) + k] = acc;
        }
    }
    const int status = mg_cholesky_factor(n, s);
    if (status == 0) {
        for (c = 0; c < m; ++c) { /* w <- V = L^-1 w, column by column */
            mg_cholesky_forward(n, s, &w[c], m);
        }
        if (gain_p > (MG_REAL)0) { /* P -= gain_p V^T V: the upper triangle, then mirrored */
            for (j = 0; j < n; ++j) {
                const MG_REAL *restrict vj = &w[(ptrdiff_t)j * m];
                for (i = 0; i < m; ++i) {
                    const MG_REAL a = gain_p * vj[i];
                    MG_REAL *restrict pi = &p[(ptrdiff_t)i * m];
                    for (c = i; c < m; ++c) {
                        pi[c] -= a * vj[c];
                    }
                }
            }
            for (i = 0; i < m; ++i) {
                for (c = i + 1; c < m; ++c) {
                    p[(c * m) + i] = p[(i * m) + c];
                }
            }
        }
        for (i = 0; i < m; ++i) {
            p[(i * m) + i] += drift[i];
        }
    }
    return status;
}

/* The correction of recursive least squares with the gain of mg_rls_gain (w = V, s = L):
 * theta -= V^T L^-1 (gain .* r), r = Y theta - tau (n) and per equation the fraction gain[j]
 * (0..1) of its residual that the step removes: Y (theta - theta_true) shrinks by gain[j] in
 * equation j (for lam << Y P Y^T), whichever way the parameters' error
 * lies. Workspace u (n). */
static inline void mg_rls_correct(int n, int m, const MG_REAL *w, const MG_REAL *s, const MG_REAL *gain,
                                  const MG_REAL *r, MG_REAL *theta, MG_REAL *u)
{
    int j;
    int c;
    for (j = 0; j < n; ++j) {
        u[j] = gain[j] * r[j];
    }
    mg_cholesky_forward(n, s, u, 1);
    for (j = 0; j < n; ++j) { /* theta -= V^T u */
        for (c = 0; c < m; ++c) {
            theta[c] -= w[(j * m) + c] * u[j];
        }
    }
}

#endif /* MANIPGEN_LINALG_H */
