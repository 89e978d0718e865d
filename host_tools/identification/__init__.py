"""Dynamic identification (seed 004, seed 003): processing, LS/WLS, physical consistency, excitation
design, output error (DIDIM/CLIE/CLOE), two-stage elastic identification."""
