"""Simulated IMUs for the loopback (Birjandi & Haddadin §V: Bosch BMI055; the accelerometer at +-2 g, not 1 g:
codegen.blocks.imu says why), the part of the sensor
model the C does not hold: the noise sequence, the biases and the internal filters' coefficients.

Per axis the loopback reads exact + bias + white noise, through the sensor's second-order
Butterworth low-pass, then a 12-bit converter over +-full scale (runtime/manipgen_loopback.h, which
the loopback and :meth:`ImuSensors.read` both call). White
noise of density d (per sqrt(Hz)) sampled at f_s has the standard deviation d sqrt(f_s / 2).

The biases: BMI055's temperature drift over 5 K, 0.015 deg/s/K and 1 mg/K, rounded up to +-0.1
deg/s and +-5 mg per axis, drawn uniformly per axis: what is left since the sensor was last
calibrated. :meth:`ImuSensors.calibration` is a standstill calibration on the arm (its estimate goes
into the estimator's ``est.gyro_bias`` / ``est.acc_bias``; collide runs one at the arm's first pose
before its runs: host_tools.studies.collide); what it leaves is its own error.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from codegen.blocks.imu import ACC_RANGE, DEG, G0, GYRO_RANGE
from host_tools.bindings.build import build_runtime

NYQUIST_SHARE = 0.45  # a filter cut-off at or above the Nyquist frequency is moved down to this share of f_s


@dataclass(frozen=True)
class ImuSensors:
    gyro_density: float = 0.014 * DEG  # rad/s/sqrt(Hz)
    acc_density: float = 150e-6 * G0  # m/s^2/sqrt(Hz)
    gyro_range: float = GYRO_RANGE  # rad/s, +-1000 deg/s
    acc_range: float = ACC_RANGE  # m/s^2, +-2 g (codegen.blocks.imu: why not Birjandi & Haddadin's 1 g)
    bits: int = 12
    gyro_cutoff: float = 64.0  # Hz
    acc_cutoff: float = 250.0  # Hz
    gyro_bias: float = 0.1 * DEG  # rad/s, largest per axis
    acc_bias: float = 5e-3 * G0  # m/s^2
    seed: int = 0  # the biases (one set of sensors)
    noise_seed: int = 0  # the noise sequence (one run)

    def __post_init__(self) -> None:
        if min(self.gyro_range, self.acc_range, self.gyro_cutoff, self.acc_cutoff) <= 0 or self.bits < 2:
            raise ValueError("IMU ranges and cut-offs must be positive and the converter at least 2 bits")
        if min(self.gyro_density, self.acc_density, self.gyro_bias, self.acc_bias) < 0:
            raise ValueError("IMU noise densities and biases must be >= 0")

    def lsb(self) -> tuple[float, float]:
        return 2 * self.gyro_range / 2**self.bits, 2 * self.acc_range / 2**self.bits

    def filters(self, ts: float) -> np.ndarray:
        """(2, 5): b0 b1 b2 a1 a2 of the gyroscopes' and the accelerometers' low-pass at 1 / ts."""
        from scipy.signal import butter  # here: scipy.signal takes 1.2 s to import, most commands never use it

        out = np.zeros((2, 5))
        for i, fc in enumerate((self.gyro_cutoff, self.acc_cutoff)):
            b, a = butter(2, min(fc, NYQUIST_SHARE / ts), fs=1 / ts)
            out[i] = [b[0], b[1], b[2], a[1], a[2]]
        return out

    def biases(self, m: int) -> np.ndarray:
        """(6 m,): every gyroscope axis, then every accelerometer axis."""
        rng = np.random.default_rng([self.seed, 1])
        return np.concatenate(
            [rng.uniform(-self.gyro_bias, self.gyro_bias, 3 * m), rng.uniform(-self.acc_bias, self.acc_bias, 3 * m)]
        )

    def noise(self, k: int, m: int, ts: float) -> np.ndarray:
        """(k, 6 m) white noise before the filters."""
        return self._white(np.random.default_rng([self.seed, 2, self.noise_seed]), k, m, ts)

    def _white(self, rng: np.random.Generator, k: int, m: int, ts: float) -> np.ndarray:
        scale = np.concatenate([np.full(3 * m, self.gyro_density), np.full(3 * m, self.acc_density)])
        return rng.standard_normal((k, 6 * m)) * scale * np.sqrt(0.5 / ts)

    def calibration(self, exact: np.ndarray, known: np.ndarray, ts: float, seconds: float) -> np.ndarray:
        """The biases (6 m,) a standstill calibration estimates: the arm at rest for ``seconds``, the
        sensors' exact values ``exact`` (6 m,), the description's model's ``known`` (6 m,: at the
        pose the encoders report). Each axis' mean reading, through the whole chain (its noise a
        stream no run draws, the filters, the converter, clipping), less ``known``. What it leaves
        of the bias: the noise's mean (d sqrt(f_s / 2) / sqrt(K), 1.0e-3 m/s^2 over 1 s at 1 kHz), the
        converter's mean error where the noise is smaller than its step (the gyroscopes': 3.2e-3
        against 8.5e-3 rad/s), and gravity's reading error at the encoders' pose (g times the sum of
        the joints' offsets from their counts, below a count each, along the chain to the IMU)."""
        k, width = max(1, int(round(seconds / ts))), np.size(exact)
        if np.shape(known) != np.shape(exact) or width % 6:
            raise ValueError(f"exact and known must be (6 m,) alike, got {np.shape(exact)} and {np.shape(known)}")
        noise = self._white(np.random.default_rng([self.seed, 3]), k, width // 6, ts)
        read = self.read(np.tile(np.asarray(exact, float), (k, 1)), ts, noise)
        return np.asarray(read.mean(axis=0) - known, float)

    def read(self, exact: np.ndarray, ts: float, noise: np.ndarray | None = None) -> np.ndarray:
        """What the sensors read, (K, 6 m), for the exact values (K, 6 m) of K samples: the
        loopback's chain (runtime/manipgen_loopback.h: filter settled at the first value, converter,
        clipping) over the whole run, for simulators that run in Python (the PyBullet harness).
        ``noise``: the white noise (K, 6 m) instead of this noise_seed's (e.g. a run that continues
        another keeps that run's noise up to where it branched)."""
        k, width = exact.shape
        m = width // 6
        if noise is None:
            noise = self.noise(k, m, ts)
        elif noise.shape != exact.shape:
            raise ValueError(f"noise must have the shape of the exact values {exact.shape}, got {noise.shape}")
        v = np.ascontiguousarray(exact + self.biases(m) + noise, dtype=np.float64)
        out = np.empty_like(v)
        chain = _chain()
        u, y = chain.ffi.cast("double *", v.ctypes.data), chain.ffi.cast("double *", out.ctypes.data)
        for half, (coef, lsb, full) in enumerate(zip(self.filters(ts), self.lsb(), (self.gyro_range, self.acc_range))):
            f = chain.ffi.new("double[5]", [float(c) for c in coef])
            for col in range(3 * m * half, 3 * m * (half + 1)):
                chain.lib.mg_imu_column(k, f, u + col, width, lsb, full, y + col)
        return out


def _chain() -> ModuleType:
    """runtime/manipgen_loopback.h's IMU chain on the host (compiled once, cached)."""
    return build_runtime(
        "manipgen_loopback.h",
        "void mg_imu_column(long k, const double f[5], const double *u, long stride, double lsb, double range,"
        " double *y);",
        "#include <math.h>\n#define MG_REAL double\n#define MG_SQRT sqrt\n#define MG_FLOOR floor\n",
        needs=("manipgen_linalg.h",),
    )
