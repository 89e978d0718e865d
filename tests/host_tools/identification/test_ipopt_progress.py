"""Progress inside IPOPT (host_tools.identification.ipopt_progress): the iteration callback reports
IPOPT's own iteration count, only where a report was asked for, and the time left of a multi-start
follows from the iterations done (a clock set by the test: no timed assertion)."""

from __future__ import annotations

import threading

import casadi as cs
import pytest

from host_tools.identification.ipopt_progress import (
    Iterations,
    callback_options,
    duration,
    reporting,
    sample_lines,
    stage_lines,
)


def _rosenbrock(step: int) -> cs.Function:
    x = cs.SX.sym("x", 2)
    f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    opts = {"ipopt.print_level": 0, "ipopt.sb": "yes", "print_time": False, **callback_options(2, 1, 0, step)}
    return cs.nlpsol("rosenbrock", "ipopt", {"x": x, "f": f, "g": x[0] + x[1]}, opts)


@pytest.mark.parametrize("step", [1, 5])
def test_the_callback_counts_ipopts_iterations(step: int) -> None:
    solver = _rosenbrock(step)
    seen: list[int] = []
    with reporting(seen.append):
        solver(x0=[-1.2, 1.0], lbg=-10, ubg=10)
    count = int(solver.stats()["iter_count"])
    assert count > 2 * step  # a problem of several reports
    # iteration 0 is the starting point; then every step-th of IPOPT's own count
    assert seen == list(range(0, count + 1, step))


def test_no_report_unless_asked_in_this_thread() -> None:
    solver = _rosenbrock(1)
    seen: list[int] = []
    solver(x0=[-1.2, 1.0], lbg=-10, ubg=10)  # no reporting block: the callback does nothing
    with reporting(seen.append):
        worker = threading.Thread(target=lambda: solver(x0=[-1.2, 1.0], lbg=-10, ubg=10))
        worker.start()
        worker.join()
    assert seen == []  # the block belongs to this thread, not to the solve in the other one


def test_time_left_from_the_iterations_done() -> None:
    now = [100.0]
    its = Iterations(starts=2, max_iter=100, clock=lambda: now[0])
    its.at(0, 0)
    assert its.seconds_left() is None and "left" not in its.text()
    now[0] = 101.0
    its.at(0, 10)  # 10 iterations in 1 s: 0.1 s each
    # at IPOPT's limit: 90 more of this start and 100 of the next, at 0.1 s
    assert its.seconds_left() == pytest.approx((19.0, 19.0))
    assert its.text() == "start 1/2, iteration 10/100, 19 s left at IPOPT's limit"
    now[0] = 104.0
    its.at(0, 40)
    its.at(1, 0)  # the first start ended at 40 iterations, in 4 s
    # estimate: the next start as long as the first (40 x 0.1 s); at IPOPT's limit: 100 x 0.1 s
    assert its.seconds_left() == pytest.approx((4.0, 10.0))
    assert its.text() == "start 2/2, iteration 0/100, about 4 s left (10 s at IPOPT's limit)"
    its.at(2, 0)
    assert its.text() == "2 starts ended"


def test_durations_read_as_a_person_reads_them() -> None:
    assert [duration(s) for s in (4.4, 99.4, 420.0, 5400.0, 9000.0)] == ["4 s", "99 s", "7 min", "90 min", "2.5 h"]


def test_a_multi_start_as_stage_texts() -> None:
    """identify's stages (a spinner's text, or lines off a terminal) carry the multi-start's progress."""
    texts: list[str] = []
    iteration = stage_lines(texts.append, "physical parameters (IPOPT)", 5, 1000)
    iteration(0, 0)
    iteration(0, 10)
    iteration(1, 0)
    assert texts[0] == "physical parameters (IPOPT): start 1/5, iteration 0/1000"
    assert texts[1].startswith("physical parameters (IPOPT): start 1/5, iteration 10/1000, ")
    assert texts[2].startswith("physical parameters (IPOPT): start 2/5, iteration 0/1000, about ")


def test_a_simulation_as_stage_texts() -> None:
    """identify --synthetic's simulations (issue 45: a silent ~50 s stage) report the seconds of the
    run done and the time left at the rate so far."""
    now = [50.0]
    texts: list[str] = []
    progress = sample_lines(texts.append, "simulating the excitation", 0.001, clock=lambda: now[0])
    now[0] = 52.0  # what ran before the first report (loading the loop) is no part of the rate
    progress(1_000, 60_000)
    now[0] = 54.0
    progress(11_000, 60_000)  # 10 s of the run in 2 s: the 49 s of the run left take 9.8 s
    now[0] = 64.0
    progress(60_000, 60_000)
    assert texts == [
        "simulating the excitation: 1/60 s of the run",
        "simulating the excitation: 11/60 s of the run, about 10 s left",
        "simulating the excitation: 60/60 s of the run",
    ]
