"""The identification round trip without a robot: design the excitation, run it on the loopback
(the description's parameters are the truth) with torque noise, identify, and compare."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.checks import counter_span, with_start_position
from host_tools.data.logs import Log
from host_tools.identification.ipopt_progress import sample_lines, stage_lines
from host_tools.identification.least_squares import model
from host_tools.identification.physical import PhysicalSettings
from host_tools.identification.pipeline import (
    IdentSettings,
    rigid_only,
    synthetic_log,
    synthetic_pipeline,
    validation_data,
)
from host_tools.identification.run import IdentificationResult, Stage, identify_run

if TYPE_CHECKING:  # the excitation design imports the trajectory splines (0.25 s)
    from host_tools.identification.excitation import Excitation

WELL_EXCITED_RSD = 0.5  # %: "well excited" base parameters (their eq. 7 RSD at most this)

# A synthetic fit whose RMS exceeds this factor times the noise floor has error beyond the noise:
# the band-limited noise's RMS over the K kept samples scatters by ~1/sqrt(2K) (K ~ 2 x 6 Hz x 20 s
# = 240 decimated samples: 5 %), so 1.2 is four such standard deviations above a pure-noise residual.
NOISE_FLOOR_FACTOR = 1.2


@dataclass(frozen=True)
class Synthetic:
    periods: int = 6
    torque_noise: float = 0.2  # N m, standard deviation (a joint-torque sensor's)
    seed: int = 0
    excite_starts: int = 1
    excite_max_iter: int = 150


@dataclass
class SyntheticResult:
    """The identification of the simulated run and how it compares with the truth."""

    run: IdentificationResult
    options: Synthetic
    excitation: Excitation
    names: list[str]  # the base parameters'
    truth: np.ndarray  # the description's base parameters
    relative_error: np.ndarray  # |identified - truth| / |truth|, per base parameter
    well_excited: list[str]  # base parameters with an RSD at most WELL_EXCITED_RSD
    max_rel_error_well_excited: float | None
    noise_floor_rms: float  # N m: what the torque noise leaves after averaging and the low-pass
    warnings: list[str]
    validation_noise_floor_rms: float  # N m: the band-limited noise of the (single-pass) validation run
    validation_rms_truth: np.ndarray  # the truth through the same validation processing, N m per joint
    stage_seconds: dict[str, float]
    seconds: float


def synthetic(
    robot: Robot,
    options: Synthetic = Synthetic(),
    settings: IdentSettings = IdentSettings(),
    physical: PhysicalSettings = PhysicalSettings(),
    stage: Stage = lambda _: None,
    start: tuple[float, ...] | None = None,
    excitation: Excitation | None = None,
) -> SyntheticResult:
    """The round trip for ``robot``. ``start``: the stated start position of the excitation run
    (rad or m) for encoders whose counters wrap within a joint's travel (the validation motion's
    start is the simulation's own); ``excitation``: run this one instead of designing it (the
    options' excite_starts and excite_max_iter then unused)."""
    # here, not at the top: a recorded run's identification needs none of them (identify <= 3 s)
    from host_tools.bindings.loopback import simulate
    from host_tools.data.trajectories import generated_trajectory
    from host_tools.identification.excitation import ExciteSettings, design

    t0 = time.perf_counter()
    rigid_only(robot)
    t1 = time.perf_counter()
    exc = excitation
    if exc is None:
        stage("excitation design (IPOPT)")
        settings_ = ExciteSettings(starts=options.excite_starts, max_iter=options.excite_max_iter, seed=options.seed)
        lines = stage_lines(stage, "excitation design (IPOPT)", settings_.starts, settings_.max_iter)
        exc = design(robot, settings_, iteration=lines).excitation
    excite_s = time.perf_counter() - t1
    t1 = time.perf_counter()
    # the loop's C is generated and compiled once per description and generator (cached): tens of
    # seconds for a 6-7 joint arm the first time, nothing to count inside
    stage(f"simulating the excitation: generating and compiling {robot.name}'s loop (once, then cached)")
    rt = synthetic_pipeline(robot)  # as synthetic_log's
    head = f"simulating the excitation ({options.periods} periods)"
    stage(head)
    log = synthetic_log(
        robot,
        exc,
        options.periods,
        options.torque_noise,
        options.seed,
        progress=sample_lines(stage, head, rt.sample_period),
    )
    stage("simulating a validation motion")
    other = simulate(
        rt,
        generated_trajectory(robot, 20.0, rt.sample_period, seed=options.seed + 1),
        progress=sample_lines(stage, "simulating a validation motion", rt.sample_period),
    ).log
    other.tau = other.tau + np.random.default_rng(options.seed + 1).normal(0.0, options.torque_noise, other.tau.shape)
    if start is not None:
        log = _started(robot, log, start)
        other = with_start_position(other, robot, other.extra["q_true"][0])
    simulate_s = time.perf_counter() - t1
    run = identify_run(robot, log, exc, other, settings, physical, stage)
    m = model(robot)
    truth = m.true_base()
    base = dict(zip(run.reported.names, zip(run.reported.base.values, run.reported.base.rsd)))
    values = np.array([float(base[n][0]) for n in m.names])
    rsd = np.array([float(base[n][1]) / 100 for n in m.names]) * 100  # %, through the document's fraction
    rel = np.abs(values - truth) / np.maximum(np.abs(truth), 1e-12)
    well = rsd <= WELL_EXCITED_RSD
    floor = _noise_floor(options, run, log)
    warnings = []
    above = [j + 1 for j, v in enumerate(run.fit_rms["base"].tolist()) if v > NOISE_FLOOR_FACTOR * floor]
    if above:
        warnings.append(
            f"base fit RMS above {NOISE_FLOOR_FACTOR:g} x the noise floor ({floor:.3g} N m) on joints "
            f"{', '.join(map(str, above))}: "
            f"model or processing error beyond the noise (e.g. the excitation not tracked, "
            "harmonics outside the derivative band, a discontinuous Coulomb model)"
        )
    return SyntheticResult(
        run,
        options,
        exc,
        list(m.names),
        truth,
        rel,
        [n for n, w in zip(m.names, well) if w],
        float(rel[well].max()) if np.any(well) else None,
        floor,
        warnings,
        # the validation run is one pass, not averaged: its floor is the band-limited noise alone
        float(options.torque_noise * np.sqrt(settings.band / (0.5 / other.sample_period))),
        # the truth through the same validation processing: what no identified model can beat there
        # (the band-limited noise plus the time-domain derivatives' error of a single pass)
        validation_data(robot, other, settings, 5.0, True, robot).rms(truth),
        {"excitation": excite_s, "simulation": simulate_s, **run.stage_seconds},
        time.perf_counter() - t0,
    )


def _started(robot: Robot, log: Log, start: tuple[float, ...]) -> Log:
    """The simulated run with its stated start position. The run is simulated: a stated start the
    counts cannot place (off by half a counter span or more, start_offsets) would identify from
    wrong absolute positions -- refuse it."""
    true_start = np.asarray(log.extra["q_true"][0], float)
    off = np.abs(np.asarray(start, float) - true_start) >= counter_span(robot) / 2
    if np.any(off):
        j = int(np.argmax(off))
        raise ValueError(
            f"--start-position: joint {j + 1}: {start[j]:.6g} is not where the synthetic run starts "
            f"({true_start[j]:.6g}, the designed excitation's first sample); state it to within half "
            f"a counter span ({counter_span(robot)[j] / 2:.4g} rad or m): --start-position="
            + ",".join(f"{v:.4g}" for v in true_start)
        )
    return with_start_position(log, robot, start)


def _noise_floor(options: Synthetic, run: IdentificationResult, log: Log) -> float:
    """RMS the torque noise leaves after averaging the periods and the band-limiting low-pass."""
    fs = 1.0 / log.sample_period
    return float(options.torque_noise / np.sqrt(run.periods) * np.sqrt(run.settings.band / (fs / 2)))
