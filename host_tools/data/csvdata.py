"""Users' own logs as CSV: one header row, then one row per sample,

    time, q1, ..., qn, tau1, ..., taun                (1 + 2n columns), or
    time, q1, ..., qn, qd1, ..., qdn, tau1, ..., taun  (1 + 3n columns: a recorded velocity)

time in s, q in rad (m for prismatic joints), qd in rad/s (m/s), tau the measured joint torques at
the same instants in N m (N), link side. Commas separate; # starts a comment. Column names
(``columns``): q_<joint>, qd_<joint>, tau_<joint> (a joint of the description) are taken by name,
in any order, each joint exactly once; numbered ones (q1, tau_2, from 0 if a 0 appears) must stand
where the order above puts them; other names are free and the order counts. Names and numbers may
be quoted ("1.25", as some spreadsheets and loggers write every field); a quoted number is read as
the number, a decimal comma ("1,25") is an error naming the line.
The torques are taken as measured at the rows' instants (``tau_sampled``). Errors name the file
and the line as an editor numbers it (the header line 1, comments counted): "log.csv line 500: ...".

Rows whose stamps step uniformly at the robot's sample period (to 1e-3 of it) are taken as they
are; any other time column (jittered, gaps, another rate, rows out of order or stamped twice) is
resampled like a ROS bag's (host_tools.data.timing: ordered, the first of equal stamps kept, linear
interpolation onto the robot's sample period from the first stamp), with the same timing report.
Time 0 of the log is the first stamp. Positions become encoder counts as a bag's do
(host_tools.data.measured); identify fits the CSV's own positions and torques (``Samples``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.formats import LogFile
from host_tools.data.logs import LogError
from host_tools.data.measured import measured_log
from host_tools.data.timing import Timing, interpolate, ordered, repeated_rows, uniform_grid

UNIFORM = 1e-3  # stamps within this fraction of the sample period of its grid are taken as they are
KINDS = ("q", "qd", "tau")
JOINT_NAMED = re.compile(r"(q|qd|tau)_(.*\D.*)")  # q_<joint>: what follows is not a number
NUMBERED = re.compile(r"(q|qd|tau)_?(\d+)")  # q1, q_1 (or q0, q_0: numbered from 0)


def _layout(dof: int, width: int) -> tuple[str, ...]:
    """The kinds of the columns after time, in the documented order."""
    return KINDS if width == 1 + 3 * dof else ("q", "tau")


def _by_joint(where: str, names: list[str], robot: Robot, width: int) -> list[int]:
    """The column indices of time and of q, [qd,] tau of each joint, in the description's order, for
    a header whose columns name joints (one error naming the column otherwise)."""
    joints = [j.name for j in robot.joints]
    found: dict[tuple[str, str], int] = {}
    for c, name in enumerate(names[1:], start=2):
        m = JOINT_NAMED.fullmatch(name)
        if m is None:
            raise LogError(
                f"{where} line 1, column {c} {name!r}: the other columns name joints (q_<joint>, qd_<joint>, "
                "tau_<joint>): name every column so, or none"
            )
        kind, joint = m[1], m[2]
        if joint not in joints:
            raise LogError(
                f"{where} line 1, column {c} {name!r}: {robot.name} has no joint {joint!r} "
                f"(its joints: {', '.join(joints)})"
            )
        if (kind, joint) in found:
            raise LogError(
                f"{where} line 1, column {c} {name!r}: joint {joint!r} named twice "
                f"(column {found[kind, joint] + 1} too)"
            )
        found[kind, joint] = c - 1
    kinds = _layout(robot.dof, width)
    for kind in kinds:
        for joint in joints:
            if (kind, joint) not in found:
                raise LogError(
                    f"{where} line 1: no column {kind}_{joint} (the columns name joints: each of {robot.name}'s "
                    f"joints once as {', '.join(k + '_' for k in kinds)})"
                )
    return [0] + [found[kind, joint] for kind in kinds for joint in joints]


def _check_numbered(where: str, names: list[str], dof: int, width: int) -> None:
    """Columns named q1, qd2, tau_3 ... must be where the documented order puts them (numbered from 1,
    or from 0 when a number 0 appears); other names are free."""
    numbered = [(c, name, NUMBERED.fullmatch(name)) for c, name in enumerate(names[1:], start=2)]
    base = 0 if any(m is not None and int(m[2]) == 0 for _, _, m in numbered) else 1
    kinds = _layout(dof, width)
    for c, name, m in numbered:
        want = f"{kinds[(c - 2) // dof]}{(c - 2) % dof + base}"
        if m is not None and f"{m[1]}{int(m[2])}" != want:
            order = ", ".join(f"{k}{base}..{k}{dof - 1 + base}" for k in kinds)
            raise LogError(
                f"{where} line 1, column {c} {name!r}: a {dof}-joint robot's column {c} is {want} (time, {order})"
            )


def columns(where: str, names: list[str], robot: Robot, width: int) -> list[int] | None:
    """The order to take the ``width`` columns in (None: as they are) by the header's ``names``:
    columns named by joint (q_<joint>, qd_<joint>, tau_<joint>) are taken by name, numbered ones
    (q1..qn, ...) checked against their place, as many names as columns then; one error naming the
    column otherwise. Other names are free."""
    if not any(JOINT_NAMED.fullmatch(name) or NUMBERED.fullmatch(name) for name in names[1:]):
        return None  # free names (any number of them: a one-word header is one): by position
    if len(names) != width:
        raise LogError(f"{where} line 1: the header names {len(names)} columns, the rows have {width}")
    if any(JOINT_NAMED.fullmatch(name) for name in names[1:]):
        order = _by_joint(where, names, robot, width)
        return None if order == list(range(width)) else order
    _check_numbered(where, names, robot.dof, width)
    return None


@dataclass(frozen=True)
class Samples:
    sample_period: float
    q: np.ndarray  # (K, n)
    tau: np.ndarray  # (K, n), at the same instants
    qd: np.ndarray | None = None  # (K, n): a recorded velocity (rad/s or m/s), if the data carry one


def _data_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The lines numpy's loadtxt reads as rows: (1-based line number of the file, its text before any
    #), the header (line 1), blank lines and comments skipped."""
    with path.open(encoding="utf-8", errors="replace") as f:
        next(f, None)
        for number, line in enumerate(f, start=2):
            text = line.split("#", 1)[0].strip()
            if text:
                yield number, text


def _bad_line(path: Path, names: list[str]) -> str | None:
    """The first row numpy could not read, as "PATH line N...: why", or None if none is found."""
    first: tuple[int, int] | None = None
    for number, text in _data_lines(path):
        fields = next(csv.reader([text], skipinitialspace=True))  # as loadtxt's quotechar splits them
        if first is None:
            first = (number, len(fields))
        elif len(fields) != first[1]:
            return f"{path} line {number}: {len(fields)} values; line {first[0]} has {first[1]}"
        for c, field in enumerate(fields, start=1):
            try:
                float(field)
            except ValueError:
                name = f" {names[c - 1]!r}" if len(names) == len(fields) else ""
                return f"{path} line {number}, column {c}{name}: {field.strip()!r} is not a number"
    return None


def _line_of(path: Path, row: int) -> int:
    """The file's line number of data row ``row`` (0-based, as loadtxt counts them)."""
    return next(number for k, (number, _) in enumerate(_data_lines(path)) if k == row)


def _header(path: Path) -> list[str]:
    """The column names of line 1: a leading # dropped (numpy's savetxt writes one), quoted names
    unquoted (spreadsheets and R's write.csv quote them), a byte-order mark dropped (a spreadsheet's
    "CSV UTF-8"); the csv module reads the line, as any CSV writer may have quoted it."""
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        line = f.readline().strip()
    fields = next(csv.reader([line.removeprefix("#")], skipinitialspace=True), [])
    return [name.strip() for name in fields]


def _table(path: Path, robot: Robot) -> np.ndarray:
    """The CSV's numbers (R, 1 + 2 dof or 1 + 3 dof), checked: finite, at least 3 rows; columns named
    by joint taken in the description's joint order (``columns``). Every error names the file and,
    where one line is at fault, its 1-based line number as an editor shows it (header counted)."""
    dof = robot.dof
    try:
        names = _header(path)
        data = np.loadtxt(path, delimiter=",", skiprows=1, comments="#", ndmin=2, quotechar='"')
    except FileNotFoundError:  # numpy's carries no strerror
        raise LogError(f"{path}: no such file") from None
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        bad = _bad_line(path, names)
        if bad is not None:
            raise LogError(bad) from None
        # every field a number as the csv module reads it: a quoted number after a space ('1, "2"'),
        # which loadtxt's quotechar does not take (it reads ' "2"')
        rows = [[float(f) for f in next(csv.reader([text], skipinitialspace=True))] for _, text in _data_lines(path)]
        if not rows:
            raise LogError(f"{path}: not numeric CSV after the header row ({exc})") from None
        data = np.array(rows, ndmin=2)
    if data.shape[1] not in (1 + 2 * dof, 1 + 3 * dof):
        if len(names) == data.shape[1] and any(JOINT_NAMED.fullmatch(name) for name in names[1:]):
            # a header naming joints: the column missing (or unknown, or twice) by its name
            with_qd = any((m := JOINT_NAMED.fullmatch(name)) is not None and m[1] == "qd" for name in names[1:])
            _by_joint(str(path), names, robot, 1 + (3 if with_qd else 2) * dof)
        raise LogError(
            f"{path}: {data.shape[1]} columns; a {dof}-joint robot needs 1 + 2 x {dof} = {1 + 2 * dof} "
            f"(time, q1..q{dof}, tau1..tau{dof}) or 1 + 3 x {dof} = {1 + 3 * dof} (time, q, qd, tau)"
        )
    order = columns(str(path), names, robot, data.shape[1])
    if len(data) < 3:
        raise LogError(f"{path}: {len(data)} samples; need at least 3")
    infinite = ~np.isfinite(data)
    if np.any(infinite):
        row, c = (int(i) for i in np.argwhere(infinite)[0])
        name = f" {names[c]!r}" if len(names) == data.shape[1] else ""
        raise LogError(
            f"{path} line {_line_of(path, row)}, column {c + 1}{name}: {float(data[row, c])!r} is not finite"
        )
    return data if order is None else data[:, order]


def read_csv(path: str | Path, robot: Robot) -> LogFile:
    """A CSV (see the module's docstring) as a Log of ``robot``, its timing report and its samples."""
    path = Path(path)
    n, ts = robot.dof, robot.sample_period
    data = _table(path, robot)
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
        f"positions   rounded to the encoders' counts (up to {rounding:.3g} counts); identify fits the CSV's own "
        "positions",
        "q_des       the measured positions (a CSV has no desired trajectory)",
    )
    return LogFile(str(path), log, timing, notes, Samples(ts, values["q"], values["tau"], values.get("qd")))
