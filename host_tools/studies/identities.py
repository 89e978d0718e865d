"""Identities every generated dynamics folder must satisfy, whatever the robot: checks that need no
reference model, shared by `manipgen demo` (its step 3) and `manipgen verify`.

Each check compares a figure with a bound derived from the arithmetic, not from one machine's last
bits. eps is the unit roundoff of the build's real type (2^-53 double, 2^-24 float); K = 1000
covers the depth of the generated expression graphs (hundreds to a few thousand operations, whose
rounding errors add up; measured worst cases on the bundled robots stay below K/10):

- forward dynamics of rnea: qdd' = M^-1 (rnea(q, qd, qdd) - h). A perturbation of the torques or of
  M of relative size K eps moves qdd by at most K eps cond(M) relative (the standard bound for a
  linear solve), so ``||qdd' - qdd|| <= K eps cond(M) ||qdd||`` per state;
- regressor: Y_b beta and rnea are two sums of the same terms; each is off by at most K eps times
  the sum of the magnitudes of its terms, ``|| |Y_b| |beta| ||``;
- M symmetric to ``K eps ||M||`` (Frobenius) and positive definite (smallest eigenvalue > 0);
- energy balance along a smooth motion q(t): the kinetic energy T = qd' M qd / 2 changes by the
  power of the torques that are not gravity or friction, ``T(t1) - T(t0) = integral of
  qd' (rnea - g - friction) dt`` (this needs qd' (M' - 2 C) qd = 0, so it checks that rnea's
  Coriolis terms belong to the mass matrix). The integral is taken by composite Gauss-Legendre
  quadrature of a band-limited motion (error far below eps); the bound is K eps times the integral
  of the terms' magnitudes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from host_tools.bindings.compiled import CompiledDynamics

K = 1000.0


@dataclass(frozen=True)
class Check:
    """One verified property: ``figure`` the worst measured value against ``bound`` (figure <= bound
    passes, or figure > bound where ``above``)."""

    name: str
    figure: float
    bound: float
    rule: str
    ok: bool
    detail: str = ""
    above: bool = False  # the figure must exceed the bound (else: stay at or below it)

    @property
    def relation(self) -> str:
        return ">" if self.above else "<="

    def as_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "figure": self.figure,
            "bound": self.bound,
            "relation": self.relation,
            "rule": self.rule,
            "pass": self.ok,
            **({"detail": self.detail} if self.detail else {}),
        }


def within(name: str, figure: float, bound: float, rule: str, detail: str = "") -> Check:
    return Check(name, figure, bound, rule, bool(math.isfinite(figure) and figure <= bound), detail)


def unit_roundoff(dyn: CompiledDynamics) -> float:
    return float(np.finfo(dyn.dtype).eps) / 2


@dataclass(frozen=True)
class States:
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray

    def __len__(self) -> int:
        return self.q.shape[0]

    def astype(self, dtype: Any) -> States:
        """Rounded to dtype and back to double: what a float build really receives."""
        return States(*(a.astype(dtype).astype(float) for a in (self.q, self.qd, self.qdd)))


def random_states(n: int, count: int, seed: int) -> States:
    """q uniform in [-pi, pi], qd ~ N(0, 1.5^2) rad/s, qdd ~ N(0, 4^2) rad/s^2."""
    rng = np.random.default_rng(seed)
    return States(
        rng.uniform(-np.pi, np.pi, (count, n)), rng.normal(0.0, 1.5, (count, n)), rng.normal(0.0, 4.0, (count, n))
    )


def identity_checks(dyn: CompiledDynamics, states: int = 1000, seed: int = 0) -> list[Check]:
    """fdyn(rnea), Y_b beta = rnea, M symmetric and positive definite over ``states`` random states,
    and the energy balance along one smooth motion."""
    eps = unit_roundoff(dyn)
    worst = {"fdyn": (0.0, 0.0), "regressor": (0.0, 0.0), "sym": (0.0, 0.0)}  # (ratio, relative error)
    min_eig = np.inf
    s = random_states(dyn.dof, states, seed)
    for q, qd, qdd in zip(s.q, s.qd, s.qdd):
        tau = dyn.rnea(q, qd, qdd).astype(float)
        m = dyn.mass_matrix(q).astype(float)
        cond = float(np.linalg.cond(m))
        err = float(np.linalg.norm(dyn.forward_dynamics(q, qd, tau) - qdd))
        ratios = {"fdyn": (err / (K * eps * cond * float(np.linalg.norm(qdd))), err / float(np.linalg.norm(qdd)))}
        y = dyn.regressor(q, qd, qdd).astype(float)
        err = float(np.linalg.norm(y @ dyn.base_parameters - tau))
        scale = float(np.linalg.norm(np.abs(y) @ np.abs(dyn.base_parameters)))
        ratios["regressor"] = (err / (K * eps * scale), err / max(float(np.linalg.norm(tau)), 1e-300))
        err = float(np.linalg.norm(m - m.T))
        ratios["sym"] = (err / (K * eps * float(np.linalg.norm(m))), err / float(np.linalg.norm(m)))
        for key, value in ratios.items():
            if not value[0] <= worst[key][0]:  # NaN propagates as a failure
                worst[key] = value
        min_eig = min(min_eig, float(np.linalg.eigvalsh(0.5 * (m + m.T)).min()))
    n = f"{states} random states"
    checks = [
        within(
            "forward_dynamics(rnea) = qdd",
            worst["fdyn"][1],
            worst["fdyn"][1] / worst["fdyn"][0] if worst["fdyn"][0] > 0 else K * eps,
            f"||qdd' - qdd|| <= {K:g} eps cond(M) ||qdd|| per state ({n}); figure: worst relative error, "
            "bound: that state's",
        ),
        within(
            "Y_b beta = rnea",
            worst["regressor"][1],
            worst["regressor"][1] / worst["regressor"][0] if worst["regressor"][0] > 0 else K * eps,
            f"||Y_b beta - rnea|| <= {K:g} eps || |Y_b| |beta| || per state ({n}); figure: worst relative error",
        ),
        within(
            "M = M^T",
            worst["sym"][1],
            K * eps,
            f"||M - M^T||_F <= {K:g} eps ||M||_F ({n}); figure: worst relative asymmetry",
        ),
        Check(
            "M positive definite",
            min_eig,
            0.0,
            f"smallest eigenvalue of M(q) over {n} > 0 (kg m^2 or kg)",
            bool(min_eig > 0),
            above=True,
        ),
        energy_balance(dyn, seed),
    ]
    return checks


def energy_balance(dyn: CompiledDynamics, seed: int = 0, seconds: float = 2.0) -> Check:
    """T(t1) - T(t0) against the integral of qd' (rnea - g - friction) along
    q(t) = q0 + sum_k a_k sin(2 pi f_k t + phi_k), three harmonics of 0.2-1 Hz, 0.4 rad each."""
    rng = np.random.default_rng(seed + 1)
    n = dyn.dof
    q0 = rng.uniform(-np.pi, np.pi, n)
    freq = rng.uniform(0.2, 1.0, (3, n)) * 2 * np.pi
    phase = rng.uniform(0, 2 * np.pi, (3, n))
    amp = 0.4

    def motion(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        arg = freq * t + phase
        q = q0 + amp * np.sin(arg).sum(axis=0)
        qd = amp * (freq * np.cos(arg)).sum(axis=0)
        qdd = -amp * (freq**2 * np.sin(arg)).sum(axis=0)
        return q, qd, qdd

    def kinetic(t: float) -> float:
        q, qd, _ = motion(t)
        return 0.5 * float(qd @ dyn.mass_matrix(q).astype(float) @ qd)

    # 20 panels x 12 Gauss-Legendre nodes: the integrand's harmonics (<= 2 x 3 x 2 pi rad/s, about
    # 0.6 rad per 0.1 s panel) are integrated to ~(0.6/2)^24 relative, far below eps
    nodes, weights = np.polynomial.legendre.leggauss(12)
    edges = np.linspace(0.0, seconds, 21)
    work = 0.0
    magnitude = abs(kinetic(0.0)) + abs(kinetic(seconds))
    for a, b in zip(edges[:-1], edges[1:]):
        for x, w in zip(nodes, weights):
            t = 0.5 * (b - a) * x + 0.5 * (a + b)
            q, qd, qdd = motion(t)
            tau, g, f = (v.astype(float) for v in (dyn.rnea(q, qd, qdd), dyn.gravity(q), dyn.friction(qd)))
            work += 0.5 * (b - a) * w * float(qd @ (tau - g - f))
            magnitude += 0.5 * (b - a) * w * float(np.abs(qd) @ (np.abs(tau) + np.abs(g) + np.abs(f)))
    err = abs(kinetic(seconds) - kinetic(0.0) - work)
    eps = unit_roundoff(dyn)
    return within(
        "energy balance",
        err / magnitude,
        K * eps,
        f"|T({seconds:g} s) - T(0) - integral of qd'(rnea - g - friction) dt| <= {K:g} eps x (the magnitudes "
        "integrated), along a smooth random motion; figure: relative",
        f"T(0) = {kinetic(0.0):.6g} J, work = {work:.6g} J",
    )
