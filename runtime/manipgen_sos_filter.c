/* Second-order-section IIR filtering for the host's identification: one pass of a cascade of
 * biquads over every column of a (samples x columns) row-major array, in place, forwards or
 * backwards, each section starting from its steady state for the first sample it sees.
 * host_tools/identification/zero_phase.py designs the sections and makes the zero-phase
 * forward-backward filter of it (why it is not scipy.signal: that module's docstring).
 *
 * Each section is the transposed direct form II of scipy.signal.sosfilt:
 *   y = b0 x + z1,  z1' = b1 x - a1 y + z2,  z2' = b2 x - a2 y.
 * Its steady state for a constant input u (output v = g u, g its DC gain):
 *   z1 = v - b0 u,  z2 = b2 u - a2 v.
 * No heap: the caller gives the state (2 sections columns doubles). */
#include <stddef.h>

void manipgen_sos_filter(const double *sos, size_t sections, double *x, size_t samples, size_t columns,
                         int backwards, double *state);

void manipgen_sos_filter(const double *sos, size_t sections, double *x, size_t samples, size_t columns,
                         int backwards, double *state)
{
    size_t s;
    size_t c;
    size_t i;
    if (samples > 0U) {
        const double *first = (backwards != 0) ? &x[(samples - 1U) * columns] : x;
        for (c = 0U; c < columns; ++c) {
            double level = first[c];
            for (s = 0U; s < sections; ++s) {
                const double *q = &sos[s * 6U];
                const double out = (level * (q[0] + q[1] + q[2])) / (1.0 + q[4] + q[5]);
                state[((s * 2U) * columns) + c] = out - (q[0] * level);
                state[(((s * 2U) + 1U) * columns) + c] = (q[2] * level) - (q[5] * out);
                level = out;
            }
        }
    }
    for (i = 0U; i < samples; ++i) {
        double *row = &x[((backwards != 0) ? ((samples - 1U) - i) : i) * columns];
        for (s = 0U; s < sections; ++s) {
            const double *q = &sos[s * 6U];
            double *z1 = &state[(s * 2U) * columns];
            double *z2 = &state[((s * 2U) + 1U) * columns];
            for (c = 0U; c < columns; ++c) {
                const double in = row[c];
                const double out = (q[0] * in) + z1[c];
                z1[c] = ((q[1] * in) - (q[4] * out)) + z2[c];
                z2[c] = (q[2] * in) - (q[5] * out);
                row[c] = out;
            }
        }
    }
}
