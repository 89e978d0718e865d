"""Progress off a terminal (host_tools.cli.progress): plain lines at a modest rate, no carriage
returns, and the JSON on stdout untouched."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from rich.console import Console

from host_tools.cli import progress
from tests.host_tools.cli.test_cli import manipgen


def test_a_steps_figures_print_at_most_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    out = io.StringIO()
    lines = progress._Lines(Console(file=out, force_terminal=False, width=200))
    for t, text in [
        (0.0, "design: iteration 1/300"),
        (1.0, "design: iteration 2/300"),  # the same step's new figures, within the interval: held
        (2.0, "simulating"),  # another message: at once
        (3.0, "simulating: 10 %"),  # another shape: at once
        (3.0 + progress.LINE_INTERVAL - 0.5, "simulating: 20 %"),  # held
        (3.0 + progress.LINE_INTERVAL, "simulating: 30 %"),  # the interval has passed
    ]:
        now[0] = t
        lines.update(text)
    printed = [line.rsplit(" (", 1)[0] for line in out.getvalue().splitlines()]
    assert printed == ["design: iteration 1/300", "simulating", "simulating: 10 %", "simulating: 30 %"]


def test_excite_reports_ipopts_iterations_off_a_terminal() -> None:
    r = manipgen("excite", "planar2", "--starts", "2", "--max-iter", "20", "--harmonics", "2", "--grid", "20", "--json")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # stdout is the document alone
    assert "\r" not in r.stderr and "\x1b" not in r.stderr  # plain lines: no bar redrawn, no colour
    lines = r.stderr.splitlines()
    assert any("excitation design (IPOPT): start 1/2, iteration " in line and "left" in line for line in lines), lines
    assert any(line.startswith("excitation design (IPOPT): 2/2 ended, best cond ") for line in lines), lines


def test_ipopts_bar_off_a_terminal_with_and_without_iterations() -> None:
    """Starts run here report their iterations (a line with the time left, then one per ended start);
    starts run by an executor's workers report none: a line per ended start all the same."""
    for reported in (True, False):
        out = io.StringIO()
        with progress.IterationsBar(Console(file=out, force_terminal=False, width=200), "design", 2, 50) as bar:
            for start in range(2):
                if reported:
                    bar.iteration(start, 0)
                    bar.iteration(start, 1)
                bar.ended(start + 1, f"best cond {9 - start}")
        lines = [line.rsplit(" (", 1)[0] for line in out.getvalue().splitlines()]
        assert lines[-1] == "design: 2/2 ended, best cond 8" and "design: 1/2 ended, best cond 9" in lines, lines
        assert any(line.startswith("design: start 1/2, iteration 1/50, ") for line in lines) == reported, lines


def test_a_stage_counted_from_a_batch_estimates_from_its_first_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count whose first report is already past 1 (QEMU's batches of samples) takes its rate from
    that report: 2000 samples a second from 2146 of 10001 leaves about 4 s, not the clock's epoch
    (an absurd "66.9 h left", the machine's uptime, before)."""
    now = [64_800.0]  # the clock's own epoch lies 18 h back, as perf_counter's may
    monkeypatch.setattr(progress, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    out = io.StringIO()
    bar = progress.StageBar(Console(file=out, force_terminal=False, width=200), "samples in QEMU")
    with bar:
        bar.count(2146, 10001)  # the first report: no rate yet
        now[0] += 1.0
        bar.count(4146, 10001)  # 2000 samples in 1 s: 5855 left, about 2.9 s
        now[0] += progress.LINE_INTERVAL
        bar.count(10001, 10001)
    lines = out.getvalue().splitlines()
    assert not any(" h left" in line or " min left" in line for line in lines), lines
    assert any(line.startswith("samples in QEMU: 2146/10001") and "left" not in line for line in lines), lines
