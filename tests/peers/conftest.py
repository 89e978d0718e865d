"""Peer tests: record every measured error and print a table of the worst ones at the end.

Each comparison is stored as a ``user_property`` of its test (so it also travels back from
pytest-xdist workers) and summarised by ``pytest_terminal_summary``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_KEY = "peer_comparison"
_rows: dict[tuple[str, str], tuple[float, float, int]] = {}


@pytest.fixture
def record_comparison(record_property) -> Callable[[Any], None]:
    def record(c: Any) -> None:
        record_property(_KEY, (c.robot, c.quantity, c.worst_rel, c.worst_ratio, c.count))

    return record


def pytest_runtest_logreport(report) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == _KEY:
            robot, quantity, rel, ratio, count = value
            _rows[(robot, quantity)] = (rel, ratio, count)


def pytest_terminal_summary(terminalreporter) -> None:
    if not _rows:
        return
    tr = terminalreporter
    tr.section("Pinocchio cross-checks: worst relative error per robot and quantity")
    tr.write_line(f"{'robot':<14} {'quantity':<58} {'states':>6} {'max ||a-b||/||b||':>18} {'max err/bound':>14}")
    for (robot, quantity), (rel, ratio, count) in sorted(_rows.items()):
        tr.write_line(f"{robot:<14} {quantity:<58} {count:>6} {rel:>18.3e} {ratio:>14.3e}")
