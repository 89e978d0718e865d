/* manipgen_rt.h - generic helpers of the real-time step (copied into every generated folder).
 *
 * Robot-independent logic only: counter unwrapping, threshold/hysteresis/debounce bookkeeping, the
 * step's readiness and fault decisions and the adaptive observer's restart and hold.
 * Include after defining MG_REAL (the real type) and MG_FABS (fabs or fabsf).
 * C99, no heap, no globals, no recursion.
 */
#ifndef MANIPGEN_RT_H
#define MANIPGEN_RT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The mask of a free-running counter of `bits` bits (2..32, else 32): 2^bits - 1. The pipeline
 * computes it once per configuration (_rt_configure), not at every sample. */
static inline uint32_t mg_counter_mask(unsigned bits)
{
    const unsigned width = ((bits < 2u) || (bits > 32u)) ? 32u : bits;
    return (width == 32u) ? 0xFFFFFFFFu : (((uint32_t)1u << width) - 1u);
}

/* Unwrap a free-running counter whose mask (mg_counter_mask) is `mask` into a 64-bit count.
 * The first call takes the raw value as the absolute count (two's complement if is_signed);
 * later calls add the difference to the previous raw value modulo 2^bits, read as signed: any
 * number of wraps either way is followed as long as one sample moves less than half a counter range. */
static inline void mg_unwrap(uint32_t raw, uint32_t mask, unsigned is_signed, uint8_t *started,
                             uint32_t *last, int64_t *total)
{
    const uint32_t half = (mask >> 1) + 1u;  /* 2^(bits - 1) */
    const uint32_t value = raw & mask;
    if (*started == 0u) {
        *total = ((is_signed != 0u) && (value >= half)) ? ((int64_t)value - ((int64_t)mask + 1)) : (int64_t)value;
        *started = 1u;
    } else {
        const uint32_t d = (value - *last) & mask;
        *total += (d >= half) ? ((int64_t)d - ((int64_t)mask + 1)) : (int64_t)d;
    }
    *last = value;
}

/* An unwrapped count as a real. A 64-bit integer's conversion is a library call on a 32-bit core
 * (__aeabi_l2f: ~20 instructions on a Cortex-M4F), a 32-bit one a single instruction; both round the
 * same integer to the nearest real (IEEE 754, the default rounding mode), so where the count fits in
 * 32 bits they give the same bits. MG_COUNT_32: take that path (default: on 32-bit targets). */
#ifndef MG_COUNT_32
#ifdef UINTPTR_MAX
#if UINTPTR_MAX <= 0xFFFFFFFFu
#define MG_COUNT_32 1
#endif
#endif
#endif
#ifndef MG_COUNT_32
#define MG_COUNT_32 0
#endif
static inline MG_REAL mg_count_real(int64_t count)
{
#if MG_COUNT_32
    return ((count >= (int64_t)INT32_MIN) && (count <= (int64_t)INT32_MAX)) ? (MG_REAL)(int32_t)count
                                                                            : (MG_REAL)count;
#else
    return (MG_REAL)count;
#endif
}

/* ok if x[0..n) are all finite and within +-limit (a NaN fails every comparison), else 0: one
 * check of several arrays is mg_bounded(c, nc, limit, mg_bounded(b, nb, limit, mg_bounded(a, ...,
 * 1u))). Branch-free: every element is read (no early exit), which costs less than a branch each. */
static inline unsigned mg_bounded(const MG_REAL *x, int n, MG_REAL limit, unsigned ok)
{
    int k;
    unsigned all = ok;
    for (k = 0; k < n; ++k) {
        all &= (MG_FABS(x[k]) <= limit) ? 1u : 0u;
    }
    return all;
}

/* acc + sum of (x[k] - x[k]) over x[0..n): x - x is exactly +0 for a finite x and NaN for an
 * infinity or a NaN (IEEE 754: inf - inf and NaN - NaN are NaN); a sum of +0 is +0, and a NaN
 * term makes every later sum NaN. So a chain mg_finite_sum(b, nb, mg_finite_sum(a, na, 0)) is 0
 * if and only if every element of a and b is finite (no finite value can overflow it, unlike a
 * plain sum). Needs IEEE arithmetic: no -ffast-math or -ffinite-math-only, which would fold x - x
 * (and, as well, any NaN comparison of the checks above). */
static inline MG_REAL mg_finite_sum(const MG_REAL *x, int n, MG_REAL acc)
{
    int k;
    MG_REAL sum = acc;
    for (k = 0; k < n; ++k) {
        sum += x[k] - x[k];
    }
    return sum;
}

/* Per joint: above[i] (hysteresis: enter when |r| > level, leave when |r| <= release * level; a
 * level of 0 never enters: that joint has no threshold),
 * count[i] consecutive samples above. Returns 1 if some joint has been above for debounce[i]
 * samples (debounce < 1 counts as 1); *highest = the highest joint above (1-based, 0: none). */
static inline int mg_detect(int n, const MG_REAL *r, const MG_REAL *level, MG_REAL release,
                            const int32_t *debounce, uint8_t *above, int32_t *count,
                            int32_t *highest)
{
    int i;
    int fired = 0;
    *highest = 0;
    for (i = 0; i < n; ++i) {
        const MG_REAL limit = (above[i] != 0u) ? (level[i] * release) : level[i];
        above[i] = ((level[i] > 0) && (MG_FABS(r[i]) > limit)) ? 1u : 0u;  /* level 0: not detecting */
        if (above[i] != 0u) {
            count[i] = (count[i] < 0x40000000) ? (count[i] + 1) : count[i];
            *highest = i + 1;
        } else {
            count[i] = 0;
        }
        if (count[i] >= ((debounce[i] < 1) ? 1 : debounce[i])) {
            fired = 1;
        }
    }
    return fired;
}

/* 1 if all of flags[0..n) (each 0 or 1) are 1 and all is 1, else 0: a chain mg_all_set(b, nb,
 * mg_all_set(a, na, 1u)) tests several arrays. Branch-free, as mg_bounded. */
static inline unsigned mg_all_set(const uint8_t *flags, int n, unsigned all)
{
    int k;
    unsigned acc = all;
    for (k = 0; k < n; ++k) {
        acc &= (unsigned)flags[k];
    }
    return acc;
}

/* The step's readiness and numeric faults (<robot>_rt.h: "Numeric faults"), decided here once: the
 * generated step does what the returned MG_DO_ flags say. Needs MG_FAULT_NONE, MG_FAULT_INPUT and
 * MG_FAULT_NUMERIC (<robot>_rt.h, included first). */
#define MG_DO_RESTART 1u       /* restart the blocks as _rt_init does, keeping config, encoders, step count */
#define MG_DO_ZERO_POSITION 2u /* the encoders' positions are not finite: report them as 0 */
#define MG_DO_WAIT 4u          /* not ready: zero the outputs but q and fault, count the step, end it */

/* After the encoder block. started: 1 once every encoder channel has read a valid sample (mg_all_set);
 * inputs_ok: every real input finite and within the limit; config_fault: the config in use has a
 * non-finite value; position_ok: the encoders' positions are finite. An input beyond the limit is
 * MG_FAULT_INPUT; else a config or position fault is MG_FAULT_NUMERIC. A fault restarts the blocks and
 * makes the step wait; so does an encoder without a first valid sample (*fault then MG_FAULT_NONE). */
static inline unsigned mg_gate(unsigned started, int inputs_ok, unsigned config_fault, int position_ok,
                               uint8_t *fault, uint8_t *ready)
{
    unsigned act = 0u;
    *fault = (inputs_ok != 0) ? MG_FAULT_NONE : MG_FAULT_INPUT;
    if ((*fault == MG_FAULT_NONE) && ((config_fault != 0u) || (position_ok == 0))) {
        *fault = MG_FAULT_NUMERIC;
    }
    if (*fault != MG_FAULT_NONE) {
        act |= MG_DO_RESTART;
        if (position_ok == 0) {
            act |= MG_DO_ZERO_POSITION;
        }
    }
    *ready = ((started != 0u) && (*fault == MG_FAULT_NONE)) ? 1u : 0u;
    if (*ready == 0u) {
        act |= MG_DO_WAIT;
    }
    return act;
}

/* After the blocks: outputs_ok, every real output finite. A non-finite one (an overflow) is
 * MG_FAULT_NUMERIC: restart the blocks and report as while waiting (MG_DO_RESTART | MG_DO_WAIT; the
 * step is counted already). Else nothing to do (0), *fault and *ready as they were. */
static inline unsigned mg_gate_outputs(int outputs_ok, uint8_t *fault, uint8_t *ready)
{
    unsigned act = 0u;
    if (outputs_ok == 0) {
        *fault = MG_FAULT_NUMERIC;
        *ready = 0u;
        act = MG_DO_RESTART | MG_DO_WAIT;
    }
    return act;
}

/* The model-adaptive observer's restart (Birjandi & Haddadin's observer, codegen.blocks.adaptive):
 * 1 at the first sample and at in.reset -- the correction removes the whole residual seen and claims
 * no information from it. With the integral form's low-passes (pending not NULL) also when the last
 * sample asked for it (*pending != 0), and a non-finite r[0..n) asks for it now and at the next
 * sample (*pending = 1: the low-passes start again), else *pending = 0. */
static inline int mg_adapt_restart(int n, unsigned first, unsigned reset, const MG_REAL *r, MG_REAL *pending)
{
    int restart = 0;
    if ((first != 0u) || (reset != 0u)) {
        restart = 1;
    }
    if (pending != NULL) {
        int i;
        if (*pending != (MG_REAL)0) {
            restart = 1;
        }
        *pending = (MG_REAL)0;
        for (i = 0; i < n; ++i) {
            if (!isfinite(r[i])) {
                restart = 1;
                *pending = (MG_REAL)1;
            }
        }
    }
    return restart;
}

/* With freeze, whether the adaptation holds this sample: 1 while a collision is latched or a joint is
 * above its threshold (*firm = 1 then), and for at most suspect_hold samples at a time while some
 * joint's |r| is above suspect x the last sample's threshold (level 0: that joint is not detecting).
 * *held counts the samples held at the suspect level; below it (or at in.reset) it starts again at
 * 0. After suspect_hold samples the adaptation runs until r is below the suspect level again. */
static inline int mg_adapt_hold(int n, unsigned collision, const uint8_t *above, const MG_REAL *level,
                                const MG_REAL *r, MG_REAL suspect, int32_t suspect_hold, unsigned reset,
                                int32_t *held, int *firm)
{
    int i;
    int hold = 0;
    if (collision != 0u) {
        hold = 1;
    }
    int high = 0;
    for (i = 0; i < n; ++i) {
        if (above[i] != 0u) {
            hold = 1;
        }
        if ((level[i] > (MG_REAL)0) && (MG_FABS(r[i]) > (suspect * level[i]))) {
            high = 1;
        }
    }
    *firm = hold;
    if ((high == 0) || (reset != 0u)) {
        *held = 0;
    } else if (*held < suspect_hold) {
        *held += 1;
        hold = 1;
    } else {
        /* held long enough: adapt until r is below the suspect level again */
    }
    return hold;
}

#endif /* MANIPGEN_RT_H */
