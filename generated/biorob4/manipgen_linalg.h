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

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

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

/* mg_cholesky_forward on the columns lo .. hi - 1 of the n x m row-major matrix w, row by row:
 * each element gets the same operations in the same order as there (its row's value, minus
 * l[i][k] times the column's row k for k = 0 .. i - 1, over l[i][i]), so the same bits, but the
 * innermost loop runs along a row's contiguous columns, where the compiler can use vector lanes
 * (the column-by-column form strides by m). */
static inline void mg_cholesky_forward_cols(int n, const MG_REAL *l, MG_REAL *w, int m, int lo, int hi)
{
    int i;
    int k;
    int c;
    for (i = 0; i < n; ++i) {
        MG_REAL *restrict wi = &w[(ptrdiff_t)i * m];
        const MG_REAL d = l[(i * n) + i];
        for (k = 0; k < i; ++k) {
            const MG_REAL a = l[(i * n) + k];
            const MG_REAL *restrict wk = &w[(ptrdiff_t)k * m];
            for (c = lo; c < hi; ++c) {
                wi[c] -= a * wk[c];
            }
        }
        for (c = lo; c < hi; ++c) {
            wi[c] = wi[c] / d;
        }
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
 *   S = Y P Y^T + lam I = L L^T (s: L in its lower triangle; the upper one is not written),
 *   V = L^-1 Y P (w, n x m),
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
    for (j = 0; j < n; ++j) { /* s = w Y^T + lam I, the lower triangle: all mg_cholesky_factor reads */
        for (k = 0; k <= j; ++k) {
            MG_REAL acc = (j == k) ? lam : (MG_REAL)0;
            for (c = 0; c < m; ++c) {
                acc += w[(j * m) + c] * yt[(c * n) + k];
            }
            s[(j * n) + k] = acc;
        }
    }
    const int status = mg_cholesky_factor(n, s);
    if (status == 0) {
        mg_cholesky_forward_cols(n, s, w, m, 0, m); /* w <- V = L^-1 w */
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

/* The model-adaptive observer's covariance P in diagonal blocks (codegen.blocks.adaptive,
 * COVARIANCE_DOC): nb adapted base parameters; col[k] is the base column (the row of the regressor's
 * yt) at position k; per block l, blk[l] = {its first position, its size sz, its first reversed row
 * (rows m below it are zero: row m is joint n - 1 - m), its offset in p}, the block stored row-major
 * (sz x sz, both triangles) at that offset. np: the number of values of p. */

/* P := P_0 = diag(p0) (p0 indexed by base column), block by block */
static inline void mg_rls_prior_blocks(int nblk, const int (*blk)[4], const int *col, const MG_REAL *p0,
                                       MG_REAL *p, int np)
{
    int k;
    int l;
    for (k = 0; k < np; ++k) {
        p[k] = (MG_REAL)0;
    }
    for (l = 0; l < nblk; ++l) {
        int a;
        for (a = 0; a < blk[l][1]; ++a) {
            p[blk[l][3] + (a * (blk[l][1] + 1))] = p0[col[blk[l][0] + a]];
        }
    }
}

/* One recursive-least-squares update (as mg_rls_gain then mg_rls_correct) of a block-diagonal P:
 * with J the row reversal,
 *   W = J Y P (w, n x nb, reversed rows), S = J (Y P Y^T + lam I) J = L L^T (s, lower triangle),
 *   V = L^-1 W (w), u = L^-1 J (gain .* r), dtheta -= V^T u,
 *   P_l -= gain_p V_l^T V_l + diag(drift) per block (no gain_p term if gain_p is 0).
 * The regressor yt is the dense m x n (m >= the largest col + 1) Y^T; its zeros are skipped.
 * Returns 1, or 0 if S is not positive definite (dtheta and P then unchanged). */
static inline int mg_rls_blocks(int n, int nb, int nblk, const int (*blk)[4], const int *col, const MG_REAL *yt,
                                MG_REAL *p, MG_REAL lam, MG_REAL gain_p, const MG_REAL *drift, const MG_REAL *gain,
                                const MG_REAL *r, MG_REAL *dtheta, MG_REAL *w, MG_REAL *s, MG_REAL *u)
{
    int l;
    int a;
    int c;
    int e;
    int m;
    int ok = 0;
    for (m = 0; m < (n * nb); ++m) {
        w[m] = (MG_REAL)0;
    }
    for (l = 0; l < nblk; ++l) { /* W = J Y P, block by block */
        const int st = blk[l][0];
        const int sz = blk[l][1];
        for (m = blk[l][2]; m < n; ++m) {
            for (e = 0; e < sz; ++e) {
                const MG_REAL y = yt[(col[st + e] * n) + (n - 1 - m)];
                const MG_REAL *pe = &p[blk[l][3] + (e * sz)];
                if (y != (MG_REAL)0) { /* the regressor's zeros within the block */
                    for (a = 0; a < sz; ++a) {
                        w[(m * nb) + st + a] += y * pe[a];
                    }
                }
            }
        }
    }
    for (m = 0; m < n; ++m) { /* S = J (Y P Y^T + lam I) J, lower triangle */
        for (c = 0; c <= m; ++c) {
            MG_REAL acc = (m == c) ? lam : (MG_REAL)0;
            for (l = 0; l < nblk; ++l) {
                if (blk[l][2] <= c) { /* Y's columns of block l are zero in reversed rows before blk[l][2] */
                    for (a = blk[l][0]; a < (blk[l][0] + blk[l][1]); ++a) {
                        acc += w[(m * nb) + a] * yt[(col[a] * n) + (n - 1 - c)];
                    }
                }
            }
            s[(m * n) + c] = acc;
        }
    }
    if (mg_cholesky_factor(n, s) == 0) {
        ok = 1;
    }
    if (ok != 0) {
        for (l = 0; l < nblk; ++l) { /* V = L^-1 W, column by column from the block's first non-zero row */
            const int lo = blk[l][2];
            for (a = blk[l][0]; a < (blk[l][0] + blk[l][1]); ++a) {
                for (m = lo; m < n; ++m) {
                    MG_REAL acc = w[(m * nb) + a];
                    for (c = lo; c < m; ++c) {
                        acc -= s[(m * n) + c] * w[(c * nb) + a];
                    }
                    w[(m * nb) + a] = acc / s[(m * n) + m];
                }
            }
        }
        for (m = 0; m < n; ++m) { /* u = L^-1 J (gain .* r) */
            u[m] = gain[n - 1 - m] * r[n - 1 - m];
        }
        mg_cholesky_forward(n, s, u, 1);
        for (l = 0; l < nblk; ++l) { /* dtheta -= V^T u; P_l -= gain_p V_l^T V_l + Q_l */
            const int st = blk[l][0];
            const int sz = blk[l][1];
            MG_REAL *pl = &p[blk[l][3]];
            for (a = 0; a < sz; ++a) {
                MG_REAL acc = (MG_REAL)0;
                for (m = blk[l][2]; m < n; ++m) {
                    acc += w[(m * nb) + st + a] * u[m];
                }
                dtheta[col[st + a]] -= acc;
            }
            if (gain_p > (MG_REAL)0) {
                for (m = blk[l][2]; m < n; ++m) { /* the upper triangle, then mirrored */
                    for (a = 0; a < sz; ++a) {
                        const MG_REAL va = gain_p * w[(m * nb) + st + a];
                        for (e = a; e < sz; ++e) {
                            pl[(a * sz) + e] -= va * w[(m * nb) + st + e];
                        }
                    }
                }
                for (a = 0; a < sz; ++a) {
                    for (e = a + 1; e < sz; ++e) {
                        pl[(e * sz) + a] = pl[(a * sz) + e];
                    }
                }
            }
            for (a = 0; a < sz; ++a) {
                pl[(a * sz) + a] += drift[col[st + a]];
            }
        }
    }
    return ok;
}

/* The sliced form of the covariance update (codegen.blocks.adaptive, SLICED_DOC): P dense, packed
 * upper triangle (row a at a nb - a (a - 1) / 2), and one sample's update spread over several
 * samples, one slice a sample, on a snapshot of that sample's regressor and residual. */
typedef struct {
    int n;                     /* joints */
    int nb;                    /* adapted base parameters */
    const int (*sched)[3];     /* per slice: its phase (1 W = G P, 2 S, 3 L and V, 4 the correction, 5 P), first and last + 1 row or column */
    int nsched;                /* slices in a window */
    int corr;                  /* the correction's slice (1-based): until it has run, a window can be discarded */
    const int *rows;           /* G's stored entries (those that can be non-zero, row by row): per joint its first, and the end */
    const int16_t *cols;       /* per stored entry, its column */
    const int16_t *next;       /* per joint j and column a (j nb + a), the first entry of row j whose column is a or more */
    const MG_REAL *p0;         /* P_0's diagonal */
    const MG_REAL *drift;      /* Q's scale: Q = drift P_0 */
    MG_REAL *p;                /* P, packed: nb (nb + 1) / 2 values */
    MG_REAL *dtheta;           /* the estimate, nb */
    MG_REAL *gs;               /* the window's snapshot of G, its stored entries (the caller writes it) */
    MG_REAL *v;                /* W = G P, then V = L^-1 W, n x nb */
    MG_REAL *s;                /* S, then L, n x n */
    MG_REAL *u;                /* the snapshot's gain .* r, then L^-1 of it, n */
    MG_REAL *gain_w;           /* the window's covariance fraction */
    int32_t *slice;            /* the next slice (1-based; 0: none in flight) */
} mg_rls_sliced_t;

/* P := P_0 in the packed upper triangle */
static inline void mg_rls_prior_packed(mg_rls_sliced_t *x)
{
    int k;
    int op = 0;
    for (k = 0; k < ((x->nb * (x->nb + 1)) / 2); ++k) {
        x->p[k] = (MG_REAL)0;
    }
    for (k = 0; k < x->nb; ++k) {
        x->p[op] = x->p0[k];
        op += x->nb - k;
    }
}

/* One slice: phase ph over rows or columns lo .. hi - 1. Returns 1, or 0 if S is not positive
 * definite or the correction is not finite. */
static inline int mg_rls_slice(mg_rls_sliced_t *x, int ph, int lo, int hi, MG_REAL lam)
{
    const int n = x->n;
    const int nb = x->nb;
    int ok = 1;
    int a;
    int c;
    int j;
    int k;
    if (ph == 1) { /* W += G's column a P_a,c>=a (row a of the packed P) and G_j,c>a P_ac into W's column a */
        for (a = lo; a < hi; ++a) {
            const MG_REAL *pa = &x->p[(a * nb) - ((a * (a - 1)) / 2)];
            for (j = 0; j < n; ++j) {
                const int end = x->rows[j + 1];
                int e = x->next[(j * nb) + a]; /* row j's entries from column a on (the others are 0) */
                MG_REAL ga = (MG_REAL)0;
                MG_REAL acc = (MG_REAL)0;
                if ((e < end) && (x->cols[e] == a)) {
                    ga = x->gs[e];
                    ++e;
                }
                for (k = e; k < end; ++k) {
                    acc += x->gs[k] * pa[x->cols[k] - a];
                }
                if (ga != (MG_REAL)0) { /* the regressor's zeros */
                    for (c = a; c < nb; ++c) {
                        x->v[(j * nb) + c] += ga * pa[c - a];
                    }
                }
                x->v[(j * nb) + a] += acc;
            }
        }
    } else if (ph == 2) { /* S = W G^T + lam I, rows lo .. hi - 1 of the lower triangle */
        for (j = lo; j < hi; ++j) {
            for (k = 0; k <= j; ++k) {
                MG_REAL acc = (j == k) ? lam : (MG_REAL)0;
                for (c = x->rows[k]; c < x->rows[k + 1]; ++c) {
                    acc += x->v[(j * nb) + x->cols[c]] * x->gs[c];
                }
                x->s[(j * n) + k] = acc;
            }
        }
    } else if (ph == 3) { /* S = L L^T (first), then V = L^-1 W, columns lo .. hi - 1 */
        if ((lo == 0) && (mg_cholesky_factor(n, x->s) != 0)) {
            ok = 0;
        }
        if (ok != 0) {
            mg_cholesky_forward_cols(n, x->s, x->v, nb, lo, hi);
        }
    } else if (ph == 4) { /* dtheta -= V^T L^-1 (gain .* r), the snapshot's */
        mg_cholesky_forward(n, x->s, x->u, 1);
        for (c = 0; c < nb; ++c) {
            MG_REAL acc = (MG_REAL)0;
            for (j = 0; j < n; ++j) {
                acc += x->v[(j * nb) + c] * x->u[j];
            }
            x->dtheta[c] -= acc;
            if (!isfinite(x->dtheta[c])) {
                ok = 0;
            }
        }
    } else { /* P -= g_min V^T V + Q, packed rows lo .. hi - 1 */
        for (a = lo; a < hi; ++a) {
            MG_REAL *pa = &x->p[(a * nb) - ((a * (a - 1)) / 2)];
            for (j = 0; j < n; ++j) {
                const MG_REAL va = *x->gain_w * x->v[(j * nb) + a];
                for (c = a; c < nb; ++c) {
                    pa[c - a] -= va * x->v[(j * nb) + c];
                }
            }
            pa[0] += *x->drift * x->p0[a];
        }
    }
    return ok;
}

/* One sample of the sliced update. A window in flight whose correction has not run is discarded at
 * a restart or, with freeze, while firm (a latched collision or a joint above its threshold). With
 * none in flight a window starts unless restarting or, with freeze, holding: the snapshot of this
 * sample's gain .* r and gain_p, with its G, which the caller wrote into gs this sample (a window
 * starts only where none was in flight when the sample began: firm implies hold). Else the next
 * slice runs; a failed one (S not positive definite, a non-finite correction) starts the observer
 * again (dtheta 0, P_0). */
static inline void mg_rls_sliced(mg_rls_sliced_t *x, const MG_REAL *gain,
                                 const MG_REAL *r, MG_REAL gain_p, MG_REAL lam, int restart, unsigned freeze,
                                 int hold, int firm)
{
    int k;
    if ((*x->slice > 0) && (*x->slice <= x->corr) && ((restart != 0) || ((freeze != 0u) && (firm != 0)))) {
        *x->slice = 0; /* discard the update in flight: its correction is not applied yet */
    }
    if (*x->slice == 0) {
        if ((restart == 0) && !((freeze != 0u) && (hold != 0))) { /* a window starts */
            for (k = 0; k < (x->nb * x->n); ++k) {
                x->v[k] = (MG_REAL)0;
            }
            for (k = 0; k < x->n; ++k) {
                x->u[k] = gain[k] * r[k];
            }
            *x->gain_w = gain_p;
            *x->slice = 1;
        }
    } else {
        const int *e = x->sched[*x->slice - 1];
        const int ok = mg_rls_slice(x, e[0], e[1], e[2], lam);
        *x->slice = (*x->slice < x->nsched) ? (*x->slice + 1) : 0;
        if (ok == 0) { /* non-finite inputs or S not positive definite: start the observer again */
            for (k = 0; k < x->nb; ++k) {
                x->dtheta[k] = (MG_REAL)0;
            }
            mg_rls_prior_packed(x);
            *x->slice = 0;
        }
    }
}

/* sin and cos in double, MG_SIN and MG_COS, in every build (the same bits on every processor):
 * - x = k pi / 64 + r, k the nearest integer, |r| <= pi / 128 (Cody and Waite's reduction in three
 *   parts, the second subtraction's rounding error carried into the third);
 * - sin and cos of k pi / 64 from a table of their correctly rounded values and what the rounding
 *   left (the table's entries are checked against mpmath by tests/codegen/emit/test_portable_math.py);
 * - sin r and cos r - 1 by their Taylor polynomials to r^7 and r^6 (the next terms, r^9 / 9! and
 *   r^8 / 8!, are below 4e-19 r and 4e-18 at |r| = pi / 128: under a tenth of a unit in the last place);
 * - sin x = s_k + ((s_k' + s_k (cos r - 1)) + c_k sin r), cos x = c_k + ((c_k' + c_k (cos r - 1)) -
 *   s_k sin r), s_k' and c_k' the remainders (the small terms first: one rounding fewer at the size
 *   of the result where it is about half of s_k or c_k, next to a zero of sin or cos).
 * No branch and no call: once inlined, a sin and a cos of one angle share all of it (gcc merges the
 * two; glibc's sincos took 105 x86-64 instructions an angle, this 44). Plain C99 arithmetic on IEEE
 * 754 doubles: every processor that does not contract a * b + c into a fused multiply-add
 * (-std=c99 or -ffp-contract=off, as the host build and runtime/target/Makefile compile) computes
 * the same bits, unlike the C libraries' sin and cos (glibc's FMA and SSE2 kernels differ in the
 * last bit, and newlib's from both). Needs round-to-nearest and double evaluation (FLT_EVAL_METHOD
 * 0: not the x87 unit) and no -ffast-math, for the rounding by MG_ROUND_SHIFT: both are refused at
 * compile time below. The table's row is read from the low bits of x 64 / pi + MG_ROUND_SHIFT (k mod
 * 128 there for |k| < 2^51), not by converting k to an int, which C leaves undefined for a NaN or a
 * k out of range: every x reads a row of the table.
 * Accuracy (the same test, against mpmath), for |x| < 1e6: within 2 units in the last place plus
 * 1.1e-27. The second counts only next to a zero of sin or cos beyond |x| of about 45 (a result
 * below 1e-11; 2.4e-29 off measured at x = 642615.92, 1985 units there): the reduction
 * carries pi / 64 to 115 bits (|k| < 2.1e7: k times its rest is below 2.5e-28, the roundings of k
 * MG_PIO64_LO and of the last difference below 4e-28 each). Beyond 1e6 they lose accuracy (4e-6 at
 * 1e12); from about 1e14 the values are not sin and cos any more (outside [-1, 1] from 1e16, infinite
 * or NaN for finite x from 1e100), deterministic still: no joint angle comes near. A NaN or an
 * infinite x gives NaN. sin(-0) is +0 (the C library's is -0). */
#if defined(__FAST_MATH__)
#error "manipgen_linalg.h: -ffast-math (or -Ofast) reorders the arithmetic that sin and cos, and the step's finiteness tests, rely on; compile without it"
#endif
#if defined(FLT_EVAL_METHOD) && (FLT_EVAL_METHOD != 0)
#error "manipgen_linalg.h: doubles evaluated in a wider format (FLT_EVAL_METHOD != 0, e.g. the x87 unit): use SSE2 (-mfpmath=sse) or another FPU"
#endif
#define MG_PIO64_HI 0.049087385181337595    /* pi/64 to 28 bits */
#define MG_PIO64_MID 3.100292418622974e-11  /* the next 28 bits of pi/64 */
#define MG_PIO64_LO 1.7878714769093224e-19  /* the rest, rounded */
#define MG_64_OVER_PI 20.371832715762604
#define MG_ROUND_SHIFT 6755399441055744.0   /* 1.5 * 2^52: (t + it) - it is t rounded to an integer, |t| < 2^51 */

static inline void mg_sincos_parts(double x, double *sk, double *sl, double *ck, double *cl, double *sr, double *cr1)
{
    static const double table[128][4] = { /* sin, its rounding's remainder, cos, its remainder: k pi / 64, k = 0 .. 127 */
        {0.0, 0.0, 1.0, 0.0},
        {0.049067674327418015, -6.79610372051828e-19, 0.9987954562051724, -1.2291693337075465e-17},
        {0.0980171403295606, -1.634582362244256e-18, 0.9951847266721969, -4.248691367830441e-17},
        {0.14673047445536175, 3.726947147046568e-18, 0.989176509964781, -4.098730993704711e-17},
        {0.19509032201612828, -7.991079068461731e-18, 0.9807852804032304, 1.8546939997825006e-17},
        {0.2429801799032639, -8.751431529719663e-18, 0.970031253194544, 1.8365300348428844e-17},
        {0.2902846772544624, -1.892797870777425e-17, 0.9569403357322088, 4.05538698618757e-17},
        {0.33688985339222005, -4.200094003347509e-19, 0.9415440651830208, -2.789637954769834e-17},
        {0.3826834323650898, -1.0050772696461588e-17, 0.9238795325112867, 1.7645047084336677e-17},
        {0.4275550934302821, 9.411189816295473e-18, 0.9039892931234433, -6.609754468748431e-18},
        {0.47139673682599764, 6.516678136069013e-18, 0.881921264348355, -1.9843248405890562e-17},
        {0.5141027441932218, -4.5712707523615624e-17, 0.8577286100002721, -4.818344793633662e-17},
        {0.5555702330196022, 4.709410940561677e-17, 0.8314696123025452, 1.4073856984728024e-18},
        {0.5956993044924334, -1.3438641936579467e-17, 0.8032075314806449, -3.306060980481491e-17},
        {0.6343932841636455, 1.0420901929280035e-17, 0.773010453362737, -3.256590703364977e-17},
        {0.6715589548470184, -4.048903774929669e-17, 0.7409511253549591, -1.4708616952297345e-17},
        {0.7071067811865476, -4.833646656726457e-17, 0.7071067811865476, -4.833646656726457e-17},
        {0.7409511253549591, -1.4708616952297345e-17, 0.6715589548470184, -4.048903774929669e-17},
        {0.773010453362737, -3.256590703364977e-17, 0.6343932841636455, 1.0420901929280035e-17},
        {0.8032075314806449, -3.306060980481491e-17, 0.5956993044924334, -1.3438641936579467e-17},
        {0.8314696123025452, 1.4073856984728024e-18, 0.5555702330196022, 4.709410940561677e-17},
        {0.8577286100002721, -4.818344793633662e-17, 0.5141027441932218, -4.5712707523615624e-17},
        {0.881921264348355, -1.9843248405890562e-17, 0.47139673682599764, 6.516678136069013e-18},
        {0.9039892931234433, -6.609754468748431e-18, 0.4275550934302821, 9.411189816295473e-18},
        {0.9238795325112867, 1.7645047084336677e-17, 0.3826834323650898, -1.0050772696461588e-17},
        {0.9415440651830208, -2.789637954769834e-17, 0.33688985339222005, -4.200094003347509e-19},
        {0.9569403357322088, 4.05538698618757e-17, 0.2902846772544624, -1.892797870777425e-17},
        {0.970031253194544, 1.8365300348428844e-17, 0.2429801799032639, -8.751431529719663e-18},
        {0.9807852804032304, 1.8546939997825006e-17, 0.19509032201612828, -7.991079068461731e-18},
        {0.989176509964781, -4.098730993704711e-17, 0.14673047445536175, 3.726947147046568e-18},
        {0.9951847266721969, -4.248691367830441e-17, 0.0980171403295606, -1.634582362244256e-18},
        {0.9987954562051724, -1.2291693337075465e-17, 0.049067674327418015, -6.79610372051828e-19},
        {1.0, 0.0, 0.0, 0.0},
        {0.9987954562051724, -1.2291693337075465e-17, -0.049067674327418015, 6.79610372051828e-19},
        {0.9951847266721969, -4.248691367830441e-17, -0.0980171403295606, 1.634582362244256e-18},
        {0.989176509964781, -4.098730993704711e-17, -0.14673047445536175, -3.726947147046568e-18},
        {0.9807852804032304, 1.8546939997825006e-17, -0.19509032201612828, 7.991079068461731e-18},
        {0.970031253194544, 1.8365300348428844e-17, -0.2429801799032639, 8.751431529719663e-18},
        {0.9569403357322088, 4.05538698618757e-17, -0.2902846772544624, 1.892797870777425e-17},
        {0.9415440651830208, -2.789637954769834e-17, -0.33688985339222005, 4.200094003347509e-19},
        {0.9238795325112867, 1.7645047084336677e-17, -0.3826834323650898, 1.0050772696461588e-17},
        {0.9039892931234433, -6.609754468748431e-18, -0.4275550934302821, -9.411189816295473e-18},
        {0.881921264348355, -1.9843248405890562e-17, -0.47139673682599764, -6.516678136069013e-18},
        {0.8577286100002721, -4.818344793633662e-17, -0.5141027441932218, 4.5712707523615624e-17},
        {0.8314696123025452, 1.4073856984728024e-18, -0.5555702330196022, -4.709410940561677e-17},
        {0.8032075314806449, -3.306060980481491e-17, -0.5956993044924334, 1.3438641936579467e-17},
        {0.773010453362737, -3.256590703364977e-17, -0.6343932841636455, -1.0420901929280035e-17},
        {0.7409511253549591, -1.4708616952297345e-17, -0.6715589548470184, 4.048903774929669e-17},
        {0.7071067811865476, -4.833646656726457e-17, -0.7071067811865476, 4.833646656726457e-17},
        {0.6715589548470184, -4.048903774929669e-17, -0.7409511253549591, 1.4708616952297345e-17},
        {0.6343932841636455, 1.0420901929280035e-17, -0.773010453362737, 3.256590703364977e-17},
        {0.5956993044924334, -1.3438641936579467e-17, -0.8032075314806449, 3.306060980481491e-17},
        {0.5555702330196022, 4.709410940561677e-17, -0.8314696123025452, -1.4073856984728024e-18},
        {0.5141027441932218, -4.5712707523615624e-17, -0.8577286100002721, 4.818344793633662e-17},
        {0.47139673682599764, 6.516678136069013e-18, -0.881921264348355, 1.9843248405890562e-17},
        {0.4275550934302821, 9.411189816295473e-18, -0.9039892931234433, 6.609754468748431e-18},
        {0.3826834323650898, -1.0050772696461588e-17, -0.9238795325112867, -1.7645047084336677e-17},
        {0.33688985339222005, -4.200094003347509e-19, -0.9415440651830208, 2.789637954769834e-17},
        {0.2902846772544624, -1.892797870777425e-17, -0.9569403357322088, -4.05538698618757e-17},
        {0.2429801799032639, -8.751431529719663e-18, -0.970031253194544, -1.8365300348428844e-17},
        {0.19509032201612828, -7.991079068461731e-18, -0.9807852804032304, -1.8546939997825006e-17},
        {0.14673047445536175, 3.726947147046568e-18, -0.989176509964781, 4.098730993704711e-17},
        {0.0980171403295606, -1.634582362244256e-18, -0.9951847266721969, 4.248691367830441e-17},
        {0.049067674327418015, -6.79610372051828e-19, -0.9987954562051724, 1.2291693337075465e-17},
        {0.0, 0.0, -1.0, 0.0},
        {-0.049067674327418015, 6.79610372051828e-19, -0.9987954562051724, 1.2291693337075465e-17},
        {-0.0980171403295606, 1.634582362244256e-18, -0.9951847266721969, 4.248691367830441e-17},
        {-0.14673047445536175, -3.726947147046568e-18, -0.989176509964781, 4.098730993704711e-17},
        {-0.19509032201612828, 7.991079068461731e-18, -0.9807852804032304, -1.8546939997825006e-17},
        {-0.2429801799032639, 8.751431529719663e-18, -0.970031253194544, -1.8365300348428844e-17},
        {-0.2902846772544624, 1.892797870777425e-17, -0.9569403357322088, -4.05538698618757e-17},
        {-0.33688985339222005, 4.200094003347509e-19, -0.9415440651830208, 2.789637954769834e-17},
        {-0.3826834323650898, 1.0050772696461588e-17, -0.9238795325112867, -1.7645047084336677e-17},
        {-0.4275550934302821, -9.411189816295473e-18, -0.9039892931234433, 6.609754468748431e-18},
        {-0.47139673682599764, -6.516678136069013e-18, -0.881921264348355, 1.9843248405890562e-17},
        {-0.5141027441932218, 4.5712707523615624e-17, -0.8577286100002721, 4.818344793633662e-17},
        {-0.5555702330196022, -4.709410940561677e-17, -0.8314696123025452, -1.4073856984728024e-18},
        {-0.5956993044924334, 1.3438641936579467e-17, -0.8032075314806449, 3.306060980481491e-17},
        {-0.6343932841636455, -1.0420901929280035e-17, -0.773010453362737, 3.256590703364977e-17},
        {-0.6715589548470184, 4.048903774929669e-17, -0.7409511253549591, 1.4708616952297345e-17},
        {-0.7071067811865476, 4.833646656726457e-17, -0.7071067811865476, 4.833646656726457e-17},
        {-0.7409511253549591, 1.4708616952297345e-17, -0.6715589548470184, 4.048903774929669e-17},
        {-0.773010453362737, 3.256590703364977e-17, -0.6343932841636455, -1.0420901929280035e-17},
        {-0.8032075314806449, 3.306060980481491e-17, -0.5956993044924334, 1.3438641936579467e-17},
        {-0.8314696123025452, -1.4073856984728024e-18, -0.5555702330196022, -4.709410940561677e-17},
        {-0.8577286100002721, 4.818344793633662e-17, -0.5141027441932218, 4.5712707523615624e-17},
        {-0.881921264348355, 1.9843248405890562e-17, -0.47139673682599764, -6.516678136069013e-18},
        {-0.9039892931234433, 6.609754468748431e-18, -0.4275550934302821, -9.411189816295473e-18},
        {-0.9238795325112867, -1.7645047084336677e-17, -0.3826834323650898, 1.0050772696461588e-17},
        {-0.9415440651830208, 2.789637954769834e-17, -0.33688985339222005, 4.200094003347509e-19},
        {-0.9569403357322088, -4.05538698618757e-17, -0.2902846772544624, 1.892797870777425e-17},
        {-0.970031253194544, -1.8365300348428844e-17, -0.2429801799032639, 8.751431529719663e-18},
        {-0.9807852804032304, -1.8546939997825006e-17, -0.19509032201612828, 7.991079068461731e-18},
        {-0.989176509964781, 4.098730993704711e-17, -0.14673047445536175, -3.726947147046568e-18},
        {-0.9951847266721969, 4.248691367830441e-17, -0.0980171403295606, 1.634582362244256e-18},
        {-0.9987954562051724, 1.2291693337075465e-17, -0.049067674327418015, 6.79610372051828e-19},
        {-1.0, 0.0, 0.0, 0.0},
        {-0.9987954562051724, 1.2291693337075465e-17, 0.049067674327418015, -6.79610372051828e-19},
        {-0.9951847266721969, 4.248691367830441e-17, 0.0980171403295606, -1.634582362244256e-18},
        {-0.989176509964781, 4.098730993704711e-17, 0.14673047445536175, 3.726947147046568e-18},
        {-0.9807852804032304, -1.8546939997825006e-17, 0.19509032201612828, -7.991079068461731e-18},
        {-0.970031253194544, -1.8365300348428844e-17, 0.2429801799032639, -8.751431529719663e-18},
        {-0.9569403357322088, -4.05538698618757e-17, 0.2902846772544624, -1.892797870777425e-17},
        {-0.9415440651830208, 2.789637954769834e-17, 0.33688985339222005, -4.200094003347509e-19},
        {-0.9238795325112867, -1.7645047084336677e-17, 0.3826834323650898, -1.0050772696461588e-17},
        {-0.9039892931234433, 6.609754468748431e-18, 0.4275550934302821, 9.411189816295473e-18},
        {-0.881921264348355, 1.9843248405890562e-17, 0.47139673682599764, 6.516678136069013e-18},
        {-0.8577286100002721, 4.818344793633662e-17, 0.5141027441932218, -4.5712707523615624e-17},
        {-0.8314696123025452, -1.4073856984728024e-18, 0.5555702330196022, 4.709410940561677e-17},
        {-0.8032075314806449, 3.306060980481491e-17, 0.5956993044924334, -1.3438641936579467e-17},
        {-0.773010453362737, 3.256590703364977e-17, 0.6343932841636455, 1.0420901929280035e-17},
        {-0.7409511253549591, 1.4708616952297345e-17, 0.6715589548470184, -4.048903774929669e-17},
        {-0.7071067811865476, 4.833646656726457e-17, 0.7071067811865476, -4.833646656726457e-17},
        {-0.6715589548470184, 4.048903774929669e-17, 0.7409511253549591, -1.4708616952297345e-17},
        {-0.6343932841636455, -1.0420901929280035e-17, 0.773010453362737, -3.256590703364977e-17},
        {-0.5956993044924334, 1.3438641936579467e-17, 0.8032075314806449, -3.306060980481491e-17},
        {-0.5555702330196022, -4.709410940561677e-17, 0.8314696123025452, 1.4073856984728024e-18},
        {-0.5141027441932218, 4.5712707523615624e-17, 0.8577286100002721, -4.818344793633662e-17},
        {-0.47139673682599764, -6.516678136069013e-18, 0.881921264348355, -1.9843248405890562e-17},
        {-0.4275550934302821, -9.411189816295473e-18, 0.9039892931234433, -6.609754468748431e-18},
        {-0.3826834323650898, 1.0050772696461588e-17, 0.9238795325112867, 1.7645047084336677e-17},
        {-0.33688985339222005, 4.200094003347509e-19, 0.9415440651830208, -2.789637954769834e-17},
        {-0.2902846772544624, 1.892797870777425e-17, 0.9569403357322088, 4.05538698618757e-17},
        {-0.2429801799032639, 8.751431529719663e-18, 0.970031253194544, 1.8365300348428844e-17},
        {-0.19509032201612828, 7.991079068461731e-18, 0.9807852804032304, 1.8546939997825006e-17},
        {-0.14673047445536175, -3.726947147046568e-18, 0.989176509964781, -4.098730993704711e-17},
        {-0.0980171403295606, 1.634582362244256e-18, 0.9951847266721969, -4.248691367830441e-17},
        {-0.049067674327418015, 6.79610372051828e-19, 0.9987954562051724, -1.2291693337075465e-17}
    };
    union { /* MISRA 19.2 (docs/misra.md): the bits of a double */
        double d;
        uint64_t u;
    } t;
    double k;
    double a;
    double b;
    double r;
    double z;
    unsigned row;
    t.d = (x * MG_64_OVER_PI) + MG_ROUND_SHIFT; /* 1.5 * 2^52 + k for |k| < 2^51: k mod 128 in its low bits */
    k = t.d - MG_ROUND_SHIFT;
    row = (unsigned)(t.u & (uint64_t)127);
    a = x - (k * MG_PIO64_HI); /* exact, as b */
    b = k * MG_PIO64_MID;
    r = a - b;
    r = r - ((k * MG_PIO64_LO) - ((a - r) - b)); /* (a - r) - b: what a - b's rounding left (Fast2Sum) */
    z = r * r;
    *sk = table[row][0];
    *sl = table[row][1];
    *ck = table[row][2];
    *cl = table[row][3];
    *sr = r + ((r * z) * (-1.6666666666666666e-01 + (z * (8.3333333333333332e-03 + (z * -1.9841269841269841e-04)))));
    *cr1 = z * (-0.5 + (z * (4.1666666666666664e-02 + (z * -1.3888888888888889e-03))));
}

static inline double mg_sin(double x)
{
    double sk;
    double sl;
    double ck;
    double cl;
    double sr;
    double cr1;
    mg_sincos_parts(x, &sk, &sl, &ck, &cl, &sr, &cr1);
    return sk + ((sl + (sk * cr1)) + (ck * sr));
}

static inline double mg_cos(double x)
{
    double sk;
    double sl;
    double ck;
    double cl;
    double sr;
    double cr1;
    mg_sincos_parts(x, &sk, &sl, &ck, &cl, &sr, &cr1);
    return ck + ((cl + (ck * cr1)) - (sk * sr));
}

#define MG_SIN mg_sin
#define MG_COS mg_cos

/* MG_EXP, MG_TANH (double) and MG_SINF, ... (float): the C library's, or with
 * MANIPGEN_PORTABLE_MATH defined, the portable versions below, as plain C99 arithmetic (the same
 * bits on every processor, as sin and cos above): `manipgen target pil` builds the host's plant and
 * the Cortex-M's step with them, because the C libraries' differ in the last bit. Accuracy (the same
 * test): within 2 units in the last place in double, within 3 in float for |x| < 5000 (sinf,
 * cosf; beyond, they lose accuracy but not determinism). */
#ifdef MANIPGEN_PORTABLE_MATH

#define MG_LN2_HI 0.6931471806019545       /* ln 2 to 32 bits: k * it is exact for |k| < 2^21 */
#define MG_LN2_LO (-4.2009150726810846e-11)
#define MG_INV_LN2 1.4426950408889634
#define MG_EXP_MAX 709.782712893384        /* above: exp overflows */
#define MG_EXP_MIN (-745.1332191019412)    /* below: exp is 0 */

static inline double mg_exp(double x)
{
    double out;
    if (x > MG_EXP_MAX) {
        out = HUGE_VAL;
    } else if (x < MG_EXP_MIN) {
        out = 0.0;
    } else if (!(x == x)) {
        out = x;                                   /* NaN */
    } else {
        /* x = k ln 2 + r, |r| <= ln 2 / 2; e^r by its Taylor polynomial to r^13; ldexp is exact */
        const double k = floor((x * MG_INV_LN2) + 0.5);
        const double r = (x - (k * MG_LN2_HI)) - (k * MG_LN2_LO);
        const double e = 1.0 + (r * (1.0 + (r * (0.5 + (r * (1.6666666666666666e-01 + (r * (4.1666666666666664e-02
            + (r * (8.3333333333333332e-03 + (r * (1.3888888888888889e-03 + (r * (1.9841269841269841e-04
            + (r * (2.4801587301587302e-05 + (r * (2.7557319223985893e-06 + (r * (2.7557319223985888e-07
            + (r * (2.5052108385441720e-08 + (r * (2.0876756987868100e-09 + (r * 1.6059043836821613e-10)))))))))))))))))))))))));
        out = ldexp(e, (int)k);
    }
    return out;
}

static inline double mg_tanh(double x)
{
    /* tanh |x| with u = 2|x|: below u = 1, m / (m + 2) with m = e^u - 1 = u + u^2 (1/2 + ...) by its
       Taylor polynomial to u^18 (no cancellation, the leading u exact); above, 1 - 2 / (e^u + 1);
       1 beyond u = 44 (within half an ulp) */
    const double u = 2.0 * fabs(x);
    double t;
    if (u > 44.0) {
        t = 1.0;
    } else {
        if (u < 1.0) {
            const double m = u + ((u * u) * (0.5 + (u * (1.6666666666666666e-01 + (u * (4.1666666666666664e-02 + (u * (8.3333333333333332e-03
                + (u * (1.3888888888888889e-03 + (u * (1.9841269841269841e-04 + (u * (2.4801587301587302e-05
                + (u * (2.7557319223985893e-06 + (u * (2.7557319223985888e-07 + (u * (2.5052108385441720e-08
                + (u * (2.0876756987868100e-09 + (u * (1.6059043836821613e-10 + (u * (1.1470745597729725e-11
                + (u * (7.6471637318198164e-13 + (u * (4.7794773323873853e-14 + (u * (2.8114572543455206e-15
                + (u * 1.5619206968586225e-16)))))))))))))))))))))))))))))))));
            t = m / (m + 2.0);
        } else {
            t = 1.0 - (2.0 / (mg_exp(u) + 1.0));
        }
    }
    return (x < 0.0) ? -t : t;
}

/* The same in float arithmetic (float builds): reduction constants of 12 bits (k * MG_PIO2F_HI exact
 * for |k| < 2^12), Taylor polynomials to r^9 (sin), r^10 (cos), r^7 (exp) and u^11 (e^u - 1). */
#define MG_PIO2F_HI 1.5708008f
#define MG_PIO2F_MID (-4.4535846e-06f)
#define MG_PIO2F_LO (-8.705516e-10f)
#define MG_TWO_OVER_PIF 0.63661975f
#define MG_LN2F_HI 0.69311523f
#define MG_LN2F_LO 3.1946183e-05f
#define MG_INV_LN2F 1.442695f
#define MG_EXPF_MAX 88.72284f
#define MG_EXPF_MIN (-103.97208f)

static inline float mg_reduce_pio2f(float x, int *quadrant)
{
    const float k = floorf((x * MG_TWO_OVER_PIF) + 0.5f);
    *quadrant = (int)(k - (4.0f * floorf(k * 0.25f)));
    return ((x - (k * MG_PIO2F_HI)) - (k * MG_PIO2F_MID)) - (k * MG_PIO2F_LO);
}

static inline float mg_sinf_kernel(float r)
{
    const float z = r * r;
    return r + ((r * z) * (-1.6666667e-01f + (z * (8.3333338e-03f + (z * (-1.9841270e-04f + (z * 2.7557319e-06f)))))));
}

static inline float mg_cosf_kernel(float r)
{
    const float z = r * r;
    return 1.0f + (z * (-0.5f + (z * (4.1666668e-02f + (z * (-1.3888889e-03f + (z * (2.4801588e-05f
        + (z * -2.7557320e-07f)))))))));
}

static inline float mg_sinf(float x)
{
    int q;
    const float r = mg_reduce_pio2f(x, &q);
    const float v = ((q == 0) || (q == 2)) ? mg_sinf_kernel(r) : mg_cosf_kernel(r);
    return (q >= 2) ? -v : v;
}

static inline float mg_cosf(float x)
{
    int q;
    const float r = mg_reduce_pio2f(x, &q);
    const float v = ((q == 0) || (q == 2)) ? mg_cosf_kernel(r) : mg_sinf_kernel(r);
    return ((q == 1) || (q == 2)) ? -v : v;
}

static inline float mg_expf(float x)
{
    float out;
    if (x > MG_EXPF_MAX) {
        out = HUGE_VALF;
    } else if (x < MG_EXPF_MIN) {
        out = 0.0f;
    } else if (!(x == x)) {
        out = x;
    } else {
        const float k = floorf((x * MG_INV_LN2F) + 0.5f);
        const float r = (x - (k * MG_LN2F_HI)) - (k * MG_LN2F_LO);
        const float e = 1.0f + (r * (1.0f + (r * (0.5f + (r * (1.6666667e-01f + (r * (4.1666668e-02f + (r * (8.3333338e-03f
            + (r * (1.3888889e-03f + (r * 1.9841270e-04f)))))))))))));
        out = ldexpf(e, (int)k);
    }
    return out;
}

static inline float mg_tanhf(float x)
{
    /* as mg_tanh */
    const float u = 2.0f * fabsf(x);
    float t;
    if (u > 20.0f) {
        t = 1.0f;
    } else {
        if (u < 1.0f) {
            const float m = u + ((u * u) * (0.5f + (u * (1.6666667e-01f + (u * (4.1666668e-02f + (u * (8.3333338e-03f
                + (u * (1.3888889e-03f + (u * (1.9841270e-04f + (u * (2.4801588e-05f + (u * (2.7557319e-06f
                + (u * (2.7557320e-07f + (u * 2.5052108e-08f)))))))))))))))))));
            t = m / (m + 2.0f);
        } else {
            t = 1.0f - (2.0f / (mg_expf(u) + 1.0f));
        }
    }
    return (x < 0.0f) ? -t : t;
}

#define MG_EXP mg_exp
#define MG_TANH mg_tanh
#define MG_SINF mg_sinf
#define MG_COSF mg_cosf
#define MG_EXPF mg_expf
#define MG_TANHF mg_tanhf
#else
#define MG_EXP exp
#define MG_TANH tanh
#define MG_SINF sinf
#define MG_COSF cosf
#define MG_EXPF expf
#define MG_TANHF tanhf
#endif

/* fmax and fmin of the generated code (saturations), MG_FMAX, MG_FMIN (double), MG_FMAXF, MG_FMINF
 * (float): C99's (a NaN argument gives the other argument), and for a tie the second argument (as
 * glibc's x86-64 and newlib's: +0 and -0 compare equal), inline: the C library's is a call where the
 * FPU has no max instruction (a Cortex-M4F's), and on other hosts may order the zeros. */
static inline double mg_fmax(double x, double y)
{
    return (isnan(x) != 0) ? y : (((isnan(y) != 0) || (x > y)) ? x : y);
}

static inline double mg_fmin(double x, double y)
{
    return (isnan(x) != 0) ? y : (((isnan(y) != 0) || (x < y)) ? x : y);
}

static inline float mg_fmaxf(float x, float y)
{
    return (isnan(x) != 0) ? y : (((isnan(y) != 0) || (x > y)) ? x : y);
}

static inline float mg_fminf(float x, float y)
{
    return (isnan(x) != 0) ? y : (((isnan(y) != 0) || (x < y)) ? x : y);
}

#define MG_FMAX mg_fmax
#define MG_FMIN mg_fmin
#define MG_FMAXF mg_fmaxf
#define MG_FMINF mg_fminf

#endif /* MANIPGEN_LINALG_H */
