"""Brunot et al. (2019) reproduced: IDIM-LS, DIDIM, CLIE and CLOE on a synthetic closed-loop run of the
bundled ``ur5`` (its description is the truth), the loop of host_tools.identification.paper_setups.
BRUNOT_OUTPUT_ERROR, as `manipgen identify ur5 --synthetic --method all` runs it: the pid block as a
critically damped PD at 5 Hz, quantised encoders, 0.2 N m torque noise and an unmodelled disturbance,
every method from the CAD model 30 % off, exact sensitivities.

- quick: a 12 s run (12 000 samples; seed 2, the output-error tests' run);
- full: Brunot et al.'s size, 34.5 s (34 500 samples; seed 0, identify --synthetic's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from host_tools.identification.closed_loop_run import OESynthetic, identify_closed_loop, oe_data, synthetic_run
from host_tools.identification.least_squares import model
from host_tools.studies.reproduce.brunot_paper import OE_METHODS, PAPER_TABLE2, PAPER_TABLE3
from host_tools.studies.reproduce.records import Inputs, Num, Table, Text, Tier, text

ROBOT = "ur5"
RUNS: dict[Tier, OESynthetic] = {"quick": OESynthetic(duration=12.0, seed=2), "full": OESynthetic()}
METHODS = ("idim-ls", *OE_METHODS)


@dataclass(frozen=True)
class BrunotResults:
    """Per tier the identification's document (host_tools.identification.closed_loop_run's result as
    numbers: per method its Jacobian's singular values, errors, iterations, seconds, estimates)."""

    runs: dict[Tier, dict[str, Any]]

    def doc(self, tier: Tier) -> dict[str, Any]:
        return self.runs[tier]


def _document(result: Any) -> dict[str, Any]:
    """What the tables and claims read of a ClosedLoopResult, per method."""
    import numpy as np

    ref = result.results["idim-ls"]
    sigma = np.abs(ref.values) * ref.rsd / 100
    methods = {}
    for m, r in result.results.items():
        inside = np.abs(r.values - ref.values) <= 3 * sigma if r.names == ref.names else None
        wrong = r.truth_errors(result.truth)  # the synthetic run's: its description is the truth
        methods[m] = {
            "mu_max": r.mu_max,
            "mu_min": r.mu_min,
            "cond": r.cond,
            "iterations": r.iterations,
            "seconds": r.seconds,
            "rel_error_q": float(np.mean(r.rel_error_q)),
            "rel_error_tau": float(np.mean(r.rel_error_tau)),
            "outside_2sigma": float(np.mean(np.abs(r.autocorrelation[1:]) > r.bound)),
            "within_3sigma": None if inside is None or m == "idim-ls" else float(np.mean(inside)),
            "max_truth_error": float(wrong.max()),
            "median_truth_error": float(np.median(wrong)),
        }
    return {"samples": result.samples, "estimated": len(result.estimated), "methods": methods}


def run(tier: Tier, inputs: Inputs) -> dict[str, Any]:
    source = inputs.robots[ROBOT]
    robot = source.robot()
    opts = RUNS[tier]
    inputs.progress(f"Brunot et al. (2019): simulating {opts.duration:g} s of the closed loop")
    log, loop = synthetic_run(robot, opts)
    result = identify_closed_loop(
        source,
        oe_data(robot, log),
        loop,
        list(OE_METHODS),
        init_error=opts.init_error,
        seed=opts.seed,
        truth=model(robot).true_base(),
        stage=lambda what: inputs.progress(f"Brunot et al. (2019): {what}"),
    )
    return _document(result)


def compute(tier: Tier, inputs: Inputs) -> BrunotResults:
    runs: dict[Tier, dict[str, Any]] = {"quick": run("quick", inputs)}
    if tier == "full":
        runs["full"] = run("full", inputs)
    return BrunotResults(runs)


def paper(value: float) -> Num:
    return Num(value, None)


def where(tier: Tier) -> str:
    opts = RUNS[tier]
    return f"synthetic ur5 closed loop, {opts.duration:g} s (seed {opts.seed})"


def jacobian_table(d: dict[str, Any], tier: Tier) -> Table:
    rows = []
    for m in METHODS:
        r = d["methods"][m]
        theirs = PAPER_TABLE2.get(m)
        cells: tuple[Text, ...] = (
            text(Num(r["mu_max"])),
            text(Num(r["mu_min"])),
            text(Num(r["cond"], 4)),
            text(Num(r["iterations"], None)),
        )
        cells += (
            tuple(text(paper(v)) if isinstance(v, float | int) else text(v) for v in theirs)
            if theirs
            else (text("—"),) * 4
        )
        rows.append((m.upper() if m != "idim-ls" else "IDIM-LS", cells))
    title = (
        f"Brunot et al. (2019) Table 2 on ours ({where(tier)}): the singular values and condition number of each "
        "method's Jacobian at its solution, its iterations; the paper's from a Stäubli TX40 (34 500 samples, no "
        "decimation filter), with its computing times (ours are in the notes: they vary from run to run)."
    )
    columns = (
        "method",
        "μ_max",
        "μ_min",
        "cond",
        "iterations",
        "Brunot μ_max",
        "Brunot μ_min",
        "Brunot cond",
        "Brunot time",
    )
    return Table("jacobian", tier, title, columns, tuple(rows))


def errors_table(d: dict[str, Any], tier: Tier) -> Table:
    rows = []
    for m in METHODS:
        r = d["methods"][m]
        theirs = PAPER_TABLE3.get(m)
        within = r["within_3sigma"]
        rows.append(
            (
                m.upper() if m != "idim-ls" else "IDIM-LS",
                (
                    text(Num(100 * r["rel_error_q"], 4)),
                    text(Num(100 * r["rel_error_tau"], 5)),
                    text(paper(theirs[0])) if theirs else text("—"),
                    text(paper(theirs[1])) if theirs else text("—"),
                    text(Num(100 * r["outside_2sigma"], 3)),
                    text("—") if within is None else text(Num(100 * within, 3)),
                    text(Num(100 * r["max_truth_error"])),
                    text(Num(100 * r["median_truth_error"])),
                ),
            )
        )
    title = (
        f"Brunot et al. (2019) Table 3 on ours ({where(tier)}): mean relative errors over the axes of the closed loop "
        "simulated with each estimate, %; the residual autocorrelation's lags outside ±2/√N (Figs. 1-2), the "
        "estimates within IDIM-LS's 3σ intervals (§5.2), %; the estimates' largest and median errors against the "
        "truth (the description: the run is synthetic; parameters whose true value is not zero), %."
    )
    columns = (
        "method",
        "‖q_m − q_s‖/‖q_m‖ %",
        "‖τ − τ_s‖/‖τ‖ %",
        "Brunot q %",
        "Brunot τ %",
        "autocorrelation outside 2σ %",
        "within IDIM-LS's 3σ %",
        "largest error vs truth %",
        "median error vs truth %",
    )
    return Table("errors", tier, title, columns, tuple(rows))


def tables(r: BrunotResults, tier: Tier) -> tuple[Table, ...]:
    out = [jacobian_table(r.doc("quick"), "quick"), errors_table(r.doc("quick"), "quick")]
    if tier == "full":
        out += [jacobian_table(r.doc("full"), "full"), errors_table(r.doc("full"), "full")]
    return tuple(out)


def notes(r: BrunotResults) -> tuple[str, ...]:
    out = []
    for tier, d in r.runs.items():
        times = ", ".join(f"{m.upper()} {d['methods'][m]['seconds']:.1f} s" for m in METHODS)
        out.append(f"{where(tier)}: {times}")
    return tuple(out)
