"""Progress inside IPOPT's solves: CasADi's ``iteration_callback`` (an nlpsol option, called after
every IPOPT iteration -- or every ``step`` -- with the iterate) counts the iterations of the solve
running in this thread and hands them to whoever asked (``reporting``); ``Iterations`` turns a
multi-start's counts into the time left.

The callback is attached when a solver is built and does nothing unless a report is set in the
calling thread (context variable), so a cached solver serves callers with and without progress,
and a worker process (an executor's) never reports. Each call takes the GIL: a problem whose
objective is all CasADi (the physical fit) asks for every 10th iteration only, so a Python thread
busy beside it delays it by at most one GIL hand-over (5 ms, sys.getswitchinterval) per 10
iterations instead of per iteration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import casadi as cs

Report = Callable[[int], None]  # the IPOPT iteration just done (0: the starting point)


@dataclass
class _Count:
    report: Report
    iteration: int = -1


_CURRENT: ContextVar[_Count | None] = ContextVar("ipopt_report", default=None)


class _Callback(cs.Callback):
    """nlpsol's iteration callback for problems of nx variables, ng constraints, np parameters."""

    def __init__(self, nx: int, ng: int, np_: int, step: int) -> None:
        cs.Callback.__init__(self)
        self.sizes = {"x": nx, "lam_x": nx, "g": ng, "lam_g": ng, "lam_p": np_, "f": 1}
        self.step = step
        self.construct(f"ipopt_progress_{nx}_{ng}_{np_}", {})

    def get_n_in(self) -> int:
        return int(cs.nlpsol_n_out())

    def get_n_out(self) -> int:
        return 1

    def get_name_in(self, i: int) -> str:
        return str(cs.nlpsol_out(i))

    def get_name_out(self, i: int) -> str:
        return "ret"

    def get_sparsity_in(self, i: int) -> Any:
        return cs.Sparsity.dense(self.sizes[cs.nlpsol_out(i)], 1)

    def eval(self, arg: Any) -> list[int]:
        count = _CURRENT.get()
        if count is not None:
            count.iteration += self.step if count.iteration >= 0 else 1
            count.report(count.iteration)
        return [0]  # 0: go on (non-zero would stop IPOPT)


@cache  # kept alive as long as the solvers that call it
def _callback(nx: int, ng: int, np_: int, step: int) -> _Callback:
    return _Callback(nx, ng, np_, step)


def callback_options(nx: int, ng: int, np_: int = 0, step: int = 1) -> dict[str, Any]:
    """nlpsol options that report the iterations (every ``step``-th) of a problem of this size."""
    return {"iteration_callback": _callback(nx, ng, np_, step), "iteration_callback_step": step}


@contextmanager
def reporting(report: Report | None) -> Iterator[None]:
    """Solves started in this thread inside the block call ``report(iteration)``; None: nothing."""
    token = _CURRENT.set(None if report is None else _Count(report))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def duration(seconds: float) -> str:
    """A time left as a person reads it: 40 s, 7 min, 1.5 h."""
    if seconds < 100:
        return f"{seconds:.0f} s"
    if seconds < 6000:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def time_left(elapsed: float, done: int, total: int) -> str:
    """``, about 40 s left`` at the rate so far (nothing before the first step is done)."""
    return f", about {duration(elapsed / done * (total - done))} left" if done > 0 else ""


def sample_lines(
    stage: Callable[[str], None], head: str, sample_period: float, clock: Callable[[], float] = time.perf_counter
) -> Callable[[int, int], None]:
    """A simulation's ``progress(done, total)`` (samples; host_tools.bindings.loopback.simulate) as
    stage texts ``head: 30/120 s of the run, about 40 s left``, the time left at the rate since the
    first report (what ran before the simulation, e.g. loading its module, is no part of its rate; a
    spinner's text on a terminal; off it, lines at the progress rate)."""
    first: list[tuple[float, int]] = []  # (time, samples done) of the first report

    def progress(done: int, total: int) -> None:
        if not first:
            first.append((clock(), done))
        t0, done0 = first[0]
        left = time_left(clock() - t0, done - done0, total - done0) if done < total else ""
        stage(f"{head}: {done * sample_period:.0f}/{total * sample_period:.0f} s of the run{left}")

    return progress


@dataclass
class Iterations:
    """The iterations of a multi-start of ``starts`` IPOPT solves of at most ``max_iter`` iterations
    each, and the time left. The rate is the iterations done per second since the first report
    (iteration 0 of the first start: building the problem is not an iteration). At IPOPT's limit:
    the running start and each start to come take max_iter (IPOPT takes no more; the time is at the
    rate so far, so it is no strict bound); once starts have ended, the estimate takes their mean
    count instead (IPOPT usually converges before its limit). A multi-start that stops early (the
    physical fit's agreeing starts) ends sooner."""

    starts: int
    max_iter: int
    clock: Callable[[], float] = time.perf_counter
    start: int = 0  # the running start, from 0
    iteration: int = 0  # its iterations so far
    ended: list[int] = field(default_factory=list)  # the ended starts' iteration counts
    t0: float | None = None  # the first report

    def at(self, start: int, iteration: int) -> None:
        """Start ``start`` (from 0) has done ``iteration`` iterations; the starts before it ended."""
        if self.t0 is None:
            self.t0 = self.clock()
        if start > self.start:  # the running start ended at its last count (starts never heard of: 0)
            self.ended += [self.iteration] + [0] * (start - self.start - 1)
            self.start = start
        self.iteration = min(iteration, self.max_iter)

    def done(self) -> int:
        return sum(self.ended) + self.iteration

    def seconds_left(self) -> tuple[float, float] | None:
        """(estimate, at IPOPT's limit) in seconds, or None before the first iteration."""
        done = self.done()
        if done == 0 or self.t0 is None:
            return None
        if self.start >= self.starts:
            return 0.0, 0.0
        per = (self.clock() - self.t0) / done
        after = self.starts - self.start - 1  # starts still to come
        bound = (self.max_iter - self.iteration + after * self.max_iter) * per
        if not self.ended:
            return bound, bound
        mean = sum(self.ended) / len(self.ended)
        return (max(mean - self.iteration, 0.0) + after * mean) * per, bound

    def text(self) -> str:
        """``start 2/4, iteration 120/300, about 40 s left (90 s at IPOPT's limit)``."""
        if self.start >= self.starts:
            return f"{self.starts} starts ended" if self.starts > 1 else "ended"
        where = f"start {self.start + 1}/{self.starts}, " if self.starts > 1 else ""
        where += f"iteration {self.iteration}/{self.max_iter}"
        left = self.seconds_left()
        if left is None:
            return where
        if not self.ended:
            return f"{where}, {duration(left[1])} left at IPOPT's limit"
        return f"{where}, about {duration(left[0])} left ({duration(left[1])} at IPOPT's limit)"


def stage_lines(stage: Callable[[str], None], head: str, starts: int, max_iter: int) -> Callable[[int, int], None]:
    """A multi-start's ``iteration(start, iteration)`` as stage texts ``head: start 1/4, iteration
    120/300, ... left`` (a spinner's text on a terminal; off it, lines at the progress rate)."""
    its = Iterations(starts, max_iter)

    def iteration(start: int, done: int) -> None:
        its.at(start, done)
        stage(f"{head}: {its.text()}")

    return iteration
