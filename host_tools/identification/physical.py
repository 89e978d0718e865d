"""Physical-parameter retrieval (Xu et al. 2020 §III, Table 1): the masses, centres of mass, inertia
tensors and joint parameters mu whose essential parameters best reproduce the measured torques,

    min_mu |tau - Y_e pi_e(mu)|   s.t.  LB <= mu <= UB,  m_min <= sum m_i <= m_max,
                                       pseudo-inertia of every link positive definite,

pi(mu) by the parallel-axis theorem (codegen.model.spatial.transform_inertial_cs, Xu et al. (2020) eq. 14),
pi_e = (K pi)[kept]. ``PhysicalSettings.objective``: by default the objective holds every base
parameter, |tau - Y_b K pi(mu)| (the eliminated ones constrained near their least-squares values,
as in Xu et al.'s form), so that the model fitted is the model used; "essential" is Table 1 as
written (the Xu et al. reproduction runs it). Physical consistency holds by construction: each link's
Sigma_C = tr(I_C)/2 E - I_C (its pseudo-inertia about the centre of mass; with m > 0, Sigma_C > 0 is
equivalent to the pseudo-inertia being positive definite, i.e. to strict triangle inequalities on
the principal moments) is searched as L L^T with L lower triangular, diagonal >= 1e-4, and
I_C = tr(Sigma_C) E - Sigma_C. Solved by CasADi + IPOPT (exact Hessian) from several starts drawn
uniformly within the bounds (Xu et al.'s multi-start). The objective is expanded once into the
Gram form |tau|^2 - 2 b^T pi_e + pi_e^T A pi_e, so its cost does not grow with the data.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any, Literal

import casadi as cs
import numpy as np

from codegen.model.robot import JOINT_PARAMS, Robot
from codegen.model.spatial import inertia_about_com, transform_inertial_cs
from host_tools.identification.ipopt_progress import Report, callback_options, reporting

LINK_MU = ("m", "cx", "cy", "cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")


def _joint_params(robot: Robot) -> list[str]:
    """The joint parameters in the standard vector's order."""
    return [p for p in JOINT_PARAMS if p in robot.joint_parameters]


FEASIBLE = 1e-8  # relative slack of the feasibility check: IPOPT's bound_relax_factor
# starts agree when their objectives differ by this (relative): 100 x the scatter IPOPT's tolerance
# (1e-10 on the scaled objective) leaves between starts that reach one minimum (6e-10 on Liu et al.'s
# LWA-4P runs)
AGREE = 1e-7


@dataclass(frozen=True)
class PhysicalSettings:
    starts: int = 5  # Xu et al. (2020): kappa = 5, at most
    # stop early once this many starts reached the same objective (to AGREE, relative): random
    # starts that land in one minimum from all over the box are what the multi-start is there to see
    agreeing: int = 3
    seed: int = 0
    max_iter: int = 1000
    mass_range: tuple[float, float] = (0.5, 1.5)  # total mass, x the description's
    com_box: float = 0.3  # m: each COM within +-com_box of the description's
    # the objective's columns: "model", every base parameter's -- the whole model, as the generated C
    # computes it from these parameters; "essential", the essential parameters' only (Xu et al. 2020
    # Table 1 as written). With "essential", the base parameters the essential set eliminated enter
    # no objective: they stay anywhere within their range while the others are fitted as if they
    # were 0, and the model the C computes then carries their part (on a hostile Panda log, docs/
    # identification.md: joint 2's in-sample RMS 0.044 against the base fit's 0.013 N m)
    objective: Literal["model", "essential"] = "model"

    def __post_init__(self) -> None:
        if self.objective not in ("model", "essential"):
            raise ValueError(f"PhysicalSettings.objective must be 'model' or 'essential', got {self.objective!r}")


@dataclass
class PhysicalResult:
    mu: np.ndarray  # per link LINK_MU then its joint parameters
    names: list[str]
    standard: np.ndarray  # pi(mu), the robot's standard parameter order
    objective: float  # |tau - Y_c pi_c(mu)| over the objective's columns c, N m (Xu et al. 2020 eq. 15: c essential)
    base_objective: float  # |tau - Y_c pi_c_hat| of the least-squares fit of those columns (with the extra columns)
    starts: list[dict[str, float | str]] = field(default_factory=list)
    seconds: float = 0.0
    x: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the decision vector (bounds' order)
    extra: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the extra columns' coefficients

    def robot(self, robot: Robot) -> Robot:
        """The robot with these parameters (links in its frames, joint parameters on its joints)."""
        n_joint = len(robot.joint_parameters)
        links, joints = [], []
        k = 0
        for joint in robot.joints:
            links.append(tuple(float(v) for v in self.standard[k : k + 10]))
            jp = {name: float(v) for name, v in zip(_joint_params(robot), self.standard[k + 10 : k + 10 + n_joint])}
            joints.append(replace(joint, **jp))  # type: ignore[arg-type]
            k += 10 + n_joint
        return replace(robot, links=tuple(links), joints=tuple(joints), payload=(0.0,) * 10)


def _inertia_of(ell: list[cs.SX]) -> cs.SX:
    """I_C = tr(S) E - S with S = L L^T, L = [[l0, 0, 0], [l1, l2, 0], [l3, l4, l5]]."""
    lm = cs.vertcat(cs.horzcat(ell[0], 0, 0), cs.horzcat(ell[1], ell[2], 0), cs.horzcat(ell[3], ell[4], ell[5]))
    sig = cs.mtimes(lm, lm.T)
    return cs.trace(sig) * cs.SX.eye(3) - sig


def physical_of(x: cs.SX, robot: Robot) -> tuple[cs.SX, cs.SX]:
    """From the decision vector (per link m, c, L, joint parameters): mu (per link m, c, the six
    I_C entries, joint parameters) and pi(mu) (the standard order, parallel-axis theorem)."""
    return _physical(x, robot.dof, len(_joint_params(robot)))


def _physical(x: cs.SX, dof: int, n_joint: int) -> tuple[cs.SX, cs.SX]:
    mu, pi = [], []
    k = 0
    for _ in range(dof):
        m, c = x[k], x[k + 1 : k + 4]
        i_c = _inertia_of([x[k + 4 + i] for i in range(6)])
        _, h, i_o = transform_inertial_cs(m, cs.SX.zeros(3), i_c, cs.SX.eye(3), c)
        joint = [x[k + 10 + i] for i in range(n_joint)]
        mu += [m, c[0], c[1], c[2], i_c[0, 0], i_c[0, 1], i_c[0, 2], i_c[1, 1], i_c[1, 2], i_c[2, 2], *joint]
        pi += [m, h[0], h[1], h[2], i_o[0, 0], i_o[0, 1], i_o[0, 2], i_o[1, 1], i_o[1, 2], i_o[2, 2], *joint]
        k += 10 + n_joint
    return cs.vertcat(*mu), cs.vertcat(*pi)


_SOLVING = threading.Lock()  # the cached solvers are shared: one solve at a time per process
# what _problem builds a solver from (dof, joint parameters, K_base bytes and shape, essential set,
# the base parameters whose columns the objective holds, IPOPT's iteration limit): all a worker
# needs besides the data
Structure = tuple[int, tuple[str, ...], bytes, tuple[int, int], tuple[int, ...], tuple[int, ...], int]
Bounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@lru_cache(maxsize=4)
def _problem(
    dof: int,
    joint_params: tuple[str, ...],
    k_bytes: bytes,
    k_shape: tuple[int, int],
    kept: tuple[int, ...],
    columns: tuple[int, ...],
    max_iter: int,
) -> tuple[cs.Function, cs.Function]:
    """IPOPT on Xu et al. (2020) Table 1's problem for one robot structure and essential set (its
    objective over the base parameters ``columns``), and x -> (mu, pi): built once per process (0.1 s
    each) and reused for every fit of the same structure -- the description model's and the friction
    terms' (the data enter as the parameter p = [vec(A), b, |tau|^2, scale] of the Gram form
    scale (|tau|^2 - 2 b'pi_c + pi_c' A pi_c), pi_c = (K pi)[columns]). Shared: its callers hold
    _SOLVING."""
    k_base = np.frombuffer(k_bytes).reshape(k_shape)
    n_joint = len(joint_params)
    x = cs.SX.sym("x", dof * (10 + n_joint))
    mu, pi = _physical(x, dof, n_joint)
    pi_e = cs.mtimes(cs.DM(k_base[list(columns)]), pi)
    n_e = len(columns)
    p = cs.SX.sym("p", n_e * n_e + n_e + 2)
    a, b, tt, scale = cs.reshape(p[: n_e * n_e], n_e, n_e), p[n_e * n_e : n_e * n_e + n_e], p[-2], p[-1]
    f = scale * (tt - 2 * cs.dot(b, pi_e) + cs.dot(pi_e, cs.mtimes(a, pi_e)))
    eliminated = [i for i in range(k_shape[0]) if i not in set(kept)]
    stride = 10 + n_joint
    g = cs.vertcat(sum(x[j * stride] for j in range(dof)), cs.mtimes(cs.DM(k_base[eliminated]), pi))
    solver = cs.nlpsol(
        "physical",
        "ipopt",
        {"x": x, "p": p, "f": f, "g": g},
        {
            "ipopt.max_iter": max_iter,
            "ipopt.print_level": 0,
            "ipopt.sb": "yes",
            "print_time": False,
            "ipopt.tol": 1e-10,
            # every 10th iteration: each report takes the GIL (ipopt_progress)
            **callback_options(x.numel(), g.numel(), p.numel(), step=10),
        },
    )
    return solver, cs.Function("mu_pi", [x], [mu, pi])


def bounds(
    robot: Robot, settings: PhysicalSettings, estimates: dict[str, float] | None = None, signed: bool = False
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Names of mu and LB, UB of the decision vector (per link m, c, L, joint parameters), around the
    description: mass within [0.1, 3] x its own (+0.5 kg), COM within +-com_box, |L| entries up to
    sqrt(1 + 5 x the largest principal moment) (the diagonal >= 1e-4), joint parameters in
    [0, 3 x v + 1] (FO symmetric), v the larger of the nominal value and the least-squares
    ``estimates`` (by standard name, e.g. FV5) where the data give one: a description's friction is
    often a placeholder (the Panda's FV 0.003 N m s/rad), and the box is there to seed the starts,
    not to overrule the data. ``signed`` (friction terms fitted beside them): an FV or FC whose
    estimate is negative may go as low as -(3 |estimate| + 1) (IA stays >= 0) -- with a Stribeck or smooth Coulomb
    term the friction's shape is their sum (a Stribeck bump over a negative FC, a wide tanh over a
    negative FV), which the positive box would cut; the rigid-body parameters stay consistent."""
    names, lo, hi = [], [], []
    for j, (joint, link) in enumerate(zip(robot.joints, robot.links)):
        p = np.asarray(link, float) + (np.asarray(robot.payload) if j == robot.dof - 1 else 0.0)
        m = float(p[0])
        c = p[1:4] / m if m > 0 else np.zeros(3)
        i_c = inertia_about_com(p) if m > 0 else np.zeros((3, 3))
        root = float(np.sqrt(1.0 + 5.0 * max(np.linalg.eigvalsh(i_c).max(), 0.0)))
        names += [f"{x}{j + 1}" for x in LINK_MU]
        lo += [0.1 * m + 1e-3, *(c - settings.com_box), 1e-4, -root, 1e-4, -root, -root, 1e-4]
        hi += [3.0 * m + 0.5, *(c + settings.com_box)] + [root] * 6
        for name in _joint_params(robot):
            estimate = (estimates or {}).get(f"{name}{j + 1}", 0.0)
            v = max(abs(float(getattr(joint, name))), abs(estimate))
            names.append(f"{name}{j + 1}")
            # friction only: a negative rotor inertia could make M(q) indefinite
            low = -(3 * abs(estimate) + 1) if signed and estimate < 0 and name in ("FV", "FC") else 0.0
            lo.append(-(3 * abs(v) + 1) if name == "FO" else low)
            hi.append(3 * abs(v) + 1)
    return names, np.array(lo), np.array(hi)


def retrieve(
    robot: Robot,
    k_base: np.ndarray,
    kept: list[int],
    y_e: np.ndarray,
    tau: np.ndarray,
    beta_e: np.ndarray,
    settings: PhysicalSettings = PhysicalSettings(),
    eliminated_range: tuple[np.ndarray, np.ndarray] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    extra: np.ndarray | None = None,
    start: np.ndarray | None = None,
    executor: Executor | None = None,
    iteration: Callable[[int, int], None] | None = None,
    weights: np.ndarray | None = None,
) -> PhysicalResult:
    """Xu et al. (2020) Table 1. y_e (r, c) and tau (r,) are the identification's equations on the
    objective's base parameters (objective_columns: every one, or the essential ones ``kept`` as Xu et
    al., by ``settings.objective``), beta_e the least-squares values of those parameters (for
    base_objective and the bounds' estimates). The base parameters the essential set
    eliminated stay within ``eliminated_range`` (low, high per eliminated parameter, in base order;
    default +-0.01): the objective alone would leave them free, but a robot file carries every
    parameter and torques on other motions depend on them. ``extra`` (r, p): columns with free
    coefficients fitted together with mu (friction terms), eliminated by variable projection -- the
    objective is |P (tau - Y_e pi_e(mu))| with P the projection off their span, so IPOPT's problem keeps
    its size -- and recovered after; ``start``: one start from this decision vector (a previous
    solution, e.g. without the extra columns) instead of the random multi-start; ``executor``: runs
    the starts as pure items (physical_start; default: one after the other, here); ``iteration(start
    from 0, IPOPT iteration)``: every 10th iteration of the starts run here (not an executor's);
    ``weights`` (r,): each equation's weight in the objective (the base fit's per-joint WLS weights,
    so that a light wrist joint's torques count as the fit counts them, not by their size in N m;
    default 1). The objectives reported stay unweighted norms, N m."""
    t_start = time.perf_counter()
    cols = objective_columns(settings, k_base.shape[0], kept)
    if not y_e.shape[1] == len(cols) == len(beta_e):
        raise ValueError(
            f"the physical fit's objective ({settings.objective}) has {len(cols)} base parameters; "
            f"got {y_e.shape[1]} regressor columns and {len(beta_e)} least-squares values"
        )
    t = np.asarray(tau, float).reshape(-1)
    root = _roots(weights, t)
    # the (weighted) unconstrained fit of the objective's columns and the extra columns together:
    # the joint parameters' estimates for the box, as the terms beside them share the friction
    beta_both = None if extra is None else _fit(np.column_stack([y_e, extra]), t, root)
    estimated = beta_e if beta_both is None else beta_both[: y_e.shape[1]]
    names, lo, hi = bounds(robot, settings, joint_estimates(robot, k_base, cols, estimated), signed=extra is not None)
    a, b, tt = _gram(y_e, t, extra, root)
    scale = 1.0 / max(tt, 1e-300)  # objective of order 1 for IPOPT
    stride = 10 + len(_joint_params(robot))
    total = float(sum(robot.standard_parameters()[j * stride] for j in range(robot.dof)))
    eliminated = [i for i in range(k_base.shape[0]) if i not in set(kept)]
    e_lo, e_hi = (
        eliminated_range
        if eliminated_range is not None
        else (np.full(len(eliminated), -0.01), np.full(len(eliminated), 0.01))
    )
    lbg = np.r_[settings.mass_range[0] * total, e_lo]
    ubg = np.r_[settings.mass_range[1] * total, e_hi]
    structure: Structure = (
        robot.dof,
        tuple(_joint_params(robot)),
        np.ascontiguousarray(k_base, float).tobytes(),
        (int(k_base.shape[0]), int(k_base.shape[1])),
        tuple(kept),
        tuple(cols),
        settings.max_iter,
    )
    _, evaluate = _problem(*structure)
    p = np.r_[a.ravel(order="F"), b, tt, scale]
    best, starts = _multi_start(structure, p, (lo, hi, lbg, ubg), settings, start, (progress, iteration), executor)
    if best is None:
        raise RuntimeError(
            f"{robot.name}: no start found physically consistent parameters within the bounds around the "
            f"description (each link's mass 0.1-3x its own + 0.5 kg, the total {settings.mass_range[0]:g}-"
            f"{settings.mass_range[1]:g}x, centres of mass within +-{settings.com_box:g} m, joint parameters up to "
            "3x the description's or the least-squares value + 1): "
            "do the data belong to this description (positions in rad, torques in N m, this arm's chain)?"
        )
    x_best = np.clip(best[1], lo, hi)
    mu_v, pi_v = (np.array(v).ravel() for v in evaluate(x_best))
    r_base = t - y_e @ beta_e
    coefficients = np.zeros(0)
    r_phys = t - y_e @ (k_base[cols] @ pi_v)
    if extra is not None and beta_both is not None:
        coefficients = _fit(extra, r_phys, root)
        r_phys = r_phys - extra @ coefficients
        r_base = t - np.column_stack([y_e, extra]) @ beta_both
    return PhysicalResult(
        mu_v,
        names,
        pi_v,
        best[0] if weights is None else float(np.sqrt(r_phys @ r_phys)),
        float(np.sqrt(r_base @ r_base)),
        starts,
        time.perf_counter() - t_start,
        x_best,
        np.asarray(coefficients, float),
    )


def _roots(weights: np.ndarray | None, t: np.ndarray) -> np.ndarray:
    """The square roots of the equations' weights (retrieve's ``weights``; 1 where None), one per
    equation of ``t`` (another shape is refused in one error)."""
    if weights is None:
        return np.ones(len(t))
    if np.shape(weights) != t.shape:
        raise ValueError(f"the physical fit's weights: one per equation, {t.shape[0]}; got shape {np.shape(weights)}")
    return np.sqrt(np.asarray(weights, float))


def _fit(columns: np.ndarray, t: np.ndarray, root: np.ndarray) -> np.ndarray:
    """The weighted least-squares coefficients of ``columns`` for ``t`` (``root``: _roots)."""
    return np.asarray(np.linalg.lstsq(columns * root[:, None], t * root, rcond=None)[0], float)


def _gram(
    y_e: np.ndarray, t: np.ndarray, extra: np.ndarray | None, root: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted least-squares objective |diag(root) (t - y_e beta)|^2 as its Gram form (a, b, tt):
    beta' a beta - 2 b' beta + tt; with ``extra`` columns, of the problem projected off their span
    (variable projection: their part subtracted)."""
    yw, tw = y_e * root[:, None], t * root  # the weighted equations the fit minimises
    a, b, tt = yw.T @ yw, yw.T @ tw, float(tw @ tw)
    if extra is not None:  # Gram form of the projected problem: subtract the extra columns' part
        xw = extra * root[:, None]
        g, *_ = np.linalg.lstsq(xw, np.column_stack([yw, tw]), rcond=None)  # (X'X)^-1 X' [Y_e t]
        xy = xw.T @ np.column_stack([yw, tw])
        a, b, tt = a - xy[:, :-1].T @ g[:, :-1], b - xy[:, :-1].T @ g[:, -1], tt - float(xy[:, -1] @ g[:, -1])
    return a, b, tt


def objective_columns(settings: PhysicalSettings, n_base: int, kept: Sequence[int]) -> list[int]:
    """The base parameters the objective holds (PhysicalSettings.objective): every one ("model"), or
    the essential ones ``kept`` ("essential")."""
    return list(range(n_base)) if settings.objective == "model" else list(kept)


def joint_estimates(robot: Robot, k_base: np.ndarray, columns: list[int], beta: np.ndarray) -> dict[str, float]:
    """The least-squares values (``beta``, of the base parameters ``columns``) of the joint
    parameters that are base parameters of their own (a row of K_base that is that standard
    parameter alone), by standard name."""
    standard = list(robot.standard_parameter_names)
    out = {}
    for value, row in zip(np.asarray(beta, float), k_base[columns]):
        nonzero = np.flatnonzero(row)
        if len(nonzero) == 1 and row[nonzero[0]] == 1.0 and standard[nonzero[0]][:2] in JOINT_PARAMS:
            out[standard[nonzero[0]]] = float(value)
    return out


def physical_start(
    structure: Structure, p: np.ndarray, bounds: Bounds, x0: np.ndarray, report: Report | None = None
) -> dict[str, Any]:
    """One IPOPT start as a pure work item (any executor, any machine): the solver is built from
    the problem's structure once per process. ``bounds``: (lo, hi, lbg, ubg); ``report(iteration)``:
    IPOPT's progress (ipopt_progress), here only."""
    solver, _ = _problem(*structure)
    lo, hi, lbg, ubg = bounds
    t0 = time.perf_counter()
    with _SOLVING, reporting(report):
        sol = solver(x0=x0, p=p, lbx=lo, ubx=hi, lbg=lbg, ubg=ubg)
        status = solver.stats()["return_status"]
    return {
        "x": np.array(sol["x"]).ravel(),
        "g": np.array(sol["g"]).ravel(),
        "f": float(sol["f"]),
        "status": status,
        "seconds": time.perf_counter() - t0,
    }


def _multi_start(
    structure: Structure,
    p: np.ndarray,
    bounds: Bounds,
    settings: PhysicalSettings,
    start: np.ndarray | None,
    reports: tuple[Callable[[int, int, float], None] | None, Callable[[int, int], None] | None],
    executor: Executor | None,
) -> tuple[tuple[float, np.ndarray] | None, list[dict[str, float | str]]]:
    """Xu et al. (2020) Table 1 lines 3-9: IPOPT from random starts in the box (or from ``start`` once),
    until ``settings.agreeing`` feasible starts agree; returns (best objective and x, the starts).
    With an executor every start is submitted at once and the results are read in order, stopping
    where the serial loop stops (the starts after it are cancelled or ignored): the same result.
    ``reports``: progress(start, starts, best objective) after each start, iteration(start from 0,
    IPOPT iteration) inside the starts run here."""
    progress, iteration = reports
    scale = float(p[-1])
    lo, hi, lbg, ubg = bounds
    rng = np.random.default_rng(settings.seed)
    # Xu et al. (2020) Table 1 line 4, drawn in order
    x0s = [lo + (hi - lo) * rng.uniform(0, 1, len(lo)) for _ in range(settings.starts)] if start is None else [start]
    if executor is None:
        solved: Iterator[dict[str, Any]] = (
            physical_start(structure, p, bounds, x0, None if iteration is None else partial(iteration, k))
            for k, x0 in enumerate(x0s)
        )
        futures: list[Future[dict[str, Any]]] = []
    else:
        futures = [executor.submit(physical_start, structure, p, bounds, x0) for x0 in x0s]
        solved = (fu.result() for fu in futures)
    best: tuple[float, np.ndarray] | None = None
    starts: list[dict[str, float | str]] = []
    for k, sol in enumerate(solved):
        xs, gv = sol["x"], sol["g"]
        # IPOPT keeps bounds to a relative 1e-8 (bound_relax_factor): an absolute 1e-9 rejected every
        # solution of the LWA-4P's real data (IA a few 1e-9 below its bound 0); the kept solution is
        # clipped into the bounds below, so IA >= 0 holds exactly
        feasible = bool(
            np.all(gv >= lbg - FEASIBLE * (1 + np.abs(lbg)))
            and np.all(gv <= ubg + FEASIBLE * (1 + np.abs(ubg)))
            and np.all(xs >= lo - FEASIBLE * (1 + np.abs(lo)))
            and np.all(xs <= hi + FEASIBLE * (1 + np.abs(hi)))
        )
        value = float(np.sqrt(max(sol["f"] / scale, 0.0)))
        starts.append(
            {"objective": value, "status": sol["status"], "feasible": float(feasible), "seconds": sol["seconds"]}
        )
        if feasible and (best is None or value < best[0]):
            best = (value, xs)
        if best is not None:
            low = best[0]
            same = [x for x in starts if x["feasible"] and abs(float(x["objective"]) - low) <= AGREE * low]
            if len(same) >= settings.agreeing:
                break
        if progress is not None:
            progress(k + 1, settings.starts, float("nan") if best is None else best[0])
    for fu in futures:
        fu.cancel()
    return best, starts
