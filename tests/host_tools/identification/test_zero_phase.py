"""The zero-phase Butterworth of host_tools.identification.zero_phase against scipy.signal (the
peer it stands in for on identify's import path), and that path free of scipy.signal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from codegen.resources import resource_dir
from host_tools.identification.processing import lowpass
from host_tools.identification.zero_phase import butter_sos, sosfiltfilt
from tests.codegen.emit.test_rt_c import STRICT
from tests.tooling import require_tool

EPS = np.finfo(float).eps


@pytest.mark.parametrize(
    ("order", "cutoff", "fs"),
    [(4, 6.0, 250.0), (4, 10.0, 250.0), (2, 10.0, 1000.0), (8, 40.0, 1000.0), (4, 0.5, 1000.0)],
)
def test_design_and_filtering_equal_scipys(order: int, cutoff: float, fs: float) -> None:
    sos = butter_sos(order, cutoff, fs)
    reference = signal.butter(order, cutoff, fs=fs, output="sos")
    # the same transfer function (the sections may split the gain differently)
    _, ours = signal.sosfreqz(sos, worN=256, fs=fs)
    _, theirs = signal.sosfreqz(reference, worN=256, fs=fs)
    # |H| <= 1 is a sum of a few products of coefficients of order 1: rounding of both designs,
    # amplified by the poles' distance to the unit circle (1 - |p|, 2e-3 at 0.5 Hz / 1 kHz), 1e3 eps
    # per 1/(1 - |p|)
    closeness = 1.0 - np.abs(np.roots(reference[-1, 3:])).max()
    assert np.abs(ours - theirs).max() < 1e3 * EPS / closeness
    rng = np.random.default_rng(order)
    x = np.cumsum(rng.normal(size=(3000, 5)), axis=0) + rng.normal(size=(3000, 5))
    y = sosfiltfilt(sos, x)
    ref = signal.sosfiltfilt(reference, x, axis=0)
    # two recursions of 3000 samples in different section splits: each step's rounding (a few eps
    # of the signal) accumulates through the filter's memory ~ 1/(1 - |p|)^2 steps of gain <= 1
    assert np.abs(y - ref).max() < 100 * EPS * np.abs(x).max() / closeness**2


def test_lowpass_keeps_shape_and_zero_columns() -> None:
    rng = np.random.default_rng(1)
    x = np.zeros((500, 3, 4))
    x[:, 1, 2] = rng.normal(size=500)
    y = lowpass(x, 10.0, 250.0)
    assert y.shape == x.shape
    assert np.count_nonzero(y[:, [0, 2]]) == 0 and np.count_nonzero(y[:, 1, [0, 1, 3]]) == 0
    ref = signal.sosfiltfilt(signal.butter(4, 10.0, fs=250.0, output="sos"), x[:, 1, 2])
    assert np.abs(y[:, 1, 2] - ref).max() < 1e-12 * np.abs(x).max()  # 6 Hz-like poles: see above


def test_bad_filters_are_refused() -> None:
    with pytest.raises(ValueError, match="Nyquist"):
        butter_sos(4, 130.0, 250.0)
    with pytest.raises(ValueError, match="even"):
        butter_sos(3, 10.0, 250.0)
    with pytest.raises(ValueError, match="more than 15"):
        sosfiltfilt(butter_sos(4, 10.0, 250.0), np.ones((15, 1)))


def test_identify_does_not_import_scipy_signal() -> None:
    """scipy 1.17's scipy.signal is 0.49 s of import, a sixth of identify's 3 s budget (issue #24)."""
    code = (
        "import sys, host_tools.cli.identify, host_tools.identification.run, host_tools.reports.identification; "
        "print('scipy.signal' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_the_section_kernel_is_strict_c99(cc: str, tmp_path: Path) -> None:
    """runtime/manipgen_sos_filter.c under the generated C's rules: C99, warnings as errors, no heap."""
    compiler = require_tool(cc)
    source = resource_dir("runtime") / "manipgen_sos_filter.c"
    obj = tmp_path / "k.o"
    subprocess.run([compiler, *STRICT, "-c", str(source), "-o", str(obj)], check=True, capture_output=True)
    symbols = subprocess.run(["nm", "-u", str(obj)], check=True, capture_output=True, text=True).stdout.split()
    assert not {"malloc", "calloc", "realloc", "free"} & set(symbols)
