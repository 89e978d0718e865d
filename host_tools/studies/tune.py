"""Genetic-algorithm gain tuning of the velocity estimators (Liu et al. §III, Table 3).

Every genome is a set of run-time config values (no recompilation): the reduced gain sets of
Liu et al. §III -- Kalman Q per axis; linHG diagonals H1, H2 and nlHG L1, L2 with epsilon fixed;
SliMod f+ per axis and scalar k1, k2 -- searched in log space within the bounds below. The cost is
Liu et al.'s eq. 5: the ISE of the velocity estimate over a closed-loop run on the loopback.

Why our own GA (about 60 lines) rather than a library: Liu et al.'s operators are a handful of lines
each (Table 3: population 60, 6 elites, tournament selection, uniform crossover for 87.5 % of the
rest, random mutation), and evaluating each generation as a batch through the caller's
``concurrent.futures.Executor`` (DESIGN.md "Parallel and long work") with seeded, order-independent
results is easier to guarantee here than through a library's own worker pools.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codegen.blocks import registry
from codegen.blocks.options import parse_label
from host_tools.bindings.loopback import SimulationError, simulate
from host_tools.bindings.rt import Realtime
from host_tools.bindings.source import PipelineSource
from host_tools.data.trajectories import Trajectory


@dataclass(frozen=True)
class GaSettings:
    """Liu et al. Table 3. The tournament size (4) is MATLAB ga's default, which Liu et al. used; the
    paper does not print it."""

    population: int = 60
    elites: int = 6
    tournament: int = 4
    crossover_fraction: float = 0.875
    mutation_rate: float = 0.0038  # per gene of every non-elite child
    generations: int = 20


@dataclass(frozen=True)
class Gene:
    key: str  # config key, e.g. est.h1
    index: int | None  # element, or None for a scalar
    low: float
    high: float


def gain_space(estimator: str, n: int) -> list[Gene]:
    """The reduced gain set of an estimator (Liu et al. §III; its registry genes), with search bounds."""

    genes = registry.estimators()[estimator].genes
    if not genes:
        raise ValueError(f"{estimator}: no continuous gains to tune (integer-gain filters use a grid search)")
    return [Gene(g.key, i, g.low, g.high) for g in genes for i in (range(n) if g.per_joint else (None,))]


def apply_genome(rt: Realtime, genes: list[Gene], genome: np.ndarray) -> None:
    """Write a genome (log10 values) into the pipeline's config; a gene of a design value (the
    estimator's registry ``design_keys``, e.g. kalman's est.q_var) through ``RtConfig.redesign``."""
    design_keys = registry.estimators()[parse_label(rt.label).estimator.name].design_keys
    designed: dict[str, dict[int, float]] = {}
    for g, x in zip(genes, genome):
        v = float(10.0**x)
        kind, _, name = g.key.partition(".")
        if kind == "est" and name in design_keys:
            designed.setdefault(name, {})[g.index or 0] = v
        elif g.index is None:
            rt.config[g.key] = v
        else:
            rt.config[g.key][g.index] = v
    if designed:
        rt.config.redesign(**{k: [v[i] for i in sorted(v)] for k, v in designed.items()})


@dataclass
class Problem:
    """Everything a worker needs to evaluate genomes (picklable: the pipeline travels as its
    description's text and options, built once per worker into its own cache)."""

    pipeline: PipelineSource
    config: dict[str, Any]  # the base config (rt.config.to_dict())
    genes: list[Gene]
    trajectory: Trajectory
    valid: np.ndarray | None = None
    substeps: int = 4
    true_params: np.ndarray | None = None  # the simulated robot's (default: the model's)


_LOCAL = threading.local()  # one pipeline instance per worker thread (and process): no shared state


def _realtime(pipeline: PipelineSource) -> Realtime:
    cache: dict[PipelineSource, Realtime] = _LOCAL.__dict__.setdefault("rt", {})
    if pipeline not in cache:
        cache[pipeline] = pipeline.realtime()
    return cache[pipeline]


def cost(problem: Problem, genome: np.ndarray) -> float:
    """ISE of the velocity estimate (Liu et al. eq. 5), summed over the joints; inf if unstable."""
    rt = _realtime(problem.pipeline)
    for key, value in problem.config.items():
        rt.config[key] = value
    apply_genome(rt, problem.genes, genome)
    try:
        run = simulate(
            rt, problem.trajectory, true_params=problem.true_params, valid=problem.valid, substeps=problem.substeps
        )
    except SimulationError:
        return float("inf")
    value = float(run.ise_velocity.sum())
    return value if np.isfinite(value) else float("inf")


def costs(problem: Problem, genomes: np.ndarray) -> list[float]:
    return [cost(problem, g) for g in genomes]


@dataclass
class TuneResult:
    genome: np.ndarray
    cost: float
    best: list[float] = field(default_factory=list)  # per generation
    mean: list[float] = field(default_factory=list)  # per generation (finite costs)
    evaluations: int = 0


def tune(
    problem: Problem,
    settings: GaSettings = GaSettings(),
    seed: int = 0,
    executor: Executor | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    chunks: int = 8,
) -> TuneResult:
    """Run the GA; each generation's new genomes are evaluated in ``chunks`` batches through
    ``executor`` (default: a process pool on every core; thread pools and dask work too). Same seed,
    same result, whatever the scheduling. Elites keep their cost (not re-run)."""
    rng = np.random.default_rng(seed)
    lo = np.log10([g.low for g in problem.genes])
    hi = np.log10([g.high for g in problem.genes])
    pop = rng.uniform(lo, hi, (settings.population, len(problem.genes)))
    own = executor is None
    ex = executor or ProcessPoolExecutor(max_workers=os.cpu_count() or 1)
    result = TuneResult(pop[0], float("inf"))
    known = np.full(len(pop), np.nan)
    try:
        for gen in range(settings.generations):
            todo = np.flatnonzero(np.isnan(known))
            parts = [p for p in np.array_split(todo, max(1, min(len(todo), chunks))) if len(p)]
            futures = [ex.submit(costs, problem, pop[p]) for p in parts]
            f = known.copy()
            for p, fu in zip(parts, futures):
                f[p] = fu.result()
            result.evaluations += len(todo)
            order = np.argsort(f, kind="stable")
            if f[order[0]] < result.cost:
                result.cost, result.genome = float(f[order[0]]), pop[order[0]].copy()
            result.best.append(float(f[order[0]]))
            finite = f[np.isfinite(f)]
            result.mean.append(float(finite.mean()) if len(finite) else float("inf"))
            if progress is not None:
                progress(gen + 1, settings.generations, result.cost)
            if gen + 1 == settings.generations:
                break
            pop = _next_generation(pop, f, order, settings, rng, lo, hi)
            known = np.full(len(pop), np.nan)
            known[: settings.elites] = f[order[: settings.elites]]
    finally:
        if own:
            ex.shutdown()
    return result


def _next_generation(
    pop: np.ndarray,
    f: np.ndarray,
    order: np.ndarray,
    s: GaSettings,
    rng: np.random.Generator,
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    n_genes = pop.shape[1]
    rank = np.empty(len(f))
    rank[order] = np.arange(len(f))  # lower rank = fitter (inf costs last)

    def select() -> np.ndarray:
        contenders = rng.integers(0, len(pop), s.tournament)
        return pop[contenders[np.argmin(rank[contenders])]]

    children = [pop[i].copy() for i in order[: s.elites]]
    n_rest = s.population - s.elites
    n_cross = int(round(s.crossover_fraction * n_rest))
    for k in range(n_rest):
        if k < n_cross:  # uniform crossover of two parents
            a, b = select(), select()
            child = np.where(rng.random(n_genes) < 0.5, a, b)
        else:  # mutation child (as MATLAB's uniform
            child = select().copy()  # mutation): each gene redrawn with the
            mutate = rng.random(n_genes) < s.mutation_rate  # Table 3 rate, 0.38 %
            child[mutate] = rng.uniform(lo[mutate], hi[mutate])
        children.append(child)
    return np.array(children)
