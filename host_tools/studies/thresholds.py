"""Collision thresholds from collision-free data (issues #7, #24): replay a log through the robot's
pipeline and fit the detect block's threshold per joint,

    level = threshold + kv |qd_hat| + ka |qdd_hat| + ks exp(-|qd_hat| / vs)

(codegen.blocks.detect.level, the expression the generated C computes) to the residual r.

The fit, per joint: the envelope of least mean over the run that covers every |r| sample -- a linear
programme in (threshold, kv, ka, ks) >= 0 (the level is linear in them: its Jacobian is the
regressor), with the standstill scale vs common to the joints, chosen from ``STANDSTILL_SCALES``.
Covering every sample is the false-alarm-free design on this run (what max |r| is for a constant
threshold); minimising the mean lowers the threshold where the residual is low. The static part is
kept >= ``MIN_STATIC`` x max |r| so that every joint detects. ``shape="static"`` fits the constant
only (kv = ka = ks = 0: the max |r| of before; collide then raises ks alone where the level at rest
is below its Coulomb floor, ``at_rest``/coulomb_floor).

The margin, from the run itself (leave-part-out): the used samples are split into ``blocks``
contiguous blocks; for each, the envelope is fitted on the others and the held-out block's worst
|r| / envelope is measured. The margin makes the worst of these (or of the run itself, >= 1) equal
``target``: margin = max(1, worst held-out ratio) / target. With ``exceedance`` (issue #44, opt-in)
the margin is per joint instead: a Gumbel law fitted to each joint's held-out maxima, the level a run
of the design's length exceeds with its share of the probability ``exceedance`` (shared among the
joints where margin costs least), never below the joint's worst held-out ratio, over ``target``
(extreme_value_margins). ``design_across`` designs on several runs, each held out in turn. The scale
vs is the one whose margined envelopes have the lowest sum of means. ``check_thresholds`` replays
another run against them.

A model-adaptive observer whose adaptation holds on its thresholds (``obs.freeze``: above them, and
for a while above ``obs.suspect`` of them) has a residual that depends on them (``holds``). It is
designed twice, as collide designs it (host_tools.studies.collide._design): first with detection off,
then on the same runs with those thresholds acting on the hold (no collision latches: a debounce
longer than the run). The second design is the result. A check replays it with its own thresholds
acting, so the residual checked is the one the generated C computes with the written config.
Designed once with detection off, the LWA-4P's adaptive_momentum thresholds left its hold at the
suspect level so often that the adaptation starved: 0 false-alarm samples reported on the other real
run, thousands with the written config (docs/real-data.md, 2026-11-30).

    rt = load_rt("kuka_iiwa14", observer="momentum")
    design = design_thresholds(rt, Log.load("free.npz"))
    for key, value in design.config().items():
        rt.config[key] = value
    rt.config.save("config.json")
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any

import casadi as cs
import numpy as np

from codegen.blocks import registry
from codegen.blocks.detect import COEFFICIENTS, DEBOUNCE_MAX, level
from codegen.model.robot import Robot
from host_tools.bindings.rt import Realtime
from host_tools.bindings.source import PipelineSource
from host_tools.data.checks import TIMING_SETTLE_DESIGN, LogChecks, on_its_clock
from host_tools.data.csvdata import Samples
from host_tools.data.logs import Log, recorded_for
from host_tools.data.measured import encoders
from host_tools.identification.least_squares import model as identification_model

STANDSTILL_SCALES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)  # candidate vs, rad/s (m/s if prismatic)
MIN_STATIC = 1e-3  # the static part's floor, a fraction of the joint's max |r| (so that it detects)
TARGET = 0.85  # default worst held-out max |r| / threshold the margin gives
BLOCKS = 8  # default number of held-out blocks


@dataclass(frozen=True)
class Thresholds:
    threshold: np.ndarray  # static part per joint (margin applied, floor added), N m (or N)
    kv: np.ndarray  # N m s/rad
    ka: np.ndarray  # N m s^2/rad (0 where the estimator gives no q-ddot)
    ks: np.ndarray  # N m, the standstill part
    vs: np.ndarray  # rad/s, its velocity scale
    margins: np.ndarray  # (n,) the factor on each joint's fitted envelope
    margin_given: bool  # True: the caller's; False: derived from the held-out blocks
    target: float  # the worst held-out ratio the derived margin gives
    exceedance: float | None  # the extreme-value margins' probability per horizon (None: one worst-block margin)
    horizon: float  # s of motion the exceedance refers to (the design run's length unless given)
    block_seconds: float  # the held-out blocks' length, s (the maxima's span)
    held_out: np.ndarray  # (units, n): max |r| / envelope on each held-out block, envelope fitted without it
    acceleration: bool  # whether the estimator gives a q-ddot estimate (else ka is moot, 0)
    threshold_mean: np.ndarray  # per joint, the whole threshold's mean over the used samples
    level: np.ndarray  # (K, n) the whole threshold along the log
    max_residual: np.ndarray  # largest |r| per joint over the used samples
    at_time: np.ndarray  # when it occurred, s from the start of the log
    samples: int  # samples used
    excluded: int  # samples after the skipped start left out (flagged by the input checks)
    residual: np.ndarray  # r (K, n) over the whole log, N m (or N)
    skipped: int  # samples left out at the start
    left_out: np.ndarray | None = None  # (K,) samples after the start left out (flagged; a later run's start-up)

    @property
    def margin(self) -> float:
        """The largest of the joints' margins."""
        return float(self.margins.max())

    def config(self) -> dict[str, np.ndarray]:
        """The detect block's run-time config fields of this design."""
        return {
            "det.threshold": self.threshold,
            "det.kv": self.kv,
            "det.ka": self.ka,
            "det.ks": self.ks,
            "det.vs": self.vs,
        }


@cache
def _level_functions() -> tuple[cs.Function, cs.Function]:
    """detect.level for one joint, (qd, qdd, coefficients, vs) -> level, and its regressor
    (qd, qdd, vs) -> d level / d coefficients (the level is linear in them where threshold > 0)."""
    qd, qdd, vs = cs.SX.sym("qd"), cs.SX.sym("qdd"), cs.SX.sym("vs")
    coef = cs.SX.sym("c", len(COEFFICIENTS))
    lv = level(qd, qdd, coef[0], coef[1], coef[2], coef[3], vs)
    on = cs.DM([1.0] + [0.0] * (len(COEFFICIENTS) - 1))  # any threshold > 0: the detecting branch
    regressor = cs.substitute(cs.jacobian(lv, coef), coef, on)
    return cs.Function("level", [qd, qdd, coef, vs], [lv]), cs.Function("regressor", [qd, qdd, vs], [regressor])


@lru_cache(maxsize=32)
def _mapped(which: int, samples: int) -> cs.Function:
    """_level_functions()[which] mapped over ``samples`` samples (made once per length: making the map
    costs as much as evaluating it; a design and its replays reuse a few lengths)."""
    return _level_functions()[which].map(samples)


def regressor(qd: np.ndarray, qdd: np.ndarray, vs: float) -> np.ndarray:
    """(K, len(COEFFICIENTS)) the threshold's regressor of one joint along a run."""
    f = _mapped(1, len(qd))  # one 1 x 4 row per sample, side by side
    x = np.asarray(f(np.asarray(qd, float)[None, :], np.asarray(qdd, float)[None, :], vs))
    return x.reshape(len(qd), len(COEFFICIENTS))


@cache
def _static_entry() -> float | None:
    """The regressor's first entry (d level / d threshold) when no input moves it (its value, 1: the
    level is linear in the static part), else None."""
    f = _level_functions()[1]
    inputs = f.sx_in()
    entry = f(*inputs)[0]
    return None if cs.depends_on(entry, cs.vertcat(*inputs)) else float(cs.evalf(entry))


def static_regressor(qd: np.ndarray, qdd: np.ndarray, vs: float) -> np.ndarray:
    """``regressor`` with only its static column (the others 0: ``shape="static"``'s fit), without
    evaluating the columns it drops: the static column is a constant (_static_entry), the same
    number at every sample as the mapped function gives (issue #46: the design's largest cost)."""
    constant = _static_entry()
    if constant is None:
        x = regressor(qd, qdd, vs)
    else:
        x = np.zeros((len(qd), len(COEFFICIENTS)))
        x[:, 0] = constant
    x[:, 1:] = 0.0
    return x


@lru_cache(maxsize=32)
def _level_along(samples: int) -> cs.Function:
    """detect.level of one joint along ``samples`` samples as one vector expression (MX: each
    operation runs once over the whole vector), (qd (1, K), qdd (1, K), coefficients, vs) -> (1, K).
    The same operations in the same order per sample as ``_mapped(0, samples)``, so the same bits
    (test_threshold_shortcuts), without the mapped function's call per sample and its copies of the
    coefficients to every sample: 8.6 against 90-140 ms for 120,000 samples (issue #46)."""
    qd, qdd = cs.MX.sym("qd", 1, samples), cs.MX.sym("qdd", 1, samples)
    coef, vs = cs.MX.sym("c", len(COEFFICIENTS)), cs.MX.sym("vs")
    return cs.Function("level_along", [qd, qdd, coef, vs], [level(qd, qdd, coef[0], coef[1], coef[2], coef[3], vs)])


def threshold_along(outs: dict[str, np.ndarray], design: Thresholds) -> np.ndarray:
    """(K, n) the whole threshold of ``design`` along a replay's qd_hat, qdd_hat. A joint with a static
    threshold only (kv = ka = ks = 0, vs > 0) and finite qd_hat, qdd_hat has the level ``threshold``
    (0 where it is not > 0) at every sample: each other part is 0 times a finite number, and
    threshold + 0 is threshold, so the constant is the level's value bit for bit without evaluating
    it sample by sample (the static design's largest cost, issue #46); every other joint's level is
    one vector expression along the run (_level_along)."""
    # CasADi's buffers on numpy arrays, no conversions (imported here: every command's parser imports this module)
    from host_tools.identification.excitation import numeric

    qd, qdd = np.asarray(outs["qd_hat"], float), np.asarray(outs["qdd_hat"], float)
    cols = []
    for j in range(qd.shape[1]):
        th = float(design.threshold[j])
        if (
            design.kv[j] == 0
            and design.ka[j] == 0
            and design.ks[j] == 0
            and design.vs[j] > 0
            and np.isfinite(qd[:, j]).all()
            and np.isfinite(qdd[:, j]).all()
        ):
            cols.append(np.full(len(qd), th if th > 0 else 0.0))
            continue
        c = np.array([design.threshold[j], design.kv[j], design.ka[j], design.ks[j]], float)
        (along,) = numeric(_level_along(len(qd)), qd[:, j], qdd[:, j], c[:, None], np.array([design.vs[j]], float))
        cols.append(along.ravel())
    return np.column_stack(cols)


def envelope(r: np.ndarray, x: np.ndarray, low: float) -> np.ndarray:
    """Coefficients c >= (low, 0, ...) of least mean(x c) with x c >= r on every sample: a linear
    programme solved by cutting planes (the largest |r| first, then the violated samples), in units
    of max |r|. The solver meets its constraints to its feasibility tolerance (HiGHS: 1e-7), so the
    cuts stop at violations below FEASIBLE of max |r|, and the static part (x's first column, 1 at
    every sample) is then raised by the largest violation left: x c >= r holds exactly."""
    scale = float(r.max())
    c = np.zeros(x.shape[1])
    c[0] = low
    if not scale > 0:
        return c
    cost = x.mean(axis=0)
    used = cost > 0  # a regressor column that is 0 throughout (no q-ddot estimate): its coefficient is 0
    xs, rs = x[:, used], r / scale
    if used.sum() == 1 and used[0] and np.all(xs == xs[0, 0]):
        solution = np.array([max(low / scale, float(np.max(rs / xs[0, 0])))])  # (_cutting_planes)
    else:
        solution = _cutting_planes(xs, r, rs, cost[used], low / scale)
    c[used] = solution * scale
    c[0] += max(0.0, float(np.max(r - xs @ c[used])))
    return c


def _cutting_planes(xs: np.ndarray, r: np.ndarray, rs: np.ndarray, cost: np.ndarray, low: float) -> np.ndarray:
    """envelope's linear programme (rs: r in units of max |r|) by cutting planes: the largest r first, then
    the violated samples, until none is violated by more than FEASIBLE. With one constant column
    (the static design) its solution is the tightest of its bounds, max(low, max rs / x): the
    programme's presolve makes each row such a bound, and HiGHS returns it exactly
    (test_threshold_shortcuts), so envelope takes it without the solver (issue #46: the fits were
    13 % of a collide kuka_iiwa14's CPU under cProfile, 714 of them)."""
    from scipy.optimize import linprog  # here: every command's parser imports this module (0.4 s)

    bounds = [(low, None)] + [(0.0, None)] * (xs.shape[1] - 1)
    active = np.zeros(len(rs), bool)
    active[np.argsort(r)[-CUTS:]] = True
    while True:
        res = linprog(cost, A_ub=-xs[active], b_ub=-rs[active], bounds=bounds, method="highs")
        if not res.success:
            raise ValueError(f"the threshold fit failed ({res.message})")
        gap = rs - xs @ res.x
        bad = np.flatnonzero((gap > FEASIBLE) & ~active)
        if not bad.size:
            return np.asarray(res.x, float)
        active[bad[np.argsort(gap[bad])[-CUTS:]]] = True


FEASIBLE = 1e-6  # the cutting planes' violation tolerance, a fraction of max |r| (above HiGHS's 1e-7)
CUTS = 256  # samples added to the linear programme per round


def held_out_ratios(r: np.ndarray, x: np.ndarray, low: float, blocks: int, run: np.ndarray | None = None) -> np.ndarray:
    """max |r| / envelope on contiguous blocks, the envelope fitted without them. One run (``run``
    None, or one label): (blocks,), each block held out in turn. Several (``run``: (K,) labels, the
    samples of a run contiguous): (runs x blocks,), each run held out in turn, the envelope fitted on
    the other runs, and the held-out run's maxima taken on ``blocks`` contiguous blocks of it."""
    groups, one_run = _held_out_groups(len(r), blocks, run)
    if _one_static_row(x):
        return _static_held_out_ratios(r, x[:1], low, blocks, groups, one_run)
    return _masked_held_out_ratios(r, x, low, blocks, groups, one_run)


def _held_out_groups(k: int, blocks: int, run: np.ndarray | None) -> tuple[list[np.ndarray], bool]:
    """held_out_ratios' groups of ``k`` samples held out in turn (one run: ``blocks`` contiguous
    blocks; several, ``run``'s labels: each run), and whether there is one run."""
    labels = np.zeros(k, int) if run is None else np.asarray(run)
    runs = np.unique(labels)
    if len(runs) == 1:
        return np.array_split(np.arange(k), blocks), True
    return [np.flatnonzero(labels == u) for u in runs], False


def _masked_held_out_ratios(
    r: np.ndarray, x: np.ndarray, low: float, blocks: int, groups: list[np.ndarray], one_run: bool
) -> np.ndarray:
    """held_out_ratios as defined: each group left out in turn, the envelope fitted on the other
    samples, the ratio's largest value on each of the group's parts (one run: the group itself)."""
    out = []
    for held in groups:
        out += _fitted_off(r, x, held, low, [held] if one_run else np.array_split(held, blocks))
    return np.array(out)


def _fitted_off(r: np.ndarray, x: np.ndarray, held: np.ndarray, low: float, parts: list[np.ndarray]) -> list[float]:
    """The envelope fitted on the samples off ``held``; its ratio's largest value on each of ``parts``."""
    rest = np.ones(len(r), bool)
    rest[held] = False
    c = envelope(r[rest], x[rest], low)
    return [float(np.max(r[idx] / (x[idx] @ c))) for idx in parts]


def _one_static_row(x: np.ndarray) -> bool:
    """Whether every row of the regressor ``x`` is the same static row (a positive finite constant
    first column, the others 0: static_regressor's), where envelope takes its static shortcut and
    r_i / scale / x is monotone in r_i (an infinite x makes -inf / x NaN: not the maximum's)."""
    return len(x) > 0 and 0 < x[0, 0] < np.inf and not x[:, 1:].any() and bool(np.all(x[:, 0] == x[0, 0]))


def _static_held_out_ratios(
    r: np.ndarray, row: np.ndarray, low: float, blocks: int, groups: list[np.ndarray], one_run: bool
) -> np.ndarray:
    """held_out_ratios for a regressor of one static row ``row`` (1, columns) at every sample, from
    the maxima of r's parts, bit for bit the masked fits (issue #46: they were two thirds of
    collide's threshold design). Every step of the static envelope on samples R reads r only
    through a maximum over R of a correctly rounded, hence monotone, function of one r_i: max |r|
    itself, max (r_i / scale) / x, max (r_i - x c); so it is envelope on the one sample max_R r.
    The groups partition the samples, so the rest's maximum is the other groups' largest maximum
    (exact in any order, a NaN kept)."""
    parts = [[held] if one_run else np.array_split(held, blocks) for held in groups]
    highest = [r[held].max() for held in groups]
    out = []
    for g in range(len(groups)):
        rest = np.array([np.max([h for i, h in enumerate(highest) if i != g])])
        c = envelope(rest, row, low)
        level = (row @ c)[0]  # x c at every sample: the one product x_0 c_0, the other terms 0 x 0
        out += [np.max(r[idx] / level) for idx in parts[g]]
    return np.array(out)


def extreme_value_margins(
    held_out: np.ndarray, cost: np.ndarray, blocks: float, target: float, exceedance: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-joint margins from held-out maxima ``held_out`` (units, n) and the joints' envelope means
    ``cost`` (n,): (margins (n,), the Gumbel fits (n, 2): location, scale).

    Each joint's held-out maxima are fitted a Gumbel law (scipy.stats.gumbel_r, maximum likelihood;
    the GEV's shape is not identifiable from a few maxima, and a fitted bounded tail would cap the
    level at the largest seen). The largest ratio over the motion the probability refers to --
    ``blocks`` maxima, the held-out blocks that fit in it (a run of the design's length: the number
    of blocks; an hour: 3600 s / the block's length) -- is then Gumbel with location
    mu + sigma ln(blocks), so it exceeds q with the hazard lambda = blocks exp(-(q - mu) / sigma).
    That motion's total hazard -ln(1 - exceedance) (the probability that some joint reaches
    ``target`` in it) is shared among the joints where it
    costs least: the sum of cost_j q_j is smallest for lambda_j proportional to cost_j sigma_j
    (Lagrange). The fit's uncertainty is met conservatively: q_j is never below the joint's
    largest held-out ratio (the fit cannot argue away a maximum that was seen), nor below 1 (the
    envelope covers the design run). margin_j = q_j / target."""
    from scipy.stats import gumbel_r  # here: every command's parser imports this module

    fits = np.array([_gumbel_fit(gumbel_r, held_out[:, j]) for j in range(held_out.shape[1])])
    weight = np.maximum(cost * fits[:, 1], np.finfo(float).tiny)
    hazard = -np.log1p(-exceedance) * weight / weight.sum()
    spread = fits[:, 1] > 0  # a point law's level is its value (its hazard share underflows to 0)
    q = fits[:, 0] + np.where(spread, fits[:, 1] * np.log(blocks / np.where(spread, hazard, 1.0)), 0.0)
    return np.maximum.reduce([q, held_out.max(axis=0), np.ones(len(q))]) / target, fits


def _gumbel_fit(gumbel_r: Any, maxima: np.ndarray) -> tuple[float, float]:
    """(location, scale) of one joint's held-out maxima. Maxima without spread (equal to the last
    bits: an envelope that a bound covers wholly, every block's maximum the same) have no scale to
    fit -- scipy's likelihood overflows -- and are a point law: location the value, scale 0, so the
    joint's level is the maximum that was seen."""
    if not np.all(np.isfinite(maxima)):
        raise ValueError("the held-out ratios are not finite (a joint's envelope is 0 where its residual is not)")
    if np.ptp(maxima) <= 4 * np.finfo(float).eps * np.max(np.abs(maxima)):
        return float(np.max(maxima)), 0.0
    location, scale = gumbel_r.fit(maxima)
    return float(location), float(scale)


def holds(rt: Realtime) -> bool:
    """Whether ``rt``'s observer is model-adaptive and holds its adaptation on its thresholds
    (``obs.freeze`` not 0): its residual then depends on them (the module docstring)."""
    spec = registry.observers().get(str(rt.rt_manifest["observer"]))
    adaptive = spec is not None and spec.adaptive
    return adaptive and "obs.freeze" in rt.config.keys() and float(rt.config["obs.freeze"]) != 0


def replay_residual(
    rt: Realtime, log: Log, skip: float, acting: Thresholds | None = None
) -> tuple[dict[str, np.ndarray], int]:
    """The pipeline's outputs over a collision-free log (checked to fit the pipeline and to move)
    and the index of the first sample after ``skip`` seconds; ``acting``: replay's."""
    if not skip >= 0:
        raise ValueError("skip must be >= 0")
    if log.robot != rt.name:
        raise ValueError(f"the log is of robot {recorded_for(log)!r}, the pipeline is {rt.name!r}")
    if abs(log.sample_period - rt.sample_period) > 1e-9 * rt.sample_period:
        raise ValueError(
            f"the log is sampled every {log.sample_period:g} s, the pipeline runs every {rt.sample_period:g} s"
        )
    if "qd_meas" in (rt.input_dtype.names or ()):
        raise ValueError(
            f"the {rt.rt_manifest['observer']} observer reads measured motion (in.qd_meas), which the log "
            "format does not carry: use its estimator-fed variant"
        )
    if "det.threshold" not in rt.config.keys():
        raise ValueError("the pipeline has no collision observer (choose one with --observer)")
    k0 = int(round(skip / rt.sample_period))
    if len(log) <= k0 + 1:
        raise ValueError(f"the log has {len(log)} samples; skipping {skip:g} s leaves none")
    outs = replay(rt, log, acting)
    speed = np.max(np.abs(np.asarray(outs["qd_hat"], float)[k0:]), axis=0)
    moving = np.array([MOVING[t] for t in rt.manifest["joint_types"]])
    if not np.any(speed >= moving):
        raise ValueError(
            "the robot barely moves on this log (peak estimated joint speeds "
            + ", ".join(f"{v:.3g}" for v in speed)
            + f" rad/s or m/s; some joint must reach {MOVING['revolute']:g} rad/s, {MOVING['prismatic']:g} m/s "
            "if prismatic): thresholds from standstill are below the residual of any motion; record a run "
            "that moves (manipgen record)"
        )
    if not np.all(np.isfinite(np.asarray(outs["r"], float)[k0:])):
        raise ValueError("the residual is not finite on this log (diverged estimator or bad torques)")
    return outs, k0


def _used(k: int, k0: int, exclude: np.ndarray | None) -> np.ndarray:
    use = np.arange(k) >= k0
    if exclude is not None:
        if np.shape(exclude) != (k,):
            raise ValueError(f"exclude: expected a ({k},) mask of samples, got shape {np.shape(exclude)}")
        use &= ~np.asarray(exclude, bool)
    return use


def design_thresholds(
    rt: Realtime,
    log: Log,
    margin: float | None = None,
    skip: float = 0.5,
    floor: float = 0.0,
    *,
    target: float = TARGET,
    blocks: int = BLOCKS,
    static: bool = False,
    exclude: np.ndarray | None = None,
    exceedance: float | None = None,
    horizon: float | None = None,
) -> Thresholds:
    """Thresholds from a collision-free log (see the module docstring). ``skip`` seconds at the
    start are left out (observer start-up), and the samples where ``exclude`` (K,) is True (flagged
    by the input checks). ``margin`` None: derived from ``blocks`` held-out blocks -- one margin
    bringing the worst to ``target``, or with ``exceedance`` per joint (extreme_value_margins: a
    run of the log's length, or of ``horizon`` seconds of motion, reaches ``target`` with that
    probability)."""
    return design_across(
        rt,
        [log],
        margin,
        skip,
        floor,
        target=target,
        blocks=blocks,
        static=static,
        exclude=[exclude],
        exceedance=exceedance,
        horizon=horizon,
    )


def design_across(
    rt: Realtime,
    logs: list[Log],
    margin: float | None = None,
    skip: float = 0.5,
    floor: float = 0.0,
    *,
    target: float = TARGET,
    blocks: int = BLOCKS,
    static: bool = False,
    exclude: list[np.ndarray | None] | None = None,
    exceedance: float | None = None,
    horizon: float | None = None,
    folds: list[dict[str, Any]] | None = None,
    at_rest: np.ndarray | None = None,
) -> Thresholds:
    """Thresholds from one or several collision-free runs of the same pipeline: the envelope covers
    every run; with several, the margins come from each run held out in turn (the envelope fitted on
    the others, the held-out run's maxima on ``blocks`` blocks of it) -- the spread between runs, not
    only within one. ``exclude``: per run, as in design_thresholds. The result's residual, level and
    times run along the runs one after the other. ``folds``: per held-out block (design_blocks) of
    one run, or per run of several, the config fields of a model fitted without it
    (host_tools.studies.design_model); each block's (run's) held-out ratios are then taken on the
    residual of its own model. ``at_rest``: the level's floor at qd_hat = 0 (coulomb_floor)."""
    check_design_options(margin, target, floor, blocks, exceedance, horizon)
    if not logs:
        raise ValueError("no run to design from")
    if folds is not None and len(folds) != (blocks if len(logs) == 1 else len(logs)):
        raise ValueError(f"folds: one model per held-out block ({blocks}) of one run or per run, got {len(folds)}")

    def designed(acting: Thresholds | None) -> Thresholds:
        parts, left_out, k0s = [], [], []
        for i, log in enumerate(logs):
            outs, k0 = replay_residual(rt, log, skip, acting)
            parts.append(outs)
            k0s.append(k0)
            left_out.append(~_used(len(log), k0, None if exclude is None else exclude[i]))
        left_out[0][: k0s[0]] = False  # the first run's start is design_from_outputs' k0; the others' are left out
        crossed = None  # every run's residual with each fold's model
        if folds is not None:
            crossed = [_joined([_replayed_with(rt, values, log, skip, acting) for log in logs]) for values in folds]
        return design_from_outputs(
            _joined(parts),
            k0s[0],
            rt.sample_period,
            margin,
            floor,
            target,
            blocks,
            static,
            np.concatenate(left_out),
            float(rt.config["det.vs"][0]),
            exceedance=exceedance,
            horizon=horizon,
            run=np.concatenate([np.full(len(m), i) for i, m in enumerate(left_out)]) if len(logs) > 1 else None,
            folds=crossed,
            at_rest=at_rest,
        )

    first = designed(None)
    # a holding observer: again, with the first thresholds acting on the hold (the module docstring)
    return designed(first) if holds(rt) else first


def _joined(outs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Runs' replay_residual outputs one after the other."""
    return {key: np.concatenate([o[key] for o in outs]) for key in ("r", "qd_hat", "qdd_hat")}


Fold = tuple[np.ndarray, np.ndarray, np.ndarray]  # |r|, qd_hat, qdd_hat (used samples, n) of a block's own model


def _replayed_with(
    rt: Realtime, values: dict[str, Any], log: Log, skip: float, acting: Thresholds | None
) -> dict[str, np.ndarray]:
    """replay_residual's outputs with the config fields ``values`` in place; the config as it was after."""
    saved = {k: np.array(rt.config[k], copy=True) for k in values if k in rt.config.keys()}
    try:
        for key, value in values.items():
            rt.config[key] = value
        return replay_residual(rt, log, skip, acting)[0]
    finally:
        for key, value in saved.items():
            rt.config[key] = value


def _fit_scale(
    r: np.ndarray,
    qd: np.ndarray,
    qdd: np.ndarray,
    vs: float,
    static: bool,
    blocks: int,
    run: np.ndarray | None,
    held_out: bool = True,
    folds: list[Fold] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At standstill scale ``vs``, per joint: the envelope's coefficients (n, 4) at margin 1, the
    held-out ratios (units, n; ``held_out`` False: none, (0, n); ``folds``: cross-fitted,
    _cross_fitted_ratios) and the envelope's mean over the samples (n,)."""
    n = r.shape[1]
    coef, ratios, means = np.zeros((n, len(COEFFICIENTS))), [], np.zeros(n)
    low = MIN_STATIC * r.max(axis=0)

    def shaped(v: np.ndarray, a: np.ndarray) -> np.ndarray:
        return static_regressor(v, a, vs) if static else regressor(v, a, vs)

    for j in range(n):
        x = shaped(qd[:, j], qdd[:, j])
        coef[j] = envelope(r[:, j], x, low[j])
        if not held_out:
            ratios.append(np.zeros(0))
        elif folds is not None:
            crossed = [(f[0][:, j], shaped(f[1][:, j], f[2][:, j])) for f in folds]
            ratios.append(_cross_fitted_ratios(crossed, low[j], blocks, run))
        else:
            ratios.append(held_out_ratios(r[:, j], x, low[j], blocks, run))
        means[j] = float(np.mean(x @ coef[j]))
    return coef, np.column_stack(ratios), means


def _cross_fitted_ratios(
    folds: list[tuple[np.ndarray, np.ndarray]], low: float, blocks: int, run: np.ndarray | None = None
) -> np.ndarray:
    """One joint's held-out ratios where each group's model was fitted without it (issue #44: a model
    identified on the design runs has seen every block, so its own residual there understates
    another run's): ``folds``[g] = (|r|, regressor) over the used samples with group g's model, the
    groups held_out_ratios' (one run: its blocks; several, ``run``'s labels: each run); the envelope
    fitted on that residual off group g, its largest ratio on group g (a run: on each of its
    ``blocks`` blocks)."""
    groups, one_run = _held_out_groups(len(folds[0][0]), blocks, run)
    out = []
    for held, (r, x) in zip(groups, folds, strict=True):
        out += _fitted_off(r, x, held, low, [held] if one_run else np.array_split(held, blocks))
    return np.array(out)


def design_blocks(k: int, k0: int, exclude: np.ndarray | None, blocks: int) -> list[np.ndarray]:
    """One run's held-out blocks (held_out_ratios' groups) as sample indices of the run: its used
    samples (from ``k0`` on, less ``exclude``) split into ``blocks`` contiguous parts."""
    return np.array_split(np.flatnonzero(_used(k, k0, exclude)), blocks)


def check_design_options(
    margin: float | None,
    target: float,
    floor: float,
    blocks: int,
    exceedance: float | None = None,
    horizon: float | None = None,
) -> None:
    """One clear error per bad design option (design_thresholds, design_from_outputs)."""
    if exceedance is not None and not 0 < exceedance < 1:
        raise ValueError(f"exceedance must be in (0, 1) (a probability per run or horizon), got {exceedance!r}")
    if horizon is not None and not horizon > 0:
        raise ValueError(f"horizon must be > 0 (seconds of motion), got {horizon!r}")
    if margin is not None and not margin >= 1.0:
        raise ValueError(f"margin must be >= 1 (a factor on the fitted envelope), got {margin!r}")
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1] (a held-out max |r| / threshold), got {target!r}")
    if not floor >= 0:
        raise ValueError("floor must be >= 0")
    if not blocks >= 2:
        raise ValueError(f"blocks must be >= 2 (held-out parts of the run), got {blocks!r}")


def count_floor(
    robot: Robot,
    params: np.ndarray,
    motion: tuple[np.ndarray, np.ndarray, np.ndarray],
    target: float = TARGET,
    draws: int = 1024,
    every: int = 50,
) -> np.ndarray:
    """The static threshold's floor the encoders set (issue #46), per joint: a residual computed from
    the encoder's q is off by what a position error of one count changes in the model's torque,
    sum_i |tau_j(q + c_i e_i, qd, qdd) - tau_j(q, qd, qdd)| (c_i: joint i's rad or m per count; the
    torque of ``params``, standard parameters). Its largest value is taken over the design motion
    ``motion`` = (q, qd, qdd) (every ``every``-th sample) and over ``draws`` configurations at rest
    drawn uniformly (seed 0) in the box of positions it visits, where gravity's part is largest off
    the motion's own path; divided by ``target`` as the design's margin divides the worst residual.
    A threshold under it can be crossed by a count's flip alone wherever the check motion meets a
    stiffer configuration than the design motion did: planar2's adaptive_measured, designed at
    0.0085 N m, met 0.0103 N m on its check motion (6 false alarms), a count through gravity there
    (up to 0.0139 N m on joint 1 of planar2)."""
    q, qd, qdd = (np.asarray(x, float)[::every] for x in motion)
    m = identification_model(robot)
    beta = m.base.values(np.asarray(params, float))
    counts = encoders(robot)[0]
    rng = np.random.default_rng(0)
    rest = q.min(axis=0) + (q.max(axis=0) - q.min(axis=0)) * rng.random((draws, q.shape[1]))
    worst = np.zeros(q.shape[1])
    for at, vel, acc in ((q, qd, qdd), (rest, np.zeros_like(rest), np.zeros_like(rest))):
        tau = m.regressor(at, vel, acc) @ beta
        step = np.zeros_like(tau)
        for i, c in enumerate(counts):
            moved = at.copy()
            moved[:, i] += c
            step += np.abs(m.regressor(moved, vel, acc) @ beta - tau)
        worst = np.maximum(worst, step.max(axis=0))
    return worst / target


def coulomb_floor(
    robot: Robot, params: np.ndarray, target: float = TARGET, stribeck: np.ndarray | None = None
) -> np.ndarray:
    """The level at rest's floor Coulomb friction sets (issue #46), per joint: 2 |FC_j + FS_j| /
    target, with FC_j the Coulomb parameter of ``params`` (standard parameters, the model the
    observer runs on; 0 where the joint declares none) and FS_j the Stribeck term's coefficient
    (``stribeck``, the config's fric.fs where the model has that term, e.g. identified: it rides on
    the Coulomb shape, so the model's friction jumps by 2 (FC + FS) through zero velocity; a smooth
    Coulomb term FT tanh(qd / v_t) is continuous there and adds nothing; `manipgen thresholds` since
    2026-12-01: a hostile iiwa's joint 2 breaking away from rest inside its planted Stribeck band
    reached 1.12 of a threshold designed on another run). A joint at rest holds with a friction
    anywhere in [-FC, FC], and the model's FC sgn(qd_hat) takes the sign of an estimate whose noise
    crosses zero: the two may
    disagree by up to 2 FC for as long as the joint rests (the Kalman q-dot's sign flipping against
    a stuck joint gave the iiwa's identified momentum observer 0.087 and 0.125 N m residuals, 0.52
    and 0.69 FC, over thresholds below FC). No observer can tell a contact below the static friction
    from the friction there. design_from_outputs raises the standstill part ks so that the level
    at qd_hat = 0 reaches the floor; away from rest (|qd_hat| >> vs) the level is unchanged. The
    plant's FC may differ from the model's (a friction error): the mismatch is then up to FC_model
    + FC_plant, which 2 FC_model / target covers for plant errors up to (2 / target - 2) FC, 35 % at
    the default target."""
    names = list(robot.standard_parameter_names)
    p = np.asarray(params, float)
    fc = np.array([p[names.index(f"FC{j + 1}")] if f"FC{j + 1}" in names else 0.0 for j in range(robot.dof)])
    fs = np.zeros(robot.dof) if stribeck is None else np.asarray(stribeck, float).reshape(robot.dof)
    return 2.0 * np.abs(fc + fs) / target


def design_from_outputs(
    outs: dict[str, np.ndarray],
    k0: int,
    sample_period: float,
    margin: float | None = None,
    floor: float = 0.0,
    target: float = TARGET,
    blocks: int = BLOCKS,
    static: bool = False,
    exclude: np.ndarray | None = None,
    static_vs: float = 0.01,
    *,
    exceedance: float | None = None,
    horizon: float | None = None,
    run: np.ndarray | None = None,
    least: np.ndarray | None = None,
    held_out: bool = True,
    folds: list[dict[str, np.ndarray]] | None = None,
    at_rest: np.ndarray | None = None,
) -> Thresholds:
    """design_thresholds on a pipeline's outputs already computed (``r``, ``qd_hat``, ``qdd_hat``,
    (K, n) each, e.g. of a closed-loop simulation), the samples from ``k0`` on; ``static_vs``: the
    standstill scale kept by a static design. ``exceedance``: the per-joint extreme-value margins
    (extreme_value_margins); None: one margin for all joints, the worst held-out ratio brought to
    ``target`` (collide's design motions); ``horizon``: the seconds of motion ``exceedance`` refers
    to (default: the design run's length; with several runs, one run's). ``run``: (K,) labels of the
    runs concatenated in ``outs`` (each held out in turn, held_out_ratios). ``least``: (n,) the
    static part's lowest value per joint (count_floor), after the margin and ``floor``. ``held_out``
    False, with a ``margin`` given: the held-out ratios, which only report then, are not computed
    (eight envelope fits per joint; Thresholds.held_out is (0, n)). ``folds``: one run's outputs
    with each block's own model, one per block (design_across), for cross-fitted held-out ratios.
    ``at_rest``: (n,) the level's floor at qd_hat = 0 (coulomb_floor): the standstill part ks is
    raised to reach it, with the scale vs chosen (a static design's ``static_vs``)."""
    check_design_options(margin, target, floor, blocks, exceedance, horizon)
    if not held_out and margin is None:
        raise ValueError("held_out=False needs a margin: a derived margin comes from the held-out ratios")
    runs = 1 if run is None else len(np.unique(run))
    if folds is not None and len(folds) != (blocks if runs == 1 else runs):
        raise ValueError(f"folds: outputs per held-out block ({blocks}) of one run or per run, got {len(folds)}")
    residual = np.asarray(outs["r"], float)
    use = _used(len(residual), k0, exclude)
    if use.sum() < 2 * blocks * runs:
        raise ValueError(f"{int(use.sum())} samples left to design from (after the skipped start and the flagged ones)")
    r = np.abs(residual[use])
    qd, qdd = np.asarray(outs["qd_hat"], float)[use], np.asarray(outs["qdd_hat"], float)[use]
    labels = None if run is None else np.asarray(run)[use]
    n = r.shape[1]
    worst = r.max(axis=0)
    block_seconds = len(r) / (blocks * (1 if labels is None else len(np.unique(labels)))) * sample_period
    span = blocks * block_seconds if horizon is None else horizon
    crossed: list[Fold] | None = None
    if folds is not None:
        parts = [[np.asarray(f[k], float)[use] for k in ("r", "qd_hat", "qdd_hat")] for f in folds]
        crossed = [(np.abs(r_f), qd_f, qdd_f) for r_f, qd_f, qdd_f in parts]
    fits = []  # per candidate vs: (score, vs, coefficients (n, 4) at margin 1, held-out (units, n), margins)
    for vs in (static_vs,) if static else STANDSTILL_SCALES:
        coef, ratios, means = _fit_scale(r, qd, qdd, vs, static, blocks, labels, held_out, crossed)
        if margin is not None:
            m = np.full(n, margin)
        elif exceedance is None:
            m = np.full(n, max(1.0, float(ratios.max())) / target)
        else:
            m = extreme_value_margins(ratios, means, span / block_seconds, target, exceedance)[0]
        fits.append((float(np.sum(m * means)), vs, coef, ratios, m))
    _, vs, coef, ratios, m = min(fits, key=lambda f: f[0])
    coef = m[:, None] * coef
    coef[:, 0] += floor
    if least is not None:
        coef[:, 0] = np.maximum(coef[:, 0], least)
    if at_rest is not None:
        detects = coef[:, 0] > 0  # a joint without a threshold stays without
        coef[:, 3] = np.where(detects, np.maximum(coef[:, 3], np.asarray(at_rest, float) - coef[:, 0]), coef[:, 3])
    draft = Thresholds(
        coef[:, 0],
        coef[:, 1],
        coef[:, 2],
        coef[:, 3],
        np.full(n, vs),
        m,
        margin is not None,
        target,
        exceedance,
        span,
        block_seconds,
        ratios,
        bool(np.any(qdd != 0)),
        np.zeros(n),
        np.zeros_like(residual),
        worst,
        (np.flatnonzero(use)[r.argmax(axis=0)]) * sample_period,
        len(r),
        int(np.sum(~use[k0:])),
        residual,
        k0,
    )
    along = threshold_along(outs, draft)
    left_out = ~use
    left_out[:k0] = False
    return replace(draft, threshold_mean=along[use].mean(axis=0), level=along, left_out=left_out)


def replay(rt: Realtime, log: Log, acting: Thresholds | None = None) -> dict[str, np.ndarray]:
    """The pipeline's outputs over the log from reset: with detection off, or with ``acting``'s
    thresholds acting on a holding observer's hold (holds) and no collision latched (a debounce
    longer than the log, so no reaction either; at most the config's DEBOUNCE_MAX: a longer log latches
    only if a joint stays above its threshold that long). The config is restored afterwards."""
    debounce = float(min(len(log) + 1, DEBOUNCE_MAX))
    pins = {"det.threshold": 0.0} if acting is None else {**acting.config(), "det.debounce": debounce}
    saved = {key: np.array(rt.config[key], copy=True) for key in pins}
    try:
        for key, value in pins.items():
            rt.config[key] = value
        rt.reset()
        clocked, rows = on_its_clock(log)  # a gap's missing samples, a repeated row's stale one: not valid
        return {k: np.asarray(v)[rows] for k, v in rt.run(clocked).items()}
    finally:
        for key, value in saved.items():
            rt.config[key] = value


# A log moves when some joint's estimated speed reaches this after the skipped start: thresholds from
# a robot at (or near) standstill hold only friction-free, Coriolis-free residuals, far below those of
# any motion (Birjandi & Haddadin's thresholds come from the robot's own motions).
MOVING = {"revolute": 0.1, "prismatic": 0.01}  # rad/s, m/s


@dataclass(frozen=True)
class Check:
    """Another collision-free run against designed thresholds."""

    max_residual: np.ndarray  # per joint after the skipped start
    false_alarm_samples: np.ndarray  # samples with |r| above the threshold, per joint
    ratio: np.ndarray  # max over the samples of |r| / threshold per joint (< 1: no false alarm)
    threshold_mean: np.ndarray  # per joint, the whole threshold's mean over this run's samples
    level: np.ndarray  # (K, n) the whole threshold along this run
    residual: np.ndarray
    skipped: int
    left_out: np.ndarray | None = None  # (K,) samples after the start left out (flagged)


def check_thresholds(
    rt: Realtime, log: Log, design: Thresholds, skip: float = 0.5, exclude: np.ndarray | None = None
) -> Check:
    """Replay ``log`` (collision-free, of the same robot and rate) and count the samples whose |r|
    exceeds the designed threshold along this run -- each one a false alarm (before the detector's
    debounce). A holding observer's run has the thresholds acting on its hold (holds). ``exclude``:
    samples left out (flagged by the input checks)."""
    outs, k0 = replay_residual(rt, log, skip, design if holds(rt) else None)
    residual = np.asarray(outs["r"], float)
    use = _used(len(residual), k0, exclude)
    if not use.any():
        raise ValueError("no sample left to check (after the skipped start and the flagged ones)")
    along = threshold_along(outs, design)
    r, th = np.abs(residual[use]), along[use]
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero threshold: ratio inf (or 0 for r = 0)
        ratio = np.max(np.where(r > 0, r / th, 0.0), axis=0)
    left_out = ~use
    left_out[:k0] = False
    return Check(r.max(axis=0), np.sum(r > th, axis=0), ratio, th.mean(axis=0), along, residual, k0, left_out)


@dataclass(frozen=True)
class Tuned:
    key: str  # the tuned config key (the observer's Tunable, e.g. obs.lam)
    value: float  # the chosen value
    objective: float  # sum_j max|r_j| / RMS(tau_j) on the run
    default_objective: float  # the same with the config as it was
    table: list[tuple[float, float]]  # every candidate (value, objective)


def tunable(rt: Realtime) -> registry.Tunable:
    """The gain --tune chooses for rt's observer (one clear error when it has none)."""
    spec = registry.observers()[rt.rt_manifest["observer"]]
    if spec.tunables:
        return spec.tunables[0]
    offered = [o for o in registry.observers().values() if o.tunables and o.replays_logs]
    raise ValueError(
        f"nothing to tune in {rt.label}: --tune chooses {offered[0].tunables[0].what} "
        f"(--observer {' or '.join(o.name for o in offered)}); the momentum observer's only gain is K, its "
        "detection bandwidth"
    )


def tune_observer(
    rt: Realtime,
    log: Log,
    skip: float = 0.5,
    exclude: np.ndarray | None = None,
    executor: Executor | None = None,
    pipeline: PipelineSource | None = None,
) -> Tuned:
    """The value of the observer's tunable gain (its spec's, e.g. the adaptive observer's damping
    lambda of Y+: 1e-6 ... 1e4; lambda -> 0 adapts fully to every model-error change, the
    estimator's q-ddot noise included; lambda -> inf stops adapting, r -> the direct residual) that
    makes its residual quietest on this collision-free run. The objective is the thresholds' sum
    relative to each joint's torque RMS, sum_j max|r_j| / RMS(tau_j), so no joint dominates by its
    size. The observer gain K and the estimator are kept: lowering K (or slowing the estimator)
    lowers r for any model error but slows detection -- and the estimator also feeds the
    controller. The chosen value is left in ``rt.config``. ``exclude``: (K,) samples left out, as in
    design_thresholds. ``executor``: the candidates as pure items (gain_objective) carrying
    ``pipeline``, rt's generated pipeline (required with it), and rt's config; default: here, one
    after the other."""
    gain = tunable(rt)
    if executor is not None and pipeline is None:
        raise ValueError("tune_observer: an executor needs the pipeline's source (PipelineSource) to send")
    start = float(rt.config[gain.key])
    config = rt.config.to_dict()
    default = _objective(rt, log, skip, exclude)  # a log that does not fit the pipeline fails here, once
    if executor is None:
        values = [_candidate(rt, log, skip, exclude, gain.key, v) for v in gain.grid]
    else:
        assert pipeline is not None
        futures = [
            executor.submit(gain_objective, pipeline, config, log, skip, exclude, gain.key, v) for v in gain.grid
        ]
        values = [fu.result() for fu in futures]
    table = list(zip(gain.grid, values))
    value, best = min(table, key=lambda row: row[1])
    if best >= default:  # the config as it was is at least as quiet: keep it
        value, best = start, default
    rt.config[gain.key] = value
    return Tuned(gain.key, value, best, default, table)


def _objective(rt: Realtime, log: Log, skip: float, exclude: np.ndarray | None) -> float:
    scale = np.sqrt(np.mean(np.asarray(log.tau, float) ** 2, axis=0))
    scale = np.where(scale > 0, scale, 1.0)
    outs, k0 = replay_residual(rt, log, skip)
    r = np.abs(np.asarray(outs["r"], float))[_used(len(log), k0, exclude)]
    return float(np.sum(np.max(r, axis=0) / scale))


def _candidate(rt: Realtime, log: Log, skip: float, exclude: np.ndarray | None, key: str, value: float) -> float:
    rt.config[key] = value
    try:
        return _objective(rt, log, skip, exclude)
    except ValueError:  # a diverged candidate (non-finite residual)
        return float("inf")


_PIPELINES: dict[PipelineSource, Realtime] = {}


def gain_objective(
    pipeline: PipelineSource,
    config: dict[str, Any],
    log: Log,
    skip: float,
    exclude: np.ndarray | None,
    key: str,
    value: float,
) -> float:
    """tune_observer's objective for one candidate as a pure work item: the pipeline built from the
    description's text once per worker, ``config`` written into it."""
    if pipeline not in _PIPELINES:
        _PIPELINES[pipeline] = pipeline.realtime()
    rt = _PIPELINES[pipeline]
    for k, v in config.items():
        rt.config[k] = v
    return _candidate(rt, log, skip, exclude, key, value)


@dataclass(frozen=True)
class Recording:
    """A collision-free log and its input checks (``checks.source``: where it came from); ``samples``:
    a CSV's or a bag's own rows (what identify fits: host_tools.data.formats.FileLog), else None."""

    log: Log
    checks: LogChecks
    samples: Samples | None = None


@dataclass(frozen=True)
class DesignSettings:
    """`manipgen thresholds`' choices (design_thresholds' arguments, and --tune, --keep-flagged)."""

    margin: float | None = None  # None: derived from the held-out blocks
    target: float = TARGET
    blocks: int = BLOCKS
    static: bool = False
    floor: float = 0.0
    skip: float = 0.5
    keep_flagged: bool = False  # design from the samples the input checks flag too
    tune: bool = False  # first choose the observer's tunable gain on the data (tune_observer)
    # per-joint margins (extreme_value_margins): ``horizon`` seconds of motion (None: a run of the
    # design's length) reach target with this probability; None: one margin, the worst block's
    exceedance: float | None = None
    horizon: float | None = None


@dataclass(frozen=True)
class Designed:
    """Thresholds designed on one run or several, with the tuned gain and other runs' checks if asked for."""

    robot: str
    pipeline: str  # the pipeline's label
    sample_period: float
    settings: DesignSettings
    data: tuple[Recording, ...]  # the design runs (several: each held out in turn, design_across)
    design: Thresholds
    tuned: Tuned | None = None  # tuned on the first design run
    others: tuple[Recording, ...] = ()
    checks: tuple[Check, ...] = ()  # one per run of ``others``
    # designed (and checked) with its thresholds acting on the observer's hold (holds), else with detection off
    hold_acting: bool = False
    rest_floor: np.ndarray | None = None  # the level's floor at rest it was designed with (coulomb_floor)

    @property
    def false_alarms(self) -> int:
        """Samples of the other runs above a threshold (0 without one)."""
        return sum(int(c.false_alarm_samples.sum()) for c in self.checks)


def design_on(
    rt: Realtime,
    data: Recording | list[Recording],
    settings: DesignSettings = DesignSettings(),
    other: Recording | list[Recording] | None = None,
    executor: Executor | None = None,
    pipeline: PipelineSource | None = None,
    folds: list[dict[str, Any]] | None = None,
    at_rest: np.ndarray | None = None,
) -> Designed:
    """`manipgen thresholds`: (with ``settings.tune`` first the observer's gain on the first run,
    tune_observer) the thresholds of ``data`` (one run: design_thresholds; several: design_across,
    each held out in turn), checked on each run of ``other`` (check_thresholds); the flagged
    samples and the settling around them left out (LogChecks.left_out: the residual and the
    estimator carry them on) unless ``keep_flagged``. The design (and the tuned gain) is left in
    ``rt.config``; errors name the run.
    ``folds``: design_across's (one run: its blocks are design_blocks of these settings; several:
    one per run). ``at_rest``: the level's floor at rest (coulomb_floor of the model ``rt`` runs)."""
    s = settings
    runs = [data] if isinstance(data, Recording) else list(data)
    others = [] if other is None else [other] if isinstance(other, Recording) else list(other)
    leave_out = [
        None if s.keep_flagged else r.checks.left_out(r.log.sample_period, TIMING_SETTLE_DESIGN) for r in runs + others
    ]
    tuned = None
    try:
        if s.tune:
            tuned = tune_observer(rt, runs[0].log, s.skip, leave_out[0], executor, pipeline)
        design = design_across(
            rt,
            [r.log for r in runs],
            s.margin,
            s.skip,
            s.floor,
            target=s.target,
            blocks=s.blocks,
            static=s.static,
            exclude=leave_out[: len(runs)],
            exceedance=s.exceedance,
            horizon=s.horizon,
            folds=folds,
            at_rest=at_rest,
        )
    except ValueError as err:
        raise ValueError(f"{', '.join(r.checks.source for r in runs)}: {err}") from None
    checks = []
    for r, left in zip(others, leave_out[len(runs) :]):
        try:
            checks.append(check_thresholds(rt, r.log, design, s.skip, left))
        except ValueError as err:
            raise ValueError(f"{r.checks.source}: {err}") from None
    for key, value in design.config().items():
        rt.config[key] = value
    return Designed(
        rt.name,
        rt.label,
        rt.sample_period,
        s,
        tuple(runs),
        design,
        tuned,
        tuple(others),
        tuple(checks),
        holds(rt),
        None if at_rest is None else np.asarray(at_rest, float),
    )
