"""The identification report's text (host_tools.reports.identification.table): the parameter count
and the plain least-squares row with each fit's ratio to it, on a hand-made document whose figures
are worked out below."""

from __future__ import annotations

from typing import Any

from host_tools.reports.identification import table


def _doc(names: list[str], n_base: int, baseline: dict[str, Any] | None) -> dict[str, Any]:
    value = {"value": 1.0, "rsd": 0.01}
    return {
        "robot": "arm",
        "n_base": n_base,
        "n_essential": len(names) - 1,
        "eliminated": [names[0]],
        "periods_averaged": 0,
        "base_objective": 1.0,
        "physical_objective": 1.0,
        "base": {n: value for n in names},
        "essential": {n: value for n in names[1:]},
        "validation_rms": {"base": [1.0, 3.0], "physical": [2.0, 2.0]},
        "baseline_ls": baseline,
    }


def test_the_header_counts_the_friction_terms_beside_the_base_parameters() -> None:
    text = table(_doc(["MX1", "FV1", "FV2", "FD1", "FS2"], 3, None))
    # 5 columns fitted: 3 of the description's base parameters + 2 terms; 4 essential of the 5
    assert "5 parameters fitted: 3 base parameters of the description's model and 2 friction terms" in text
    assert "; 4 essential (eliminated: MX1)" in text
    plain = table(_doc(["MX1", "FV1", "FV2"], 3, None))  # no term: the count as before
    assert plain.splitlines()[2].startswith("3 base parameters; 2 essential")
    assert "plain least squares" not in plain  # no baseline, no row


def test_the_plain_least_squares_row_and_the_ratios_to_it() -> None:
    baseline = {"validation_rms": [2.0, 2.0], "validation_rms_sum": 4.0, "n_parameters": 7, "method": "OLS"}
    text = table(_doc(["MX1", "FV1", "FV2"], 3, baseline))
    assert "| plain least squares (7 parameters) | 2.0000 | 2.0000 |" in text
    # base: (1 + 3) / 4 = 1.000 in sum, joints 1 / 2 = 0.500 and 3 / 2 = 1.500; physical 4 / 4, 1.000 both
    assert "base 4.0000 N m (1.000 x, joints 0.500-1.500 x)" in text
    assert "physical 4.0000 N m (1.000 x, joints 1.000-1.000 x)" in text
    assert "plain least squares 4.0000 N m." in text


def test_a_joint_the_baseline_fits_exactly_has_no_ratio() -> None:
    # a joint whose plain-LS validation RMS is 0 (a joint that carries no torque): its ratio is left
    # out of the range and said, the others' kept; a baseline exact everywhere gives no ratio at all
    baseline = {"validation_rms": [2.0, 0.0], "validation_rms_sum": 2.0, "n_parameters": 7, "method": "OLS"}
    text = table(_doc(["MX1", "FV1", "FV2"], 3, baseline))
    # base: 4 / 2 = 2.000 in sum, joint 1 1 / 2 = 0.500; physical 4 / 2, joint 1 2 / 2 = 1.000
    assert "base 4.0000 N m (2.000 x, joints 0.500-0.500 x, 1 exact in the baseline)" in text
    assert "physical 4.0000 N m (2.000 x, joints 1.000-1.000 x, 1 exact in the baseline)" in text
    exact = {"validation_rms": [0.0, 0.0], "validation_rms_sum": 0.0, "n_parameters": 7, "method": "OLS"}
    assert "base 4.0000 N m (nan x, joints n/a, 2 exact in the baseline)" in table(_doc(["MX1", "FV1"], 3, exact))
