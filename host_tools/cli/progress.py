"""Progress of long work, on a terminal and off it.

On a terminal: rich's spinner (:func:`stage`) and live bars (:class:`Bars`, :class:`IterationsBar`).
Anywhere else (a CI log, a pipe, nohup): one plain line on stderr per stage and per finished step,
with the elapsed time -- so a half-hour `excite` is never silent, and a log shows where the time
went -- and, inside a step, a line of its progress at most every LINE_INTERVAL s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from host_tools.identification.ipopt_progress import Iterations

# off a terminal, a step's progress (a message that differs from the last line only in its figures)
# prints at most this often: 30 lines for a 5-minute step, none of them carriage returns
LINE_INTERVAL = 10.0  # s


def _shape(text: str) -> str:
    """The message without its figures: two progress lines of one step have the same shape."""
    return re.sub(r"\d+(\.\d+)?", "#", text)


class StageUpdate(Protocol):
    def update(self, text: str) -> None: ...


class _Lines:
    """The off-terminal stand-in: a line per distinct message, with the time since the start; a
    message of the last line's shape (new figures of the same step) at most every LINE_INTERVAL s."""

    def __init__(self, console: Console) -> None:
        self.console, self.start, self.last = console, time.perf_counter(), ""
        self.printed = -LINE_INTERVAL

    def update(self, text: str) -> None:
        now = time.perf_counter()
        if text == self.last or (_shape(text) == _shape(self.last) and now - self.printed < LINE_INTERVAL):
            return
        self.emit(text)

    def emit(self, text: str) -> None:
        """A line now, whatever came before."""
        self.last, self.printed = text, time.perf_counter()
        self.console.print(f"{text} ({self.printed - self.start:.0f} s)", markup=False, highlight=False)


@contextmanager
def stage(console: Console, text: str) -> Iterator[StageUpdate]:
    """A spinner with ``text`` (``.update(text)`` changes it), or lines when not on a terminal."""
    if console.is_terminal:
        with console.status(text) as status:
            yield status
    else:
        lines = _Lines(console)
        lines.update(text)
        yield lines


def time_left(elapsed: float, done: int, total: int) -> str:
    """``, about 40 s left`` at the rate so far (ipopt_progress.time_left, imported when first used)."""
    from host_tools.identification.ipopt_progress import time_left as left

    return left(elapsed, done, total)


class StageBar:
    """A stage (text) whose steps can be counted: on a terminal rich's spinner, the text and, while
    counting, a bar with the time left; off it, a line per stage and the count at most every
    LINE_INTERVAL s (:class:`_Lines`)."""

    def __init__(self, console: Console, text: str) -> None:
        self.terminal, self.text = console.is_terminal, text
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console,
            disable=not self.terminal,
        )
        self._task = self._progress.add_task(text, total=None)
        self._lines = _Lines(console)
        # the count and the time counting started from: the first report of a stage (its count may be
        # above 1 already, e.g. a batch of QEMU samples), so that the rate is the counting's own
        self._counting: tuple[int, float] | None = None

    def __enter__(self) -> StageBar:
        self._progress.__enter__()
        self.update(self.text)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    def update(self, text: str) -> None:
        """A new stage: its text, nothing counted."""
        self.text = text
        self._counting = None
        self._progress.reset(self._task, total=None, description=text)
        if not self.terminal:
            self._lines.update(text)

    def count(self, done: int, total: int) -> None:
        """``done`` of the stage's ``total`` steps."""
        if self._counting is None or done <= 1 or done < self._counting[0]:
            self._counting = (done, time.perf_counter())
        start, since = self._counting
        self._progress.update(self._task, completed=done, total=total)
        if not self.terminal:
            left = time_left(time.perf_counter() - since, done - start, total - start)
            line = f"{self.text}: {done}/{total}{left}"
            if done == total:  # the last count always
                self._lines.emit(line)
            else:
                self._lines.update(line)


class Bars:
    """Named bars (total, completed, an info text), as rich's Progress on a terminal; elsewhere a
    line whenever a bar completes another step: ``name: k/n info (elapsed s)``."""

    def __init__(self, console: Console, label: str = "{task.description:>8}") -> None:
        self.console = console
        self.terminal = console.is_terminal
        self._progress = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            disable=not self.terminal,
        )
        self._lines = _Lines(console)
        self._names: dict[TaskID, str] = {}
        self._done: dict[TaskID, int] = {}
        self._totals: dict[TaskID, int | None] = {}

    def __enter__(self) -> Bars:
        self._progress.__enter__()
        self._lines.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    def add_task(self, name: str, total: int | None = None, info: str = "") -> TaskID:
        task = self._progress.add_task(name, total=total, info=info)
        self._names[task], self._done[task], self._totals[task] = name, 0, total
        return task

    def update(self, task: TaskID, completed: int, total: int | None = None, info: str = "") -> None:
        self._progress.update(task, completed=completed, total=total, info=info)
        if total is not None:
            self._totals[task] = total
        if not self.terminal and completed != self._done[task]:
            self._done[task] = completed
            of = f"/{self._totals[task]}" if self._totals[task] is not None else ""
            self._lines.emit(f"{self._names[task]}: {completed}{of} {info}".rstrip())


class IterationsBar:
    """IPOPT's iterations in a multi-start (ipopt_progress.Iterations: the time left): on a terminal a
    bar over the iterations (each start counted at IPOPT's limit until it ends); off it a line of
    the progress at most every LINE_INTERVAL s and a line per ended start."""

    def __init__(self, console: Console, label: str, starts: int, max_iter: int) -> None:
        from host_tools.identification.ipopt_progress import Iterations

        self.label, self.terminal = label, console.is_terminal
        self.its: Iterations = Iterations(starts, max_iter)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            disable=not self.terminal,
        )
        self._task = self._progress.add_task(label, total=starts * max_iter, info="")
        self._lines = _Lines(console)
        self.best = ""

    def __enter__(self) -> IterationsBar:
        self._progress.__enter__()
        self._lines.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    def iteration(self, start: int, iteration: int) -> None:
        """Start ``start`` (from 0) has done ``iteration`` IPOPT iterations."""
        self.its.at(start, iteration)
        self._show(self._lines.update)

    def ended(self, starts_done: int, best: str) -> None:
        """``starts_done`` starts have ended; ``best``: the best objective so far, as text."""
        self.best = best
        text = f"{self.label}: {starts_done}/{self.its.starts} ended, {best}"
        if self.its.t0 is None:  # no iteration reported: the starts ran elsewhere (an executor's), counted whole
            self._progress.update(self._task, completed=starts_done * self.its.max_iter, info=best)
            if not self.terminal:
                self._lines.emit(text)
            return
        self.its.at(starts_done, 0)
        self._show(self._lines.emit, text)

    def _show(self, line: Any, text: str | None = None) -> None:
        its = self.its
        total = sum(its.ended) + (its.starts - len(its.ended)) * its.max_iter
        info = ", ".join(x for x in (its.text(), self.best) if x)
        self._progress.update(self._task, completed=its.done(), total=total, info=info)
        if not self.terminal:
            line(text or f"{self.label}: {info}")


class ItemsBar:
    """One bar over a study's items with the time left (rich's estimate from the items finished in
    this run); off a terminal a line per finished item with the elapsed time and the estimate."""

    def __init__(self, console: Console, label: str) -> None:
        self.console, self.label = console, label
        self.terminal = console.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            disable=not self.terminal,
        )
        self._task: TaskID | None = None
        self._start = time.perf_counter()
        self._first: int | None = None  # items already done when this run started

    def __enter__(self) -> ItemsBar:
        self._progress.__enter__()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self._progress.__exit__(None, None, None)

    def update(self, done: int, total: int, info: str = "") -> None:
        if self._task is None:
            self._task = self._progress.add_task(self.label, total=total, completed=done, info=info)
            self._first = done
        self._progress.update(self._task, completed=done, total=total, info=info)
        if not self.terminal:
            elapsed = time.perf_counter() - self._start
            ran = done - (self._first or 0)
            left = f", about {elapsed / ran * (total - done):.0f} s left" if ran else ""
            self.console.print(
                f"{self.label}: {done}/{total} {info} ({elapsed:.0f} s{left})".replace("  ", " "),
                markup=False,
                highlight=False,
            )
