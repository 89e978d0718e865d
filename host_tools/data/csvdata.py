"""Users' own identification data as CSV: one header row, then one row per sample,

    time, q1, ..., qn, tau1, ..., taun

time in s (uniform sampling), q in rad (m for prismatic joints), tau the measured joint torques at
the same instants in N m (N), link side. Column names are free; the order is what counts. Commas
separate; lines starting with # are comments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


class CsvError(ValueError):
    """A CSV file that does not follow the format (names the file and what is wrong)."""


@dataclass(frozen=True)
class Samples:
    sample_period: float
    q: np.ndarray  # (K, n)
    tau: np.ndarray  # (K, n), at the same instants


def read_samples(path: str | Path, dof: int) -> Samples:
    path = Path(path)
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, comments="#", ndmin=2)
    except OSError as exc:
        raise CsvError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise CsvError(f"{path}: not numeric CSV after the header row ({exc})") from None
    if data.shape[1] != 1 + 2 * dof:
        raise CsvError(
            f"{path}: {data.shape[1]} columns; a {dof}-joint robot needs 1 + 2 x {dof} = "
            f"{1 + 2 * dof} (time, q1..q{dof}, tau1..tau{dof})"
        )
    if len(data) < 3:
        raise CsvError(f"{path}: {len(data)} samples; need at least 3")
    if not np.all(np.isfinite(data)):
        row = int(np.flatnonzero(~np.all(np.isfinite(data), axis=1))[0]) + 2
        raise CsvError(f"{path}: line {row} has a NaN or inf")
    dt = np.diff(data[:, 0])
    ts = float(np.median(dt))
    if not ts > 0 or np.max(np.abs(dt - ts)) > 1e-3 * ts:
        raise CsvError(f"{path}: column 1 (time, s) must increase uniformly; steps range {dt.min():g}..{dt.max():g} s")
    return Samples(ts, data[:, 1 : 1 + dof], data[:, 1 + dof :])
