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
    int i, j, k;
    for (j = 0; j < n; ++j) {
        MG_REAL d = a[j * n + j];
        for (k = 0; k < j; ++k) {
            d -= a[j * n + k] * a[j * n + k];
        }
        if (!(d > (MG_REAL)0)) {
            return -1;
        }
        d = (MG_REAL)MG_SQRT(d);
        a[j * n + j] = d;
        for (i = j + 1; i < n; ++i) {
            MG_REAL s = a[i * n + j];
            for (k = 0; k < j; ++k) {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    return 0;
}

/* Solve L L^T x = b in place (b <- x) with the factor of mg_cholesky_factor; b is the column of
 * an n x m row-major matrix starting at b with stride m (m = 1: a plain vector). The strided
 * offsets are formed in ptrdiff_t, the type a pointer offset has, not in int. */
static inline void mg_cholesky_substitute(int n, const MG_REAL *l, MG_REAL *b, int m)
{
    int i, k;
    for (i = 0; i < n; ++i) { /* forward: L y = b */
        MG_REAL s = b[(ptrdiff_t)i * m];
        for (k = 0; k < i; ++k) {
            s -= l[i * n + k] * b[(ptrdiff_t)k * m];
        }
        b[(ptrdiff_t)i * m] = s / l[i * n + i];
    }
    for (i = n - 1; i >= 0; --i) { /* backward: L^T x = y */
        MG_REAL s = b[(ptrdiff_t)i * m];
        for (k = i + 1; k < n; ++k) {
            s -= l[k * n + i] * b[(ptrdiff_t)k * m];
        }
        b[(ptrdiff_t)i * m] = s / l[i * n + i];
    }
}

/* Factorise a in place (see mg_cholesky_factor), then solve A x = b in place (b <- x).
 * Returns 0, or -1 if A is not positive definite (b is then left unspecified). */
static inline int mg_cholesky_solve(int n, MG_REAL *a, MG_REAL *b)
{
    if (mg_cholesky_factor(n, a) != 0) {
        return -1;
    }
    mg_cholesky_substitute(n, a, b, 1);
    return 0;
}

#endif /* MANIPGEN_LINALG_H */
