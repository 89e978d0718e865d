"""Friction terms beyond the description's viscous + Coulomb model, chosen per joint on held-out
blocks of the fitting run (issues #24, #44), whatever the description's Coulomb shape (sign or tanh):

- FO_j: a constant offset (asymmetric Coulomb friction: FC sgn(qd) + FO is FC+ moving one way and
  FC- the other; also a torque sensor's or current loop's bias), a candidate where the description
  does not identify FO itself;
- FD_j z_j: position-domain (Dahl) friction, z from the encoder's positions with length delta: a
  state per joint in [-1, 1] that follows the motion's direction over a travel of about delta and
  holds its value at rest (a geared drive's pre-sliding hysteresis: it does not flip with a noisy
  velocity near zero as tanh(qd / v) does);
- FL_j |g_j(q)| z_j: friction growing with the load the drive holds (g: the description's gravity
  torque at the filtered position; its own length delta). The whole rigid-body torque at the
  filtered motion (q-ddot included) did no better on Liu et al.'s runs (validation sums 5.365 / 5.536
  against 5.371 / 5.538 N m both ways) and would need an acceleration the momentum observer does
  not have, and a full inverse dynamics per step in the generated C (the ``fric`` block);
- FS_j c(qd_j) exp(-(qd_j / v_s)^2): Stribeck friction, c the description's Coulomb shape (sgn, or
  tanh with its scales), as the ``fric`` block evaluates it;
- FT_j tanh(qd_j / v_t): a smooth Coulomb term beside the description's own Coulomb column, its
  scale v_t from SMOOTH_SCALES: the Coulomb shape chosen by the data (issue #44 item 1). A joint
  whose friction rises through zero velocity over tenths of a rad/s (a sigmoid friction model)
  takes it, and the description's FC then fits what is left of a sharp step (often nothing): a
  `sign` description's sgn column alone, fitted on a smooth plant, validated at 1.40x plain least
  squares on a probe (docs/identification.md, "What is missing").

Each column sits in joint j's equation only. Choosing them: the fitting run's decimated equations
are cut into FOLDS time blocks; each block is predicted by the fit on the others (GUARD s either
side of it left out, so the filters' memory does not leak it). A term's shape parameter is the grid
value with the largest mean relative gain in held-out RMS of that joint (the margin's measure,
below), and the term stays for the joint only if it lowers that RMS by a margin against the same
choice without it on that joint (the joints share the
rigid-body parameters: one joint's missing term shows in the others' residuals). The terms are
offered by the stepwise rule of ``select`` -- offset, Dahl, load, Stribeck, smooth Coulomb -- each
with the ones already kept. The validation
run plays no part in the choice.

The margin (``kept``): the term's relative gain on each of the FOLDS blocks, d_f = 1 -
rms_f(with) / rms_f(without), is a paired sample; the term stays if the blocks' mean gain (weighted
by their held-out rows, below) exceeds one standard error of that mean (s_d / sqrt(FOLDS) with
equal rows) and MIN_GAIN: the one-standard-error rule of
cross-validation (Breiman et al. 1984; Hastie, Tibshirani & Friedman 2009 §7.10): the simpler
model unless the richer one is better by more than the held-out estimate's own uncertainty. A
column that only fits the particulars of the blocks it was trained on gains on some blocks and
loses on others: its mean gain sits within that uncertainty. (A stricter test -- a one-sided
t-test at 95 %, 2.13 standard errors, or every block lower -- threw out terms whose gain is large
but uneven because some blocks hold more reversals than others: Liu et al.'s joint 3's Dahl term,
27 % together, 16.5 % mean with one block worse.) MIN_GAIN (0.5 %) is a floor for blocks that
agree by chance on a negligible gain. The blocks are weighted by their held-out rows (the input
checks leave some blocks shorter): an unweighted mean weighs a short block as a long one, and had
passed an offset on a probe's joint 2 whose pooled held-out RMS rose (0.0531 -> 0.0534 N m), which
then validated at 1.06 x plain least squares on another run. The pooled RMS itself is not the test
(it was, 2026-11-30 to 2026-12-01): it weighs each block by the size of its error, and one block
that the shared rigid-body parameters extrapolate into badly (a pose the other blocks never reach)
then decides alone. On a hostile Panda run split 60/40 in time (`record franka_panda --hostile
--seed 5 --duration 40 --offset 1:0.3,5:-0.1 --stribeck 2:0.5:0.07,4:0.4:0.07`, fit on the first
24 s) the planted 0.3 N m offset on joint 1 lowered four blocks' held-out RMS 25-fold (0.30-0.42 ->
0.012-0.019 N m) and raised the last one's from 0.65 to 1.11 N m, so the pooled RMS rose and ranked
it behind a smooth Coulomb shape that was refused: joint 1 kept nothing and validated at 4.5 x plain
least squares (the sum at 1.32 x). The offers are ranked the same way (``_Folds.offers``). The terms Liu et al.'s runs
keep lower each joint's held-out RMS by 31-48 % together (the JSON's cv_rms against
cv_rms_description_model), and a planted term on a synthetic run is found while the absent ones
stay out (tests/host_tools/identification/test_friction_terms.py, test_structure.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import casadi as cs
import numpy as np

from codegen.blocks.friction import TERMS
from codegen.symbolic.dynamics import dahl_step, smooth_coulomb, stribeck
from host_tools.identification.least_squares import Model

# rad (m): Dahl lengths tried; Liu et al.'s LWA-4P joints chose 3e-5 ... 3e-3 (1 mdeg = 1.7e-5 rad)
DAHL_LENGTHS = (3e-5, 1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 2e-3, 3e-3)
STRIBECK_VELOCITIES = (0.02, 0.05, 0.1, 0.2, 0.5)  # rad/s (m/s)
# rad/s (m/s): smooth Coulomb scales tried, the Stribeck velocities' grid: from sharper than a
# filtered velocity's noise near rest resolves (0.02) to a sigmoid that bends over half a rad/s
SMOOTH_SCALES = STRIBECK_VELOCITIES
FOLDS = 5
GUARD = 0.5  # s: the parallel filter's memory, as observation's edge trimming
MIN_GAIN = 0.005  # a term must lower its joint's held-out RMS by at least 0.5 % (module docstring)
# a candidate column whose norm is below TINY x its joint's torque's is left out: it would need a
# coefficient 1e9 x the torque's scale to matter, while a term that vanishes (the gravity load of a
# vertical axis) leaves rounding at 1e-16..1e-14 of it
TINY = 1e-9
KINDS = ("FO", "FD", "FL", "FS", "FT")
# the generated ``fric`` block's term (codegen.blocks.friction.TERMS) of each kind with a column there
TERM_OF = {"FO": "offset", "FD": "dahl", "FL": "load", "FS": "stribeck", "FT": "smooth"}


@dataclass(frozen=True)
class FrictionTerms:
    """Per joint (None: not used): the Dahl length, the load term's Dahl length (rad or m), the
    Stribeck velocity (rad/s or m/s), the offset (1.0: used; it has no shape parameter) and the
    smooth Coulomb term's scale (rad/s or m/s)."""

    dahl: tuple[float | None, ...]
    load: tuple[float | None, ...]
    stribeck: tuple[float | None, ...]
    offset: tuple[float | None, ...] = ()
    smooth: tuple[float | None, ...] = ()

    def per_joint(self) -> list[tuple[str, int, float]]:
        """(kind, joint 0-based, shape parameter) of every column, joint after joint."""
        out = []
        offset = self.offset or (None,) * len(self.dahl)
        smooth = self.smooth or (None,) * len(self.dahl)
        for j in range(len(self.dahl)):
            for kind, values in zip(KINDS, (offset, self.dahl, self.load, self.stribeck, smooth)):
                if values[j] is not None:
                    out.append((kind, j, float(values[j])))  # type: ignore[arg-type]
        return out

    @property
    def has_smooth(self) -> bool:
        """Whether some joint keeps a smooth Coulomb term."""
        return any(v is not None for v in self.smooth)

    def names(self) -> list[str]:
        return [f"{kind}{j + 1}" for kind, j, _ in self.per_joint()]

    def runtime_config(self, coefficients: np.ndarray) -> dict[str, list[float]]:
        """The generated pipeline's run-time fields (codegen.blocks.friction: ``fric.fd`` ...) for
        these terms with ``coefficients`` (one per column, per_joint's order); a joint without a
        term has coefficient 0 and the field's default shape parameter."""
        n = len(self.dahl)
        out: dict[str, list[float]] = {}
        for term in (TERMS[name] for name in TERM_OF.values()):
            out["fric." + term.coefficient] = [0.0] * n
            if term.shape:
                out["fric." + term.shape] = [term.shape_default] * n
        for (kind, j, value), c in zip(self.per_joint(), np.asarray(coefficients, float)):
            term = TERMS[TERM_OF[kind]]
            out["fric." + term.coefficient][j] = float(c)
            if term.shape:  # the offset has none
                out["fric." + term.shape][j] = value
        return out

    def as_json(self) -> list[dict[str, Any]]:
        offset = self.offset or (None,) * len(self.dahl)
        smooth = self.smooth or (None,) * len(self.dahl)
        return [
            {
                "joint": j + 1,
                "dahl_length": d,
                "load_dahl_length": ld,
                "stribeck_velocity": s,
                "offset": o is not None,
                "smooth_scale": t,
            }
            for j, (d, ld, s, o, t) in enumerate(zip(self.dahl, self.load, self.stribeck, offset, smooth))
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
    """(K, n, V): the Stribeck shape of qd (K, n) for every velocity v_s: the robot's Coulomb shape
    (sgn, or tanh with its scales) times the Stribeck decay, the ``fric`` block's expressions
    (codegen.symbolic.dynamics.smooth_coulomb, stribeck), one evaluation per sample."""
    k, n = qd.shape
    v = np.asarray(velocities, float)
    c = m.robot.coulomb
    sign = c.model == "sign"
    scales = np.ones(n) if sign else np.array([c.scale(j) for j in range(n)], float)
    out = _stribeck_function(n, len(v), sign).map(k)(np.asarray(qd, float).T, scales, v)
    return out.full().T.reshape(k, n, len(v))


@lru_cache(maxsize=8)
def _stribeck_function(n: int, count: int, sign: bool = False) -> cs.Function:
    """(qd (n,), tanh scales (n,), velocities (count,)) -> the shapes, joint-major (n count,);
    ``sign``: sgn(qd) for the Coulomb shape (the scales unused)."""
    qd, scale, v = cs.SX.sym("qd", n), cs.SX.sym("scale", n), cs.SX.sym("v", count)
    coulomb = cs.sign(qd) + 0 * scale if sign else smooth_coulomb(qd, scale)
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
    smooth (K, n, S), for the Dahl lengths, Stribeck velocities and smooth Coulomb scales listed."""

    dahl: np.ndarray
    load: np.ndarray
    stribeck: np.ndarray
    smooth: np.ndarray
    lengths: tuple[float, ...] = DAHL_LENGTHS
    velocities: tuple[float, ...] = STRIBECK_VELOCITIES
    scales: tuple[float, ...] = SMOOTH_SCALES


def candidates(
    m: Model,
    q_raw: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    lengths: tuple[float, ...] = DAHL_LENGTHS,
    velocities: tuple[float, ...] = STRIBECK_VELOCITIES,
    scales: tuple[float, ...] = SMOOTH_SCALES,
) -> Candidates:
    """The candidate columns of a run: z from the encoder's positions ``q_raw``, the load from the
    filtered position q, the Stribeck and smooth Coulomb shapes from the filtered velocity qd."""
    z = dahl_states(q_raw, np.array(lengths))
    load = gravity_load(m, q)[:, :, None] * z
    smooth = smooth_shapes(qd, np.array(scales))
    return Candidates(z, load, stribeck_shapes(m, qd, np.array(velocities)), smooth, lengths, velocities, scales)


def smooth_shapes(qd: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """(K, n, S): tanh(qd / v_t) of qd (K, n) for every scale (S,): the ``fric`` block's smooth
    Coulomb term (codegen.symbolic.dynamics.smooth_coulomb), one CasADi evaluation per sample."""
    k, n = qd.shape
    out = _smooth_function(n, len(scales)).map(k)(np.asarray(qd, float).T, np.asarray(scales, float))
    return out.full().T.reshape(k, n, len(scales))


@lru_cache(maxsize=8)
def _smooth_function(n: int, count: int) -> cs.Function:
    """(qd (n,), scales (count,)) -> tanh(qd_j / v_g), joint-major (n count,)."""
    qd, v = cs.SX.sym("qd", n), cs.SX.sym("v", count)
    shapes = [smooth_coulomb(qd[j], v[g]) for j in range(n) for g in range(count)]
    return cs.Function("smooth", [qd, v], [cs.vertcat(*shapes)])


def columns(terms: FrictionTerms, c: Candidates) -> np.ndarray:
    """The chosen terms' columns (K, n, p): column i non-zero in its own joint's equation only."""
    per = terms.per_joint()
    k, n, _ = c.dahl.shape
    out = np.zeros((k, n, len(per)))
    for i, (kind, j, value) in enumerate(per):
        if kind == "FO":
            out[:, j, i] = 1.0
        elif kind == "FS":
            out[:, j, i] = c.stribeck[:, j, c.velocities.index(value)]
        elif kind == "FT":
            out[:, j, i] = c.smooth[:, j, c.scales.index(value)]
        else:
            out[:, j, i] = (c.dahl if kind == "FD" else c.load)[:, j, c.lengths.index(value)]
    return out


@dataclass
class Selection:
    terms: FrictionTerms
    cv_rms_plain: np.ndarray  # per joint, the description's model on the held-out blocks
    cv_rms: np.ndarray  # with the chosen terms
    # per joint, the trials in the order made: kind, shape parameter, the joint's held-out RMS
    # without and with the term, the blocks' mean relative gain, the margin it had to exceed (one
    # standard error of that mean, at least MIN_GAIN) and whether it was kept
    trials: list[list[dict[str, Any]]] = field(default_factory=list)

    def forms(self, base: list[str]) -> list[str]:
        """Each joint's chosen friction form, the description's own terms (``base``: its friction
        parameter kinds per joint, e.g. ["FV", "FC"]) followed by the kept ones."""
        label = {"FV": "viscous", "FC": "Coulomb", "FO": "offset"}
        out = []
        for j, kinds in enumerate(base_kinds_per_joint(base, len(self.trials))):
            # a kept offset term is named FO like the description's own (offered only where the
            # description has none): named once, as the kept term
            taken = any(t["kept"] and t["kind"] == "FO" for t in self.trials[j])
            words = [label[k] for k in kinds if not (taken and k == "FO")]
            for t in self.trials[j]:
                if t["kept"]:
                    words.append(_FORM[t["kind"]].format(t["shape"]))
            out.append(" + ".join(words) if words else "none")
        return out


_FORM = {
    "FO": "offset",
    "FD": "Dahl ({:g} rad)",
    "FL": "load-dependent Dahl ({:g} rad)",
    "FS": "Stribeck ({:g} rad/s)",
    "FT": "smooth Coulomb ({:g} rad/s)",
}


def base_kinds_per_joint(names: list[str], n: int) -> list[list[str]]:
    """The description's friction parameters (FV, FC, FO) per joint among base parameter ``names``."""
    return [[k for k in ("FV", "FC", "FO") if f"{k}{j + 1}" in names] for j in range(n)]


def held_out_folds(kd: int, keep: np.ndarray, sample_period: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """FOLDS time blocks of ``kd`` decimated rows: (train, held) bool masks, the held block's
    GUARD s either side left out of its training rows; both within ``keep``."""
    edges = np.linspace(0, kd, FOLDS + 1).astype(int)
    guard = int(round(GUARD / sample_period))
    out = []
    for i in range(FOLDS):
        t = keep.copy()
        t[max(0, edges[i] - guard) : edges[i + 1] + guard] = False
        h = np.zeros(kd, bool)
        h[edges[i] : edges[i + 1]] = True
        out.append((t, h & keep))
    return out


def held_out_rms(y: np.ndarray, tau: np.ndarray, sample_period: float, keep: np.ndarray) -> np.ndarray:
    """Per joint, the held-out RMS of the least-squares fit of ``tau`` (K', n) on ``y`` (K', n, p)
    over held_out_folds (used to choose the velocity source, host_tools.identification.run)."""
    kd, n, p = y.shape
    se = np.zeros(n)
    count = 0
    scale = np.sqrt(np.sum(y**2, axis=(0, 1))) + 1e-300
    for t, h in held_out_folds(kd, keep, sample_period):
        a = (y[t] / scale).reshape(-1, p)
        sol = np.linalg.lstsq(a, tau[t].reshape(-1), rcond=None)[0]
        e = tau[h] - (y[h] / scale) @ sol
        se += np.sum(e**2, axis=0)
        count += len(e)
    return np.sqrt(se / max(count, 1))


def kept(without: np.ndarray, with_: np.ndarray, rows: np.ndarray | None = None) -> tuple[bool, float, float]:
    """The one-standard-error test of a term on one joint (module docstring): its per-block
    held-out RMS without and with it (FOLDS,), the blocks weighted by their held-out ``rows``
    (default equal). Returns (kept, the blocks' mean relative gain, the margin it had to exceed)."""
    gain = 1.0 - with_ / np.maximum(without, 1e-300)
    w = np.ones(len(gain)) if rows is None else np.asarray(rows, float)
    w = w / max(float(np.sum(w)), 1e-300)
    mean = float(np.sum(w * gain))
    # the weighted mean's standard error (w = 1/K: s_d / sqrt(K))
    spread = float(np.sum(w * (gain - mean) ** 2)) * len(gain) / max(len(gain) - 1, 1)
    margin = max(MIN_GAIN, float(np.sqrt(spread * np.sum(w**2))))
    return bool(mean > margin), mean, margin


def select(
    y: np.ndarray, tau: np.ndarray, filtered: dict[str, np.ndarray], sample_period: float, keep: np.ndarray
) -> Selection:
    """Choose the terms on held-out blocks. ``y`` (K', n, nb) and ``tau`` (K', n): the fitting
    observation (filtered, decimated); ``filtered``: the candidates filtered the same way, "dahl",
    "load" (K', n, L), "stribeck" (K', n, V) and optionally "offset" (K', n, 1: ones where a joint
    may take an offset, zeros where the description identifies one) and "smooth" (K', n, S: the
    smooth Coulomb term's shapes); ``sample_period``: of the
    decimated rows; ``keep`` (K',) the rows the fit may use (input checks).

    Forward stepwise, per joint: each round every joint is offered, of the kinds it has not yet
    taken, the kind and shape with the largest mean relative gain in held-out RMS over the blocks
    (weighted by their rows, as ``kept`` judges it; tried on it alone, with every joint's terms so
    far); the offers are tried together and each stays where it passes ``kept`` against
    the same choice without it on that joint; a joint whose best offer fails takes no more, but
    for the smooth Coulomb shape (FT) if it has not been tried: that term is the shape of a column
    every joint has (Coulomb), not an effect of its own, and differs from it only near rest, so
    its held-out gain is smallest while the other joints' missing terms still move the shared
    rigid-body parameters -- a joint whose best offer in the first round was another kind (a hostile
    Panda's joint 6: a load-dependent term, refused) would otherwise never be asked. The best single
    term goes first, so a term that only imitates another (a long Dahl length against a Stribeck
    bump) is not kept before it."""
    kinds = [("FD", "dahl", DAHL_LENGTHS), ("FL", "load", DAHL_LENGTHS), ("FS", "stribeck", STRIBECK_VELOCITIES)]
    if "smooth" in filtered:
        kinds.append(("FT", "smooth", SMOOTH_SCALES))
    if "offset" in filtered:
        kinds.insert(0, ("FO", "offset", (1.0,)))
    f = _Folds(y, tau, filtered, sample_period, keep, kinds)
    n = y.shape[1]
    chosen: list[list[int]] = [[] for _ in range(n)]
    picks: dict[str, list[float | None]] = {kind: [None] * n for kind, _, _ in kinds}
    trials: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    open_ = [{kind for kind, _, _ in kinds} for _ in range(n)]
    plain = f.overall(f.cv([]))
    while any(open_):
        offers = f.offers(chosen, open_)  # per joint: (kind, g) or None
        trial = [c + ([] if o is None else f.own(*o, j)) for j, (c, o) in enumerate(zip(chosen, offers))]
        with_all = f.cv([i for t in trial for i in t])
        for j, o in enumerate(offers):
            if o is None:
                open_[j] = set()
                continue
            without = f.cv([i for k, t in enumerate(trial) for i in (chosen[k] if k == j else t)])
            verdict, gain, margin = kept(without[:, j], with_all[:, j], f.rows)
            rms_without, rms_with = float(f.overall(without)[j]), float(f.overall(with_all)[j])
            kind, g = o
            shape = float(dict((k, grid) for k, _, grid in kinds)[kind][g])
            trials[j].append(
                {
                    "kind": kind,
                    "shape": shape,
                    "held_out_rms_without": rms_without,
                    "held_out_rms_with": rms_with,
                    "mean_gain": gain,
                    "margin": margin,
                    "kept": verdict,
                }
            )
            if verdict:
                chosen[j] += f.own(kind, g, j)
                picks[kind][j] = shape
                open_[j].discard(kind)
            else:  # the joint takes no more terms, but for the Coulomb column's shape if still open
                open_[j] = {"FT"} & (open_[j] - {kind})
    best = f.overall(f.cv([i for c in chosen for i in c]))
    offset = tuple(picks["FO"]) if "FO" in picks else ()
    smooth = tuple(picks["FT"]) if "FT" in picks else ()
    terms = FrictionTerms(tuple(picks["FD"]), tuple(picks["FL"]), tuple(picks["FS"]), offset, smooth)
    return Selection(terms, plain, best, trials)


class _Folds:
    """The held-out blocks' normal equations of the observation and every candidate column, formed
    once (joint j's candidates sit in its own equation); each trial picks its sub-blocks."""

    def __init__(
        self,
        y: np.ndarray,
        tau: np.ndarray,
        filtered: dict[str, np.ndarray],
        sample_period: float,
        keep: np.ndarray,
        kinds: list[tuple[str, str, tuple[float, ...]]],
    ) -> None:
        kd, n, nb = y.shape
        self.n, self.nb, self.kinds = n, nb, kinds
        ys = y / (np.sqrt(np.sum(y**2, axis=(0, 1))) + 1e-300)
        self.index: dict[tuple[str, int, int], int] = {}
        x = np.zeros((kd, n, sum(len(grid) for _, _, grid in kinds) * n))
        for kind, name, grid in kinds:
            for g in range(len(grid)):
                for j in range(n):
                    self.index[kind, g, j] = len(self.index)
                    x[:, j, self.index[kind, g, j]] = filtered[name][:, j, g]
        norms = np.sqrt(np.sum(x**2, axis=(0, 1)))
        xs = x / (norms + 1e-300)
        # a candidate at rounding level (the gravity load of a vertical axis: 1e-15 of its torque)
        # is no column: normalised, it would fit noise (module docstring: TINY)
        joint_norm = np.sqrt(np.sum(tau**2, axis=0))
        self.usable = {key: bool(norms[i] > TINY * joint_norm[key[2]]) for key, i in self.index.items()}
        self.folds = []
        for t, h in held_out_folds(kd, keep, sample_period):
            a, b, r = ys[t].reshape(-1, nb), xs[t].reshape(-1, x.shape[2]), tau[t].reshape(-1)
            self.folds.append((a.T @ a, a.T @ b, b.T @ b, a.T @ r, b.T @ r, ys[h], xs[h], tau[h]))
        self.rows = np.array([len(f[7]) for f in self.folds], float)

    def cv(self, ids: list[int]) -> np.ndarray:
        """Held-out RMS per block and joint (FOLDS, n) with the candidate columns ``ids``."""
        out = []
        nb = self.nb
        for gbb, gbx, gxx, bb, bx, y_h, x_h, tau_h in self.folds:
            g = np.block([[gbb, gbx[:, ids]], [gbx[:, ids].T, gxx[np.ix_(ids, ids)]]])
            sol = np.linalg.lstsq(g, np.concatenate([bb, bx[ids]]), rcond=None)[0]
            e = tau_h - (y_h @ sol[:nb] + x_h[:, :, ids] @ sol[nb:])
            out.append(np.sqrt(np.mean(e**2, axis=0)) if len(e) else np.zeros(self.n))
        return np.array(out)

    def overall(self, per_fold: np.ndarray) -> np.ndarray:
        """Per joint over the held-out rows of every block (blocks weighted by their rows)."""
        return np.sqrt(np.sum(self.rows[:, None] * per_fold**2, axis=0) / max(float(np.sum(self.rows)), 1.0))

    def own(self, kind: str, g: int, j: int) -> list[int]:
        """Joint j's candidate g of ``kind``, unless it is at rounding level."""
        return [self.index[kind, g, j]] if self.usable[kind, g, j] else []

    def offers(self, chosen: list[list[int]], open_: list[set[str]]) -> list[tuple[str, int] | None]:
        """Per joint, of its open kinds, the (kind, grid index) with the largest row-weighted mean
        of the blocks' relative gains in held-out RMS (``kept``'s measure), tried on that joint alone
        with every joint's terms so far (None: no usable candidate left). One
        joint at a time: a joint's large missing term raises the others' residuals through the
        shared rigid-body parameters, and trying a kind on every joint at once would credit that
        kind with the fix on the other joint. Each candidate is one column more than the terms so
        far: its fit follows from theirs by the bordered normal equations (block elimination,
        one pseudo-inverse per block for all candidates), the same solution cv's least squares gives.
        A smooth Coulomb candidate whose coefficient comes out negative in some block is not offered
        (friction higher at low speed is the Stribeck kind's shape)."""
        so_far = [i for c in chosen for i in c]
        cands = [
            [
                (kind, g)
                for kind, _, grid in self.kinds
                if kind in open_[j]
                for g in range(len(grid))
                if self.usable[kind, g, j]
            ]
            for j in range(self.n)
        ]
        se = [np.zeros((len(self.folds), len(c))) for c in cands]  # per block and candidate
        base = np.zeros((len(self.folds), self.n))  # per block, joint j's held-out error without
        # a smooth Coulomb term is friction that rises through zero velocity: FT > 0. Fitted
        # negative in some block it stands in for a Stribeck term (friction higher at low speed,
        # the FS kind's shape), and is not offered
        smooth = [np.array([kind == "FT" for kind, _ in c], bool) for c in cands]
        negative = [np.zeros(len(c), bool) for c in cands]
        for f, (gbb, gbx, gxx, bb, bx, y_h, x_h, tau_h) in enumerate(self.folds):
            g = np.block([[gbb, gbx[:, so_far]], [gbx[:, so_far].T, gxx[np.ix_(so_far, so_far)]]])
            pinv = np.linalg.pinv(g)
            b = np.concatenate([bb, bx[so_far]])
            sol = pinv @ b
            for j, cj in enumerate(cands):
                if not cj:
                    continue
                ids = [self.index[kind, gi, j] for kind, gi in cj]
                u = np.vstack([gbx[:, ids], gxx[np.ix_(so_far, ids)]])  # (p, C)
                w = pinv @ u
                schur = gxx[ids, ids] - np.sum(u * w, axis=0)
                ok = schur > 1e-12 * np.maximum(gxx[ids, ids], 1e-300)
                a = np.where(ok, (bx[ids] - u.T @ sol) / np.where(ok, schur, 1.0), 0.0)
                negative[j] |= smooth[j] & (a < 0)
                z = np.concatenate([y_h[:, j, :], x_h[:, j, so_far]], axis=1)  # joint j's held-out rows
                pred = (z @ sol)[:, None] - (z @ w) * a + x_h[:, j, ids] * a
                se[j][f] = np.sum((tau_h[:, j, None] - pred) ** 2, axis=0)
                base[f, j] = np.sum((tau_h[:, j] - z @ sol) ** 2)
        # the candidates ranked as ``kept`` judges them: the blocks' relative gains in held-out RMS,
        # weighted by the blocks' rows (scale-free per block: one block that the shared parameters
        # extrapolate badly into does not rank the offers by its error's size)
        w = self.rows / max(float(np.sum(self.rows)), 1.0)
        score = [
            np.where(neg, -np.inf, w @ (1.0 - np.sqrt(e / np.maximum(base[:, [j]], 1e-300))))
            for j, (neg, e) in enumerate(zip(negative, se))
        ]
        return [cj[int(np.argmax(v))] if cj and np.isfinite(v).any() else None for cj, v in zip(cands, score)]
