"""What the figures print (host_tools.reports): figures with the digits that fit a small arm, and
the study figure's spread over the seeds (the data handed to the plot, not its pixels)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from host_tools.reports import plots
from host_tools.reports import study as study_report
from host_tools.studies.study import Stored, StudyItem


def test_significant_digits_fit_any_magnitude() -> None:
    # three significant digits, whatever the decimals: a small arm's 0.00457 N m is not "0.00"
    assert plots.significant(0.0045678) == "0.00457"
    assert plots.significant(4.5678) == "4.57"
    assert plots.significant(456.78) == "457"
    assert plots.significant(-0.25) == "-0.25"  # no trailing zeros
    assert plots.significant(1.5e-5) == "1.5e-5"  # the exponent without padding
    assert plots.significant(123456.0) == "1.23e5"
    assert plots.significant(0.0) == "0"
    assert plots.significant(0.0045678, digits=2) == "0.0046"
    assert plots.significant(math.nan) == "nan" and plots.significant(math.inf) == "inf"


def _row(seed: int, estimator: str, ise: float | None) -> Stored:
    item = StudyItem("planar2", "hash", 10.0, 125.0, estimator, 0.0, 0.0, seed, False, False, 0, "default")
    return Stored(item, {"error": "diverged"} if ise is None else {"ise_velocity": ise}, 1.0, 1.0)


def test_the_study_figure_gets_the_seeds_spread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(plots, "evaluation_setups", lambda docs, out: handed.append(docs))
    rows = [_row(s, "kalman", v) for s, v in enumerate((0.11, 0.0023, 0.22))] + [_row(0, "findiff", 0.5)]
    study_report.write_report(rows, len(rows), tmp_path)
    (docs,) = handed
    kalman, findiff = docs[0]["estimators"]["kalman"], docs[0]["estimators"]["findiff"]
    # the table's "0.11 [0.0023, 0.22]": the median as the bar, the lowest and highest as the whisker
    assert kalman == {"ise_velocity": 0.11, "ise_velocity_range": [0.0023, 0.22]}
    assert findiff == {"ise_velocity": 0.5, "ise_velocity_range": None}  # one seed: no spread to draw
    assert "whiskers from the lowest to the highest" in (tmp_path / "report.md").read_text()
