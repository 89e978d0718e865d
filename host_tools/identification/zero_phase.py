"""Zero-phase Butterworth low-pass: the digital design (analog prototype, pre-warping, bilinear
transform, second-order sections) and forward-backward filtering with odd-extension padding and
steady-state initial conditions -- what ``scipy.signal.butter(..., output="sos")`` and
``scipy.signal.sosfiltfilt`` do, to rounding (tests/host_tools/identification/test_zero_phase.py compares them).

Why not scipy.signal itself: importing it costs 0.49 s in scipy 1.17 (it parses about 800
docstrings on import), a sixth of `manipgen identify`'s 3 s budget (issue #24), and identify needs
nothing else from it. The sections' recursion is runtime/manipgen_sos_filter.c (the transposed
direct form II of scipy's sosfilt, every column in one sweep), compiled once into the build cache:
a loop over samples is no numpy operation, and LAPACK's banded triangular solve (``dtbtrs``, one
section per call) was measured 3x slower than scipy.signal.
Arrays are (samples, columns); frequencies in Hz.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

import numpy as np

from host_tools.bindings.build import build_runtime


def butter_sos(order: int, cutoff: float, fs: float) -> np.ndarray:
    """Digital Butterworth low-pass of ``order`` (even) at ``cutoff`` Hz, sampled at ``fs`` Hz:
    second-order sections (order/2, 6) as [b0 b1 b2 1 a1 a2], the gain in the first section, the
    poles nearest the unit circle in the last."""
    if order < 2 or order % 2:
        raise ValueError(f"order must be even and >= 2, got {order}")
    if not 0 < cutoff < fs / 2:
        raise ValueError(f"cut-off {cutoff:g} Hz must be in (0, {fs / 2:g}) (Nyquist at {fs:g} Hz)")
    # analog prototype poles on the left half of the unit circle, pre-warped to the cut-off
    # (bilinear transform at 2 fs: omega_a = 2 fs tan(pi f_c / fs))
    two_fs = 2.0 * fs
    warped = two_fs * np.tan(np.pi * cutoff / fs)
    analog = -np.exp(1j * np.pi * np.arange(-order + 1, order, 2) / (2 * order)) * warped
    digital = (two_fs + analog) / (two_fs - analog)
    # the bilinear transform puts every zero at z = -1; unit gain at DC over the whole cascade
    upper = digital[digital.imag > 0]
    upper = upper[np.argsort(np.abs(upper))]
    sos = np.zeros((order // 2, 6))
    for i, p in enumerate(upper):
        a = np.array([1.0, -2.0 * p.real, abs(p) ** 2])
        sos[i, :3] = np.array([1.0, 2.0, 1.0]) * (a.sum() / 4.0)  # this section's DC gain 1
        sos[i, 3:] = a
    return sos


def sosfiltfilt(sos: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Forward-backward filtering of x (K, ...) along axis 0 by the sections ``sos``: zero phase,
    squared magnitude. Padding: the odd extension of 3 (2 sections + 1) samples at each end; each
    pass starts from the steady state of its first sample."""
    x = np.asarray(x, float)
    flat = x.reshape(len(x), -1)
    pad = 3 * (2 * len(sos) + 1)
    if len(flat) <= pad:
        raise ValueError(f"{len(flat)} samples: zero-phase filtering needs more than {pad}")
    ext = np.ascontiguousarray(
        np.concatenate([2 * flat[0] - flat[pad:0:-1], flat, 2 * flat[-1] - flat[-2 : -pad - 2 : -1]], axis=0)
    )
    coefficients = np.ascontiguousarray(sos, float)
    state = np.empty((2 * len(sos), flat.shape[1]))
    kernel = _kernel()
    ffi, lib = kernel.ffi, kernel.lib
    args = [ffi.from_buffer("double[]", a) for a in (coefficients, ext, state)]
    for backwards in (0, 1):
        lib.manipgen_sos_filter(args[0], len(sos), args[1], ext.shape[0], ext.shape[1], backwards, args[2])
    return ext[pad:-pad].reshape(x.shape)


_DECLARATIONS = """
void manipgen_sos_filter(const double *sos, size_t sections, double *x, size_t samples, size_t columns,
                         int backwards, double *state);
"""


@lru_cache(maxsize=1)
def _kernel() -> ModuleType:
    """runtime/manipgen_sos_filter.c, compiled once into the build cache."""
    return build_runtime("manipgen_sos_filter.c", _DECLARATIONS)
