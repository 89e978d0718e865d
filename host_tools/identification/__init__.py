"""Dynamic identification (Xu et al. 2020, Kirchhoff (2011)): processing, LS/WLS, physical consistency, excitation
design, output error (DIDIM/CLIE/CLOE), two-stage elastic identification."""
