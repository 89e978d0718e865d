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

/* The transcendental functions of the generated code, MG_SIN, MG_COS, MG_EXP, MG_TANH (double) and
 * MG_SINF, ... (float): the C library's, or with MANIPGEN_PORTABLE_MATH defined, the portable
 * versions below. These are plain C99 arithmetic on IEEE 754 numbers, so every processor that does
 * not contract a * b + c into a fused multiply-add (-std=c99 or -ffp-contract=off, as the host build
 * and runtime/target/Makefile compile) computes the same bits: `manipgen target pil` builds the
 * host's plant and the Cortex-M's step with them, because glibc's and newlib's sin and cos differ
 * in the last bit. Accuracy (tests/codegen/emit/test_portable_math.py, against mpmath): within 2
 * units in the last place in double for |x| < 1e6, within 3 in float for |x| < 5000; beyond, sin
 * and cos lose accuracy but not determinism. */
#ifdef MANIPGEN_PORTABLE_MATH

#define MG_PIO2_HI 1.5707963267341256      /* pi/2 to 33 bits: k * it is exact for |k| < 2^20 */
#define MG_PIO2_MID 6.077100506303966e-11  /* the next 33 bits of pi/2 */
#define MG_PIO2_LO 2.0222662487959506e-21  /* the rest, rounded */
#define MG_TWO_OVER_PI 0.6366197723675814
#define MG_LN2_HI 0.6931471806019545       /* ln 2 to 32 bits: k * it is exact for |k| < 2^21 */
#define MG_LN2_LO (-4.2009150726810846e-11)
#define MG_INV_LN2 1.4426950408889634
#define MG_EXP_MAX 709.782712893384        /* above: exp overflows */
#define MG_EXP_MIN (-745.1332191019412)    /* below: exp is 0 */

/* r = x - k pi / 2 (Cody and Waite's three-part reduction), |r| <= pi / 4 + tiny; *quadrant = k mod 4 */
static inline double mg_reduce_pio2(double x, int *quadrant)
{
    const double k = floor((x * MG_TWO_OVER_PI) + 0.5);
    *quadrant = (int)(k - (4.0 * floor(k * 0.25)));
    return ((x - (k * MG_PIO2_HI)) - (k * MG_PIO2_MID)) - (k * MG_PIO2_LO);
}

/* sin r and cos r for |r| <= pi / 4: Taylor polynomials to r^17 and r^16 (truncation below 0.03 ulp) */
static inline double mg_sin_kernel(double r)
{
    const double z = r * r;
    return r + ((r * z) * (-1.6666666666666666e-01 + (z * (8.3333333333333332e-03 + (z * (-1.9841269841269841e-04
        + (z * (2.7557319223985893e-06 + (z * (-2.5052108385441720e-08 + (z * (1.6059043836821613e-10
        + (z * (-7.6471637318198164e-13 + (z * 2.8114572543455206e-15)))))))))))))));
}

static inline double mg_cos_kernel(double r)
{
    const double z = r * r;
    return 1.0 + (z * (-0.5 + (z * (4.1666666666666664e-02 + (z * (-1.3888888888888889e-03 + (z * (2.4801587301587302e-05
        + (z * (-2.7557319223985888e-07 + (z * (2.0876756987868100e-09 + (z * (-1.1470745597729725e-11
        + (z * 4.7794773323873853e-14)))))))))))))));
}

static inline double mg_sin(double x)
{
    int q;
    const double r = mg_reduce_pio2(x, &q);
    const double v = ((q == 0) || (q == 2)) ? mg_sin_kernel(r) : mg_cos_kernel(r);
    return (q >= 2) ? -v : v;
}

static inline double mg_cos(double x)
{
    int q;
    const double r = mg_reduce_pio2(x, &q);
    const double v = ((q == 0) || (q == 2)) ? mg_cos_kernel(r) : mg_sin_kernel(r);
    return ((q == 1) || (q == 2)) ? -v : v;
}

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

#define MG_SIN mg_sin
#define MG_COS mg_cos
#define MG_EXP mg_exp
#define MG_TANH mg_tanh
#define MG_SINF mg_sinf
#define MG_COSF mg_cosf
#define MG_EXPF mg_expf
#define MG_TANHF mg_tanhf
#else
#define MG_SIN sin
#define MG_COS cos
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
