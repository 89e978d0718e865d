"""The model `manipgen thresholds` designs with (issue #44): the description's (or a given config's), or
one identified on the design run itself (several runs: on the runs together).

A residual is the model's error plus the contact, so a better model lowers the thresholds: on the
LWA-4P, designed on one run, the description's model needs 56 N m over the six joints where a model
identified on that run needs 38 (docs/real-data.md). But a model identified on a run has seen every
part of it, so its residual there understates what it leaves on another run, and a margin taken
from that run's held-out blocks would be too small. Here each held-out block gets its own model,
identified on the run without that block (cross-fitting, as identify chooses its friction terms on
held-out blocks): the block's ratio is measured on data its model never saw
(host_tools.studies.thresholds.design_across's ``folds``). The thresholds are those of the model
identified on the whole run, with that margin. With several design runs the held-out part is a run
(design_across holds each run out in turn): the model is identified on the runs laid end to end,
and once per run on the others.

Identification runs identify's defaults for a recorded run (recorded_run_settings: the friction
terms and the velocity chosen per joint on held-out blocks of the data), once on the whole run and
once per block. ``auto`` designs with both models and keeps the one with the lower sum of mean
thresholds: both margins come from held-out data, so the comparison does not favour the model
fitted to the run."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.rt import config_terms
from host_tools.data.checks import TIMING_SETTLE_DESIGN, TIMING_SETTLE_FIT, LogChecks, with_settling
from host_tools.data.csvdata import Samples
from host_tools.data.logs import Log
from host_tools.identification.input_checks import InputChecks
from host_tools.identification.pipeline import recorded_run_settings, samples_of
from host_tools.identification.run import IdentificationResult, identify_run
from host_tools.studies.thresholds import Designed, DesignSettings, Recording, design_blocks

MODELS = ("auto", "identified", "description")  # manipgen thresholds --model
# why auto keeps a model-adaptive observer on the description's model: it adapts the parameters'
# error online from the nominal model, and with an identified nominal its residual did not carry over
# to another motion (LWA-4P, designed on one run, checked on Liu et al.'s Experiment 1: the direct
# form's false-alarm samples 2 and 3 with the description's model, 1353 and 3048 with the
# identified one; docs/real-data.md)
ADAPTIVE_NOTE = "a model-adaptive observer adapts the description's model on line (--model identified to override)"
# why auto keeps --static on the description's model: one constant per joint, the largest |r| the
# design saw times the margin, rests on the joint's quietest fit; with an identified model a joint
# the fit explains almost wholly gets a threshold the next motion's friction error exceeds (the
# shifted-sigmoid probe at twice its friction, bench/identify_probes.py: 347 and 525 false-alarm
# samples with the identified model, none with the description's; the fitted shape held on every run)
STATIC_NOTE = "--static: a constant threshold keeps the description's model (--model identified to override)"


@dataclass(frozen=True)
class IdentifiedModel:
    """A model identified on the design runs, and one per fold: one run, each held-out block (fitted
    without that block); several runs, each run (fitted on the others)."""

    config: dict[str, list[float]]  # the whole data's model: its run-time fields (IdentificationResult.config)
    folds: tuple[dict[str, list[float]], ...]  # per held-out block (design_blocks) or run, the model fitted without it
    terms: tuple[tuple[str, ...], ...]  # per joint, the friction terms any of them sets (the pipeline to generate)
    forms: tuple[str, ...]  # per joint, the whole data's friction form (identify's choice)
    velocity: str  # the velocity the whole data's fit used (recorded or estimate)
    seconds: float
    runs: int = 1  # the design runs it was identified on (several: one fold per run)


def identify_for_design(
    robot: Robot,
    runs: Recording | Sequence[Recording],
    settings: DesignSettings,
    stage: Callable[[str], None] = lambda _: None,
) -> IdentifiedModel:
    """identify's defaults for a recorded run on ``runs`` (their flagged samples left out unless
    ``settings.keep_flagged``), then once per fold without it: one run, each held-out block of
    ``settings``; several, each run (design_across holds each run out in turn)."""
    t0 = time.perf_counter()
    ident = recorded_run_settings(robot)
    data: Log | Samples
    runs = [runs] if isinstance(runs, Recording) else list(runs)
    several = len(runs) > 1
    ts = runs[0].log.sample_period
    if several:
        data, base, groups = _laid_end_to_end(robot, runs, settings.keep_flagged)
        what = [f"run {i + 1} of {len(groups)} ({r.checks.source})" for i, r in enumerate(runs)]
    else:
        run = runs[0]
        data = run.log if run.samples is None else run.samples
        design = None if settings.keep_flagged else run.checks.left_out(ts, TIMING_SETTLE_DESIGN)  # design_on's
        groups = design_blocks(len(run.log), int(round(settings.skip / ts)), design, settings.blocks)
        what = [f"held-out block {b + 1} of {len(groups)}" for b in range(len(groups))]
        base = np.zeros(len(run.log), bool) if settings.keep_flagged else run.checks.left_out(ts, TIMING_SETTLE_FIT)
    source = ", ".join(r.checks.source for r in runs)

    def fitted(left_out: np.ndarray, fit: str) -> IdentificationResult:
        given = LogChecks(source, [], left_out, settled=True)
        try:
            return identify_run(robot, data, None, None, ident, checks=InputChecks(given))
        except ValueError as err:  # numpy's LinAlgError is one: a singular fit says only "Singular matrix"
            raise ValueError(f"identifying {fit}: {err}") from None

    stage(f"identifying the model on the {'runs' if several else 'run'} (1 + {len(groups)} held-out fits) ...")
    whole = fitted(base, "the runs together" if several else "the whole run")
    folds = []
    for held, name in zip(groups, what):
        stage(f"identifying the model without {name} ...")
        block = np.zeros(len(base), bool)
        block[held] = True  # left out with the filters' settling around it, as a finding of the arm's
        left_out = base | with_settling(block, ts)
        folds.append(fitted(left_out, f"the {'runs' if several else 'run'} without {name}").config())
    config = whole.config()
    sets = [config_terms(c, robot.dof) for c in (config, *folds)]
    terms = tuple(tuple(sorted({t for s in sets for t in s[j]})) for j in range(robot.dof))
    sel = whole.reported.selection
    forms = tuple(sel.forms(whole.reported.names)) if sel is not None else ("the description's friction",) * robot.dof
    return IdentifiedModel(
        config,
        tuple(folds),
        terms,
        forms,
        str(whole.velocity.get("used", whole.settings.velocity)),
        time.perf_counter() - t0,
        len(groups) if several else 1,
    )


def _laid_end_to_end(
    robot: Robot, runs: Sequence[Recording], keep_flagged: bool
) -> tuple[Samples, np.ndarray, list[np.ndarray]]:
    """Several runs as one run for identify: their samples one after the other; the samples to leave
    out of the fit (each run's, InputChecks.left_out's; none with ``keep_flagged``) and each junction
    with the filters' settling either side, so no derivative is taken across it; and each run's
    samples in the joined run."""
    samples = [samples_of(robot, r.log if r.samples is None else r.samples) for r in runs]
    periods = {s.sample_period for s in samples}
    if len(periods) > 1:
        raise ValueError(
            "the runs' sample periods differ ("
            + ", ".join(f"{r.checks.source}: {s.sample_period * 1e3:g} ms" for r, s in zip(runs, samples))
            + "): identify fits one sample period"
        )
    ts = samples[0].sample_period
    left_out, junctions = [], []
    for i, (r, s) in enumerate(zip(runs, samples)):
        if len(r.checks.flagged) != len(s.q):
            raise ValueError(f"{r.checks.source}: {len(s.q)} samples but {len(r.checks.flagged)} checked")
        left_out.append(np.zeros(len(s.q), bool) if keep_flagged else r.checks.left_out(ts, TIMING_SETTLE_FIT))
        junctions.append(np.arange(len(s.q)) == 0 if i > 0 else np.zeros(len(s.q), bool))
    velocities = [s.qd for s in samples]
    joined = Samples(
        samples[0].sample_period,
        np.concatenate([s.q for s in samples]),
        np.concatenate([s.tau for s in samples]),
        None if any(v is None for v in velocities) else np.concatenate([v for v in velocities if v is not None]),
    )
    ends = np.cumsum([0] + [len(s.q) for s in samples])
    mask = np.concatenate(left_out) | with_settling(np.concatenate(junctions), ts)
    return joined, mask, [np.arange(a, b) for a, b in zip(ends[:-1], ends[1:])]


@dataclass(frozen=True)
class ModelChoice:
    """Which model the thresholds were designed with, and why (the report's ``model``)."""

    asked: str  # --model
    used: str  # "identified" or "description"
    sums: dict[str, float]  # per model designed: the sum over the joints of the mean threshold (N m)
    margins: dict[str, float]  # per model designed: its margin (the largest of the joints')
    identified: IdentifiedModel | None
    note: str  # why identification was not tried, or failed ("" otherwise)

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "asked": self.asked,
            "used": self.used,
            "rule": "auto: the model whose design has the lower sum of mean thresholds (both margins from "
            "held-out data: the identified model's blocks each from a model fitted without them)",
            "threshold_mean_sum": self.sums,
            "margin": self.margins,
        }
        if self.identified is not None:
            m = self.identified
            doc["identified"] = {
                "friction_forms": list(m.forms),
                "velocity": m.velocity,
                "runs": m.runs,
                "held_out_fits": len(m.folds),
                "held_out": "runs" if m.runs > 1 else "blocks",
                "seconds": m.seconds,
            }
        if self.note:
            doc["note"] = self.note
        return doc


def choose(asked: str, designs: dict[str, Designed], identified: IdentifiedModel | None, note: str) -> ModelChoice:
    """The design to keep of ``designs`` (by model): the asked one, or with ``auto`` the lower sum of
    mean thresholds (the description's on a tie)."""
    sums = {k: float(d.design.threshold_mean.sum()) for k, d in designs.items()}
    used = asked if asked != "auto" else min(sorted(sums, key=lambda k: k != "description"), key=lambda k: sums[k])
    return ModelChoice(asked, used, sums, {k: d.design.margin for k, d in designs.items()}, identified, note)
