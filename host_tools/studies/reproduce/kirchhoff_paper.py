"""Kirchhoff (2011), "Parameter Identification for a Non-modular Elastic Joint Robot Arm for
Observer-based Collision Detection" (MSc thesis, TU Darmstadt): the values `manipgen reproduce
kirchhoff2011` sets ours beside. Tables 4.2-4.5 were typed once, beside the study that prints them
(host_tools.identification.elastic); the thesis' other figures here."""

from __future__ import annotations

from host_tools.identification.elastic import (
    MOTOR_PARAMS,
    PAPER_TABLE_4_2,
    PAPER_TABLE_4_3_RANDOM,
    PAPER_TABLE_4_4_D_OPT,
    PAPER_TABLE_4_5_MAX_ERROR,
)

__all__ = [
    "ACTUATOR_PARAMETERS",
    "DISSIPATION_S",
    "LOAD_BASE_PARAMETERS",
    "MOTOR_PARAMS",
    "PAPER_TABLE_4_2",
    "PAPER_TABLE_4_3_RANDOM",
    "PAPER_TABLE_4_4_D_OPT",
    "PAPER_TABLE_4_5_MAX_ERROR",
    "table_4_2_errors",
]

# §4.3.1: "on actuator side ... a 4 x 16 regressor matrix, a 16 x 1 base parameter vector" (eq. 4.4's
# four per joint); "on load side ... a 4 x 22 regressor matrix, a 22 x 1 base parameter vector"
# (before the symmetry simplifications that leave Table 4.5's 16)
ACTUATOR_PARAMETERS = 16
LOAD_BASE_PARAMETERS = 22


def table_4_2_errors(parameter: str) -> list[float]:
    """Table 4.2's relative errors |estimated - exact| / |exact| of one of eq. 4.4's parameters, per joint."""
    k = MOTOR_PARAMS.index(parameter)
    return [abs(row[k][1] - row[k][0]) / abs(row[k][0]) for row in PAPER_TABLE_4_2]


# §5.3, Fig. 5.5 (b): with the reaction strategy "the time till the collision is dissipated takes
# approximately one second" (the threshold 0.1 N m and K_R = 0.03 I are the collision study's
# settings: host_tools.studies.elastic_collision.ScenarioSettings)
DISSIPATION_S = 1.0
