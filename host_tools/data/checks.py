"""Input checks of a log before anything is fitted or designed from it (issue #24).

``check_log(log, robot)`` reports what makes samples unfit for identification or threshold design,
each as a ``Finding`` (kind, joint 1-based or None for the whole arm, t0..t1 s from the log's time,
samples), and ``LogChecks.flagged``: the samples to leave out (the union of every finding's span,
for every joint). Kinds and how their bounds come from the run itself:

- ``saturation``: a joint's torque (from the drive current) sits at the run's extreme (its largest
  or smallest value, nonzero) for at least n consecutive samples (n from the torque's quantisation:
  ``_saturation``; ``bounds["saturation_min_samples"]``): a clipped drive,
  whatever the description's limits say. A constant stretch below the extreme (an arm at rest) is
  not a clip.
- ``limit``: samples at or over the description's limits (``limits.tau``; ``limits.current`` through
  the importer's ``tau_saturated``).
- ``off_trajectory``: |q_des - q| beyond ``OFF_FACTOR`` times the joint's median tracking error while
  its desired motion moves (floor: ``OFF_FLOOR_COUNTS`` encoder counts), plus, where the log carries
  its recording loop's response to a step of the desired acceleration (``qdd_step_response``: manipgen
  record's computed torque with the Kalman estimator), the transient that the desired acceleration's
  steps cause (host_tools.data.loop_response.step_allowance): a working loop's own answer to them.
- ``gap``: stamps that jump: a step over ``GAP`` times the log's own median step (a steady 500 Hz
  recording resampled to 1 kHz has none), judged on the stamps as recorded (``recorded_time`` of a
  resampled bag or CSV, else the log's); flagged: the samples from the stamp before the jump to the
  one after it (on a resampled log: the grid samples between them, interpolated across the gap).
- ``time``: stamps that repeat (step 0) or go back (with the jumps next to them), on a log taken
  row by row (a resampled one has its stamps ordered and its repeated stamps dropped).
- ``repeat``: repeated samples: recorded rows identical to the one before (every recorded value:
  positions, velocities and torques where the file has them) at a later stamp
  (``recorded_repeats`` of an imported log, judged on the file's rows; else the log's own rows);
  flagged: the samples between the last row before and the first row after that differ.
- ``standstill``: the whole arm still (every joint's position changing by at most ``STILL_COUNTS``
  counts across a ``STILL_WINDOW`` s window, or by less than ``STILL_FRACTION`` of its peak speed)
  for longer than ``STILL_SECONDS``.

Encoder counters that wrap within a joint's range (a counter of ``bits`` bits spans 2^bits counts,
through the gear on the motor side) lose the absolute position: the generated read takes the first
raw value modulo 2^bits as absolute. ``require_absolute_positions`` refuses such a robot unless a
start position is stated; ``start_offsets`` turns a stated start position into the encoder offsets
(``enc.offset`` of the run-time config) under which the read gives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from codegen.blocks.encoder import link_counts_per_turn
from codegen.model.robot import Robot
from host_tools.data.logs import Log, LogError
from host_tools.data.loop_response import step_allowance
from host_tools.data.timing import GAP, gap_steps, repeated_rows

# saturation: a clipped drive holds its level for many samples (Liu et al.'s Experiment 1: 874-942);
# on a noisy run a peak can sit in its top quantum for 3 samples by chance (a synthetic run with
# 0.05 N m steps did), each further sample staying there with a chance of about a half: 5 samples
MIN_PLATEAU = 5
# off_trajectory: the tracking error of a working loop follows the desired motion: on Liu et al.'s two
# clean LWA-4P runs its peak is 2.4-6.5x its median over the moving samples, per joint. 20x leaves
# 3x room for a run with sharper accelerations; a departure (a clipped drive, a push) grows without
# that bound: 200-260x on joints 1 and 3 of Liu et al.'s Experiment 1. The median over the samples
# where the joint's desired motion moves (|qd_des| over MOVING of its peak) does not shrink on a run
# that rests most of the time, and holds while under half the run is off its trajectory.
OFF_FACTOR = 20.0
MOVING = 0.01
OFF_FLOOR_COUNTS = 20  # quantisation alone (<= 1 count) never reaches the bound
# standstill: a joint is still where its count changes by at most STILL_COUNTS (the +-1 count
# jitter of an encoder at rest) across a central window of STILL_WINDOW s, or its speed over that
# window is below STILL_FRACTION of its peak. The window spans a velocity reversal (where the speed
# passes zero for one sample only), so a reversal is never still; the whole arm must be still for
# longer than STILL_SECONDS (Liu et al.'s point-to-point motions dwell well under it).
STILL_WINDOW = 0.1
STILL_COUNTS = 2
STILL_FRACTION = 0.005
STILL_SECONDS = 2.0
Positions = Sequence[float] | np.ndarray  # one value per joint, rad or m
# s: a flagged sample also spoils what is computed from the samples around it -- identification's
# zero-phase filters (whose edge effects it trims at a run's ends for the same reason) and an
# observer's residual and an estimator's state (time constants of 10-100 ms): left out too
SETTLE = 0.5
# Findings of the log's time base (the logger's), not of the arm: what is wrong there is the samples
# themselves (interpolated across a gap, stale in a repeated row). A real arm's log holds hundreds of
# them (issue #44: 504 gaps and 1,131 repeated rows in one run), so SETTLE either side of each would
# leave nothing to fit (a 60 s Panda run with one every 45 ms: 7 equations for 62 parameters). So
# on either side of a timing finding at most TIMING_SHARE of the larger of the distance to its
# neighbour there and their mean spacing in the run is left out (timing_settle): about half of a
# run dense with them goes, and a lone one keeps its whole settling. Below that cap (docs/real-data.md, "Timing
# findings"; measured 2026-11-30 on hostile logs):
# - identify keeps SETTLE (TIMING_SETTLE_FIT): its held-out choices of friction shapes take what the
#   filters spread of a defect up to about 0.5 s (the UR5's hostile run, validated on a clean run,
#   1.364 N m with 0-0.1 s either side against 1.240 with 0.5 s; a smooth-Coulomb Panda probe's
#   joint 6 at 1.61 x plain least squares with 0.2 s). On the dense Panda run (62 % left out) the
#   fit validates on a clean run at 0.3816 N m, the same run without the defects on the same samples
#   at 0.3810 (on every sample 0.3807).
# - the threshold design leaves out TIMING_SETTLE_DESIGN: the default pipeline's residual over a run
#   with isolated gaps or repeated rows departs from the clean run's by up to 26 x the clean run's
#   largest |r| at a repeated row (a stale encoder count), 14 % at 60-100 ms, 7 % at 0.1-0.2 s and
#   at most 1.2 % beyond 0.2 s (Panda, iiwa, UR5). That was a row-by-row log stepped row by row;
#   since 2026-12-01 one is replayed on its clock (on_its_clock), and next to a finding its residual
#   stays within 0.6-1.2 x its largest elsewhere (the iiwa's hostile run, where row by row it reached
#   87 x); the window still covers what a resampled log interpolates across a gap.
# This holds while a timing finding is short against the filters (identification's q low-pass at
# 10 Hz, its 6 Hz band; the observer's 10-100 ms): the interpolation across a gap of length L departs
# from the motion by about qdd L^2 / 8 and bends its slope by about qdd L / 2 at either end, which
# the filters spread over their settling. A gap of 3-9 rows (the real log's longest: 8.8 ms) stays
# within the measurements above; 40 gaps of 0.1 s in the same 60 s Panda run, their own samples
# only, validated 13 % worse than the clean fit (0.432 against 0.381 N m), 20 gaps of 0.5 s 8 %
# worse (the review of c95b630). A timing finding spanning more than TIMING_LONG s is left out as a
# finding of the arm's.
TIMING = frozenset({"gap", "time", "repeat"})
TIMING_SETTLE_FIT = SETTLE
TIMING_SETTLE_DESIGN = 0.2
TIMING_SHARE = 0.25
TIMING_LONG = 0.02


def timing_settle(settle: float, apart: float | None, mean: float) -> float:
    """s left out on one side of a timing finding whose neighbour on that side is ``apart`` s away
    (None: none), in a run where they are ``mean`` s apart on average: ``settle``, at most
    TIMING_SHARE of the larger of the two distances. Where they are dense throughout, about half of
    the run goes (the mean); a lone finding, however dense a cluster elsewhere, keeps the whole
    ``settle`` (its own distance: the review of 5504388, where the run's mean alone gave it the
    cluster's); a run whose findings are seconds apart keeps ``settle`` for each (the mean), as
    before 2026-11-30."""
    return settle if apart is None else min(settle, TIMING_SHARE * max(apart, mean))


def with_settling(flagged: np.ndarray, sample_period: float, seconds: float = SETTLE) -> np.ndarray:
    """(K,) bool: the flagged samples and those within ``seconds`` of one."""
    w = int(round(seconds / sample_period))
    f = np.asarray(flagged, bool)
    # a running count over 2 w + 1 samples (np.convolve's "same" is as long as the longer of the
    # two: a log shorter than the window would get a mask of the window's length)
    count = np.concatenate([[0], np.cumsum(f)])
    k = np.arange(len(f))
    return count[np.minimum(k + w + 1, len(f))] - count[np.maximum(k - w, 0)] > 0


@dataclass(frozen=True)
class Finding:
    kind: str  # saturation, limit, off_trajectory, gap, time, repeat or standstill
    joint: int | None  # 1-based; None: the whole arm
    first: int  # index of the first affected sample
    last: int  # of the last (inclusive)
    t0: float  # s, the log's time of the first affected sample
    t1: float  # s, of the last
    detail: str = ""

    @property
    def timing(self) -> bool:
        """A finding of the log's time base, short against the filters (TIMING, TIMING_LONG). Its
        length is |t1 - t0|: on a log taken row by row a 'time' finding's stamps may go back."""
        return self.kind in TIMING and abs(self.t1 - self.t0) <= TIMING_LONG

    @property
    def samples(self) -> int:
        return self.last - self.first + 1

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": self.kind,
            "joint": self.joint,
            "t0": round(self.t0, 9),
            "t1": round(self.t1, 9),
            "samples": self.samples,
        }
        if self.detail:
            doc["detail"] = self.detail
        return doc


@dataclass
class LogChecks:
    source: str  # the file checked (named in every line)
    findings: list[Finding]
    flagged: np.ndarray  # (K,) bool: the samples to leave out of fitting and threshold design
    bounds: dict[str, list[float]] = field(default_factory=dict)  # per joint, the bounds derived from the run
    timing: np.ndarray | None = None  # (K,) bool: the flagged samples only timing findings (TIMING) flag
    settled: bool = False  # ``flagged`` is what to leave out as it is, the settling in it (left_out returns it)

    def left_out(self, sample_period: float, settle: float) -> np.ndarray:
        """(K,) bool: the flagged samples, those within SETTLE of a finding of the arm's and those
        within timing_settle of a timing finding's (``settle``: TIMING_SETTLE_FIT for identify,
        TIMING_SETTLE_DESIGN for the threshold design)."""
        if self.settled:
            return np.array(self.flagged, bool)
        timing = np.zeros_like(self.flagged) if self.timing is None else self.timing
        arm = with_settling(self.flagged & ~timing, sample_period)
        # the timing findings the arm's do not cover, in time order, each with its own window
        spans = sorted((f.first, f.last) for f in self.findings if f.timing and timing[f.first : f.last + 1].any())
        windows = np.zeros(len(self.flagged) + 1, int)  # +1 where a window starts, -1 after it ends
        mean = len(self.flagged) * sample_period / max(len(spans), 1)  # s: the run's mean spacing of them
        for i, (a, b) in enumerate(spans):
            before = timing_settle(settle, (a - spans[i - 1][1]) * sample_period if i > 0 else None, mean)
            after = timing_settle(settle, (spans[i + 1][0] - b) * sample_period if i + 1 < len(spans) else None, mean)
            windows[max(a - int(round(before / sample_period)), 0)] += 1
            windows[min(b + int(round(after / sample_period)) + 1, len(self.flagged))] -= 1
        return arm | (np.cumsum(windows[:-1]) > 0)

    def lines(self) -> list[str]:
        """One line per finding, e.g. ``run.mat: saturation: joint 1: t = 31.260..35.000 s (936 samples): ...``."""
        out = []
        for f in self.findings:
            who = "whole arm" if f.joint is None else f"joint {f.joint}"
            span = f"t = {f.t0:.3f} s" if f"{f.t0:.3f}" == f"{f.t1:.3f}" else f"t = {f.t0:.3f}..{f.t1:.3f} s"
            count = "1 sample" if f.samples == 1 else f"{f.samples} samples"
            text = f"{self.source}: {f.kind}: {who}: {span} ({count})"
            out.append(text + (f": {f.detail}" if f.detail else ""))
        return out

    def as_json(self) -> list[dict[str, Any]]:
        return [f.as_json() for f in self.findings]


def _finding(kind: str, joint: int | None, time: np.ndarray, a: int, b: int, detail: str) -> Finding:
    return Finding(kind, joint, a, b, float(time[a]), float(time[b]), detail)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[first, last] index pairs of the runs of True in a 1-D mask."""
    m = np.concatenate(([False], np.asarray(mask, bool), [False]))
    d = np.diff(m.astype(np.int8))
    return list(zip(np.flatnonzero(d == 1).tolist(), (np.flatnonzero(d == -1) - 1).tolist()))


def _counter(robot: Robot) -> list[tuple[int, bool]]:
    """Per joint, the counter's bits and signedness as the generated read takes them (a joint
    without an encoder: a signed 32-bit count)."""
    return [(32, True) if j.encoder is None else (j.encoder.bits, j.encoder.signed) for j in robot.joints]


def counter_span(robot: Robot) -> np.ndarray:
    """Per joint, the joint travel (rad or m) one counter range (2^bits counts) covers."""
    return np.array([2.0**bits / c * 2 * np.pi for (bits, _), c in zip(_counter(robot), link_counts_per_turn(robot))])


def joint_travel(robot: Robot) -> np.ndarray:
    """Per joint, the travel its encoder must cover: limits.q's range where the description gives
    one, else a turn (2 pi) for a revolute joint; 0 (nothing to check) for a prismatic joint without limits."""
    out = []
    for j in robot.joints:
        span = j.limits.q_max - j.limits.q_min
        out.append(span if np.isfinite(span) else (2 * np.pi if j.type == "revolute" else 0.0))
    return np.array(out)


def wrapping_joints(robot: Robot) -> list[int]:
    """0-based indices of the joints whose counter wraps within the joint's travel."""
    return [i for i, (s, t) in enumerate(zip(counter_span(robot), joint_travel(robot))) if s < t]


def require_absolute_positions(robot: Robot, start_position: Positions | None) -> None:
    """Refuse (LogError, one line) a robot whose encoder counters wrap within a joint's travel unless
    the start position is stated: the unwrapped count is right, the absolute position is not known."""
    wraps = wrapping_joints(robot)
    if not wraps or start_position is not None:
        return
    span, travel = counter_span(robot), joint_travel(robot)
    which = "; ".join(
        f"joint {i + 1} ({robot.joints[i].name}): {_counter(robot)[i][0]}-bit counter "
        f"spans {np.degrees(span[i]):.4g} deg of its {np.degrees(travel[i]):.4g} deg travel"
        for i in wraps
    )
    raise LogError(
        f"{robot.file}: encoder: {which}: the absolute start position is unknown; use a wider counter "
        "(encoder bits: 32), an offset from a homing step (encoder offset), or state it with "
        "--start-position q1,q2,... (rad) (import-log, identify; import-log's NPZ keeps it for the other commands)"
    )


def parse_start_position(text: str, robot: Robot, beyond_limits: bool = False) -> tuple[float, ...]:
    """``--start-position q1,q2,...``: one value per joint (rad or m), within the joints' limits
    (plausible_positions; ``beyond_limits`` accepts them as they are)."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise LogError(f"--start-position: {text!r}: expected {robot.dof} comma-separated numbers (rad or m)") from None
    if len(values) != robot.dof or not all(np.isfinite(values)):
        raise LogError(f"--start-position: {text!r}: expected {robot.dof} finite numbers (rad or m), one per joint")
    if not beyond_limits:
        plausible_positions(robot, np.array([values]), "--start-position")
    return values


# positions: a log's joint positions (or a stated start position) further outside the description's
# limits than LIMIT_MARGIN of the joint's range are not the arm's: the limits are software limits a
# few degrees inside the mechanical stops (1-5 deg on the arms bundled here), and 5 % of a range is
# 9-17 deg on their 3-6 rad ranges -- beyond any stop. A joint without position limits (a continuous
# one) is checked against FREE_TURNS turns either way: a continuous wrist of a logged run turns once
# or twice, a degree value read as radians reaches 57 rad (9 turns) at 1 rad.
LIMIT_MARGIN = 0.05
FREE_TURNS = 2.0


def plausible_positions(robot: Robot, q: np.ndarray, source: str) -> None:
    """Raise LogError (one line, with the hint "degrees?" where the values in degrees would fit)
    where positions ``q`` (K, n; rad or m) lie outside a joint's limits by more than LIMIT_MARGIN
    of its range (revolute joints without limits: beyond FREE_TURNS turns)."""
    for i, j in enumerate(robot.joints):
        lo, hi = j.limits.q_min, j.limits.q_max
        if np.isfinite(lo) and np.isfinite(hi):
            margin = LIMIT_MARGIN * (hi - lo)
        elif j.type == "revolute":
            lo, hi, margin = -FREE_TURNS * 2 * np.pi, FREE_TURNS * 2 * np.pi, 0.0
        else:
            continue
        qj = np.asarray(q, float)[:, i]
        if qj.min() >= lo - margin and qj.max() <= hi + margin:
            continue
        unit = "rad" if j.type == "revolute" else "m"
        in_degrees = (
            j.type == "revolute" and np.radians(qj.min()) >= lo - margin and np.radians(qj.max()) <= hi + margin
        )
        raise LogError(
            f"{source}: joint {i + 1} ({j.name}): positions {qj.min():.4g} to {qj.max():.4g} {unit} lie outside its "
            f"{'limits' if margin else 'plausible turns'} [{lo:.4g}, {hi:.4g}] {unit} by more than "
            f"{margin:.3g} {unit}{' -- degrees? positions are in rad' if in_degrees else ''} "
            "(the log or the description of another arm? --beyond-limits takes them as they are)"
        )


def _first_read(robot: Robot, first_counts: np.ndarray) -> np.ndarray:
    """The count the generated read (runtime mg_unwrap) takes as absolute from a first raw value:
    its low ``bits`` bits, two's complement where the counter is signed."""
    out = np.asarray(first_counts, np.int64).copy()
    for i, (bits, signed) in enumerate(_counter(robot)):
        raw = int(out[i]) & ((1 << bits) - 1)
        out[i] = raw - (1 << bits) if signed and raw >= 1 << (bits - 1) else raw
    return out


def _scale(robot: Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: rad (m) per count on the link side, direction, offset; as the generated read."""
    rpc = 2 * np.pi / np.array(link_counts_per_turn(robot))
    direction = np.array([1.0 if j.encoder is None else float(j.encoder.direction) for j in robot.joints])
    offset = np.array([0.0 if j.encoder is None else j.encoder.offset for j in robot.joints])
    return rpc, direction, offset


def start_offsets(robot: Robot, first_counts: np.ndarray, start_position: Positions) -> np.ndarray:
    """The encoder offsets (rad or m; ``enc.offset`` of the run-time config) under which the
    generated read of a run whose first raw counts are ``first_counts`` starts at ``start_position``.
    The description's offset moves by a whole number of counter spans only: a stated start position
    needs to be right to within half a span (28.8 deg for a 16-bit motor counter of 4096 counts per
    turn behind 100:1); the counts place the joint to within a count."""
    rpc, direction, offset = _scale(robot)
    read = _first_read(robot, first_counts) * rpc * direction + offset
    span = counter_span(robot)
    return offset + np.round((np.asarray(start_position, float) - read) / span) * span


def with_start_position(log: Log, robot: Robot, start_position: Positions) -> Log:
    """The log with its stated start position (rad or m per joint, at the first sample) stored
    (``start_position``, saved in the NPZ): ``encoder_offsets`` reads it back."""
    start = np.asarray(start_position, float)
    if start.shape != (robot.dof,) or not np.all(np.isfinite(start)):
        raise LogError(f"start_position: expected {robot.dof} finite values (rad or m), got {start.tolist()}")
    with_start = replace(log, extra={**log.extra, "start_position": start})
    return replace(with_start, encoder_offset=encoder_offsets(robot, with_start))


def encoder_offsets(robot: Robot, log: Log) -> np.ndarray | None:
    """The encoder offsets (``enc.offset`` of the run-time config, rad or m) under which the
    generated read of ``log`` starts at its stored start position (``with_start_position``); None
    where the log states none (then the description's offsets hold: require_absolute_positions)."""
    if "start_position" not in log.extra:
        return None
    return start_offsets(robot, np.asarray(log.counts)[0], log.extra["start_position"])


def log_positions(robot: Robot, log: Log, offsets: np.ndarray | None = None) -> np.ndarray:
    """Joint positions (K, n) from the log's counts as the generated read gives them (the counter
    unwrapped modulo 2^bits from its first value; ``offsets``: the encoder offsets, default the
    description's), for checks that need no build."""
    rpc, direction, offset = _scale(robot)
    counts = np.asarray(log.counts, np.int64)
    total = np.empty_like(counts)
    total[0] = _first_read(robot, counts[0])
    for i, (bits, _) in enumerate(_counter(robot)):
        d = np.diff(counts[:, i]) & ((1 << bits) - 1)
        d = np.where(d >= 1 << (bits - 1), d - (1 << bits), d)
        total[1:, i] = total[0, i] + np.cumsum(d)
    return total * rpc * direction + (offset if offsets is None else offsets)


def _peak_curvature(tau: np.ndarray, quantum: float) -> float:
    """A joint's typical |d2 tau / dk2| (per sample^2) where its torque is large (|tau| at least half
    its peak: where a peak can be mistaken for a clip), from second differences over the smallest
    lag (1, 2, 4, ... samples) at which they exceed one quantum: a smooth torque logged coarser
    than it changes per sample has zero one-sample second differences almost everywhere, and its
    peaks would pass for 3-sample plateaus. 0 where no lag resolves it (a constant torque)."""
    large = np.abs(tau) >= 0.5 * float(np.max(np.abs(tau)))
    lag = 1
    while len(tau) > 2 * lag:
        d2 = np.abs(tau[2 * lag :] - 2 * tau[lag:-lag] + tau[: -2 * lag])
        sel = d2[large[lag:-lag]]
        typical = float(np.median(sel)) if len(sel) else 0.0
        if typical > quantum:
            return typical / lag**2
        lag *= 2
    return 0.0


def _saturation(
    torques: np.ndarray, time: np.ndarray, limit: np.ndarray
) -> tuple[list[Finding], list[float], list[float]]:
    """Plateaus at a joint's extreme torque. Per joint, the quantum is the smallest nonzero step
    between the torque's distinct values (the current's resolution times the drive gain); a level
    equal to the extreme to within half a quantum is the extreme. A smooth peak tau_max - a t^2 / 2
    stays within one quantum q for 2 sqrt(2 q / a) of time: with a the joint's typical curvature
    near its extremes (_peak_curvature, noise included), a peak spans 1 + 2 ceil(sqrt(2 q / a))
    samples at most; a plateau needs at least that many, and never fewer than MIN_PLATEAU."""
    found, quanta, lengths = [], [], []
    for i in range(torques.shape[1]):
        tau = torques[:, i]
        steps = np.diff(np.unique(tau))
        q = float(np.min(steps)) if len(steps) else 0.0
        curv = _peak_curvature(tau, q)
        n_min = max(MIN_PLATEAU, 1 + 2 * int(np.ceil(np.sqrt(2 * q / curv)))) if curv > 0 else MIN_PLATEAU
        quanta.append(q)
        lengths.append(float(n_min))
        if not len(steps):
            continue  # a constant torque (no effort recorded): no extreme to clip at
        for level in sorted({float(np.max(tau)), float(np.min(tau))}):
            if abs(level) <= q / 2:
                continue  # a plateau at zero torque is a rest, not a clip
            for a, b in _runs(np.abs(tau - level) <= q / 2):
                if b - a + 1 >= n_min:
                    detail = (
                        f"tau at {level:.6g} (the run's {'max' if level > 0 else 'min'}; limits.tau {limit[i]:g}) "
                        f"for {b - a + 1} samples"
                    )
                    found.append(_finding("saturation", i + 1, time, a, b, detail))
    return found, quanta, lengths


def _limits(tau: np.ndarray, saturated: np.ndarray | None, time: np.ndarray, robot: Robot) -> list[Finding]:
    tau_lim = np.array([j.limits.tau for j in robot.joints])
    over = np.abs(tau) >= tau_lim
    if saturated is not None:  # the importer's current limit (tau_saturated)
        over |= np.asarray(saturated, bool)
    found = []
    for i in range(over.shape[1]):
        for a, b in _runs(over[:, i]):
            detail = f"|tau| or the current at the description's limit (limits.tau {tau_lim[i]:g})"
            found.append(_finding("limit", i + 1, time, a, b, detail))
    return found


def off_trajectory_bound(typical: float, count: float) -> float:
    """The largest tracking error of a joint the off_trajectory check leaves alone: OFF_FACTOR x its
    typical (median) error, at least OFF_FLOOR_COUNTS counts of ``count`` (its encoder's step)."""
    return max(OFF_FACTOR * typical, OFF_FLOOR_COUNTS * count)


def _off_trajectory(
    log: Log, q: np.ndarray, rpc: np.ndarray, unit: list[str]
) -> tuple[list[Finding], list[float], list[float]]:
    err = np.abs(log.q_des - q)
    h = log.extra.get("qdd_step_response")  # the recording loop's, where it says (host_tools.data.loop_response)
    steps = np.zeros(err.shape) if h is None else step_allowance(log.qdd_des, np.asarray(h, float))
    found, bounds, worst = [], [], []
    for i in range(q.shape[1]):
        speed = np.abs(log.qd_des[:, i])
        moving = speed > MOVING * np.max(speed)
        typical = float(np.median(err[moving, i] if np.sum(moving) >= len(speed) / 10 else err[:, i]))
        bound = off_trajectory_bound(typical, float(rpc[i]))
        bounds.append(bound)
        worst.append(float(np.max(err[:, i] / (bound + steps[:, i]))))
        for a, b in _runs(err[:, i] > bound + steps[:, i]):
            step = float(np.max(steps[a : b + 1, i]))
            loop = f", + up to {step:.3g} there: the loop's answer to the acceleration's steps" if step else ""
            detail = (
                f"|q_des - q| up to {np.max(err[a : b + 1, i]):.4g} {unit[i]} (bound {bound:.4g} = the larger of "
                f"{OFF_FACTOR:g} x its median {typical:.3g} and {OFF_FLOOR_COUNTS} counts{loop})"
            )
            found.append(_finding("off_trajectory", i + 1, log.time, a, b, detail))
    return found, bounds, worst


def _positions(log: Log) -> tuple[np.ndarray, np.ndarray]:
    """The stamps as recorded (s) and where each lies on the log's sample axis (samples from the
    first): a resampled log's recorded_time on its grid; else the log's own time, row by row."""
    if "recorded_time" in log.extra:
        stamps = np.asarray(log.extra["recorded_time"], float)
        return stamps, (stamps - float(log.time[0])) / log.sample_period
    return np.asarray(log.time, float), np.arange(len(log.time), dtype=float)


def _span(pos: np.ndarray, a: int, b: int, k: int, closed: bool) -> tuple[int, int]:
    """The log's samples between recorded rows a and b (their positions on the sample axis; the
    ends included if ``closed``); none between them (a grid coarser than the rows): the nearest."""
    eps = 1e-6  # of a sample: a stamp on a grid point is on it
    lo, hi = float(pos[a]), float(pos[b]) if b < len(pos) else float(pos[-1]) + 1.0
    first = int(np.ceil(lo - eps)) if closed else int(np.floor(lo + eps)) + 1
    last = int(np.floor(hi + eps)) if closed else int(np.ceil(hi - eps)) - 1
    first, last = max(first, 0), min(last, k - 1)
    if last < first:
        first = last = int(np.clip(np.round((lo + hi) / 2), 0, k - 1))
    return first, last


def _time(log: Log) -> list[Finding]:
    """gap and time findings on the stamps as recorded."""
    stamps, pos = _positions(log)
    steps = np.diff(stamps)
    jump = gap_steps(steps)
    median = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0
    found = []
    for a, b in _runs(jump | (steps <= 0)):  # steps a..b: between recorded rows a and b + 1
        s = steps[a : b + 1]
        first, last = _span(pos, a, b + 1, len(log.time), closed=True)
        where = f"t = {stamps[a]:.6g}..{stamps[b + 1]:.6g} s as recorded"
        if np.all(s > 0):
            detail = (
                f"stamps jump: {len(s)} step{'s' * (len(s) > 1)} over {GAP:g} x the median step {median * 1e3:.4g} ms, "
                f"the longest {np.max(s) * 1e3:.4g} ms ({where})"
            )
            found.append(_finding("gap", None, log.time, first, last, detail))
            continue
        what = [w for w, m in (("jump", jump[a : b + 1]), ("repeat", s == 0), ("go back", s < 0)) if np.any(m)]
        detail = f"stamps {' and '.join(what)} (steps {np.min(s):.4g}..{np.max(s):.4g} s; median step {median:.4g} s)"
        found.append(_finding("time", None, log.time, first, last, detail))
    return found


def recorded_repeats(log: Log) -> np.ndarray:
    """(R,) bool: the recorded rows identical to the one before at a later stamp: the importer's
    judgement on the file's rows (``recorded_repeats``), else on the log's own rows (every array
    with one row per sample)."""
    if "recorded_repeats" in log.extra:
        return np.asarray(log.extra["recorded_repeats"], bool)
    k = len(log.time)
    rows = [getattr(log, name) for name in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des")]
    rows += [
        a
        for name, a in log.extra.items()
        if name not in ("start_position", "qdd_step_response") and np.shape(a)[:1] == (k,)
    ]
    return repeated_rows(log.time, rows)


def on_its_clock(log: Log) -> tuple[Log, np.ndarray]:
    """The log as the controller stepped through it, for a replay through the pipeline, and the
    index of each of its rows in that. A gap (a stamp step over GAP times the median step, about k
    median steps long) becomes its k - 1 missing samples: rows with no valid encoder sample and
    every other input of the row before held. A repeated row (recorded_repeats: a logger's
    duplicate, its counts stale) is not valid either. Stepped row by row, the estimator would take
    a gap's k periods of motion, or a stale row's none, as one period's: a transient in q-dot and in
    every residual, up to 50 x the thresholds on the iiwa's hostile runs and longer than the 0.2 s
    that a design leaves out after a timing finding (TIMING_SETTLE_DESIGN). Without a valid sample
    the estimator predicts instead (the encoder block's fault path, as on the arm). A resampled log
    (CSV, bag) runs as it is: no gap is left in it, and its samples near a repeated row of the file
    are interpolated, not repeated (its repeats are judged on the file's rows)."""
    n = len(log)
    valid = np.array(log.valid, copy=True)
    # an imported (resampled) log carries the file's judgement (recorded_repeats): not its samples
    stale = np.zeros(n, bool) if "recorded_repeats" in log.extra else recorded_repeats(log)
    valid[stale] = 0
    steps = np.diff(np.asarray(log.time, float))
    positive = steps[steps > 0]
    median = float(np.median(positive)) if len(positive) else log.sample_period
    extra = np.where(gap_steps(steps), np.maximum(np.rint(steps / median).astype(int) - 1, 0), 0)
    if not extra.any():
        if "motor_valid" in log.extra:
            motor = np.array(log.extra["motor_valid"], copy=True)
            motor[stale] = 0
            log = replace(log, extra={**log.extra, "motor_valid": motor})
        return replace(log, valid=valid), np.arange(n)
    # each row repeated 1 + (the samples missing after it) times; the copies: no valid sample
    times = np.concatenate((1 + extra, [1]))
    rows = np.concatenate(([0], np.cumsum(times)[:-1]))
    src = np.repeat(np.arange(n), times)
    copy = np.ones(len(src), bool)
    copy[rows] = False
    stamps = np.asarray(log.time, float)[src] + median * (np.arange(len(src)) - rows[src])

    def held(a: np.ndarray) -> np.ndarray:
        return np.asarray(a)[src] if np.shape(a)[:1] == (n,) else np.asarray(a)

    clocked_valid = valid[src]
    clocked_valid[copy] = 0
    clocked = replace(
        log,
        time=stamps,
        counts=held(log.counts),
        valid=clocked_valid,
        tau=held(log.tau),
        q_des=held(log.q_des),
        qd_des=held(log.qd_des),
        qdd_des=held(log.qdd_des),
        extra={k: held(v) for k, v in log.extra.items()},
    )
    if "motor_valid" in clocked.extra:  # an elastic joint's motor encoder: no sample there either
        motor = np.array(clocked.extra["motor_valid"], copy=True)
        motor[copy | stale[src]] = 0
        clocked.extra["motor_valid"] = motor
    return clocked, rows


def _repeats(log: Log) -> list[Finding]:
    stamps, pos = _positions(log)
    found = []
    for a, b in _runs(recorded_repeats(log)):  # rows a..b each equal to row a - 1
        first, last = _span(pos, a - 1, b + 1, len(log.time), closed=False)
        when = f"{stamps[a]:.6g}" + (f"..{stamps[b]:.6g}" if b > a else "")
        rows = f"{b - a + 1} recorded row{'s' * (b > a)}"
        detail = f"{rows} identical to the one before at a new stamp (t = {when} s as recorded)"
        found.append(_finding("repeat", None, log.time, first, last, detail))
    return found


def _still(q: np.ndarray, rpc: np.ndarray, ts: float) -> tuple[np.ndarray, np.ndarray]:
    """Per sample and joint: still (True) or moving, from the central difference of q over the
    STILL_WINDOW; and the per-joint speed bound (rad/s or m/s)."""
    w = max(1, int(round(STILL_WINDOW / ts / 2)))
    k = len(q)
    lo, hi = np.clip(np.arange(k) - w, 0, k - 1), np.clip(np.arange(k) + w, 0, k - 1)
    dt = np.maximum(hi - lo, 1)[:, None] * ts
    speed = np.abs(q[hi] - q[lo]) / dt
    bound = np.maximum(STILL_COUNTS * rpc / (2 * w * ts), STILL_FRACTION * np.max(speed, axis=0))
    return speed <= bound, bound


def check_log(
    log: Log,
    robot: Robot,
    source: str = "log",
    start_position: Positions | None = None,
    beyond_limits: bool = False,
) -> LogChecks:
    """Every input check on a log of ``robot``; ``source`` names the file in the lines. Raises
    LogError (one line) where an encoder wraps within a joint's travel and no ``start_position``
    (rad or m, per joint, at the log's first sample; default: the log's stored one) is stated, and
    where the positions lie outside the joints' limits (plausible_positions: degrees, or another
    arm's log), unless ``beyond_limits``."""
    if np.shape(log.counts)[1] != robot.dof:
        raise LogError(f"{source}: counts: {np.shape(log.counts)[1]} joints, {robot.name} has {robot.dof}")
    if start_position is not None:
        log = with_start_position(log, robot, start_position)
    require_absolute_positions(robot, log.extra.get("start_position"))
    q = log_positions(robot, log, encoder_offsets(robot, log))
    if not beyond_limits:
        plausible_positions(robot, q, source)
    rpc = 2 * np.pi / np.array(link_counts_per_turn(robot))
    unit = ["rad" if j.type == "revolute" else "m" for j in robot.joints]
    off, off_bound, off_worst = _off_trajectory(log, q, rpc, unit)
    tau, time = np.asarray(log.tau, float), log.time
    sat, quanta, lengths = _saturation(tau, time, np.array([j.limits.tau for j in robot.joints]))
    rest, still_bound = _standstill(q, rpc, log.sample_period, time)
    limits = _limits(tau, log.extra.get("tau_saturated"), time, robot)
    findings = sat + limits + off + _time(log) + _repeats(log) + rest
    flagged, arm = np.zeros(len(time), bool), np.zeros(len(time), bool)
    for f in findings:
        flagged[f.first : f.last + 1] = True
        arm[f.first : f.last + 1] |= not f.timing
    bounds: dict[str, list[float]] = {
        "saturation_quantum": quanta,
        "saturation_min_samples": lengths,
        "standstill_speed": still_bound.tolist(),
        "off_trajectory_bound": off_bound,
        "off_trajectory_worst_ratio": off_worst,
    }
    return LogChecks(source, findings, flagged, bounds, flagged & ~arm)


def _standstill(q: np.ndarray, rpc: np.ndarray, ts: float, time: np.ndarray) -> tuple[list[Finding], np.ndarray]:
    """The whole arm still for longer than STILL_SECONDS; and the per-joint speed bounds."""
    still, bound = _still(q, rpc, ts)
    rest = []
    for a, b in _runs(np.all(still, axis=1)):
        if (b - a) * ts > STILL_SECONDS:
            detail = f"every joint's speed under its bound for {(b - a) * ts:.2f} s"
            rest.append(_finding("standstill", None, time, a, b, detail))
    return rest, bound
