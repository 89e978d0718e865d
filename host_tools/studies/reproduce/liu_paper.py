"""Liu et al.'s values, typed once from the paper's text (each with its table), and its names.

All ISE are (rad/s)² s summed over the six joints, measured on the Schunk LWA-4P at 10 millidegrees
per count and 125 Hz, gains tuned on the robot (Table 4), the test trajectory of Fig. 4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen.blocks import registry

# the compared estimators as Table 6 names them (nonHG: the nonlinear high-gain observer, "nlHG" here
# as in the rest of the paper's text), in its order; lower-cased, each is the registered estimator
LABELS = ("FinDiff", "MovAv", "LSF", "Kalman", "linHG", "nlHG", "SliMod")
OBSERVERS = ("Kalman", "linHG", "nlHG", "SliMod")  # §IV-D's "observer methods"
FILTERS = ("FinDiff", "MovAv", "LSF")  # §IV-D's "filtering methods" (LSF: LSF1/4)


def registered(label: str) -> str:
    """The registered estimator of one of Liu et al.'s names (FinDiff, LSF2/8, BDE3): its letters,
    lower-cased. Raises KeyError for a name that is none."""
    match = re.match(r"[A-Za-z]+", label)
    name = match.group().lower() if match else ""
    if name not in registry.estimators():
        raise KeyError(f"{label}: no registered estimator {name!r}")
    return name


@dataclass(frozen=True)
class Table6Row:
    """Table 6, "Estimation error (ISE) with faulty sensors": 10 % of axis 6's samples lost (§IV-C);
    "retuned": the gains of a GA run with the sensor faulty."""

    normal: float  # Table 4's gains
    retuned_normal: float
    faulty: float  # Table 4's gains
    retuned_faulty: float


TABLE6 = {
    "FinDiff": Table6Row(0.041, 0.041, 2.737, 2.737),
    "MovAv": Table6Row(0.033, 0.097, 0.763, 0.160),
    "LSF": Table6Row(0.041, 0.088, 0.526, 0.207),
    "Kalman": Table6Row(0.032, 0.036, 1.162, 0.177),
    "linHG": Table6Row(0.033, 0.060, 1.831, 0.145),
    "nlHG": Table6Row(0.508, 2.011, 1.312, 2.017),
    "SliMod": Table6Row(0.047, 0.049, 0.067, 0.074),
}

# Table 5, "Integral squared error of the derivative filters (10 millidegrees, 125 Hz)"; LSFp/n: the
# polynomial order p over the last n samples, BDEn/TSEn: backward difference / Taylor series of order n
TABLE5 = {
    "MovAv": 0.035,
    "LSF1/4": 0.046,
    "LSF1/8": 0.114,
    "LSF2/8": 1.197,
    "LSF3/8": 0.434,
    "BDE2": 0.092,
    "BDE3": 0.184,
    "TSE3": 0.128,
}

# the gains each set-up ran with: (resolution mdeg, rate Hz) -> the table that lists them
GAINS_TABLE = {(10.0, 125.0): "Table 4", (2.0, 125.0): "Table 7", (1.0, 250.0): "Table 8"}
