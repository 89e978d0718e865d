"""Estimator evaluation on the loopback (Liu et al. §IV): every velocity estimator in the closed loop
with computed torque (Kp = 100, Kd = 13), at a given encoder resolution and sample rate, optionally
GA-tuned first; ISE of velocity (eq. 5) and of tracking, convergence time of a switch-on while
moving (Fig. 7), and the sensor-fault case (10 % of one axis's samples lost, §IV-C).

    manipgen evaluate schunk_lwa4p --resolution-mdeg 10 --rate-hz 125 --tune --out eval/
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from codegen.blocks import kalman, registry
from codegen.blocks.encoder import link_counts_per_turn
from codegen.blocks.options import EstimatorChoice, estimator_choice, parse_estimator, parse_label
from codegen.model.robot import Robot
from codegen.model.yamlio import load_yaml
from codegen.resources import resource_dir
from host_tools.bindings.loopback import SimulationError, simulate
from host_tools.bindings.rt import Realtime, RtConfig
from host_tools.bindings.source import PipelineSource, RobotSource
from host_tools.data.json_doc import finite
from host_tools.data.trajectories import Trajectory, generated_trajectory, liu_test_trajectory, trapezoid_trajectory
from host_tools.studies.paper_setups import VELOCITY_ESTIMATORS as PAPER
from host_tools.studies.paper_setups import PaperSetup
from host_tools.studies.tune import GaSettings, Problem, TuneResult, apply_genome, gain_space, tune

Progress = Callable[[str, int, int, str], None]  # (estimator, done, total, what is happening)


@dataclass(frozen=True)
class EstimatorRequest:
    """An estimator to evaluate, parsed once (``EstimatorRequest.parse``): a registered name (its
    default, paper or tuned variant, ``given`` None) or a variant with its options (``lsf:n=8,p=3``,
    evaluated as given, Liu et al. Table 5; no grid search)."""

    name: str
    given: EstimatorChoice | None = None

    @staticmethod
    def parse(text: str) -> EstimatorRequest:
        """Raises OptionError for an unknown estimator or option."""
        choice = parse_estimator(text)
        return EstimatorRequest(choice.name, choice if ":" in text else None)

    @property
    def label(self) -> str:
        return self.given.label if self.given is not None else self.name


# Liu et al.'s seven (any registered estimator may be evaluated)
ESTIMATORS = tuple(EstimatorRequest(name) for name in registry.study_estimators())


def default_spec(name: str) -> EstimatorChoice:
    """The estimator with its default options (Liu et al. Tables 4, 7, 8), e.g. ``lsf:n=4,p=1``."""
    return estimator_choice(name, {})


def tuned(name: str) -> bool:
    """Whether the GA tunes its continuous gains (Liu et al. §III; else a grid search or nothing)."""
    return bool(registry.estimators()[name].genes)


PAPER_GAINS = "gains/schunk_lwa4p_liu.yaml"  # Liu et al. Tables 4, 7, 8, per set-up


@dataclass
class Setup:
    # the description, read once (RobotSource.of): its text is what work items carry to workers
    source: RobotSource = field(repr=False)
    resolution_mdeg: float = 10.0
    rate_hz: float = 125.0
    faults: float = 0.1
    fault_axis: int = -1  # Liu et al. §IV-C: axis 6
    seed: int = 0
    tune: bool = False
    # tune with the fault case's lost samples on the tuning motion (Liu et al. Table 6's "retuned"
    # columns, Fig. 8B): the gains for a sensor known to drop samples
    tune_faults: bool = False
    generations: int = 20
    model_error: float = 0.0  # the simulated robot's parameters = the model's x (1 + model_error)
    gains: str = "default"  # or "paper": Liu et al.'s tuned gains for this set-up (LWA-4P only)
    # the loop the estimators run in: Liu et al.'s (paper_setups.VELOCITY_ESTIMATORS); another record
    # runs them in another loop (bench/model_based_friction.py: friction fed forward, PID)
    loop: PaperSetup = PAPER

    @property
    def robot(self) -> str:
        """The robot's name (its description's)."""
        return self.model().name

    def model(self) -> Robot:
        return self.source.robot()

    def problems(self) -> list[str]:
        """What is wrong with this set-up (empty: fine)."""
        out = []
        if self.model().elastic:
            out.append(
                f"{self.robot} has series-elastic joints: Liu et al.'s study runs computed torque on a rigid "
                f"arm; the elastic arm's estimators run in its own loop: manipgen elastic collide {self.robot}"
            )
        if self.gains not in ("default", "paper"):
            out.append(f"--gains is default or paper, got {self.gains}")
        if self.tune_faults and not self.tune:
            out.append("--tune-faults retunes under the fault case: it goes with --tune")
        if self.gains == "paper":
            if self.tune:
                out.append("--gains paper and --tune exclude each other")
            if paper_gains(self) is None:
                out.append(
                    f"Liu et al. tuned gains exist for schunk_lwa4p at 10@125, 2@125 and 1@250 only, "
                    f"not {self.robot} at {self.resolution_mdeg:g}@{self.rate_hz:g}"
                )
        if not (self.resolution_mdeg > 0 and np.isfinite(self.resolution_mdeg)):
            out.append(f"--resolution-mdeg must be positive, got {self.resolution_mdeg:g}")
        if not (0 < self.rate_hz <= 100000):
            out.append(f"--rate-hz must be in (0, 100000], got {self.rate_hz:g}")
        if not 0 <= self.faults < 1:
            out.append(f"--faults is a fraction of samples in [0, 1), got {self.faults:g}")
        if not self.model_error > -1:
            out.append(f"--model-error must be > -1 (parameters x (1 + e)), got {self.model_error:g}")
        if self.generations < 1:
            out.append(f"--generations must be >= 1, got {self.generations}")
        return out

    @property
    def sample_period(self) -> float:
        return 1.0 / self.rate_hz

    @property
    def cpr(self) -> float:
        return 360000.0 / self.resolution_mdeg

    @property
    def eps(self) -> float:
        """Liu et al. fix epsilon per set-up: 0.03 at 125 Hz (Tables 4, 7), 0.01 at 250 Hz (Table 8)."""
        return 0.01 if self.rate_hz >= 250 else 0.03


def own_setup(robot: Robot) -> tuple[float, float]:
    """(resolution_mdeg, rate_hz) of the robot's own hardware: its coarsest link-side encoder
    resolution (a motor encoder counts gear_ratio times finer at the link; a joint without an
    encoder gets the generated C's default cpr) and its sample period -- the study is then no more
    optimistic than the arm it describes."""
    return 360000.0 / min(link_counts_per_turn(robot)), 1.0 / robot.sample_period


# Liu et al.'s three set-ups (resolution mdeg @ rate Hz), `manipgen evaluate --setups liu`
LIU_SETUPS = ((10.0, 125.0), (2.0, 125.0), (1.0, 250.0))


@dataclass
class Result:
    name: str
    ise_velocity: float
    ise_tracking: float
    convergence_s: float | None
    ise_faulty: float
    gains: dict[str, Any] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)
    curves: dict[str, np.ndarray] = field(default_factory=dict)  # for the figures, not the JSON
    per_axis: dict[str, list[float]] = field(default_factory=dict)  # ISE per joint
    # the tuned (or default) gains, loadable by rt users (host_tools.reports.evaluation saves them)
    config: RtConfig | None = field(default=None, repr=False)
    config_file: str = ""


def test_trajectory(setup: Setup) -> Trajectory:
    if setup.robot == "schunk_lwa4p":
        return liu_test_trajectory().resample(setup.sample_period)
    return generated_trajectory(setup.model(), 60.0, setup.sample_period, seed=setup.seed)


def tuning_trajectory(setup: Setup) -> Trajectory:
    """Like Liu et al. Fig. 2: a shorter, different motion (another seed of the generator)."""
    return generated_trajectory(setup.model(), 20.0, setup.sample_period, seed=setup.seed + 1)


def paper_gains(setup: Setup) -> dict[str, Any] | None:
    """Liu et al.'s tuned gains for the set-up (robots/gains/schunk_lwa4p_liu.yaml), or None."""
    if setup.robot != "schunk_lwa4p":
        return None
    doc = load_yaml(resource_dir("robots") / PAPER_GAINS).data
    entry = doc.get(f"{setup.resolution_mdeg:g}@{setup.rate_hz:g}")
    return None if entry is None else dict(entry)


def fault_mask(setup: Setup, shape: tuple[int, int]) -> np.ndarray:
    valid = np.ones(shape, dtype=np.uint8)
    rng = np.random.default_rng(setup.seed + 7)
    valid[:, setup.fault_axis] = rng.random(shape[0]) >= setup.faults
    valid[:2] = 1
    return valid


def _shown(value: float | list[float]) -> str:
    """A pinned config value as the JSON's "controller" text shows it: 100, or [1.5, 2]."""
    if isinstance(value, (int, float)):
        return f"{value:g}"
    return "[" + ", ".join(f"{v:g}" for v in value) + "]"


def pipeline_source(setup: Setup, estimator: EstimatorChoice) -> PipelineSource:
    """The generated pipeline of Liu et al.'s loop with this estimator, as work items carry it."""
    return PipelineSource.of(setup.source, estimator, "none", setup.loop.controller, setup.sample_period)


def pipeline(setup: Setup, estimator: EstimatorChoice) -> Realtime:
    """The estimator's pipeline in Liu et al.'s loop (host_tools.studies.paper_setups.VELOCITY_ESTIMATORS:
    computed torque with friction at the estimate, Kp = 100, Kd = 13) with the set-up's encoder, its
    default gains (or, with setup.gains == "paper", Liu et al.'s)."""
    rt = pipeline_source(setup, estimator).realtime()
    setup.loop.apply(rt.config)
    rt.config["enc.cpr"] = setup.cpr * np.ones(rt.dof) / rt.config["enc.gear"]
    name = estimator.name
    if "est.eps" in rt.config.keys():  # the high-gain observers' epsilon
        rt.config["est.eps"] = setup.eps
    paper = paper_gains(setup) if setup.gains == "paper" else None
    if registry.estimators()[name].redesign is not None:  # gains designed from values: R from the set-up's
        rt.config.redesign(**design_values(setup, rt))  # encoder resolution (design_values: not given)
    elif paper and tuned(name):
        for key, value in paper[name].items():
            rt.config[f"est.{key}"] = value
    return rt


def design_values(setup: Setup, rt: Realtime) -> dict[str, list[float]]:
    """The design values of the pipeline's estimator the GA tunes (its genes among the registry's
    design_keys, e.g. kalman's process noise q_var per axis): Liu et al.'s (gains "paper") or the
    generation's design default."""
    name = parse_label(rt.label).estimator.name
    spec = registry.estimators()[name]
    paper = paper_gains(setup) if setup.gains == "paper" else None
    design = next(b for b in rt.rt_manifest["blocks"] if b["kind"] == "est")["options"]
    keys = [g.key.partition(".")[2] for g in spec.genes if g.key.partition(".")[2] in spec.design_keys]
    return {k: [float(v) for v in np.broadcast_to(paper[name][k] if paper else design[k], (rt.dof,))] for k in keys}


# the form Liu et al. ran an estimator in, where it is not the default one: its gains were tuned for it
# (kalman: MATLAB's c2d 'tustin' + dlqe, found in Experiment 1's recording, codegen/blocks/kalman.py)
PAPER_FORMS = {kalman.SPEC.name: {"tustin": 1}}


def variant(setup: Setup, name: str) -> EstimatorChoice:
    """The estimator spec (integer gains, generation options) to evaluate when no grid search picks
    one: with Liu et al.'s gains also its form of the estimator (PAPER_FORMS)."""
    paper = paper_gains(setup) if setup.gains == "paper" else None
    if paper and registry.estimators()[name].grid:
        return estimator_choice(name, dict(paper[name]))
    if paper and name in PAPER_FORMS:
        return estimator_choice(name, dict(PAPER_FORMS[name]))
    return default_spec(name)


def plant_params(rt: Realtime, setup: Setup) -> np.ndarray:
    return np.asarray(rt.manifest["standard_parameters"], float) * (1.0 + setup.model_error)


def convergence_time(rt: Realtime, setup: Setup, tol: float = 0.05) -> tuple[float | None, np.ndarray, np.ndarray]:
    """Liu et al. Fig. 7: the loop runs a trapezoidal motion (every joint at SWITCH_ON_SPEED in the
    middle); halfway through the constant-velocity part a second, fresh instance of the estimator
    is switched on and fed the same samples. Returns the time after which its |qd_hat - qd| stays
    below tol x SWITCH_ON_SPEED on every joint (None: not within the 2 s observed), and the estimate
    and the true velocity of axis 2 over those 2 s."""
    ts = setup.sample_period
    traj = trapezoid_trajectory(setup.model(), SWITCH_ON_SPEED, ts, cruise=4.0)
    run = simulate(rt, traj, true_params=plant_params(rt, setup))
    start = int(np.argmax(traj.qd[:, 0] >= SWITCH_ON_SPEED - 1e-9)) + int(round(1.0 / ts))
    window = slice(start, start + int(round(2.0 / ts)))
    rt.reset()  # the estimator switched on afresh
    out = rt.run({key: np.asarray(v)[window] for key, v in run.log.inputs().items()})
    truth = run.log.extra["qd_true"][window]
    bad = np.flatnonzero(np.any(np.abs(out["qd_hat"] - truth) > tol * SWITCH_ON_SPEED, axis=1))
    axis = min(1, rt.dof - 1)
    curve, true_curve = out["qd_hat"][:, axis].copy(), truth[:, axis].copy()
    if len(bad) == 0:
        return 0.0, curve, true_curve
    if bad[-1] >= len(truth) - 1:
        return None, curve, true_curve
    return float((bad[-1] + 1) * ts), curve, true_curve


def tuning_faults(setup: Setup, trajectory: Trajectory) -> np.ndarray | None:
    """The lost samples the tuning runs see: the fault case's (another draw than the test's) with
    ``tune_faults``, else none."""
    return fault_mask(replace(setup, seed=setup.seed + 1), trajectory.q.shape) if setup.tune_faults else None


def grid_score(setup: Setup, spec: EstimatorChoice) -> float:
    """The tuning run's ISE of one integer-gain variant (inf if the loop diverges); for executors."""
    rt = pipeline(setup, spec)
    motion = tuning_trajectory(setup)
    try:
        run = simulate(rt, motion, true_params=plant_params(rt, setup), valid=tuning_faults(setup, motion))
        value = float(run.ise_velocity.sum())
    except SimulationError:
        return float("inf")
    return value if np.isfinite(value) else float("inf")


def grid_search(setup: Setup, name: str, executor: Executor, progress: Progress) -> tuple[EstimatorChoice, list[float]]:
    """Liu et al.'s grid search of an integer-gain filter: every variant of its registered grid (each its own
    generated pipeline) on the tuning motion, in parallel through ``executor``."""
    specs = [parse_estimator(text) for text in registry.estimators()[name].grid]
    futures = {executor.submit(grid_score, setup, s): k for k, s in enumerate(specs)}
    scores = [float("inf")] * len(specs)
    for done, fu in enumerate(as_completed(futures), 1):
        scores[futures[fu]] = fu.result()
        progress(name, done, len(specs), f"grid {done}/{len(specs)}")
    if not np.any(np.isfinite(scores)):
        raise SimulationError(f"{name}: every grid variant made the closed loop diverge")
    return specs[int(np.argmin(scores))], scores


def evaluate_one(setup: Setup, request: EstimatorRequest, progress: Progress, executor: Executor) -> Result:
    """One estimator: a registered name (its default, paper or tuned variant) or a variant with its
    options (evaluated as given)."""
    test = test_trajectory(setup)
    history: list[float] = []
    name, base, given = request.label, request.name, request.given
    spec = given or variant(setup, base)
    if setup.tune and given is None and registry.estimators()[base].grid:  # integer gains: grid search
        spec, history = grid_search(setup, base, executor, progress)
    rt = pipeline(setup, spec)
    gains: dict[str, Any] = {"estimator": spec.label}
    if setup.tune and tuned(base):
        genes = gain_space(base, rt.dof)
        motion = tuning_trajectory(setup)
        problem = Problem(
            pipeline_source(setup, spec),
            rt.config.to_dict(),
            genes,
            motion,
            valid=tuning_faults(setup, motion),
            true_params=plant_params(rt, setup),
        )
        n_gen = setup.generations
        res: TuneResult = tune(
            problem,
            GaSettings(generations=n_gen),
            seed=setup.seed,
            executor=executor,
            progress=lambda g, n, c: progress(name, g, n + 2, f"generation {g}/{n}, best ISE {c:.4g}"),
        )
        apply_genome(rt, genes, res.genome)
        history = res.best
        gains["evaluations"] = res.evaluations
    gains.update({f"est.{k}": v for k, v in rt.config.designed.items()})  # e.g. kalman's q_var
    total = (setup.generations + 2) if setup.tune and tuned(base) else 2
    if tuned(base):
        for key in rt.config.keys():
            if key.startswith("est."):
                gains.setdefault(key, np.asarray(rt.config[key]).tolist())
    config = rt.config.to_dict()
    progress(name, total - 2, total, "test trajectory")
    curves: dict[str, np.ndarray] = {}
    per_axis: dict[str, list[float]] = {}
    axis = setup.fault_axis
    try:
        run = simulate(rt, test, true_params=plant_params(rt, setup))
        ise_v, ise_t = float(run.ise_velocity.sum()), float(run.ise_tracking.sum())
        per_axis = {"ise_velocity": run.ise_velocity.tolist(), "ise_tracking": run.ise_tracking.tolist()}
        err = run.log.extra["qd_true"] - run.out["qd_hat"]
        curves["time"] = test.time
        curves["cumulative_ise"] = np.cumsum(np.sum(err * err, axis=1)) * setup.sample_period
        curves["qd_true"], curves["qd_hat"] = run.log.extra["qd_true"][:, axis], run.out["qd_hat"][:, axis]
    except SimulationError:
        ise_v = ise_t = float("inf")
    progress(name, total - 1, total, "lost samples, switch-on")
    for key, value in config.items():
        rt.config[key] = value
    try:
        bad = simulate(rt, test, true_params=plant_params(rt, setup), valid=fault_mask(setup, test.q.shape))
        faulty = float(bad.ise_velocity.sum())
        per_axis["ise_faulty"] = bad.ise_velocity.tolist()
        curves["qd_hat_faulty"], curves["qd_true_faulty"] = (
            bad.out["qd_hat"][:, axis],
            bad.log.extra["qd_true"][:, axis],
        )
    except SimulationError:
        faulty = float("inf")
    try:
        conv, curves["switch_on"], curves["switch_on_true"] = convergence_time(rt, setup)
    except SimulationError:
        conv = None
    progress(name, total, total, "done")
    file = (
        f"{spec.label.replace(':', '_').replace(',', '_').replace('=', '')}.config.json"
        if given
        else f"{name}.config.json"
    )
    return Result(name, ise_v, ise_t, conv, faulty, gains, history, curves, per_axis, rt.config, file)


@dataclass
class Evaluation:
    """The JSON document of an evaluation and the runs behind it (their curves feed the figures)."""

    doc: dict[str, Any]
    results: list[Result]


def evaluate(
    setup: Setup,
    estimators: tuple[EstimatorRequest, ...] = ESTIMATORS,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> Evaluation:
    """Evaluate (and with setup.tune, tune) the estimators (each result holds its tuned config); GA
    generations and grid variants go through ``executor`` (default: a process pool on every core).
    ``progress(estimator, done, total, info)`` is called as work completes. Infinite costs (a diverged
    loop) are reported as null."""
    problems = setup.problems()
    if problems:
        raise ValueError("; ".join(problems))
    t0 = time.perf_counter()
    report: Progress = progress or (lambda *_: None)
    own = executor is None
    ex = executor or ProcessPoolExecutor(max_workers=os.cpu_count() or 1)
    try:
        results = [evaluate_one(setup, request, report, ex) for request in estimators]
    finally:
        if own:
            ex.shutdown()
    doc = {
        "setup": {
            "robot": setup.robot,
            "resolution_mdeg": setup.resolution_mdeg,
            "rate_hz": setup.rate_hz,
            "faults": setup.faults,
            "fault_axis": setup.fault_axis,
            "seed": setup.seed,
            "model_error": setup.model_error,
            "gains": setup.gains,
            "tuned": setup.tune,
            "tuned_under_faults": setup.tune_faults,
            "trajectory": test_trajectory(setup).name,
            "controller": f"{setup.loop.controller} "
            + ", ".join(f"{k} = {_shown(v)}" for k, v in setup.loop.pinned.items()),
        },
        "estimators": {
            r.name: {
                "ise_velocity": r.ise_velocity,
                "ise_tracking": r.ise_tracking,
                "convergence_s": r.convergence_s,
                "ise_faulty": r.ise_faulty,
                "per_axis": r.per_axis,
                "gains": r.gains,
                "history": r.history,
            }
            for r in results
        },
        "seconds": time.perf_counter() - t0,
    }
    return Evaluation(finite(doc), results)


SWITCH_ON_SPEED = 0.3  # rad/s: the constant velocity of the switch-on test (Fig. 7)
