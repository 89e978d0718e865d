"""Liu et al. reproduced: the seven estimators in the paper's loop (host_tools.studies.paper_setups.
VELOCITY_ESTIMATORS) on the simulated LWA-4P.

- quick: the paper's own tuned gains (Tables 4, 7, 8) at its three set-ups, normal, with 10 % of
  axis 6's samples lost and switched on while moving (Table 6, Figs. 7, 9); the derivative filters of
  Table 5; Experiment 1's recorded estimator outputs against ours replayed over its positions (the
  data package's Experiment1_data.mat, skipped with a note when absent); with model error: the
  paper's gains at 10 mdeg, 125 Hz on a plant whose parameters are all MODEL_ERROR larger than the
  model the controller and the observers use (no claim of Liu et al.'s: our robustness check); the
  data package's two runs of the test trajectory recorded with FinDiff and with MovAv in the loop,
  every estimator replayed over their counts with the description's defaults and with Table 8's gains
  (Liu et al. have no table of them: ours beside Fig. 9's ranking);
- full: also our GA tuning at the three set-ups, and under the fault case (Table 6's "retuned").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from typing import Any

import numpy as np

from codegen.blocks.options import estimator_choice
from host_tools.bindings.source import RobotSource
from host_tools.data.logs import Log
from host_tools.data.mat_logs import import_mat
from host_tools.studies import paper_setups
from host_tools.studies.evaluate import ESTIMATORS, LIU_SETUPS, EstimatorRequest, Setup, evaluate
from host_tools.studies.log_estimation import (
    Estimate,
    estimate_all,
    recorded_comparison,
    recorded_outputs,
)
from host_tools.studies.reproduce.liu_paper import GAINS_TABLE, LABELS, TABLE5, TABLE6, registered
from host_tools.studies.reproduce.records import Inputs, Num, Table, Text, Tier, text

ROBOT = "schunk_lwa4p"  # the paper's arm: the bundled description of the data package's model
EXPERIMENT1 = "lwa4p/Experiment1_data.mat"  # in the shared data folder
# s: Experiment 1 scored from 1 s after the recorded estimators' switch-on (t = 15 s) to joint 3's
# current clipping at 9000 mA (t = 31.2 s), after which the arm leaves its trajectory
WINDOW = (16.0, 31.0)
# in the shared data folder: the test trajectory recorded at 1 mdeg, 250 Hz with FinDiff and with MovAv
# in the loop (its README), by the name the tables give them
RECORDED_RUNS = {"FinDiff run": "lwa4p/4ms_FinDiff_run1.mat", "MovAv run": "lwa4p/4ms_MovAv_run1.mat"}
RUNS_SETUP = LIU_SETUPS[2]  # the runs' 1 mdeg, 250 Hz: Table 8's gains
RUN_GAINS = {"default": "default", "paper": "T8"}  # the gain sets replayed, as the table heads them
# Table 5's filters as generated variants (Table 5's MovAv n = 2 samples is the block's p)
FILTER_OPTIONS: dict[str, dict[str, float]] = {
    "MovAv": {"p": 2},
    "LSF1/4": {"n": 4, "p": 1},
    "LSF1/8": {"n": 8, "p": 1},
    "LSF2/8": {"n": 8, "p": 2},
    "LSF3/8": {"n": 8, "p": 3},
    "BDE2": {"n": 2},
    "BDE3": {"n": 3},
    "TSE3": {"n": 3},
}
GAINS = {"paper": "Liu et al.'s gains", "ga": "GA"}  # the simulated results' gain sets
FIRST = LIU_SETUPS[0]  # 10 mdeg, 125 Hz: Tables 4, 5 and 6's set-up
# the simulated plant's parameters (inertial and friction) = the model's x (1 + MODEL_ERROR): the size
# of Birjandi & Haddadin's eq. 22 model error (±10 %), all in one direction, so that every model-based
# term (computed torque, nlHG's and SliMod's dynamics) is off by the same sign
MODEL_ERROR = 0.1


def setup_name(setup: tuple[float, float]) -> str:
    return f"{setup[0]:g} mdeg, {setup[1]:g} Hz"


@dataclass(frozen=True)
class Replayed:
    """One estimator over Experiment 1 (ISE in (rad/s)² s against Liu et al.'s offline ground truth);
    the recorded ones None for an estimator the recording does not hold."""

    spec: str
    ise: float  # from 1 s after the switch-on to the end
    window: float  # over WINDOW
    recorded_ise: float | None
    recorded_window: float | None
    max_difference: float | None  # rad/s, ours against the recording, from 1 s after the switch-on


def options(doc: dict[str, Any], label: str) -> str:
    """The options of the variant an evaluation ran, e.g. ``p = 2`` ('' for none)."""
    spec = str(doc["estimators"][registered(label)]["gains"]["estimator"])
    return spec.partition(":")[2].replace("=", " = ").replace(",", ", ")


@dataclass(frozen=True)
class LiuResults:
    # gain set (GAINS) -> (resolution, rate) -> the evaluation's JSON document
    simulated: Mapping[str, Mapping[tuple[float, float], dict[str, Any]]]
    filters: dict[str, Any]  # Table 5's filters' evaluation document, estimators in FILTER_OPTIONS' order
    experiment1: Mapping[str, Replayed] = field(default_factory=dict)  # by LABELS; empty: not replayed
    missing: str = ""  # why Experiment 1 was not replayed
    retuned: dict[str, Any] | None = None  # full: the GA under the fault case, 10 mdeg, 125 Hz
    model_error: dict[str, Any] | None = None  # the paper's gains at FIRST on the plant x (1 + MODEL_ERROR)
    # RECORDED_RUNS' name -> gain set (RUN_GAINS) -> label -> (the generated variant, ISE (rad/s)² s)
    recorded_runs: Mapping[str, Mapping[str, Mapping[str, tuple[str, float]]]] = field(default_factory=dict)

    def ise(self, gains: str, setup: tuple[float, float], what: str = "ise_velocity") -> dict[str, float | None]:
        """One figure of every estimator at a simulated set-up, by Liu et al.'s names."""
        doc = self.simulated[gains][setup]["estimators"]
        return {label: doc[registered(label)][what] for label in LABELS}

    def variant(self, gains: str, setup: tuple[float, float], label: str) -> str:
        return options(self.simulated[gains][setup], label)

    def model_error_ise(self, what: str) -> dict[str, float | None]:
        doc = (self.model_error or {}).get("estimators", {})
        return {label: doc[registered(label)][what] for label in LABELS}

    def retuned_ise(self, what: str) -> dict[str, float | None]:
        doc = (self.retuned or {}).get("estimators", {})
        return {label: doc[registered(label)][what] for label in LABELS if registered(label) in doc}


def _evaluate(
    setup: Setup, inputs: Inputs, what: str, requests: tuple[EstimatorRequest, ...] = ESTIMATORS
) -> dict[str, Any]:
    def progress(name: str, done: int, total: int, info: str) -> None:
        tuning = info.startswith(("generation", "grid"))  # a line per estimator, and per GA generation
        inputs.progress(f"Liu et al.: {what}: {name}" + (f", {info}" if tuning else ""))

    return evaluate(setup, requests, progress=progress, executor=inputs.executor).doc


def simulated(
    source: RobotSource, inputs: Inputs, gains: str, setups: tuple[tuple[float, float], ...] = LIU_SETUPS
) -> dict[tuple[float, float], dict[str, Any]]:
    """The seven at the set-ups (mdeg, Hz) with the paper's gains or (``ga``) tuned by our GA first."""
    loop = paper_setups.VELOCITY_ESTIMATORS  # read here: the record the study runs is the module's
    return {
        s: _evaluate(
            Setup(
                source,
                resolution_mdeg=s[0],
                rate_hz=s[1],
                gains="paper" if gains == "paper" else "default",
                tune=gains == "ga",
                loop=loop,
            ),
            inputs,
            f"{setup_name(s)}, {GAINS[gains]}",
        )
        for s in setups
    }


def with_model_error(source: RobotSource, inputs: Inputs) -> dict[str, Any]:
    """The seven with the paper's gains at 10 mdeg, 125 Hz on a plant MODEL_ERROR heavier than the model."""
    setup = Setup(
        source,
        resolution_mdeg=FIRST[0],
        rate_hz=FIRST[1],
        gains="paper",
        model_error=MODEL_ERROR,
        loop=paper_setups.VELOCITY_ESTIMATORS,
    )
    return _evaluate(setup, inputs, f"{setup_name(FIRST)}, plant x {1 + MODEL_ERROR:g}")


def filters(source: RobotSource, inputs: Inputs) -> dict[str, Any]:
    """Table 5's derivative filters as given (no tuning), 10 mdeg, 125 Hz."""
    requests = tuple(
        EstimatorRequest(registered(label), estimator_choice(registered(label), dict(options)))
        for label, options in FILTER_OPTIONS.items()
    )
    setup = Setup(source, resolution_mdeg=FIRST[0], rate_hz=FIRST[1], loop=paper_setups.VELOCITY_ESTIMATORS)
    return _evaluate(setup, inputs, "Table 5's filters", requests)


def experiment1(source: RobotSource, inputs: Inputs) -> tuple[dict[str, Replayed], str]:
    """Ours (Table 8's gains: the run's 1 mdeg at 250 Hz) replayed over Experiment 1, against the
    outputs the recording holds; ({}, why) when the data package is absent."""
    path = inputs.data / EXPERIMENT1
    if not path.is_file():
        return {}, f"Experiment 1 not replayed: {path} is absent (Liu et al.'s data package, doi:10.21227/tse3-h285)"
    inputs.progress("Liu et al.: Experiment 1, replaying the estimators")
    log = import_mat(path, source.robot())
    recorded = recorded_outputs(log)
    window = (log.time >= WINDOW[0]) & (log.time <= WINDOW[1])
    out = {}
    by_name = {e.name: e for e in estimate_all(log, source, "paper")}
    for label in LABELS:
        e = by_name[registered(label)]
        assert e.truth is not None  # estimate() always returns its ground truth

        def ise(qd: np.ndarray, truth: np.ndarray = e.truth) -> float:
            err = (qd - truth)[window]
            return float(np.sum(err * err) * log.sample_period)

        compared = recorded_comparison(log, e)
        rec = recorded.get(e.name)
        out[label] = Replayed(
            e.spec,
            float(e.ise.sum()),
            ise(e.qd_hat),
            None if compared is None else compared["ise"],
            None if rec is None else ise(rec),
            None if compared is None else compared["max_abs_difference"],
        )
    return out, ""


ByRun = dict[str, dict[str, dict[str, tuple[str, float]]]]  # run -> gain set -> label -> (variant, ISE)


def recorded_runs(source: RobotSource, inputs: Inputs) -> tuple[ByRun, str]:
    """Every estimator replayed over RECORDED_RUNS' counts (the generated encoder read, computed torque
    and the model-based observers fed the logged torque, as `manipgen evaluate --log`) with the
    default and Table 8's gains; ISE against Liu et al.'s offline ground truth. ({}, why) when a run
    is absent."""
    absent = [str(inputs.data / f) for f in RECORDED_RUNS.values() if not (inputs.data / f).is_file()]
    if absent:
        return {}, f"the recorded runs not replayed: {', '.join(absent)} absent (Liu et al.'s data package)"
    out: ByRun = {}
    for name, file in RECORDED_RUNS.items():
        inputs.progress(f"Liu et al.: the {name}, replaying the estimators")
        log = import_mat(inputs.data / file, source.robot())
        out[name] = {
            gains: {label: (e.spec, float(e.ise.sum())) for label, e in zip(LABELS, _replay(log, source, gains))}
            for gains in RUN_GAINS
        }
    return out, ""


def _replay(log: Log, source: RobotSource, gains: str) -> list[Estimate]:
    """The seven (LABELS' order) over ``log`` with the default or the paper's gains."""
    requests = tuple(EstimatorRequest(registered(label)) for label in LABELS)
    return estimate_all(log, source, gains, requests)


def compute(tier: Tier, inputs: Inputs) -> LiuResults:
    source = inputs.robots[ROBOT]
    runs = {"paper": simulated(source, inputs, "paper")}
    replayed, missing = experiment1(source, inputs)
    retuned = None
    if tier == "full":
        runs["ga"] = simulated(source, inputs, "ga")
        loop = paper_setups.VELOCITY_ESTIMATORS
        setup = Setup(source, resolution_mdeg=FIRST[0], rate_hz=FIRST[1], tune=True, tune_faults=True, loop=loop)
        retuned = _evaluate(setup, inputs, "10 mdeg, 125 Hz, GA under the fault case")
    errors = with_model_error(source, inputs)
    on_runs, runs_missing = recorded_runs(source, inputs)
    missing = "; ".join(m for m in (missing, runs_missing) if m)
    return LiuResults(runs, filters(source, inputs), replayed, missing, retuned, errors, on_runs)


def _with_variant(value: float | None, options: str) -> Text:
    return text(Num(value), f" ({options})" if options else "")


def setups_table(r: LiuResults, gains: str, tier: Tier) -> Table:
    """The seven at the three set-ups beside Table 6: normal, faulty, switch-on, Fig. 9's set-ups."""
    others = LIU_SETUPS[1:]
    paper_gains = gains == "paper"
    heads = {s: f"{setup_name(s)}: " + (f"{GAINS_TABLE[s]} gains" if paper_gains else "GA") for s in LIU_SETUPS}
    columns = (
        "estimator",
        heads[FIRST],
        "Liu et al. Table 6",
        "10 % lost on axis 6",
        "Liu et al. Table 6, faulty",
        "switch-on (s)",
        "tracking ISE (rad² s)",
        *(heads[s] for s in others),
    )
    normal, faulty, switch, tracking = (
        r.ise(gains, FIRST, w) for w in ("ise_velocity", "ise_faulty", "convergence_s", "ise_tracking")
    )
    rows = []
    for label in LABELS:
        rows.append(
            (
                label,
                (
                    _with_variant(normal[label], r.variant(gains, FIRST, label)),
                    text(Num(TABLE6[label].normal, None)),
                    text(Num(faulty[label])),
                    text(Num(TABLE6[label].faulty, None)),
                    text(Num(switch[label])),
                    text(Num(tracking[label])),
                    *(_with_variant(r.ise(gains, s)[label], r.variant(gains, s, label)) for s in others),
                ),
            )
        )
    what = "Liu et al.'s own tuned gains (Tables 4, 7, 8)" if paper_gains else "gains tuned by our GA (Table 3)"
    title = (
        f"ISE of the velocity estimate, (rad/s)² s summed over the six joints, in simulation with {what}; "
        "Liu et al.'s Table 6 was measured on the robot (10 mdeg, 125 Hz, Table 4 gains). Switch-on: the "
        "time until a fresh estimator stays within 5 % of 0.3 rad/s (Fig. 7; — not within 2 s)."
    )
    return Table("simulated" if paper_gains else "tuned", tier, title, columns, tuple(rows))


def filters_table(r: LiuResults) -> Table:
    doc = r.filters["estimators"]
    rows = []
    for label, entry in zip(FILTER_OPTIONS, doc.values()):
        rows.append(
            (
                label,
                (
                    text(str(entry["gains"]["estimator"])),
                    text(Num(entry["ise_velocity"])),
                    text(Num(TABLE5[label], None)),
                    text(Num(entry["ise_faulty"])),
                ),
            )
        )
    title = "Liu et al. Table 5's derivative filters in simulation, 10 mdeg, 125 Hz, ISE (rad/s)² s."
    columns = ("filter", "variant", "ISE", "Liu et al. Table 5", "ISE, 10 % lost on axis 6")
    return Table("filters", "quick", title, columns, tuple(rows))


def experiment1_table(r: LiuResults) -> Table:
    rows = tuple(
        (
            label,
            (
                text(e.spec),
                text(Num(e.max_difference, 2)),
                text(Num(e.ise)),
                text(Num(e.recorded_ise)),
                text(Num(e.window)),
                text(Num(e.recorded_window)),
            ),
        )
        for label, e in r.experiment1.items()
    )
    title = (
        "Experiment 1 (1 mdeg, 250 Hz): ours with Table 8's gains replayed over the recorded positions, "
        "against the recorded outputs of Liu et al.'s estimators; ISE (rad/s)² s against Liu et al.'s "
        f"offline ground truth from {WINDOW[0]:g} s, and over {WINDOW[0]:g}-{WINDOW[1]:g} s (— : not recorded)."
    )
    columns = (
        "estimator",
        "ours",
        "max |ours − recorded| (rad/s)",
        "ISE ours",
        "ISE recorded",
        f"{WINDOW[0]:g}-{WINDOW[1]:g} s ours",
        f"{WINDOW[0]:g}-{WINDOW[1]:g} s recorded",
    )
    return Table("experiment1", "quick", title, columns, rows)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def model_error_table(r: LiuResults) -> Table:
    """The paper's gains at 10 mdeg, 125 Hz with the exact model and on the plant x (1 + MODEL_ERROR)."""
    exact, exact_faulty = r.ise("paper", FIRST), r.ise("paper", FIRST, "ise_faulty")
    wrong, wrong_faulty = r.model_error_ise("ise_velocity"), r.model_error_ise("ise_faulty")
    tracking = r.model_error_ise("ise_tracking")
    rows = tuple(
        (
            label,
            (
                text(Num(exact[label])),
                text(Num(wrong[label])),
                text(Num(_ratio(wrong[label], exact[label]), 2)),
                text(Num(exact_faulty[label])),
                text(Num(wrong_faulty[label])),
                text(Num(tracking[label])),
            ),
        )
        for label in LABELS
    )
    scale = f"{1 + MODEL_ERROR:g}"
    title = (
        f"With model error (ours; Liu et al. have no such table): ISE of the velocity estimate, (rad/s)² s, "
        f"{setup_name(FIRST)}, Table 4's gains, the simulated arm's parameters (inertial and friction) × {scale} "
        "those of the model the controller and the model-based observers (nlHG, SliMod) use."
    )
    columns = (
        "estimator",
        "exact model",
        f"plant × {scale}",
        "ratio",
        "10 % lost on axis 6, exact model",
        f"10 % lost on axis 6, plant × {scale}",
        f"tracking ISE (rad² s), plant × {scale}",
    )
    return Table("model_error", "quick", title, columns, rows)


def retuned_table(r: LiuResults) -> Table:
    ga, ga_faulty = r.ise("ga", FIRST), r.ise("ga", FIRST, "ise_faulty")
    normal, faulty = r.retuned_ise("ise_velocity"), r.retuned_ise("ise_faulty")
    rows = tuple(
        (
            label,
            (
                _with_variant(ga[label], r.variant("ga", FIRST, label)),
                _with_variant(normal[label], options(r.retuned or {}, label)),
                text(Num(ga_faulty[label])),
                text(Num(faulty[label])),
                *(text(Num(v, None)) for v in astuple(TABLE6[label])),
            ),
        )
        for label in LABELS
    )
    title = (
        "Retuned under faults (Table 6, Fig. 8B), 10 mdeg, 125 Hz: our GA without and with 10 % of axis 6's "
        "samples lost on the tuning motion, each evaluated normal and faulty, beside Table 6."
    )
    columns = (
        "estimator",
        "GA, normal",
        "retuned, normal",
        "GA, faulty",
        "retuned, faulty",
        "Liu et al. normal",
        "retuned normal",
        "faulty",
        "retuned faulty",
    )
    return Table("retuned", "full", title, columns, rows)


def _spec_cell(run: tuple[str, float]) -> Text:
    """The ISE, and the variant's options where it has any (``0.0163 (p = 2)``)."""
    spec, ise = run
    options = spec.partition(":")[2].replace("=", " = ").replace(",", ", ")
    return _with_variant(ise, options)


def recorded_runs_table(r: LiuResults) -> Table:
    """The default and Table 8's gains on each recorded run."""
    rows = tuple(
        (label, tuple(_spec_cell(r.recorded_runs[run][g][label]) for run in RECORDED_RUNS for g in RUN_GAINS))
        for label in LABELS
    )
    columns = ("estimator", *(f"{run}: {RUN_GAINS[g]}" for run in RECORDED_RUNS for g in RUN_GAINS))
    title = (
        f"Liu et al.'s two recorded runs of the test trajectory ({setup_name(RUNS_SETUP)}, recorded with FinDiff "
        "and with MovAv in the loop), every estimator replayed over the recorded counts with the description's "
        "defaults (default) and Liu et al.'s Table 8 gains (T8): ISE (rad/s)² s summed over the six joints against "
        "Liu et al.'s offline ground truth (ours: the paper has no table of these runs)."
    )
    return Table("recorded_runs", "quick", title, columns, rows)


def tables(r: LiuResults, tier: Tier) -> tuple[Table, ...]:
    out = [setups_table(r, "paper", "quick"), filters_table(r)]
    if r.experiment1:
        out.append(experiment1_table(r))
    if r.model_error is not None:
        out.append(model_error_table(r))
    if r.recorded_runs:
        out.append(recorded_runs_table(r))
    if tier == "full":
        out += [setups_table(r, "ga", "full"), retuned_table(r)]
    return tuple(out)


def notes(r: LiuResults) -> tuple[str, ...]:
    return (r.missing,) if r.missing else ()
