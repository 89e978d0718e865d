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


def test_the_identification_figures_labels_stay_off_the_curves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: a label of the validation figure sat over the Kinova's curves. The legend and each
    panel's RMS line lie outside every panel's plotting area (whatever the curves), and within the
    figure; checked on the drawn figure of a 6-joint arm whose curves fill their panels."""
    import matplotlib.pyplot as plt
    import numpy as np

    drawn: list[Any] = []

    def keep(fig: Any, path: Path, dpi: int = 110) -> Path:  # the figure, drawn, instead of a PNG
        drawn.append(fig)
        return path

    monkeypatch.setattr(plots, "save_figure", keep)
    t = np.linspace(0.0, 20.0, 2000)
    tau = np.stack([np.sin((j + 1) * t) * 10.0 ** (1 - j) for j in range(6)], axis=1)
    noisy = tau + 0.1 * np.cos(37 * t)[:, None] * np.abs(tau).max(axis=0)
    plots.identification_validation({"t": t, "tau": noisy, "base": tau, "physical": tau}, tmp_path / "v.png", "arm")
    arrays = {"tau": noisy, "essential": tau, "base": tau, "physical": tau, "ts": t[1]}
    plots.identification_fit(arrays, tmp_path / "f.png", "arm")
    from matplotlib.text import Text

    counts = []
    for fig in drawn:
        renderer = fig.canvas.get_renderer()
        areas = [ax.get_window_extent(renderer) for ax in fig.axes]
        # each panel's own texts (titles, texts placed in it: not its tick or axis labels) and legends
        labels = [c for ax in fig.axes for c in ax.get_children() if isinstance(c, Text) and c.get_text()]
        labels += [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        counts.append(len(labels))
        whole = fig.bbox
        for label in labels:
            box = label.get_window_extent(renderer)
            assert not any(box.overlaps(area) for area in areas), (label, box)
            assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1
        plt.close(fig)
    assert counts == [7, 1]  # validation: the legend and 6 RMS lines; fit: the legend
