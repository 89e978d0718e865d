"""Brunot et al. (2019), "Output Error Methods for Robot Identification" (J. Dyn. Sys. Meas. Control):
the values `manipgen reproduce brunot2019` (and `manipgen identify --method`'s report,
host_tools.reports.output_error) set ours beside, typed here once from the paper (Stäubli TX40,
34 500 samples)."""

from __future__ import annotations

from host_tools.identification.output_error import Method

# Table 2 (no decimation filter): mu_max, mu_min, conditioning number, computing time
PAPER_TABLE2 = {
    "clie": (2.26e4, 19.3, 1172, "23 min"),
    "cloe": (9.85, 2.6e-3, 3845, "23 min"),
    "didim": (2.23e4, 19.1, 1166, "1 min"),
}
# Table 3 (no decimation filter): mean relative errors over the axes, %: (q, tau)
PAPER_TABLE3 = {"clie": (0.017, 6.97), "cloe": (0.017, 10.7), "didim": (0.013, 6.95)}
# Table 5 (the same with the decimation filter, N = 276)
PAPER_TABLE5 = {
    "clie": (1589.0, 1.3, 1178, "23 min"),
    "cloe": (1.34, 1.74e-4, 7622, "23 min"),
    "didim": (1571.0, 1.3, 1165, "1 min"),
}
# Table 2's computing times in minutes
MINUTES = {"clie": 23.0, "cloe": 23.0, "didim": 1.0}
OE_METHODS: tuple[Method, ...] = ("didim", "clie", "cloe")
