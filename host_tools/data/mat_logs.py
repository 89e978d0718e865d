"""Liu et al.'s recorded LWA-4P runs (MATLAB, ../shared/data/lwa4p/4ms_*_run1.mat) -> the log format.

A run holds ``time`` (s), ``q`` (rad, the link encoders at 1 mdeg), ``dq_hat`` (the controller's own
velocity estimate), ``q_d`` (desired position), ``I_c`` (commanded motor current, mA) and ``I_m``
(measured current, mA). What the data package's README establishes about them, applied here:

- time as recorded: steps of the robot's sample period (the median step; a stamp that jumps,
  repeats or goes back is left to the input checks, host_tools.data.checks, which flag it);
- counts = q / (2 pi / cpr): the encoder's own integers (checked to be on the grid: a wrong
  --robot or encoder would not be);
- tau[k] = gear_ratio * torque_constant * I_c[k - 2] / 1000: ``I_c`` leads the encoder by 2 samples,
  so the log starts at the file's third sample; samples where |I_c| reaches the joint's
  ``limits.current`` are marked in ``tau_saturated`` (the torque there is only a bound);
- q_des = q_d; qd_des, qdd_des: its central differences (the desired motion is a smooth sine and
  polynomial/trapezoid sequence sampled at 4 ms);
- ``qd_hat_logged`` keeps the recorded ``dq_hat`` (to check the generated estimators against);
  ``I_m`` is not used (sign-inverted on joints 5-6, lagging and scaled: README);
- ``recorded_repeats``: the samples whose file row (every variable the file records, ``I_m``
  included) is identical to the row before at a later stamp: a sample recorded twice (the input
  checks flag them, host_tools.data.checks);
- Liu et al.'s Experiment 1 also holds the outputs of the paper's own estimators, run on the same
  positions from a later switch-on (``dq_FinDiff``, ``dq_MovAv``, ``dq_Kalman``, ``dq_linHG``,
  ``dq_nnlHG``, ``dq_SliMod``; zero before it): kept as ``qd_recorded_<name lower-cased>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.formats import LogFile
from host_tools.data.logs import RECORDED_PREFIX, Log, LogError, fingerprint
from host_tools.data.timing import Timing, repeated_rows

DELAY = 2  # samples by which I_c leads the encoder (README)
FIELDS = ("time", "q", "dq_hat", "q_d", "I_c")
RECORDED = ("dq_FinDiff", "dq_MovAv", "dq_Kalman", "dq_linHG", "dq_nnlHG", "dq_SliMod")  # Experiment 1's


def recorded_key(field: str) -> str:
    """The log's extra array for one of Liu et al.'s recorded estimator outputs (``dq_Kalman`` ->
    ``qd_recorded_kalman``)."""
    return RECORDED_PREFIX + field.removeprefix("dq_").lower()


def _array(data: dict[str, Any], path: Path, name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name not in data:
        raise LogError(f"{path}: {name}: missing variable (a Liu et al. run has {', '.join(FIELDS)})")
    a = np.asarray(data[name], dtype=float)
    if a.shape != shape:
        raise LogError(f"{path}: {name}: expected shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise LogError(f"{path}: {name}: contains NaN or inf")
    return a


def import_mat(path: str | Path, robot: Robot) -> Log:
    """One recorded run as a Log of ``robot`` (its encoders, gear ratios, torque constants and
    sample period must be those of the run)."""
    import scipy.io

    path = Path(path)
    try:
        data = scipy.io.loadmat(str(path), squeeze_me=True)
    except (OSError, ValueError, NotImplementedError) as exc:
        raise LogError(f"{path}: cannot read as a MATLAB file ({exc})") from None
    n = robot.dof
    t = np.asarray(data.get("time", np.zeros(0)), dtype=float).reshape(-1)
    k = len(t)
    if k <= DELAY + 2:
        raise LogError(f"{path}: time: missing or too short ({k} samples)")
    time = _array(data, path, "time", (k,))
    q = _array(data, path, "q", (k, n))
    q_d = _array(data, path, "q_d", (k, n))
    i_c = _array(data, path, "I_c", (k, n))
    dq_hat = _array(data, path, "dq_hat", (k, n))
    ts = robot.sample_period
    median_step = float(np.median(np.diff(time)))
    if not np.isclose(median_step, ts, rtol=1e-6, atol=0):
        raise LogError(f"{path}: time: steps of {median_step:g} s (median); {robot.name}'s sample_period is {ts:g} s")
    missing = [j.name for j in robot.joints if j.encoder is None or j.encoder.side != "link"]
    if missing:
        raise LogError(
            f"{robot.file}: joints {', '.join(missing)}: encoder: a link-side encoder is needed "
            "(the runs record link positions)"
        )
    no_kt = [j.name for j in robot.joints if not j.torque_constant > 0]
    if no_kt:
        raise LogError(f"{robot.file}: joints {', '.join(no_kt)}: torque_constant: needed to turn I_c into torque")
    rpc = np.array([2 * np.pi / j.encoder.cpr for j in robot.joints if j.encoder is not None])
    offset = np.array([j.encoder.offset for j in robot.joints if j.encoder is not None])
    direction = np.array([j.encoder.direction for j in robot.joints if j.encoder is not None])
    raw = (q - offset) * direction / rpc
    counts = np.round(raw)
    off_grid = float(np.max(np.abs(raw - counts)))
    if off_grid > 1e-3:
        raise LogError(
            f"{path}: q: not on {robot.name}'s encoder grid (up to {off_grid:.3g} counts off): "
            "another robot, resolution or offset recorded it"
        )
    gain = np.array([j.gear_ratio * j.torque_constant for j in robot.joints]) / 1000.0
    limit = np.array([j.limits.current for j in robot.joints]) * 1000.0
    tau = gain * i_c[:-DELAY]
    saturated = np.abs(i_c[:-DELAY]) >= limit * (1 - 1e-9)
    qd_des = np.gradient(q_d, ts, axis=0)
    qdd_des = np.gradient(qd_des, ts, axis=0)
    s = slice(DELAY, None)
    recorded = {recorded_key(f): _array(data, path, f, (k, n))[s] for f in RECORDED if f in data}
    rows = [v for name, v in data.items() if name != "time" and not name.startswith("__") and np.shape(v)[:1] == (k,)]
    repeats = repeated_rows(time, rows)[s]
    return Log(
        robot=robot.c_name,
        sample_period=ts,
        time=time[s],
        counts=counts[s].astype(np.int64),
        valid=np.ones((k - DELAY, n), dtype=bool),
        tau=tau,
        q_des=q_d[s],
        qd_des=qd_des[s],
        qdd_des=qdd_des[s],
        extra={
            "qd_hat_logged": dq_hat[s],
            "tau_saturated": saturated,
            "recorded_repeats": repeats,
            **fingerprint(robot),
            **recorded,
        },
    )


def read_mat(path: str | Path, robot: Robot) -> LogFile:
    """A recorded run as a Log of ``robot`` (import_mat) with the timing report of its samples."""
    log = import_mat(path, robot)
    repeated = int(np.sum(log.extra["recorded_repeats"]))
    timing = Timing.of(f"samples of {Path(path).name}", log.time, repeated, log.sample_period, len(log), False)
    note = f"I_c leads the encoder by {DELAY} samples: the log starts at the file's sample {DELAY + 1}"
    return LogFile(str(path), log, timing, (note,))
