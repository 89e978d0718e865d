"""Data processing for identification: period averaging with per-sample variance (Xu et al. 2020 eq. 11,
Kirchhoff (2011) eqs. 4.45-4.46), zero-phase Butterworth filtering with central differences, frequency-
domain differentiation of periodic data (Xu et al. 2020 §II-C) and the parallel low-pass + decimation
filter of Brunot et al. (2019) §3.1. Arrays are (samples, joints); times in s, frequencies in Hz.

scipy.signal does the filter design and the zero-phase filtering (sosfiltfilt): the field's
standard tools, not re-implemented here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_tools.identification.zero_phase import butter_sos, sosfiltfilt


@dataclass(frozen=True)
class Averaged:
    mean: np.ndarray  # (P, n): the average period (Xu et al. 2020 eq. 11)
    variance: np.ndarray  # (P, n): variance of that mean per sample (Kirchhoff 2011 eq. 4.46), 0 if one period
    periods: int  # S, the number of whole periods averaged


def period_average(x: np.ndarray, samples_per_period: int, skip_periods: int = 0) -> Averaged:
    """Average the whole periods of x (K, n) after skipping the first ``skip_periods`` (transients).
    variance = 1/(S-1) 1/S sum_j (x_j(k) - mean(k))^2, the variance of the mean."""
    x = np.asarray(x, float)
    if x.ndim == 1:
        x = x[:, None]
    p = int(samples_per_period)
    if p < 2:
        raise ValueError(f"samples per period must be >= 2, got {p}")
    s = len(x) // p - skip_periods
    if s < 1:
        raise ValueError(
            f"{len(x)} samples hold {len(x) // p} whole periods of {p} samples; {skip_periods} skipped leaves none"
        )
    blocks = x[skip_periods * p : (skip_periods + s) * p].reshape(s, p, -1)
    mean = blocks.mean(axis=0)
    var = blocks.var(axis=0, ddof=1) / s if s > 1 else np.zeros_like(mean)
    return Averaged(mean, var, s)


def lowpass(x: np.ndarray, cutoff: float, fs: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass (forward and backward: order 2 x ``order``, no lag)."""
    if not 0 < cutoff < fs / 2:
        raise ValueError(f"cut-off {cutoff:g} Hz must be in (0, {fs / 2:g}) (Nyquist at {fs:g} Hz)")
    x = np.asarray(x, float)
    flat = x.reshape(len(x), -1)
    # a column that is zero throughout stays zero (a linear filter from rest): an observation
    # matrix's columns are half zeros (a link's parameters act on the joints before it only)
    live = np.flatnonzero(np.any(flat != 0.0, axis=0))
    out = np.zeros_like(flat)
    out[:, live] = sosfiltfilt(butter_sos(order, cutoff, fs), flat[:, live])
    return out.reshape(x.shape)


def central_derivatives(q: np.ndarray, ts: float) -> tuple[np.ndarray, np.ndarray]:
    """qd, qdd by second-order central differences (one-sided at the ends)."""
    qd = np.gradient(np.asarray(q, float), ts, axis=0)
    return qd, np.gradient(qd, ts, axis=0)


def filtered_derivatives(q: np.ndarray, ts: float, cutoff: float, order: int = 4) -> tuple[np.ndarray, ...]:
    """Brunot et al. (2019) §3.1: zero-phase Butterworth on q, then central differences: (q_f, qd, qdd)."""
    qf = lowpass(q, cutoff, 1.0 / ts, order)
    qd, qdd = central_derivatives(qf, ts)
    return qf, qd, qdd


def recorded_derivatives(
    q: np.ndarray, qd: np.ndarray, ts: float, cutoff: float, order: int = 4
) -> tuple[np.ndarray, ...]:
    """A recorded velocity's counterpart of filtered_derivatives: q and the recorded qd through the
    same zero-phase Butterworth (the positions and velocities stay in step), qdd by central
    differences of the filtered velocity: (q_f, qd_f, qdd)."""
    qf = lowpass(q, cutoff, 1.0 / ts, order)
    qdf = lowpass(qd, cutoff, 1.0 / ts, order)
    return qf, qdf, np.gradient(qdf, ts, axis=0)


def fourier_derivatives(q: np.ndarray, ts: float, max_frequency: float) -> tuple[np.ndarray, ...]:
    """Xu et al. (2020) §II-C for one period of periodic data q (P, n): DFT, keep the bins up to
    ``max_frequency`` (a rectangular window: the excitation's harmonics), multiply by j w and -w^2,
    inverse DFT. Returns (q_f, qd, qdd)."""
    q = np.asarray(q, float)
    p = len(q)
    spectrum = np.fft.rfft(q, axis=0)
    freq = np.fft.rfftfreq(p, ts)
    keep = (freq <= max_frequency * (1 + 1e-9))[:, None]  # a bin on the edge is kept
    if p % 2 == 0:
        keep[-1] = False  # the Nyquist bin has no sign for a derivative
    spectrum = np.where(keep, spectrum, 0)
    jw = (2j * np.pi * freq)[:, None]
    back = [np.fft.irfft(spectrum * f, n=p, axis=0) for f in (1.0, jw, jw * jw)]
    return back[0], back[1], back[2]


def decimation(fs: float, cutoff: float) -> int:
    """Brunot et al.'s n_d = floor(f_nyquist / cutoff): one sample in n_d is kept after the parallel filter."""
    return max(1, int(np.floor(fs / 2 / cutoff)))


def parallel_decimate(
    arrays: list[np.ndarray], fs: float, cutoff: float, order: int = 4, periodic: bool = False
) -> list[np.ndarray]:
    """Brunot et al. (2019) §3.1's parallel filter: the same zero-phase low-pass at ``cutoff`` on the torques and
    on every column of the observation matrix (the arrays, (K, ...) each), then one sample kept in
    n_d = floor(f_nyquist / cutoff). ``periodic``: the arrays are one period of periodic data
    (filtered as such, no edge effects)."""
    nd = decimation(fs, cutoff)
    out = []
    for a in arrays:
        a = np.asarray(a, float)
        flat = a.reshape(len(a), -1)
        if periodic:
            k = len(flat)
            filtered = lowpass(np.vstack([flat] * 3), cutoff, fs, order)[k : 2 * k]
        else:
            filtered = lowpass(flat, cutoff, fs, order)
        out.append(filtered[::nd].reshape((-1,) + a.shape[1:]))
    return out
