"""Users' own logs as CSV: one header row, then one row per sample,

    time, q1, ..., qn, tau1, ..., taun                (1 + 2n columns), or
    time, q1, ..., qn, qd1, ..., qdn, tau1, ..., taun  (1 + 3n columns: a recorded velocity)

time in s, q in rad (m for prismatic joints), qd in rad/s (m/s), tau the measured joint torques at
the same instants in N m (N), link side. Column names are free; the order is what counts. Commas
separate; lines starting with # are comments.

Rows whose stamps step uniformly at the robot's sample period (to 1e-3 of it) are taken as they
are; any other time column (jittered, gaps, another rate, rows out of order or stamped twice) is
resampled like a ROS bag's (host_tools.data.timing: ordered, the first of equal stamps kept, linear
interpolation onto the robot's sample period from the first stamp), with the same timing report.
Time 0 of the log is the first stamp. Positions become encoder counts as a bag's do
(host_tools.data.measured); identify fits the CSV's own positions and torques (``Samples``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.formats import LogFile
from host_tools.data.logs import LogError
from host_tools.data.measured import measured_log
from host_tools.data.timing import Timing, interpolate, ordered, repeated_rows, uniform_grid

UNIFORM = 1e-3  # stamps within this fraction of the sample period of its grid are taken as they are


@dataclass(frozen=True)
class Samples:
    sample_period: float
    q: np.ndarray  # (K, n)
    tau: np.ndarray  # (K, n), at the same instants
    qd: np.ndarray | None = None  # (K, n): a recorded velocity (rad/s or m/s), if the data carry one


def _table(path: Path, dof: int) -> np.ndarray:
    """The CSV's numbers (R, 1 + 2 dof or 1 + 3 dof), checked: finite, at least 3 rows."""
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, comments="#", ndmin=2)
    except FileNotFoundError:  # numpy's carries no strerror
        raise LogError(f"{path}: no such file") from None
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise LogError(f"{path}: not numeric CSV after the header row ({exc})") from None
    if data.shape[1] not in (1 + 2 * dof, 1 + 3 * dof):
        raise LogError(
            f"{path}: {data.shape[1]} columns; a {dof}-joint robot needs 1 + 2 x {dof} = {1 + 2 * dof} "
            f"(time, q1..q{dof}, tau1..tau{dof}) or 1 + 3 x {dof} = {1 + 3 * dof} (time, q, qd, tau)"
        )
    if len(data) < 3:
        raise LogError(f"{path}: {len(data)} samples; need at least 3")
    bad = ~np.all(np.isfinite(data), axis=1)
    if np.any(bad):
        raise LogError(f"{path}: data row {int(np.flatnonzero(bad)[0]) + 1}: a NaN or inf")
    return data


def read_csv(path: str | Path, robot: Robot) -> LogFile:
    """A CSV (see the module's docstring) as a Log of ``robot``, its timing report and its samples."""
    path = Path(path)
    n, ts = robot.dof, robot.sample_period
    data = _table(path, n)
    t = data[:, 0]
    stamps = np.round((t - np.min(t)) * 1e9).astype(np.int64)  # ns from the earliest
    columns = {"q": data[:, 1 : 1 + n], "tau": data[:, -n:]}
    if data.shape[1] == 1 + 3 * n:
        columns["qd"] = data[:, 1 + n : 1 + 2 * n]
    steps = np.diff(t)
    uniform = bool(np.all(steps > 0) and np.max(np.abs(steps - ts)) <= UNIFORM * ts)
    keep = np.arange(len(t)) if uniform else ordered(stamps)
    if len(keep) < 3:
        raise LogError(f"{path}: time: {len(keep)} distinct stamps; at least 3 are needed")
    rel = (stamps[keep] - stamps[keep[0]]).astype(np.float64)
    values = {k: v[keep] for k, v in columns.items()}
    extra = {"recorded_repeats": repeated_rows(rel, list(values.values()))}
    if uniform:
        time = rel / 1e9
    else:
        grid = uniform_grid(rel, ts, n, f"{path}: time")
        extra["recorded_time"] = rel / 1e9
        values = {k: interpolate(grid, rel, v) for k, v in values.items()}
        time = grid / 1e9
    if "qd" in values:
        extra["qd_hat_logged"] = values["qd"]
    log, rounding = measured_log(robot, time, values["q"], values["tau"], str(path), extra)
    repeated = int(np.sum(extra["recorded_repeats"]))
    timing = Timing.of(f"rows of {path.name}", stamps, repeated, ts, len(log), not uniform, 1e-9)
    notes = (
        f"positions   rounded to the encoders' counts (up to {rounding:.3g} counts); identify fits the CSV's own",
        "q_des       the measured positions (a CSV has no desired trajectory)",
    )
    return LogFile(str(path), log, timing, notes, Samples(ts, values["q"], values["tau"], values.get("qd")))
