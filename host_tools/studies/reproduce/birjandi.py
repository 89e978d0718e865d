"""Birjandi & Haddadin (model-adaptive collision detection) as `manipgen reproduce birjandi`: the
collision study's scenario (host_tools.studies.collide) in the paper's set-up record
paper_setups.BIRJANDI (the ±10 % model error of eq. 22, 20 s Fourier motions, filtered steps on the
first link, K = 100, K_O = 25, the model-adaptive observer adapting through contacts: collide's
own set-up, paper_setups.COLLISION, differs from it where paper_setups.BIRJANDI_DIFFERS says) run
for the paper's methods, its tables, and the claims of birjandi_paper judged on them.

- quick: one collide run on planar2 (the cheap arm; collide's default settings, seed 0) with the
  momentum observer, the observer-extended direct method (the direct residual on IMU-fused q̇, q̈),
  the model-adaptive observer on IMU-fused and on exact q̇, q̈;
- full: also collide on kuka_iiwa14 (a 7-DoF arm with one IMU per link, as the paper's simulation;
  the bundled franka_panda, the paper's arm, declares no IMUs) at three draws of the model error and
  the motions (seeds 0-2), the same observers and the model-adaptive one on encoders alone, and the
  generated step timed on this machine against the paper's 415 µs; beside them, for the docs (no claim
  reads them): collide's other observers on both arms (seed 0: the iiwa's first draw runs them all)
  and the iiwa with the model error on the friction too (``--friction-error``); and the model-adaptive
  observers at the draws in collide's own set-up (the product's), beside the paper's.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.rt import fill_inputs, load_rt
from host_tools.identification.excitation import random_excitation
from host_tools.studies.collide import CollideSettings, choices, delays_by_target, impacts_line, scenario
from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES
from host_tools.studies.paper_setups import BIRJANDI, BIRJANDI_DIFFERS, COLLISION_SETUPS, differences
from host_tools.studies.reproduce.birjandi_paper import (
    ADAPTIVE,
    ADAPTIVE_EXACT,
    CLAIMS,
    DIRECT,
    MOMENTUM,
    NAMES,
    PERIOD_US,
    STEP_US,
    THRESHOLDS,
    BirjandiResults,
    largest,
    median_delay,
)
from host_tools.studies.reproduce.records import Inputs, Num, Paper, Table, Text, Tier, text

QUICK_ROBOT = "planar2"
FULL_ROBOT = "kuka_iiwa14"  # 7 DoF, one IMU per link (the bundled franka_panda has none)
QUICK_OBSERVERS = (MOMENTUM, DIRECT, ADAPTIVE, ADAPTIVE_EXACT)
# the quick tier's four, and the model-adaptive observer on encoders alone (the Kalman filter's q̇, q̈)
FULL_OBSERVERS = (*QUICK_OBSERVERS, "adaptive")
FULL_SEEDS = (0, 1, 2)
# the docs' other runs (full tier): at the first draw the iiwa runs collide's whole default set too, and
# planar2 the default set's observers the quick run leaves out, with momentum (each observer's run is
# its own: the same figures in any set); the model error on the friction too with the paper's five
ALL_IIWA = (*FULL_OBSERVERS, *(o for o in DEFAULT_OBSERVERS if o not in FULL_OBSERVERS))
OTHER_PLANAR2 = (MOMENTUM, *(o for o in DEFAULT_OBSERVERS if o not in QUICK_OBSERVERS))
# the observers whose set-up differs in collide's (the model-adaptive ones: obs.freeze, obs.rate; the
# IMU-fed ones: their biases calibrated at rest), run in it too at the draws; the momentum observer's
# run (for the ratio) is the same in both set-ups
PRODUCT_OBSERVERS = (ADAPTIVE, ADAPTIVE_EXACT, "adaptive")
PAPER_SETUP = "birjandi"  # paper_setups.COLLISION_SETUPS: BIRJANDI
PRODUCT_SETUP = "collide"  # COLLISION
TIMED = (MOMENTUM, ADAPTIVE)  # the pipelines whose step is timed (full tier)
STEPS = 2000  # samples per timing (2 s of a 20 s motion), best of REPEATS
REPEATS = 5


def collide(
    robot: str,
    observers: tuple[str, ...],
    seed: int,
    inputs: Inputs,
    what: str,
    friction_error: bool = False,
    setup: str = PAPER_SETUP,
) -> dict[str, Any]:
    """collide's JSON document for ``robot``: its default settings (Birjandi & Haddadin's scenario)
    in the set-up ``setup`` (the paper's unless told) with these observers and draw
    (``friction_error``: the model error on the joint parameters too)."""
    settings = CollideSettings(observers=observers, seed=seed, friction_error=friction_error, setup=setup)
    source = inputs.robots[robot]
    executor = None if what == "quick" else inputs.executor
    result = scenario(source, settings, lambda line: inputs.progress(f"Birjandi & Haddadin: {robot}: {line}"), executor)
    return result.doc


def step_us(robot: Robot, observer: str) -> float:
    """µs per step of the generated pipeline of ``observer``'s collide entry (estimator, observer,
    detection, computed torque; in the paper's set-up) run in one C loop over a 20 s Fourier motion's
    middle STEPS samples read through its encoders: the best of REPEATS."""
    rt = load_rt(robot, *choices(ENTRIES[observer]))
    BIRJANDI.apply(rt.config, robot)
    rt.config["det.threshold"] = 1e30  # no latch: the adaptation runs every step
    ts = robot.sample_period
    motion = random_excitation(robot, 1, base_frequency=1 / 20, rate=1 / ts).trajectory(ts)
    k = slice(len(motion.time) // 2, len(motion.time) // 2 + STEPS)
    a = rt.inputs(STEPS)
    fill_inputs(
        a,
        {
            "counts": rt.encoder_counts(motion.q[k])[0],
            "q_des": motion.q[k],
            "qd_des": motion.qd[k],
            "qdd_des": motion.qdd[k],
        },
    )
    best = float("inf")
    for _ in range(REPEATS):
        rt.reset()
        start = time.perf_counter()
        rt.run_inputs(a)
        best = min(best, time.perf_counter() - start)
    return best / STEPS * 1e6


def compute(tier: Tier, inputs: Inputs) -> BirjandiResults:
    quick = collide(QUICK_ROBOT, QUICK_OBSERVERS, 0, inputs, "quick")
    if tier == "quick":
        return BirjandiResults(quick, {}, {})
    draws = {s: collide(FULL_ROBOT, ALL_IIWA if s == 0 else FULL_OBSERVERS, s, inputs, "full") for s in FULL_SEEDS}
    others = {
        "friction": collide(FULL_ROBOT, FULL_OBSERVERS, 0, inputs, "full", friction_error=True),
        "planar2": collide(QUICK_ROBOT, OTHER_PLANAR2, 0, inputs, "full"),
    }
    product = {s: collide(FULL_ROBOT, PRODUCT_OBSERVERS, s, inputs, "full", setup=PRODUCT_SETUP) for s in FULL_SEEDS}
    inputs.progress(f"Birjandi & Haddadin: timing the generated step on {FULL_ROBOT}")
    robot = inputs.robots[FULL_ROBOT].robot()
    return BirjandiResults(quick, draws, {o: step_us(robot, o) for o in TIMED}, others, product)


def _median(delays: list[float | None]) -> Num:
    """The median delay, a missed contact infinitely late (whole samples, printed exactly; None: the
    median missed)."""
    median = median_delay(delays)
    return Num(None if math.isinf(median) else median, None)


def _impact_delay(entry: dict[str, Any], target: float) -> Text:
    """The observer's delay for its impact placed for ``target`` m/s (an observer whose loop differs
    meets its own impacts, at other speeds: collide's _impacts); n/a where its loop met none for it
    (a motion slower than two targets meets the first at its fastest instant, the second nowhere)."""
    own = delays_by_target(entry)
    return text(Num(own[target], None)) if target in own else text("n/a")


def observers_table(doc: dict[str, Any], key: str, tier: Tier) -> Table:
    """One collide run's observers beside the paper's thresholds: largest threshold, delays, alarms."""
    observers: dict[str, dict[str, Any]] = doc["observers"]
    first = next(iter(observers.values()))
    targets = list(doc["settings"]["impact_speeds"])
    columns = (
        "observer",
        "Birjandi & Haddadin's method",
        "q̇, q̈",
        "largest threshold (N m)",
        "joint",
        "/ momentum's",
        "Birjandi & Haddadin §V (N m)",
        *(f"delay {c} Hz (ms)" for c in first["delays_ms"]),
        *(f"impact {t:g} m/s (ms)" for t in targets),
        "false alarms",
        "missed",
    )
    rows = []
    for name, e in observers.items():
        paper_th = THRESHOLDS.get(name)
        rows.append(
            (
                name,
                (
                    text(NAMES.get(name, "—")),
                    text(e["qd_qdd"]),
                    text(Num(largest(e))),
                    text(Num(int(np.argmax(e["threshold_mean"])) + 1, None)),
                    text(Num(e.get("ratio_to_momentum"))),
                    text(Num(paper_th, None)),
                    *(text(_median(v)) for v in e["delays_ms"].values()),
                    *(_impact_delay(e, t) for t in targets),
                    text(Num(e["false_alarms"], None)),
                    text(Num(e["missed"], None), f"/{e['events']}"),
                ),
            )
        )
    settings = doc["settings"]
    friction = (" --friction-error", " and joint parameter (FV, FC, ...)") if settings["friction_error"] else ("", "")
    title = (
        f"{doc['robot']}, seed {settings['seed']}: `manipgen collide {doc['robot']} --seed {settings['seed']} "
        f"--setup {settings['setup']} --observers {' '.join(observers)}{friction[0]}` "
        f"({setup_name(settings['setup'])}; "
        f"every inertial parameter{friction[1]} "
        f"±{settings['model_error'] * 100:g} %, eq. 22; {settings['amplitude']:g} N m steps on joint "
        f"{settings['joint']}). Largest threshold: over the "
        f"joints, designed on {settings['design_motions']} collision-free motions for each observer alike; "
        "delays: the median of the three steps, a missed one infinitely late (— : the median missed, or the "
        "impact missed; n/a: no impact for that target on the observer's loop); "
        "Birjandi & Haddadin's thresholds are §V's, on the real Panda's joint 6. " + impacts_line(doc["impacts"])
    )
    return Table(key, tier, title, columns, tuple(rows))


def draws_table(r: BirjandiResults) -> Table:
    """Every observer's largest threshold (and its ratio to momentum's) at each draw of the full tier."""
    seeds = list(r.draws)
    names = [n for n in r.draws[seeds[0]]["observers"] if all(n in d["observers"] for d in r.draws.values())]
    columns = ("observer", *(f"seed {s}: N m (/ momentum's)" for s in seeds), "false alarms", "missed")
    rows = []
    for name in names:
        entries = [r.draws[s]["observers"][name] for s in seeds]
        cells: list[Text] = [text(Num(largest(e)), " (", Num(e.get("ratio_to_momentum")), ")") for e in entries]
        rows.append(
            (
                name,
                (
                    *cells,
                    text(Num(sum(e["false_alarms"] for e in entries), None)),
                    text(Num(sum(e["missed"] for e in entries), None), f"/{sum(e['events'] for e in entries)}"),
                ),
            )
        )
    title = (
        f"{FULL_ROBOT} (7 DoF, one IMU per link), largest threshold over the joints at three draws of the "
        f"model error and the motions (collide's default settings, {setup_name(PAPER_SETUP)}); false alarms and "
        "missed contacts summed."
    )
    return Table("draws", "full", title, columns, tuple(rows))


def setup_name(setup: str) -> str:
    """The set-up a run ran, as the tables name it."""
    if setup == PAPER_SETUP:
        return "Birjandi & Haddadin's set-up: the model-adaptive observers adapt through contacts"
    return "collide's set-up: the model-adaptive observers hold their adaptation near the threshold"


def _differs() -> str:
    """What collide's set-up changes from the paper's, and why (paper_setups.BIRJANDI_DIFFERS); fields
    that differ alike for one reason (the IMUs' two biases) in one clause."""
    changed = differences(COLLISION_SETUPS[PAPER_SETUP], COLLISION_SETUPS[PRODUCT_SETUP])
    clauses: dict[tuple[str, str, str], list[str]] = {}
    for k, (paper, product) in changed.items():
        product_value = "set per draw" if product is None else str(product)
        clauses.setdefault((product_value, str(paper), BIRJANDI_DIFFERS[k]), []).append(k)
    return "; ".join(
        f"{', '.join(keys)} = {product} in collide's, {paper} in the paper's: {why}"
        for (product, paper, why), keys in clauses.items()
    )


def setups_table(r: BirjandiResults) -> Table:
    """The model-adaptive observers at each draw in the paper's set-up (the draws' runs) and in
    collide's (the product's): largest threshold (its ratio to the same draw's momentum observer,
    whose run is the same in both), false alarms and missed contacts summed over the draws."""
    seeds = list(r.product)
    names = [n for n in r.product[seeds[0]]["observers"] if all(n in r.draws[s]["observers"] for s in seeds)]
    heads = {PAPER_SETUP: "Birjandi & Haddadin's set-up", PRODUCT_SETUP: "collide's set-up"}
    columns = (
        "observer",
        *(f"seed {s}, {heads[k]}: N m (/ momentum's)" for s in seeds for k in heads),
        *(f"false alarms, {h}" for h in heads.values()),
        *(f"missed, {h}" for h in heads.values()),
    )
    rows = []
    for name in names:
        runs = {PAPER_SETUP: [r.draws[s] for s in seeds], PRODUCT_SETUP: [r.product[s] for s in seeds]}
        cells: list[Text] = []
        for i, s in enumerate(seeds):
            momentum = largest(r.draws[s]["observers"][MOMENTUM])
            for k in heads:
                e = runs[k][i]["observers"][name]
                cells.append(text(Num(largest(e)), " (", Num(largest(e) / momentum), ")"))
        entries = {k: [d["observers"][name] for d in docs] for k, docs in runs.items()}
        cells += [text(Num(sum(e["false_alarms"] for e in entries[k]), None)) for k in heads]
        cells += [
            text(Num(sum(e["missed"] for e in entries[k]), None), f"/{sum(e['events'] for e in entries[k])}")
            for k in heads
        ]
        rows.append((name, tuple(cells)))
    title = (
        f"{FULL_ROBOT}, the model-adaptive observers in Birjandi & Haddadin's set-up (the draws above: "
        f"`manipgen collide --setup {PAPER_SETUP}`) and in collide's own (`--setup {PRODUCT_SETUP}`, "
        "collide's default), "
        f"the same draws, motions and contacts. What differs: {_differs()}."
    )
    return Table("setups", "full", title, columns, tuple(rows))


def compute_table(r: BirjandiResults) -> Table:
    rows = tuple(
        (
            name,
            (
                text(Num(us, measured=True)),
                text(Num(us / STEP_US, measured=True)),
                text(Num(STEP_US, None) if name == ADAPTIVE else Num(None)),
            ),
        )
        for name, us in r.step_us.items()
    )
    title = (
        f"The generated step (double) on {FULL_ROBOT} timed on this machine: µs per {PERIOD_US:g} µs step "
        f"over {STEPS} samples, best of {REPEATS}; Birjandi & Haddadin's model-adaptive step (§V, Simulink on an "
        "Intel Core i7-7700) took 415 µs."
    )
    return Table(
        "compute", "full", title, ("pipeline", "µs per step", "/ the paper's 415 µs", "Birjandi & Haddadin (µs)"), rows
    )


def tables(r: BirjandiResults, tier: Tier) -> tuple[Table, ...]:
    out = [observers_table(r.quick, "observers", "quick")]
    if tier == "full":
        out += [observers_table(r.draws[0], "iiwa", "full"), draws_table(r), setups_table(r), compute_table(r)]
        out += [observers_table(doc, key, "full") for key, doc in r.others.items()]
    return tuple(out)


def notes(r: BirjandiResults) -> tuple[str, ...]:
    return (
        "Birjandi & Haddadin's adaptive momentum observer (Guo et al., their ref. [17]) is not generated: its "
        "comparisons are not reproduced",
    )


PAPER = Paper(
    key="birjandi",
    citation="Birjandi & Haddadin",
    subject="model-adaptive collision detection against the momentum observer under a ±10 % model error",
    compute=compute,
    tables=tables,
    claims=CLAIMS,
    notes=notes,
    robots=(QUICK_ROBOT, FULL_ROBOT),
)
