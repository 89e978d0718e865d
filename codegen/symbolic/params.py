"""Standard <-> base parameters (Xu et al. 2020 §III, Kirchhoff (2011) §4.2.2; Gautier's numeric method).

The full regressor is sampled at random states; a QR decomposition of the stacked, column-normalised
regressor without pivoting, with the columns in a fixed order of preference, keeps a column when it
is independent of the columns kept before it. The order puts first what Khalil's regrouping keeps
(XX, XY, XZ, YZ, ZZ, MX, MY of each link) and last what it eliminates (MZ, YY, M) and the rotor
inertia (IA1 regroups into ZZ1), so the kept set and the names follow Xu et al. (2020) Table 4. The
regrouping matrix K (base = K . standard) comes from least squares; each coefficient is then made
exact where it is a small rational times a product of at most two of the robot's lengths
(1, -1, a^2, d*a, ...). The count is checked against the SVD rank of the same matrix.

Machine independence: which columns are kept is a decision in double precision (BLAS), but one
with a wide gap -- on the bundled robots the QR's diagonal is >= 0.36 for kept columns and <= 7e-16
for dropped ones, against the threshold 1e-8 -- so no CPU's last bits can move it. The numbers
printed from it (the regrouping coefficients and the base parameters' values) are computed in
codegen.model.exact (regrouping, BaseParameters.values).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import casadi as cs
import numpy as np
import scipy.linalg

from codegen.model import exact
from codegen.model.robot import JOINT_PARAMS, LINK_PARAMS, Robot
from codegen.symbolic.dynamics import Dynamics

if TYPE_CHECKING:
    import sympy as sp

KEEP_FIRST = ("XX", "XY", "XZ", "YZ", "ZZ", "MX", "MY")
KEEP_LAST = ("MZ", "YY", "M")
SEED = 20201  # fixed: generation is deterministic


@dataclass(frozen=True)
class BaseParameters:
    names: tuple[str, ...]  # e.g. ZZ1R, FV1
    columns: tuple[int, ...]  # standard-parameter index kept for each base parameter
    k: np.ndarray  # (n_base, n_standard): base = k @ standard
    expressions: tuple[str, ...]  # ZZ1R = ZZ1 + IA1 + YY2 + ...
    n_inertial: int  # base[:n_inertial] inertial, the rest joint parameters
    rank: int  # SVD rank of the stacked regressor (independent check)

    @property
    def n_base(self) -> int:
        return len(self.names)

    def values(self, standard: np.ndarray) -> np.ndarray:
        """base = k @ standard, exact and rounded once (codegen.model.exact): the numbers generation prints."""
        return exact.matmul(self.k, np.asarray(standard, dtype=float))

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> BaseParameters:
        """The base parameters a generated folder's manifest.json records (codegen.emit.generate
        writes them from base_parameters; JSON keeps every double exactly), without re-deriving
        them: the regrouping's exact arithmetic takes about a second."""
        k = np.zeros((manifest["n_base"], manifest["n_standard"]))
        for i, row in enumerate(manifest["regrouping"]):
            for j, v in row:
                k[i, j] = v
        return cls(
            names=tuple(manifest["base_parameter_names"]),
            columns=tuple(manifest["base_columns"]),
            k=k,
            expressions=tuple(manifest["base_expressions"]),
            n_inertial=int(manifest["base_ranges"]["inertial"][1]),
            # the rank is not recorded: tests/codegen/symbolic/test_params.py checks the count against the SVD rank
            rank=int(manifest["n_base"]),
        )

    def to_standard(self, beta: np.ndarray) -> np.ndarray:
        """A standard vector with the same dynamics: kept parameters = beta, the others 0."""
        out = np.zeros(self.k.shape[1])
        out[list(self.columns)] = beta
        return out


def _split(name: str) -> tuple[str, int]:
    kind = name.rstrip("0123456789")
    return kind, int(name[len(kind) :])


def preference_order(robot: Robot) -> list[int]:
    """Khalil keeps XX, XY, XZ, YZ, ZZ, MX, MY and regroups MZ, YY, M of a revolute joint's link;
    for a prismatic joint he keeps M and regroups the rotational inertia."""
    names = robot.standard_parameter_names

    def rank(i: int) -> tuple[int, int, int]:
        kind, link = _split(names[i])
        prismatic = robot.joints[link - 1].type == "prismatic"
        if prismatic and kind == "M":
            return (0, link, -1)
        if prismatic and kind in ("XX", "XY", "XZ", "YY", "YZ", "ZZ"):
            return (3, -link, ("XX", "XY", "XZ", "YY", "YZ", "ZZ").index(kind))
        if kind in KEEP_FIRST:
            return (0, link, KEEP_FIRST.index(kind))
        if kind in ("FV", "FC", "FO"):
            return (1, link, JOINT_PARAMS.index(kind))
        if kind == "IA":
            return (2, link, 0)
        return (3, -link, KEEP_LAST.index(kind))

    return sorted(range(len(names)), key=rank)


def sample_states(n: int, n_samples: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random states (n, n_samples): q in [-pi, pi], qd in [-2, 2], qdd in [-6, 6] rad/s^k. Uniform
    draws only: PCG64 and the uniform transform are plain integer and IEEE arithmetic, the same on
    every machine (the normal sampler's tails go through libm)."""
    rng = np.random.default_rng(seed)
    return (
        rng.uniform(-np.pi, np.pi, (n, n_samples)),
        rng.uniform(-2.0, 2.0, (n, n_samples)),
        rng.uniform(-6.0, 6.0, (n, n_samples)),
    )


def sample_regressor(dyn: Dynamics, n_samples: int, seed: int = SEED) -> np.ndarray:
    """Stacked full regressor at random states (sample_states), evaluated in double precision."""
    f = cs.Function("Y", [dyn.q, dyn.qd, dyn.qdd], [dyn.regressor()]).map(n_samples)
    y = np.array(f(*sample_states(dyn.n, n_samples, seed)))  # (n, n_std * n_samples), blocks side by side
    return np.vstack(np.split(y, n_samples, axis=1))


def regrouping(dyn: Dynamics, kept: list[int], dropped: list[int], seed: int = SEED) -> np.ndarray:
    """X (len(kept), len(dropped)) with Y[:, dropped] = Y[:, kept] X for every state: the exact
    regrouping coefficients. The identity holds for all states, so any samples whose kept columns
    have full rank determine X; the regressor is evaluated there in mpmath (codegen.model.exact) and the
    consistent system solved at 50 digits, then rounded once -- the same doubles on every machine,
    where a double-precision least-squares fit differs in the last bits from one BLAS to the next."""
    if not dropped:
        return np.zeros((len(kept), 0))
    f = exact.MpFunction(cs.Function("Y", [dyn.q, dyn.qd, dyn.qdd], [dyn.regressor()]))
    n_samples = -(-len(kept) // dyn.n) + 2
    while True:
        q, qd, qdd = sample_states(dyn.n, n_samples, seed + 1)
        rows = [f(q[:, s], qd[:, s], qdd[:, s])[0] for s in range(n_samples)]
        y = np.array([[r[i, j] for j in range(r.cols)] for r in rows for i in range(r.rows)], dtype=object)
        try:
            return exact.rounded(exact.solve_consistent(y[:, kept], y[:, dropped]))
        except ZeroDivisionError:
            if n_samples > 4 * len(kept):
                raise ArithmeticError("the kept base-parameter columns are rank deficient") from None
            n_samples *= 2


def lengths(robot: Robot) -> list[tuple[str, float, int]]:
    """(symbol name, value, joint index) of every non-zero length of the kinematic description."""
    out = []
    for i, joint in enumerate(robot.joints, start=1):
        for key, value in joint.kinematics:
            if key in ("a", "d", "x", "y", "z") and abs(value) > 1e-12:
                out.append((f"{key}{i}", abs(value), i))
    return out


# X is solved at 50 digits and rounded once (regrouping). A coefficient (SI: 1, m or m^2) is
# dropped below ZERO = 1e-15: its term would move a base parameter by 1e-15 x the dropped parameter,
# at the double rounding of the kept ones (the solve's own noise, from the double constants of the
# expression graph, stays below it). Coefficients of 1e-14..1e-7 are real: URDF angles near, not
# at, pi/2 (rpy 1.5708: cos = -3.7e-6, and its products) make them; the former cut at 1e-10 and
# snapping at 1e-9 left Y_b beta 5e-11 (relative) off rnea on example-robot-data's xArm7 and
# SO-100 -- found by `manipgen verify`. A coefficient is written as a rational times lengths only
# where that is the same double to 1e-15 relative (SNAP, a few ulps).
ZERO = 1e-15
SNAP = 1e-15


def exact_coefficient(value: float, lens: list[tuple[str, float, int]], link: int) -> tuple[float, sp.Expr] | None:
    """value = r * monomial(lengths) with r = p/q small; returns (float value, sympy form)."""
    import sympy as sp  # here: only generation needs it (a 0.2 s import)

    monomials: list[tuple[int, int, sp.Expr, float]] = [(0, 0, sp.Integer(1), 1.0)]
    for n1, v1, j1 in lens:
        monomials.append((1, abs(j1 - link), sp.Symbol(n1), v1))
    for (n1, v1, j1), (n2, v2, j2) in itertools.combinations_with_replacement(lens, 2):
        monomials.append((2, abs(j1 - link) + abs(j2 - link), sp.Symbol(n1) * sp.Symbol(n2), v1 * v2))
    best: tuple[tuple[bool, int, int], float, sp.Expr] | None = None
    for degree, distance, expr, mv in monomials:
        r = Fraction(value / mv).limit_denominator(12)
        if r == 0 or abs(r.numerator) > 24:
            continue
        exact = float(r.numerator) * mv / float(r.denominator)
        if abs(exact - value) <= SNAP * abs(value):
            # prefer a length with an integer factor (d5 M5) to a bare fraction (2/5 M5)
            score = (r.denominator != 1 or abs(r.numerator) > 2, degree, distance)
            if best is None or score < best[0]:
                best = (score, exact, sp.Rational(r.numerator, r.denominator) * expr)
    return None if best is None else (best[1], best[2])


# base_parameters' results in this process, by description: a pipeline with the model-adaptive
# observer derives them again for its regressor (codegen.blocks.context), a description's dynamics
# for its own; each PyBullet scenario of the tests built one robot's six times (3-9 s each)
_BASE_CACHE: dict[tuple[Robot, int | None], BaseParameters] = {}
_BASE_CACHE_SIZE = 32


def base_parameters(robot: Robot, dyn: Dynamics | None = None, n_samples: int | None = None) -> BaseParameters:
    """Gautier's numeric reduction of ``robot``'s standard parameters to base parameters. A function
    of the description alone (``dyn``, when given, is ``Dynamics(robot)``: passed to save building
    it), so computed once per description in a process (the returned ``k`` is read-only)."""
    if dyn is not None and dyn.robot != robot:
        raise ValueError(f"{robot.name}: base_parameters was given the dynamics of another description")
    key = (robot, n_samples)
    if key not in _BASE_CACHE:
        if len(_BASE_CACHE) >= _BASE_CACHE_SIZE:
            del _BASE_CACHE[next(iter(_BASE_CACHE))]  # the oldest
        base = _derive_base_parameters(robot, dyn or Dynamics(robot), n_samples)
        base.k.flags.writeable = False
        _BASE_CACHE[key] = base
    return _BASE_CACHE[key]


def _derive_base_parameters(robot: Robot, dyn: Dynamics, n_samples: int | None) -> BaseParameters:
    import sympy as sp  # here: only generation needs it (a 0.2 s import)

    names = robot.standard_parameter_names
    n_std = len(names)
    w = sample_regressor(dyn, n_samples or max(40, 3 * n_std // dyn.n + 10))
    norms = np.linalg.norm(w, axis=0)
    scale = np.where(norms > 1e-12 * max(norms.max(), 1.0), norms, np.inf)
    wn = w / scale
    order = preference_order(robot)
    r = scipy.linalg.qr(wn[:, order], mode="r")[0]
    diag = np.abs(np.diag(r))
    tol = 1e-8
    kept = sorted(order[k] for k in range(len(order)) if k < len(diag) and diag[k] > tol)
    rank = int(np.linalg.matrix_rank(wn, tol=tol * np.linalg.svd(wn, compute_uv=False)[0]))

    def is_inertial(i: int) -> bool:
        return _split(names[i])[0] in LINK_PARAMS

    kept = [i for i in kept if is_inertial(i)] + [i for i in kept if not is_inertial(i)]
    dropped = [i for i in range(n_std) if i not in kept]
    x = regrouping(dyn, kept, dropped)
    lens = lengths(robot)
    k = np.zeros((len(kept), n_std))
    exprs: list[str] = []
    out_names: list[str] = []
    for b, i in enumerate(kept):
        k[b, i] = 1.0
        terms: list[str] = []
        for c, d in enumerate(dropped):
            v = x[b, c]
            if abs(v) < ZERO:
                continue
            ex = exact_coefficient(v, lens, _split(names[d])[1])
            k[b, d] = v if ex is None else ex[0]
            if ex is None:
                negative, text = v < 0, format(abs(v), ".12g")
            else:
                negative = bool(ex[1].could_extract_minus_sign())
                text = sp.sstr(-ex[1] if negative else ex[1])
            term = names[d] if text == "1" else f"{text}*{names[d]}"
            terms.append(("- " if negative else "+ ") + term)
        regrouped = np.count_nonzero(k[b]) > 1
        out_names.append(names[i] + ("R" if regrouped else ""))
        exprs.append(" ".join([f"{out_names[-1]} = {names[i]}"] + terms))
    n_inertial = sum(1 for i in kept if is_inertial(i))
    return BaseParameters(tuple(out_names), tuple(kept), k, tuple(exprs), n_inertial, rank)
