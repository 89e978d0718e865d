"""Xu et al. (2020), "Dynamic Identification of the KUKA LBR iiwa Robot With Retrieval of Physical
Parameters Using Global Optimization": the values `manipgen reproduce xu2020` sets ours beside,
typed here once from the paper (its table or section beside each)."""

from __future__ import annotations

from dataclasses import dataclass

# §II-A: "b is the base parameters number and it is 57 in this paper"
BASE_PARAMETERS = 57
# §IV-C, Table 5: 53 essential parameters; Table 4's four eliminated (large RSD, value near zero)
ESSENTIAL_PARAMETERS = 53
ELIMINATED = ("XY5", "XY6", "MX6", "FV5")
# §II-A: the essential procedure's thresholds: |value| < 0.01 and RSD > 40 % are eliminated
MIN_ABS, MAX_RSD = 0.01, 40.0
# §IV-A: L = 5, f_f = 0.05 Hz (a 20 s period), Table 3's limits: cond(Y_b) = 156.3
COND = 156.3
# §IV-D: the multi-start (Table 1) launched kappa = 5 times, 9854.5 s in total
PHYSICAL_STARTS = 5
PHYSICAL_SECONDS = 9854.5


@dataclass(frozen=True)
class Table8Column:
    """One column of Table 8, "The RMS of predicted torque errors between the measured torque and
    estimated torque by the identified parameters for three reference trajectories", N m per joint
    (joints 1-7) and the printed total (their sum)."""

    joints: tuple[float, ...]
    total: float


# Table 8 by (parameter set, reference trajectory): pi_b base, pi_e essential, mu physical;
# q_ref,1 the excitation itself, q_ref,2 a cosine A (cos(0.03 t) - 0.1), q_ref,3 "very slow"
TABLE8: dict[tuple[str, int], Table8Column] = {
    ("base", 1): Table8Column((0.320, 0.407, 0.205, 0.299, 0.125, 0.122, 0.111), 1.589),
    ("essential", 1): Table8Column((0.320, 0.407, 0.205, 0.299, 0.125, 0.123, 0.111), 1.589),
    ("physical", 1): Table8Column((0.330, 0.488, 0.191, 0.383, 0.093, 0.107, 0.117), 1.709),
    ("base", 2): Table8Column((0.297, 0.288, 0.129, 0.128, 0.076, 0.103, 0.193), 1.215),
    ("essential", 2): Table8Column((0.297, 0.287, 0.129, 0.128, 0.075, 0.106, 0.193), 1.215),
    ("physical", 2): Table8Column((0.282, 0.273, 0.114, 0.158, 0.071, 0.069, 0.204), 1.171),
    ("base", 3): Table8Column((0.378, 0.497, 0.287, 0.274, 0.181, 0.152, 0.230), 1.999),
    ("essential", 3): Table8Column((0.378, 0.497, 0.287, 0.274, 0.180, 0.152, 0.230), 1.997),
    ("physical", 3): Table8Column((0.359, 0.475, 0.268, 0.328, 0.157, 0.162, 0.237), 1.985),
}
SETS = ("base", "essential", "physical")

# Table 9: the physical parameters' RMS on the excitation trajectories (the proposed method), and
# the objective |tau - Y_e pi_e(mu)| at the solution ("Fval"), N m
TABLE9_TOTAL = 1.7085
TABLE9_FVAL = 75.06


def table8_spread(reference: int) -> float:
    """The largest of a reference trajectory's three totals over the smallest (Table 8)."""
    totals = [TABLE8[s, reference].total for s in SETS]
    return max(totals) / min(totals)
