"""Stamps as recorded -> the timing report; irregular stamps -> a uniform grid. One formula for every
format: ROS bags and CSVs with irregular stamps are resampled here, NPZ logs, ``.mat`` runs and
uniform CSVs get the same report of the stamps they hold.

- Order: out-of-order stamps are sorted; of equal stamps the first recorded row is kept
  (``ordered``). A resampled log drops the others; a log taken row by row keeps them (the input
  checks flag them: host_tools.data.checks).
- The report (``Timing``), on the ordered distinct stamps: rate (1 / the mean step), the median
  step, jitter (std of the steps and max |step - median step|, gaps left out), gaps (steps over ``GAP`` times the
  median step: a log is judged against its own period, so a steady 500 Hz bag for a 1 kHz robot has
  none) and the longest step; duplicates, out-of-order stamps and repeated rows (every recorded
  value equal to the row before's, at a later stamp: ``repeated_rows``).
- Resampling: onto the robot's sample period from the first stamp (``uniform_grid``), each column
  linearly interpolated (``interpolate``, np.interp).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from host_tools.data.logs import LogError

GAP = 1.5  # a stamp step longer than GAP times the log's median step is a gap
MAX_VALUES = 30_000_000  # samples x joints of one resampled log (about 240 MB per array)


def ordered(stamps: np.ndarray) -> np.ndarray:
    """Indices of the rows to use, in time order: sorted (stable), of equal stamps the first recorded."""
    order = np.argsort(stamps, kind="stable")
    first = np.concatenate([[True], np.diff(stamps[order]) > 0])
    return np.asarray(order[first])


def gap_steps(steps: np.ndarray) -> np.ndarray:
    """(S,) bool: the steps longer than GAP times the median of the positive steps."""
    steps = np.asarray(steps, float)
    positive = steps[steps > 0]
    if len(positive) == 0:
        return np.zeros(len(steps), bool)
    return np.asarray(steps > GAP * float(np.median(positive)))


def repeated_rows(stamps: np.ndarray, values: Sequence[np.ndarray]) -> np.ndarray:
    """(R,) bool: the rows (in the order given) whose every value equals the row before's, at a
    later stamp: a sample recorded twice (NaN never equals)."""
    r = len(stamps)
    same = np.diff(np.asarray(stamps, float)) > 0
    for v in values:
        a = np.asarray(v).reshape(r, -1)
        same &= np.all(a[1:] == a[:-1], axis=1)
    return np.concatenate([[False], same])


@dataclass(frozen=True)
class Timing:
    """The stamps of a recording as it holds them (before any resampling). Times in s."""

    source: str  # what the stamps are, e.g. "messages on /joint_states", "rows of run.csv"
    stamps: int  # rows (messages) recorded
    duplicates: int  # stamps equal to an earlier one (resampled: dropped, the first kept)
    out_of_order: int  # steps back in time in the order recorded (resampled: sorted)
    repeated: int  # rows identical to the one before at a later stamp (repeated_rows)
    mean_period: float  # (last - first) / (distinct stamps - 1)
    median_period: float  # the median step: what gaps and jitter are judged against
    jitter_std: float  # standard deviation of the steps (the gaps left out)
    jitter_max: float  # max |step - median step| (the gaps left out)
    gaps: int  # steps longer than GAP median steps
    longest_step: float
    sample_period: float  # the log's
    samples: int  # the log's
    resampled: bool  # onto the grid of sample_period (else: taken row by row)
    receive_time: int = 0  # stamps that are a bag's receive time (header stamp zero)

    @classmethod
    def of(
        cls,
        source: str,
        stamps: np.ndarray,
        repeated: int,
        sample_period: float,
        samples: int,
        resampled: bool,
        scale: float = 1.0,
        receive_time: int = 0,
    ) -> Timing:
        """The report of ``stamps`` in the order recorded (``scale``: s per unit, 1e-9 for ns)."""
        stamps = np.asarray(stamps)
        rel = stamps - np.min(stamps)  # exact for integer ns; small numbers for the steps below
        distinct = rel[ordered(rel)]
        steps = np.diff(distinct).astype(float) * scale if len(distinct) > 1 else np.zeros(1)
        median = float(np.median(steps))
        gaps = gap_steps(steps)
        regular = steps[~gaps] if not np.all(gaps) else steps  # the jitter: of the steps that are not gaps
        return cls(
            source=source,
            stamps=len(stamps),
            duplicates=len(stamps) - len(distinct),
            out_of_order=int(np.sum(np.diff(rel) < 0)),
            repeated=repeated,
            mean_period=float(np.mean(steps)) if np.any(steps) else float("inf"),
            median_period=median,
            jitter_std=float(np.std(regular)),
            jitter_max=float(np.max(np.abs(regular - median))),
            gaps=int(np.sum(gaps)),
            longest_step=float(np.max(steps)),
            sample_period=sample_period,
            samples=samples,
            resampled=resampled,
            receive_time=receive_time,
        )

    def lines(self) -> list[str]:
        """The report, one line each: stamps, rate, jitter, gaps, duplicates, repeats."""
        ts = self.sample_period
        received = (
            f"; {self.receive_time} stamped with the bag's receive time (zero header stamp)"
            if self.receive_time
            else ""
        )
        taken = (
            f"resampled to {self.samples} samples every {ts * 1e3:g} ms"
            if self.resampled
            else f"taken as they are ({self.samples} samples of {ts * 1e3:g} ms)"
        )
        duplicates = (
            f"{self.duplicates} dropped (the first kept); {self.out_of_order} out of order (sorted)"
            if self.resampled
            else f"{self.duplicates} stamps repeated, {self.out_of_order} going back (input checks: time)"
        )
        return [
            f"stamps      {self.stamps} {self.source}{received}",
            f"rate        {1.0 / self.mean_period:.6g} Hz (mean period {self.mean_period * 1e3:.6g} ms, median "
            f"{self.median_period * 1e3:.6g} ms); {taken}",
            f"jitter      std {self.jitter_std * 1e3:.3g} ms, max |dt - median| {self.jitter_max * 1e3:.3g} ms",
            f"gaps        {self.gaps} (dt > {GAP:g} x the median), longest dt {self.longest_step * 1e3:.6g} ms",
            f"duplicates  {duplicates}",
            f"repeats     {self.repeated} rows identical to the one before at a new stamp",
        ]

    def as_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["rate_hz"] = 1.0 / self.mean_period
        doc["gap_factor"] = GAP
        return doc


def uniform_grid(rel: np.ndarray, sample_period: float, dof: int, where: str) -> np.ndarray:
    """The grid (ns from the first stamp) of ``sample_period`` over ordered stamps ``rel`` (ns from
    the first, float); ``where`` names the file and the field in the errors."""
    period = sample_period * 1e9
    if abs(period - round(period)) < 1e-6:
        period = float(round(period))  # integer ns: grid points that fall on stamps hit them exactly
    k = int(np.floor(rel[-1] / period + 1e-9)) + 1
    if k < 3:
        raise LogError(f"{where}: the stamps span {rel[-1] / 1e9:g} s: fewer than 3 samples of {sample_period:g} s")
    if k * dof > MAX_VALUES:
        raise LogError(
            f"{where}: the stamps span {rel[-1] / 1e9:g} s: {k} samples of {sample_period:g} s, more than "
            f"{MAX_VALUES // dof} (cut the recording first)"
        )
    return np.arange(k) * period


def interpolate(grid: np.ndarray, rel: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(K, n): each column of ``values`` (R, n), recorded at ``rel``, linearly interpolated at ``grid``."""
    return np.stack([np.interp(grid, rel, values[:, j]) for j in range(values.shape[1])], axis=1)
