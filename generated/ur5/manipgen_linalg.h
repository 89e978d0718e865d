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

/* In-place Cholesky factorisation A = L L^T of the symmetric positive definite n x n row-major
 * matrix a (lower triangle used and overwritten with L), then solve A x = b in place (b <- x).
 * Returns 0, or -1 if A is not positive definite (b is then left unspecified). */
static inline int mg_cholesky_solve(int n, MG_REAL *a, MG_REAL *b)
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
    for (i = 0; i < n; ++i) { /* forward: L y = b */
        MG_REAL s = b[i];
        for (k = 0; k < i; ++k) {
            s -= a[i * n + k] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    for (i = n - 1; i >= 0; --i) { /* backward: L^T x = y */
        MG_REAL s = b[i];
        for (k = i + 1; k < n; ++k) {
            s -= a[k * n + i] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    return 0;
}

#endif /* MANIPGEN_LINALG_H */
