"""Excitation trajectories for identification: a finite Fourier series per joint (Xu et al. 2020 eq. 8,
Kirchhoff (2011) eq. 4.34) with an offset,

    q_i(t)   = q0_i + sum_l ( a_il / (w l) sin(w l t) - b_il / (w l) cos(w l t) )
    qd_i(t)  =        sum_l (  a_il cos(w l t) + b_il sin(w l t) )
    qdd_i(t) =        sum_l ( -a_il w l sin(w l t) + b_il w l cos(w l t) )

w = 2 pi f_f. The expressions exist once, here, as a CasADi function of (t, a, b, q0); the design
(host_tools.identification.excitation) evaluates them on its sample grid and the generated C (<robot>_excitation.c)
prints them. Starting at rest in q0 (and so at every period boundary) derives from eq. 8 itself:
qd(0) = sum_l a_l = 0, qdd(0) = w sum_l l b_l = 0 and q(0) = q0 needs sum_l b_l / l = 0 (Xu et al.'s
printed eq. 10 asks sum a_l / l = sum b_l / l = sum l a_l = 0, which does not follow from eq. 8).
"""

from __future__ import annotations

import casadi as cs
import numpy as np


def fourier_function(n: int, harmonics: int, base_frequency: float) -> cs.Function:
    """excitation(t, a, b, q0) -> (q, qd, qdd); a, b are n x L (column-major vectors), t in s."""
    t = cs.SX.sym("t")
    a, b = cs.SX.sym("a", n, harmonics), cs.SX.sym("b", n, harmonics)
    q0 = cs.SX.sym("q0", n)
    w = 2 * np.pi * base_frequency
    q, qd, qdd = q0, cs.SX.zeros(n), cs.SX.zeros(n)
    for m in range(harmonics):
        wl = w * (m + 1)
        s, c = cs.sin(wl * t), cs.cos(wl * t)
        q = q + a[:, m] / wl * s - b[:, m] / wl * c
        qd = qd + a[:, m] * c + b[:, m] * s
        qdd = qdd - a[:, m] * wl * s + b[:, m] * wl * c
    return cs.Function("excitation", [t, a, b, q0], [q, qd, qdd], ["t", "a", "b", "q0"], ["q", "qd", "qdd"])


def jerk_function(n: int, harmonics: int, base_frequency: float) -> cs.Function:
    """excitation_jerk(t, a, b) -> qddd, the third derivative of fourier_function's q."""
    t = cs.SX.sym("t")
    a, b = cs.SX.sym("a", n, harmonics), cs.SX.sym("b", n, harmonics)
    w = 2 * np.pi * base_frequency
    j = cs.SX.zeros(n)
    for m in range(harmonics):
        wl = w * (m + 1)
        j = j - a[:, m] * wl**2 * cs.cos(wl * t) - b[:, m] * wl**2 * cs.sin(wl * t)
    return cs.Function("excitation_jerk", [t, a, b], [j], ["t", "a", "b"], ["qddd"])


def start_conditions(a: cs.MX, b: cs.MX) -> cs.MX:
    """Per joint, the three sums that must vanish to start (and end) each period at rest in q0:
    sum_l a_l (velocity), sum_l l b_l (acceleration), sum_l b_l / l (position = q0); stacked (3 n)."""
    harmonics = a.shape[1]
    ls = np.arange(1, harmonics + 1, dtype=float)
    return cs.vertcat(cs.mtimes(a, cs.DM.ones(harmonics)), cs.mtimes(b, cs.DM(ls)), cs.mtimes(b, cs.DM(1.0 / ls)))


def samples_per_period(base_frequency: float, sample_period: float) -> int:
    """Samples in one period 1 / base_frequency; the period must be a whole number of samples."""
    k = 1.0 / (base_frequency * sample_period)
    if abs(k - round(k)) > 1e-6 * k:
        raise ValueError(f"the period 1/{base_frequency:g} Hz is not a whole number of {sample_period:g} s samples")
    return int(round(k))
