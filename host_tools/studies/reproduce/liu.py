"""Liu et al. (velocity estimators in the closed loop, Schunk LWA-4P) as `manipgen reproduce liu`:
its claims, each with the paper's values it rests on (liu_paper), what is compared and how ours are
judged -- in simulation with the paper's gains (``sim.``, quick) and with our GA's (``ga.``, full),
on Table 5's filters (``t5.``), on Experiment 1's recording (``exp1.``); all at 10 mdeg, 125 Hz
unless a claim names the set-ups. The runs and tables are liu_runs'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from host_tools.studies.evaluate import LIU_SETUPS
from host_tools.studies.reproduce import liu_runs
from host_tools.studies.reproduce.criteria import (
    Values,
    among_lowest,
    cost,
    every,
    in_order,
    listing,
    lowest,
    ranked,
    spread,
    within_factor,
    worst,
)
from host_tools.studies.reproduce.liu_paper import FILTERS, LABELS, OBSERVERS, TABLE5, TABLE6
from host_tools.studies.reproduce.liu_runs import EXPERIMENT1, FILTER_OPTIONS, FIRST, WINDOW, LiuResults, setup_name
from host_tools.studies.reproduce.records import Claim, Num, Paper, Text, Tier, Verdict, text

Judge = Callable[[LiuResults], Verdict]


def paper(value: float) -> Num:
    """A value of the paper's, printed as the paper prints it."""
    return Num(value, None)


def _normal(names: Sequence[str]) -> Text:
    return text(*(text(", " if k else "", f"{n} ", paper(TABLE6[n].normal)) for k, n in enumerate(names)))


def _ratio(x: float | None, y: float | None) -> float | None:
    return None if x is None or not y else x / y


def _ratios(a: Mapping[str, float | None], b: Mapping[str, float | None], names: Sequence[str]) -> Values:
    return {n: _ratio(a[n], b[n]) for n in names}


def _without(values: Values, *names: str) -> Values:
    return {k: v for k, v in values.items() if k not in names}


SIMILAR = (
    "“Except for the nonlinear high-gain observer, all other methods have a very similar estimation error” "
    "(§IV-B, Fig. 5B; §V: “their optimal performance is similar”)"
)
SIMILAR_PAPER = text("Table 6, normal: ", _normal(LABELS[:5] + LABELS[6:]), "; nlHG ", paper(TABLE6["nlHG"].normal))
SIMILAR_BOUND = 2.0
SIX = [TABLE6[n].normal for n in LABELS if n != "nlHG"]
SIMILAR_CRITERION = (
    f"spread: the largest ISE of the six other than nlHG at most {SIMILAR_BOUND:g}× the smallest "
    f"(Table 6's six: {max(SIX) / min(SIX):.2f}×)"
)
NLHG = (
    "“The nonlinear high-gain observer has not proven to be a suitable option in our experiments” "
    "(§IV-E; Table 9: the worst accuracy)"
)
NLHG_PAPER = text(
    "Table 6, normal: nlHG ", paper(TABLE6["nlHG"].normal), "; the next, SliMod ", paper(TABLE6["SliMod"].normal)
)
NLHG_CRITERION = "ranking: nlHG's ISE the largest of the seven"
BEST = "“the Kalman filter and the linear high-gain observer perform slightly better than the rest” (§IV-B, Fig. 5B)"
BEST_PAPER = text("Table 6, normal: ", _normal(("Kalman", "linHG", "MovAv")))
BEST_CRITERION = "ranking: Kalman and linHG both among the three lowest ISEs of the seven"


def _ise(r: LiuResults, gains: str, what: str = "ise_velocity", setup: tuple[float, float] = FIRST) -> Values:
    return r.ise(gains, setup, what)


def _at_setups(gains: str, judge: Callable[[Values], Verdict]) -> Judge:
    """``judge`` at each of the three set-ups; holds when it holds at each."""
    return lambda r: every({setup_name(s): judge(_ise(r, gains, setup=s)) for s in LIU_SETUPS})


def _same_order(gains: str) -> Judge:
    def judge(r: LiuResults) -> Verdict:
        orders = {setup_name(s): {n: _ise(r, gains, setup=s)[n] for n in OBSERVERS} for s in LIU_SETUPS}
        same = len({tuple(ranked(v)) for v in orders.values()}) == 1
        return Verdict(same, every({w: Verdict(same, in_order(v)) for w, v in orders.items()}).ours)

    return judge


def _filters_vary(gains: str) -> Judge:
    second, third = LIU_SETUPS[1:]

    def judge(r: LiuResults) -> Verdict:
        return every(
            {
                setup_name(second): worst({n: _ise(r, gains, setup=second)[n] for n in FILTERS}, "MovAv"),
                setup_name(third): lowest({n: _ise(r, gains, setup=third)[n] for n in FILTERS}, "MovAv"),
            }
        )

    return judge


def _never_settles(gains: str) -> Judge:
    def judge(r: LiuResults) -> Verdict:
        t = _ise(r, gains, "convergence_s")["nlHG"]
        return Verdict(
            t is None, text("nlHG: not within 2 s") if t is None else text("nlHG settles after ", Num(t), " s")
        )

    return judge


def _slowest(gains: str) -> Judge:
    def judge(r: LiuResults) -> Verdict:
        settled = {n: t for n, t in _ise(r, gains, "convergence_s").items() if n != "nlHG" and t is not None}
        return worst(settled, "SliMod") if "SliMod" in settled else Verdict(False, text("SliMod: not within 2 s"))

    return judge


SWITCH_ON = text("Fig. 7 (axis 2, switched on at constant velocity)")
# the claims judged on the simulated set-ups: (name, the paper's statement, its values, the criterion,
# the judge of one gain set's results)
SIMULATED: tuple[tuple[str, str, Text, str, Callable[[str], Judge]], ...] = (
    (
        "similar",
        SIMILAR,
        SIMILAR_PAPER,
        SIMILAR_CRITERION,
        lambda g: lambda r: spread(_without(_ise(r, g), "nlHG"), SIMILAR_BOUND),
    ),
    ("nlhg-worst", NLHG, NLHG_PAPER, NLHG_CRITERION, lambda g: lambda r: worst(_ise(r, g), "nlHG")),
    (
        "kalman-linhg-best",
        BEST,
        BEST_PAPER,
        BEST_CRITERION,
        lambda g: lambda r: among_lowest(_ise(r, g), ("Kalman", "linHG"), 3),
    ),
    (
        "linhg-consistently-best",
        "“The linear high-gain observer is consistently amongst the best in terms of accuracy in all experiments” "
        "(§IV-D, Fig. 9; §V)",
        text("Table 6 and Fig. 9 (plots only): 10 mdeg, 125 Hz; 2 mdeg, 125 Hz; 1 mdeg, 250 Hz"),
        "ranking: linHG among the three lowest of the seven at each of the three set-ups",
        lambda g: _at_setups(g, lambda v: among_lowest(v, ("linHG",), 3)),
    ),
    (
        "filters-depend-on-set-up",
        "“In the first case [2 mdeg, 125 Hz], FinDiff and LSF1/4 perform better than MovAv; in the second case "
        "[1 mdeg, 250 Hz], MovAv is the best of the filters” (§IV-D, Fig. 9)",
        text("Fig. 9 (plots only)"),
        "ranking of FinDiff, MovAv and LSF: MovAv the largest at 2 mdeg, 125 Hz and the lowest at 1 mdeg, 250 Hz",
        _filters_vary,
    ),
    (
        "observers-keep-their-order",
        "“the relative difference between the observer methods (Kalman, linHG, nnHG, SliMod) stays similar in "
        "all considered cases” (§IV-D, Fig. 9)",
        text("Fig. 9 (plots only)"),
        "ranking: the four observers in the same order at the three set-ups",
        _same_order,
    ),
    (
        "slimod-fault-tolerant",
        "“The estimated velocities experience severe chattering, except for the sliding mode observer, which "
        "responds more robustly” (§IV-C, Fig. 8A; §V: “robust against sensor faults”)",
        text(
            "Table 6, faulty: SliMod ", paper(TABLE6["SliMod"].faulty), "; the next, LSF ", paper(TABLE6["LSF"].faulty)
        ),
        "ranking: SliMod's ISE the lowest of the seven with 10 % of axis 6's samples lost",
        lambda g: lambda r: lowest(_ise(r, g, "ise_faulty"), "SliMod"),
    ),
    (
        "nlhg-never-converges",
        "“the nonlinear high-gain observer never really converges, since it is not fast enough” (§IV-B, Fig. 7)",
        SWITCH_ON,
        "switch-on: nlHG not within 5 % of 0.3 rad/s on every joint within the 2 s observed",
        _never_settles,
    ),
    (
        "slimod-slowest",
        "“The sliding-mode observer ... requires much longer than the rest of the estimators to converge” "
        "(§IV-B, Fig. 7)",
        SWITCH_ON,
        "ranking: SliMod's switch-on time the longest of the others that settle within the 2 s",
        _slowest,
    ),
    (
        "tracking-unaffected",
        "“most of the chosen estimators do not noticeably influence the tracking error, when they are optimally "
        "tuned” (§IV-E, Fig. 6; §IV-B: “Only nnHG has a worse tracking error”)",
        text("Fig. 6 (plots only)"),
        f"spread: the tracking ISE of the six other than nlHG at most {SIMILAR_BOUND:g}× the smallest",
        lambda g: lambda r: spread(_without(_ise(r, g, "ise_tracking"), "nlHG"), SIMILAR_BOUND),
    ),
    (
        "table6-magnitude",
        "Table 6's normal column, measured on the robot with Table 4's gains",
        text("Table 6, normal: ", _normal(LABELS)),
        "order of magnitude: ours / Table 6 within 0.1-10 for each of the seven",
        lambda g: lambda r: within_factor(_ise(r, g), {n: TABLE6[n].normal for n in LABELS}, 10.0),
    ),
)


def simulated_claims(gains: str, tier: Tier) -> tuple[Claim[LiuResults], ...]:
    """The claims judged on the simulated set-ups with one gain set ("paper" or "ga")."""
    where = "simulation, " + ("Liu et al.'s gains (Tables 4, 7, 8)" if gains == "paper" else "our GA's gains")
    key = "sim" if gains == "paper" else "ga"
    return tuple(
        Claim(f"{key}.{name}", tier, where, statement, values, criterion, judge(gains))
        for name, statement, values, criterion, judge in SIMULATED
    )


def _filters(r: LiuResults) -> Values:
    doc = r.filters["estimators"]
    return {label: entry["ise_velocity"] for label, entry in zip(FILTER_OPTIONS, doc.values())}


def _large(r: LiuResults) -> Verdict:
    derivative = _without(_filters(r), "MovAv", "LSF1/4")
    others = {n: r.ise("paper", FIRST)[n] for n in ("MovAv", "Kalman", "linHG", "SliMod")}
    low, high = ranked(derivative)[0], ranked(others)[-1]
    holds = cost(derivative[low]) > cost(others[high])
    return Verdict(
        holds,
        text("lowest of the six: ", listing(derivative, [low]), "; largest of the four: ", listing(others, [high])),
    )


FILTER_CLAIMS: tuple[Claim[LiuResults], ...] = (
    Claim(
        "t5.lsf14-best",
        "quick",
        "simulation, Table 5's filters",
        "“we have determined that the LSF1/4-filter has the smallest velocity estimation error” (§IV-B, Table 5: "
        "of the TSE, BDE and LSF filters)",
        text("Table 5: LSF1/4 ", paper(TABLE5["LSF1/4"]), "; the next, BDE2 ", paper(TABLE5["BDE2"])),
        "ranking: LSF1/4 the lowest of Table 5's seven derivative filters (MovAv aside)",
        lambda r: lowest(_without(_filters(r), "MovAv"), "LSF1/4"),
    ),
    Claim(
        "t5.derivative-filters-large",
        "quick",
        "simulation, Table 5's filters and Liu et al.'s gains",
        "“the derivative filters (LSF, BDE, TSE) did not perform very well and can lead to large errors, as can be "
        "seen by comparing Tab. 5 to the ISE” (§IV-E)",
        text(
            "Table 5: BDE2 ",
            paper(TABLE5["BDE2"]),
            " the lowest but LSF1/4; Table 6, normal: ",
            _normal(("MovAv", "Kalman", "linHG", "SliMod")),
        ),
        "ranking: each of Table 5's filters but MovAv and LSF1/4 above the largest ISE of MovAv, Kalman, linHG and "
        "SliMod (Table 4 gains)",
        _large,
    ),
)


def _replayed(judge: Callable[[Values], Verdict]) -> Judge:
    """A judge of ours over Experiment 1's WINDOW (not checked without the data)."""

    def run(r: LiuResults) -> Verdict:
        if not r.experiment1:
            return Verdict(None, text(f"not replayed: {EXPERIMENT1} is absent"))
        return judge({n: e.window for n, e in r.experiment1.items()})

    return run


def _recorded(r: LiuResults) -> Verdict:
    if not r.experiment1:
        return Verdict(None, text(f"not replayed: {EXPERIMENT1} is absent"))
    bounds = {"FinDiff": 0.0, "MovAv": 0.0, "Kalman": 1e-4, "linHG": 1e-4}
    diff = {n: r.experiment1[n].max_difference for n in bounds}
    holds = all(d is not None and d <= bounds[n] for n, d in diff.items())
    return Verdict(holds, text("max |ours − recorded| (rad/s): ", listing(diff)))


EXP1 = f"Experiment 1 (1 mdeg, 250 Hz), ours over {WINDOW[0]:g}-{WINDOW[1]:g} s"
EXPERIMENT1_CLAIMS: tuple[Claim[LiuResults], ...] = (
    Claim(
        "exp1.similar",
        "quick",
        EXP1,
        SIMILAR,
        SIMILAR_PAPER,
        SIMILAR_CRITERION,
        _replayed(lambda v: spread(_without(v, "nlHG"), SIMILAR_BOUND)),
    ),
    Claim("exp1.nlhg-worst", "quick", EXP1, NLHG, NLHG_PAPER, NLHG_CRITERION, _replayed(lambda v: worst(v, "nlHG"))),
    Claim(
        "exp1.kalman-linhg-best",
        "quick",
        EXP1,
        BEST,
        BEST_PAPER,
        BEST_CRITERION,
        _replayed(lambda v: among_lowest(v, ("Kalman", "linHG"), 3)),
    ),
    Claim(
        "exp1.recorded-outputs",
        "quick",
        f"Experiment 1, ours from {WINDOW[0]:g} s",
        "Experiment 1's recorded outputs of the paper's estimators (data package, Table 8's gains)",
        text("Table 8 prints its gains to 4 digits"),
        "max |ours − recorded|: 0 for FinDiff and MovAv (the same arithmetic), at most 1e-4 rad/s for Kalman and "
        "linHG (the 4-digit gains)",
        _recorded,
    ),
)


def _on_runs(judge: Callable[[Values], Verdict]) -> Judge:
    """A judge of ours with Table 8's gains on each recorded run (not checked without the runs)."""

    def run(r: LiuResults) -> Verdict:
        if not r.recorded_runs:
            return Verdict(None, text("not replayed: the recorded runs are absent"))
        return every({name: judge({n: v[1] for n, v in by["paper"].items()}) for name, by in r.recorded_runs.items()})

    return run


RUNS = f"the two recorded runs ({setup_name(liu_runs.RUNS_SETUP)}), ours with Table 8's gains"
SECOND_CASE = (
    "“in the second case [1 mdeg, 250 Hz], MovAv is the best of the filters” (§IV-D, Fig. 9); "
    "“The linear high-gain observer is consistently amongst the best in terms of accuracy in all experiments”"
)
RUNS_CLAIMS: tuple[Claim[LiuResults], ...] = (
    Claim(
        "runs.movav-best-filter",
        "quick",
        RUNS,
        SECOND_CASE.partition("; ")[0],
        text("Fig. 9: cumulative ISE curves, no values"),
        "ranking: MovAv's ISE the lowest of FinDiff, MovAv and LSF1/4 on each run",
        _on_runs(lambda v: lowest({n: v[n] for n in FILTERS}, "MovAv")),
    ),
    Claim(
        "runs.linhg-among-best",
        "quick",
        RUNS,
        SECOND_CASE.partition("; ")[2] + " (§IV-D)",
        text("Fig. 9: cumulative ISE curves, no values"),
        "ranking: linHG among the three lowest ISEs of the seven on each run",
        _on_runs(lambda v: among_lowest(v, ("linHG",), 3)),
    ),
)


def _retuned(r: LiuResults, over: str, under: str, names: Sequence[str]) -> Values:
    """Ratios of our figures: ``over``/``under`` each "ga" or "retuned" + the figure."""

    def figure(name: str) -> Mapping[str, float | None]:
        source, what = name.split(":")
        return r.ise("ga", FIRST, what) if source == "ga" else r.retuned_ise(what)

    return _ratios(figure(over), figure(under), names)


def _trade(r: LiuResults) -> Verdict:
    worse, kept = ("MovAv", "LSF", "linHG"), ("Kalman", "SliMod")
    ratio = _retuned(r, "retuned:ise_velocity", "ga:ise_velocity", worse + kept)
    holds = all((ratio[n] or 0) >= 1.5 for n in worse) and all((ratio[n] or 9) <= 1.2 for n in kept)
    return Verdict(holds, text("retuned normal / normal: ", listing(ratio)))


def _helps(r: LiuResults) -> Verdict:
    ratio = _retuned(r, "ga:ise_faulty", "retuned:ise_faulty", ("MovAv", "LSF", "Kalman", "linHG"))
    return Verdict(all((v or 0) >= 2 for v in ratio.values()), text("faulty / retuned faulty: ", listing(ratio)))


def _table6_ratio(over: str, under: str, names: Sequence[str]) -> Text:
    return listing({n: getattr(TABLE6[n], over) / getattr(TABLE6[n], under) for n in names})


RETUNED = "simulation, our GA's gains without and with the fault case on the tuning motion"
RETUNED_CLAIMS: tuple[Claim[LiuResults], ...] = (
    Claim(
        "ga.retuning-trades-accuracy",
        "full",
        RETUNED,
        "“the retuned estimators significantly sacrifice accuracy during normal operation, except for the Kalman "
        "filter and the sliding-mode observer” (§IV-C, Table 6)",
        text(
            "Table 6, retuned normal / normal: ",
            _table6_ratio("retuned_normal", "normal", ("MovAv", "LSF", "linHG", "Kalman", "SliMod")),
        ),
        "ratio retuned normal / normal: at least 1.5 for MovAv, LSF and linHG, at most 1.2 for Kalman and SliMod",
        _trade,
    ),
    Claim(
        "ga.retuning-helps",
        "full",
        RETUNED,
        "“we repeat the tuning process, in which the sensor stays faulty. As Fig. 8B shows, the estimation "
        "improves” (§IV-C, Table 6)",
        text(
            "Table 6, faulty / retuned faulty: ",
            _table6_ratio("faulty", "retuned_faulty", ("MovAv", "LSF", "Kalman", "linHG")),
        ),
        "ratio faulty / retuned faulty: at least 2 for MovAv, LSF, Kalman and linHG",
        _helps,
    ),
)

CLAIMS = (
    *simulated_claims("paper", "quick"),
    *FILTER_CLAIMS,
    *EXPERIMENT1_CLAIMS,
    *RUNS_CLAIMS,
    *simulated_claims("ga", "full"),
    *RETUNED_CLAIMS,
)

PAPER = Paper(
    key="liu",
    citation="Liu et al.",
    subject="velocity estimators of robot manipulators compared in the closed loop (Schunk LWA-4P)",
    compute=liu_runs.compute,
    tables=liu_runs.tables,
    claims=CLAIMS,
    notes=liu_runs.notes,
    robots=(liu_runs.ROBOT,),
)
