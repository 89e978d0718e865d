"""Friction terms beyond the description's viscous + Coulomb model, chosen per joint on held-out
blocks of the fitting run (issue #24):

- FD_j z_j: position-domain (Dahl) friction, z from the encoder's positions with length delta: a
  state per joint in [-1, 1] that follows the motion's direction over a travel of about delta and
  holds its value at rest (a geared drive's pre-sliding hysteresis: it does not flip with a noisy
  velocity near zero as tanh(qd / v) does);
- FL_j |g_j(q)| z_j: friction growing with the load the drive holds (g: the description's gravity
  torque at the filtered position; its own length delta). The whole rigid-body torque at the
  filtered motion (q-ddot included) did no better on Liu et al.'s runs (validation sums 5.365 / 5.536
  against 5.371 / 5.538 N m both ways) and would need an acceleration the momentum observer does
  not have, and a full inverse dynamics per step in the generated C (the ``fric`` block);
- FS_j tanh(qd_j / v_c) exp(-(qd_j / v_s)^2): Stribeck friction.

Each column sits in joint j's equation only. Choosing them: the fitting run's decimated equations
are cut into FOLDS time blocks; each block is predicted by the fit on the others (GUARD s either
side of it left out, so the filters' memory does not leak it). A term's shape parameter is the grid
value with the lowest held-out RMS of that joint, and the term stays for the joint only if it
lowers that RMS by at least MIN_GAIN against the same choice without it on that joint (the joints
share the rigid-body parameters: one joint's missing term shows in the others' residuals). The
terms are tried in turn -- Dahl, then load, then Stribeck -- each with the ones already kept. The
validation run plays no part in the choice.

MIN_GAIN is a guard against columns that fit the blocks' particulars, not a tuned value: the terms
Liu et al.'s runs keep lower each joint's held-out RMS by 31-48 % together (the JSON's cv_rms against
cv_rms_description_model), and a planted term on a synthetic run is found while the absent ones
stay out (tests/host_tools/identification/test_friction_terms.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import casadi as cs
import numpy as np

from codegen.blocks.friction import DAHL_LENGTH, STRIBECK_VELOCITY
from codegen.symbolic.dynamics import dahl_step, smooth_coulomb, stribeck
from host_tools.identification.least_squares import Model

# rad (m): Dahl lengths tried; Liu et al.'s LWA-4P joints chose 3e-5 ... 3e-3 (1 mdeg = 1.7e-5 rad)
DAHL_LENGTHS = (3e-5, 1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 2e-3, 3e-3)
STRIBECK_VELOCITIES = (0.02, 0.05, 0.1, 0.2, 0.5)  # rad/s (m/s)
FOLDS = 5
GUARD = 0.5  # s: the parallel filter's memory, as observation's edge trimming
MIN_GAIN = 0.005  # a term must lower its joint's held-out RMS by 0.5 %
# a candidate column whose norm is below TINY x its joint's torque's is left out: it would need a
# coefficient 1e9 x the torque's scale to matter, while a term that vanishes (the gravity load of a
# vertical axis) leaves rounding at 1e-16..1e-14 of it
TINY = 1e-9
KINDS = ("FD", "FL", "FS")


@dataclass(frozen=True)
class FrictionTerms:
    """Per joint (None: not used): the Dahl length, the load term's Dahl length (rad or m) and the
    Stribeck velocity (rad/s or m/s)."""

    dahl: tuple[float | None, ...]
    load: tuple[float | None, ...]
    stribeck: tuple[float | None, ...]

    def per_joint(self) -> list[tuple[str, int, float]]:
        """(kind, joint 0-based, shape parameter) of every column, joint after joint."""
        out = []
        for j in range(len(self.dahl)):
            for kind, values in zip(KINDS, (self.dahl, self.load, self.stribeck)):
                if values[j] is not None:
                    out.append((kind, j, float(values[j])))  # type: ignore[arg-type]
        return out

    def lengths(self) -> tuple[float, ...]:
        """The Dahl lengths the terms use (their candidates' columns are all a run needs)."""
        return tuple(sorted({v for v in self.dahl + self.load if v is not None}))

    def velocities(self) -> tuple[float, ...]:
        return tuple(sorted({v for v in self.stribeck if v is not None}))

    def names(self) -> list[str]:
        return [f"{kind}{j + 1}" for kind, j, _ in self.per_joint()]

    def runtime_config(self, coefficients: np.ndarray) -> dict[str, list[float]]:
        """The generated pipeline's run-time fields (codegen.blocks.friction: ``fric.fd`` ...) for
        these terms with ``coefficients`` (one per column, per_joint's order); a joint without a
        term has coefficient 0 and the field's default shape parameter."""
        n = len(self.dahl)
        out = {
            "fric.fd": [0.0] * n,
            "fric.dahl_length": [DAHL_LENGTH] * n,
            "fric.fl": [0.0] * n,
            "fric.load_dahl_length": [DAHL_LENGTH] * n,
            "fric.fs": [0.0] * n,
            "fric.stribeck_velocity": [STRIBECK_VELOCITY] * n,
        }
        shape = {"FD": "fric.dahl_length", "FL": "fric.load_dahl_length", "FS": "fric.stribeck_velocity"}
        for (kind, j, value), c in zip(self.per_joint(), np.asarray(coefficients, float)):
            out["fric." + kind.lower()][j] = float(c)
            out[shape[kind]][j] = value
        return out

    def as_json(self) -> list[dict[str, Any]]:
        return [
            {"joint": j + 1, "dahl_length": d, "load_dahl_length": ld, "stribeck_velocity": s}
            for j, (d, ld, s) in enumerate(zip(self.dahl, self.load, self.stribeck))
        ]


def dahl_states(q: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """z (K, n, L) of positions q (K, n) for every length (L,), z = 0 at the first sample: the
    generated pipeline's recursion (codegen.symbolic.dynamics.dahl_step, the ``fric`` block) over
    the position steps, by CasADi's mapaccum in chunks of CHUNK steps (one mapaccum over the whole
    run takes longer to build than to evaluate; a zero step at the end of the last chunk keeps z)."""
    k, n = q.shape
    lengths = np.asarray(lengths, float)
    dq = np.zeros((n, -(-(k - 1) // CHUNK) * CHUNK))
    dq[:, : k - 1] = np.diff(np.asarray(q, float), axis=0).T
    step = _dahl_recursion(n, len(lengths))
    z = np.zeros((n * len(lengths), dq.shape[1] + 1))
    for i in range(0, dq.shape[1], CHUNK):
        z[:, i + 1 : i + 1 + CHUNK] = np.array(step(z[:, i], dq[:, i : i + CHUNK], lengths))
    return z[:, :k].T.reshape(k, n, len(lengths))


CHUNK = 512


@lru_cache(maxsize=8)
def _dahl_recursion(n: int, count: int) -> cs.Function:
    """One step of every joint's (n) Dahl states for ``count`` lengths, joint-major, over CHUNK steps."""
    z, dq, length = cs.SX.sym("z", n * count), cs.SX.sym("dq", n), cs.SX.sym("length", count)
    states = [dahl_step(z[j * count + g], dq[j], length[g]) for j in range(n) for g in range(count)]
    return cs.Function("dahl", [z, dq, length], [cs.vertcat(*states)]).mapaccum(CHUNK)


def stribeck_shapes(m: Model, qd: np.ndarray, velocities: np.ndarray) -> np.ndarray:
    """(K, n, V): the Stribeck shape of qd (K, n) for every velocity v_s: the robot's smooth
    Coulomb shape (its tanh scales) times the Stribeck decay, the ``fric`` block's expressions
    (codegen.symbolic.dynamics.smooth_coulomb, stribeck), one evaluation per sample."""
    k, n = qd.shape
    v = np.asarray(velocities, float)
    scales = np.array([m.robot.coulomb.scale(j) for j in range(n)], float)
    out = _stribeck_function(n, len(v)).map(k)(np.asarray(qd, float).T, scales, v)
    return out.full().T.reshape(k, n, len(v))


@lru_cache(maxsize=8)
def _stribeck_function(n: int, count: int) -> cs.Function:
    """(qd (n,), tanh scales (n,), velocities (count,)) -> the shapes, joint-major (n count,)."""
    qd, scale, v = cs.SX.sym("qd", n), cs.SX.sym("scale", n), cs.SX.sym("v", count)
    coulomb = smooth_coulomb(qd, scale)
    shapes = [stribeck(coulomb[j], qd[j], v[g]) for j in range(n) for g in range(count)]
    return cs.Function("stribeck", [qd, scale, v], [cs.vertcat(*shapes)])


def gravity_load(m: Model, q: np.ndarray) -> np.ndarray:
    """|g(q)| of the description's model (its friction left out: the offsets FO), (K, n)."""
    beta = m.true_base()
    friction = [i for i, name in enumerate(m.names) if name.rstrip("0123456789") in ("FV", "FC", "FO")]
    beta[friction] = 0.0
    rest = np.zeros_like(np.asarray(q, float))
    y = m.regressor(q, rest, rest)
    return np.abs(y.reshape(-1, len(beta)) @ beta).reshape(y.shape[:2])


@dataclass
class Candidates:
    """Candidate columns of a run at full rate: dahl (K, n, L), load (K, n, L), stribeck (K, n, V),
    for the Dahl lengths and Stribeck velocities listed."""

    dahl: np.ndarray
    load: np.ndarray
    stribeck: np.ndarray
    lengths: tuple[float, ...] = DAHL_LENGTHS
    velocities: tuple[float, ...] = STRIBECK_VELOCITIES


def candidates(
    m: Model,
    q_raw: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    lengths: tuple[float, ...] = DAHL_LENGTHS,
    velocities: tuple[float, ...] = STRIBECK_VELOCITIES,
) -> Candidates:
    """The candidate columns of a run: z from the encoder's positions ``q_raw``, the load from the
    filtered position q, the Stribeck shape from the filtered velocity qd."""
    z = dahl_states(q_raw, np.array(lengths))
    load = gravity_load(m, q)[:, :, None] * z
    return Candidates(z, load, stribeck_shapes(m, qd, np.array(velocities)), lengths, velocities)


def columns(terms: FrictionTerms, c: Candidates) -> np.ndarray:
    """The chosen terms' columns (K, n, p): column i non-zero in its own joint's equation only."""
    per = terms.per_joint()
    k, n, _ = c.dahl.shape
    out = np.zeros((k, n, len(per)))
    for i, (kind, j, value) in enumerate(per):
        if kind == "FS":
            out[:, j, i] = c.stribeck[:, j, c.velocities.index(value)]
        else:
            out[:, j, i] = (c.dahl if kind == "FD" else c.load)[:, j, c.lengths.index(value)]
    return out


@dataclass
class Selection:
    terms: FrictionTerms
    cv_rms_plain: np.ndarray  # per joint, the description's model on the held-out blocks
    cv_rms: np.ndarray  # with the chosen terms


def select(
    y: np.ndarray, tau: np.ndarray, filtered: dict[str, np.ndarray], sample_period: float, keep: np.ndarray
) -> Selection:
    """Choose the terms on held-out blocks. ``y`` (K', n, nb) and ``tau`` (K', n): the fitting
    observation (filtered, decimated); ``filtered``: the candidates filtered the same way, "dahl",
    "load" (K', n, L) and "stribeck" (K', n, V); ``sample_period``: of the decimated rows;
    ``keep`` (K',) the rows the fit may use (input checks)."""
    kd, n, nb = y.shape
    scale = np.sqrt(np.sum(y**2, axis=(0, 1))) + 1e-300
    ys = y / scale
    edges = np.linspace(0, kd, FOLDS + 1).astype(int)
    guard = int(round(GUARD / sample_period))
    train, held = [], []
    for i in range(FOLDS):
        t = keep.copy()
        t[max(0, edges[i] - guard) : edges[i + 1] + guard] = False
        h = np.zeros(kd, bool)
        h[edges[i] : edges[i + 1]] = True
        train.append(t)
        held.append(h & keep)
    # every candidate column once, (K', n, C): joint j's candidates sit in its own equation; the
    # folds' normal equations of all of them are formed once, each trial picks its sub-blocks
    kinds = (("FD", "dahl", DAHL_LENGTHS), ("FL", "load", DAHL_LENGTHS), ("FS", "stribeck", STRIBECK_VELOCITIES))
    index: dict[tuple[str, int, int], int] = {}
    x = np.zeros((kd, n, sum(len(grid) for _, _, grid in kinds) * n))
    for kind, name, grid in kinds:
        for g in range(len(grid)):
            for j in range(n):
                index[kind, g, j] = len(index)
                x[:, j, index[kind, g, j]] = filtered[name][:, j, g]
    norms = np.sqrt(np.sum(x**2, axis=(0, 1)))
    xs = x / (norms + 1e-300)
    # a candidate at rounding level (the gravity load of a vertical axis: 1e-15 of its torque) is
    # no column: normalised, it would fit noise (module docstring: TINY)
    joint_norm = np.sqrt(np.sum(tau**2, axis=0))
    usable = {key: bool(norms[i] > TINY * joint_norm[key[2]]) for key, i in index.items()}
    folds = []
    for t, h in zip(train, held):
        a, b, r = ys[t].reshape(-1, nb), xs[t].reshape(-1, x.shape[2]), tau[t].reshape(-1)
        folds.append((a.T @ a, a.T @ b, b.T @ b, a.T @ r, b.T @ r, ys[h], xs[h], tau[h]))

    def cv(ids: list[int]) -> np.ndarray:
        """Held-out RMS per joint with the candidate columns ``ids``."""
        se, count = np.zeros(n), 0
        for gbb, gbx, gxx, bb, bx, y_h, x_h, tau_h in folds:
            g = np.block([[gbb, gbx[:, ids]], [gbx[:, ids].T, gxx[np.ix_(ids, ids)]]])
            sol = np.linalg.lstsq(g, np.concatenate([bb, bx[ids]]), rcond=None)[0]
            e = tau_h - (y_h @ sol[:nb] + x_h[:, :, ids] @ sol[nb:])
            se += np.sum(e**2, axis=0)
            count += len(e)
        return np.sqrt(se / count)

    chosen: list[list[int]] = [[] for _ in range(n)]
    picks: dict[str, list[float | None]] = {}
    best = cv([])
    plain = best.copy()

    def own(kind: str, g: int, j: int) -> list[int]:
        """Joint j's candidate g of ``kind``, unless it is at rounding level."""
        return [index[kind, g, j]] if usable[kind, g, j] else []

    for kind, _, grid in kinds:
        scores = np.array(
            [cv([i for j in range(n) for i in chosen[j] + own(kind, g, j)]) for g in range(len(grid))]
        )  # (G, n)
        ok = np.array([[usable[kind, g, j] for j in range(n)] for g in range(len(grid))])
        g_best = np.where(ok, scores, np.inf).argmin(axis=0)
        # every joint with its best candidate, then each joint without its own: the joints share
        # the rigid-body parameters, so one joint's missing term shows in the others' residuals --
        # a term is kept for the joint whose own held-out RMS it lowers
        trial = [c + own(kind, int(g_best[j]), j) for j, c in enumerate(chosen)]
        with_all = cv([i for t in trial for i in t])
        picks[kind] = []
        earned = []
        for j in range(n):
            without = cv([i for k, t in enumerate(trial) for i in (chosen[k] if k == j else t)])
            earned.append(bool(ok[g_best[j], j] and with_all[j] < (1 - MIN_GAIN) * without[j]))
        for j in range(n):
            if earned[j]:
                chosen[j].append(index[kind, int(g_best[j]), j])
            picks[kind].append(float(grid[g_best[j]]) if earned[j] else None)
        best = cv([i for c in chosen for i in c])
    terms = FrictionTerms(tuple(picks["FD"]), tuple(picks["FL"]), tuple(picks["FS"]))
    return Selection(terms, plain, best)
