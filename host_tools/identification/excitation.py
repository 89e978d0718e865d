"""Optimal excitation design (Xu et al. 2020 §II-B, Kirchhoff (2011) §4.2.3): the Fourier coefficients of
codegen.symbolic.excitation that minimise cond(Y_b) (or -log det(Y_b^T Y_b), D-optimality) of the stacked
base regressor over one period, subject to the joints' position, velocity (and, where given,
acceleration and optionally torque) limits and a start at rest. The optimisation enforces the limits
on a grid; the result is then scaled so that q, qd and qdd hold them for every t (continuous_bounds:
a grid maximum plus a closed-form bound between the samples), and tau, with --torque-limits, on a
grid plus a stated margin (torque_bound) -- so the excitation is inside its limits at any sample rate.

Solved with CasADi + IPOPT from a few random starts. The regressor and the limits are CasADi
expressions with exact derivatives; the objective is a function of the singular values of Y_b,
computed by LAPACK (numpy) with its exact gradient (d sigma_i / dY = u_i v_i^T) supplied to CasADi
as a callback -- CasADi has no differentiable SVD. IPOPT approximates the Hessian (L-BFGS).

    manipgen excite kuka_iiwa14 --harmonics 5 --base-frequency 0.05 --json
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import casadi as cs
import numpy as np

from codegen.emit.files import write_file
from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.excitation import fourier_function, jerk_function, samples_per_period, start_conditions
from codegen.symbolic.params import base_parameters
from host_tools.bindings.source import RobotSource
from host_tools.data.trajectories import Trajectory
from host_tools.identification.ipopt_progress import Report, callback_options, reporting
from host_tools.identification.least_squares import one_blas_thread

OBJECTIVES = ("cond", "logdet")


@dataclass(frozen=True)
class ExciteSettings:
    harmonics: int = 5  # L (Xu et al. 2020: 5)
    base_frequency: float = 0.05  # f_f, Hz (Xu et al. 2020: 0.05 Hz -> a 20 s period)
    objective: str = "cond"  # or logdet (D-optimality)
    grid: int = 100  # samples per period in the optimisation
    starts: int = 4  # random starts
    seed: int = 0
    max_iter: int = 300  # IPOPT iterations per start
    torque_limits: bool = False  # also keep |tau(q, qd, qdd)| within the joints' torque limits
    report_rate: float = 500.0  # Hz: cond reported on this grid (Xu et al. 2020: f_s = 500 Hz)

    def problems(self) -> list[str]:
        out = []
        if not 1 <= self.harmonics <= 50:
            out.append(f"--harmonics must be 1..50, got {self.harmonics}")
        if not 0 < self.base_frequency <= 10:
            out.append(f"--base-frequency must be in (0, 10] Hz, got {self.base_frequency:g}")
        if self.objective not in OBJECTIVES:
            out.append(f"--objective must be one of {', '.join(OBJECTIVES)}, got {self.objective}")
        if self.grid < 4 * self.harmonics:
            out.append(f"--grid must be >= 4 x harmonics ({4 * self.harmonics}), got {self.grid}")
        if self.starts < 1 or self.max_iter < 1:
            out.append("--starts and --max-iter must be >= 1")
        if not self.report_rate > 0:
            out.append(f"--report-rate must be positive, got {self.report_rate:g}")
        return out


@dataclass
class Excitation:
    """A designed excitation: q = q0 + Fourier series (codegen.symbolic.excitation), period 1 / base_frequency."""

    robot: str
    harmonics: int
    base_frequency: float
    a: np.ndarray  # (n, L), rad/s
    b: np.ndarray  # (n, L), rad/s
    q0: np.ndarray  # (n,), rad
    stage: str = "load"  # the regressor it was designed for (stage_regressor): load or actuator

    @property
    def period(self) -> float:
        return 1.0 / self.base_frequency

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q, qd, qdd at times t (K,) -> three (K, n) arrays."""
        f = _fourier_map(len(self.q0), self.harmonics, self.base_frequency, len(t))
        q, qd, qdd = numeric(f, np.asarray(t, float)[None, :], self.a, self.b, self.q0[:, None])
        return q.T, qd.T, qdd.T

    def trajectory(self, sample_period: float, periods: int = 1) -> Trajectory:
        k = samples_per_period(self.base_frequency, sample_period)
        t = np.arange(k * periods) * sample_period
        q, qd, qdd = self.evaluate(t)
        return Trajectory(f"excitation({self.robot})", t, q, qd, qdd)

    def to_dict(self) -> dict[str, Any]:
        return {
            "robot": self.robot,
            "stage": self.stage,
            "harmonics": self.harmonics,
            "base_frequency_hz": self.base_frequency,
            "units": "a, b: rad/s (m/s); q0: rad (m); q = q0 + sum a/(w l) sin(w l t) - b/(w l) cos(w l t)",
            "a": self.a.tolist(),
            "b": self.b.tolist(),
            "q0": self.q0.tolist(),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Excitation:
        stage = str(d.get("stage", "load"))
        if stage not in ("load", "actuator"):
            raise ValueError(f"stage must be load or actuator, got {stage!r}")
        return Excitation(
            str(d["robot"]),
            int(d["harmonics"]),
            float(d["base_frequency_hz"]),
            np.asarray(d["a"], float),
            np.asarray(d["b"], float),
            np.asarray(d["q0"], float),
            stage,
        )

    def save(self, path: str | Path) -> None:
        write_file(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @staticmethod
    def load(path: str | Path) -> Excitation:
        """An excitation file: the design that `manipgen excite --out` writes, or a bare excitation.
        Errors name the file and the field."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        body = doc.get("excitation", doc) if isinstance(doc, dict) else doc
        try:
            exc_ = Excitation.from_dict(body)
        except KeyError as exc:
            raise ValueError(f"{path}: missing field {exc.args[0]!r} (write it with manipgen excite --out)") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: malformed excitation ({exc})") from None
        n = len(exc_.q0)
        if exc_.a.shape != (n, exc_.harmonics) or exc_.b.shape != (n, exc_.harmonics):
            raise ValueError(f"{path}: a and b must be {n} x {exc_.harmonics} (joints x harmonics)")
        return exc_


@dataclass
class DesignResult:
    excitation: Excitation
    cond: float  # cond(Y_b) on the report grid, unscaled SI columns
    objective: float  # the optimised objective on the optimisation grid
    seconds: float
    starts: list[dict[str, Any]] = field(default_factory=list)  # per start: objective, cond, status, seconds
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cond": self.cond,
            "objective": self.objective,
            "seconds": self.seconds,
            "starts": self.starts,
            "settings": self.settings,
            "excitation": self.excitation.to_dict(),
        }


class _SvdObjective(cs.Callback):
    """f(Y) = cond(Y) or -log det(Y^T Y) = -2 sum log sigma_i of the stacked regressor Y_b (N n, nb),
    given as the mapped regressor (n, N nb); with gradient=True it returns df/dY in the same layout
    (exact: d sigma_i / dY = u_i v_i^T), which is this callback's reverse derivative."""

    def __init__(self, name: str, kind: str, n: int, samples: int, nb: int, gradient: bool = False) -> None:
        cs.Callback.__init__(self)
        self.kind, self.n, self.samples, self.nb, self.gradient = kind, n, samples, nb, gradient
        self._reverse: list[Any] = []
        self.construct(name, {})

    def get_n_in(self) -> int:
        return 1

    def get_n_out(self) -> int:
        return 1

    def get_sparsity_in(self, i: int) -> cs.Sparsity:
        return cs.Sparsity.dense(self.n, self.samples * self.nb)

    def get_sparsity_out(self, i: int) -> cs.Sparsity:
        return cs.Sparsity.dense(self.n, self.samples * self.nb) if self.gradient else cs.Sparsity.dense(1, 1)

    def has_eval_buffer(self) -> bool:
        return True

    def eval_buffer(self, arg: Sequence[memoryview], res: Sequence[memoryview]) -> int:
        """CasADi's copy-free call: the (dense, column-major) buffers as numpy views. Converting the
        iiwa's 7 x 5700 input to a DM and numpy (eval) took 4.4 ms a call, twice the mapped
        regressor's evaluation (CPU, this machine); this reads the same numbers in place."""
        wide = np.frombuffer(arg[0], dtype=float).reshape((self.n, self.samples * self.nb), order="F")
        np.frombuffer(res[0], dtype=float)[:] = np.asarray(self.eval([wide])[0], float).ravel(order="F")
        return 0

    def eval(self, arg: Sequence[Any]) -> list[Any]:
        y = stack(np.asarray(arg[0]), self.nb)
        # the eigen-decomposition of the small Gram matrix Y^T Y (sigma_i^2 = lambda_i) is 10x
        # cheaper than an SVD of the tall Y and exact enough for cond up to ~1e7
        lam, v = np.linalg.eigh(y.T @ y)
        # a rank-deficient start (short grid, joints at rest) has lambda_min ~ 0 or, by rounding,
        # slightly negative: floor it where this method stops resolving (cond ~ 1/sqrt(eps) = 7e7)
        # so the objective and its gradient stay finite and large instead of NaN
        lam = np.maximum(lam, max(float(lam[-1]), 1e-300) * np.finfo(float).eps)
        if not self.gradient:
            return [float(np.sqrt(lam[-1] / lam[0])) if self.kind == "cond" else -float(np.sum(np.log(lam)))]
        if self.kind == "cond":  # d(s1/sn) = u1 v1^T / sn - s1/sn^2 un vn^T, u_i = Y v_i / s_i
            s1, sn = np.sqrt(lam[-1]), np.sqrt(lam[0])
            g = y @ (np.outer(v[:, -1], v[:, -1]) / (s1 * sn) - s1 / sn**3 * np.outer(v[:, 0], v[:, 0]))
        else:  # d(-log det Y^T Y) = -2 Y (Y^T Y)^-1
            g = -2.0 * y @ ((v / lam) @ v.T)
        return [g.reshape(self.samples, self.n, self.nb).transpose(1, 0, 2).reshape(self.n, -1)]

    def has_reverse(self, nadj: int) -> bool:
        return nadj == 1 and not self.gradient

    def get_reverse(
        self, nadj: int, name: str, inames: Sequence[str], onames: Sequence[str], opts: Mapping[str, Any]
    ) -> cs.Function:
        grad = _SvdObjective(name + "_grad", self.kind, self.n, self.samples, self.nb, gradient=True)
        self._reverse.append(grad)  # CasADi does not own Python callbacks
        y = cs.MX.sym("y", self.n, self.samples * self.nb)
        out, adj = cs.MX.sym("out", 1, 1), cs.MX.sym("adj", 1, 1)
        return cs.Function(name, [y, out, adj], [adj * grad(y)], inames, onames)


@lru_cache(maxsize=8)
def _fourier_map(n: int, harmonics: int, base_frequency: float, samples: int) -> cs.Function:
    """fourier_function mapped over ``samples`` times (t, one column each) with a, b and q0 the same
    for every t (not repeated: no (n, L samples) copies), built once: collide's seven 20 s motions of
    one robot share it (0.05 s each to build for the iiwa)."""
    return fourier_function(n, harmonics, base_frequency).map("fourier_map", "serial", samples, [1, 2, 3], [])


def numeric(f: cs.Function, *args: np.ndarray) -> list[np.ndarray]:
    """f's outputs, dense, at numeric inputs, through CasADi's copy-free buffers (Function.buffer).
    Calling f with numpy goes through DMs, whose conversion back to numpy builds a Python list
    element by element: 0.6 s for the iiwa's regressor over one period at 500 Hz, three times
    its evaluation (CPU, this machine). The numbers are the same."""
    xs = [cs.MX.sym(f"x{i}", f.sparsity_in(i)) for i in range(f.n_in())]
    dense = cs.Function(f.name() + "_dense", xs, [cs.densify(o) for o in f.call(xs)])
    buf, call = dense.buffer()
    # column-major copies of the inputs, and the outputs, held (viewed by the buffers) until the call
    ins = [np.array(np.broadcast_to(np.asarray(a, float), f.size_in(i)), order="F") for i, a in enumerate(args)]
    outs = [np.zeros(f.size_out(i), order="F") for i in range(f.n_out())]
    # (CasADi's binding takes the memoryview alone -- its size argument comes from the view --
    # where its stubs list a size as well)
    for i, a in enumerate(ins):
        buf.set_arg(i, a.ravel(order="K").data)  # type: ignore[call-arg]
    for i, o in enumerate(outs):
        buf.set_res(i, o.ravel(order="K").data)  # type: ignore[call-arg]
    call()
    if buf.ret() != 0:  # the outputs would hold zeros, not f's values
        raise RuntimeError(f"CasADi could not evaluate {f.name()} (return code {buf.ret()})")
    return outs


def stack(wide: np.ndarray, nb: int) -> np.ndarray:
    """The mapped regressor (n, N nb) -> the stacked Y_b (N n, nb), sample after sample."""
    n = wide.shape[0]
    return wide.reshape(n, -1, nb).transpose(1, 0, 2).reshape(-1, nb)


def condition_number(y: np.ndarray) -> float:
    """cond(Y) from the singular values (the reported figure)."""
    sv = np.linalg.svd(y, compute_uv=False)
    return float(sv[0] / sv[-1])


def _limits(robot: Robot, settings: ExciteSettings) -> dict[str, np.ndarray]:
    no_q = [j.name for j in robot.joints if not (np.isfinite(j.limits.q_min) and np.isfinite(j.limits.q_max))]
    no_qd = [j.name for j in robot.joints if not np.isfinite(j.limits.qd)]
    if no_q or no_qd:
        lacks = [f"no position limit (continuous?): {', '.join(no_q)}"] if no_q else []
        lacks += [f"no velocity limit: {', '.join(no_qd)}"] if no_qd else []
        raise ValueError(
            f"{robot.name}: {'; '.join(lacks)} -- the motion needs both to stay bounded: give each joint "
            "limits.q (lo, hi; rad) and limits.qd (rad/s) in the robot YAML or, for a URDF, an overlay "
            "(--overlay FILE; README, 'Overlays: what a URDF cannot say')"
        )
    out = {
        "q_min": np.array([j.limits.q_min for j in robot.joints]),
        "q_max": np.array([j.limits.q_max for j in robot.joints]),
        "qd": np.array([j.limits.qd for j in robot.joints]),
        "qdd": np.array([j.limits.qdd for j in robot.joints]),
        "tau": np.array([j.limits.tau for j in robot.joints]),
    }
    if settings.torque_limits and not np.all(np.isfinite(out["tau"])):
        raise ValueError(f"{robot.name}: --torque-limits needs limits.tau on every joint")
    return out


def stage_regressor(robot: Robot, stage: str) -> tuple[cs.Function, int]:
    """The regressor an excitation is designed for, as (q, qd, qdd, qddd) -> Y (n x nb), and nb:
    ``load``, the base regressor (link side); ``actuator``, an elastic arm's motor regressor along
    the motion (Kirchhoff 2011 §4.2.1, eq. 4.4; codegen.symbolic.dynamics.motor_regressor_along).
    Built once per description and stage (design and its problem both need it: seconds each)."""
    key = (robot.digest, stage)
    if key not in _REGRESSORS:
        _REGRESSORS[key] = _stage_regressor(robot, stage)
    return _REGRESSORS[key]


_REGRESSORS: dict[tuple[str, str], tuple[cs.Function, int]] = {}


def _stage_regressor(robot: Robot, stage: str) -> tuple[cs.Function, int]:
    dyn = Dynamics(robot)
    if stage == "actuator":
        if not robot.elastic:
            raise ValueError(f"{robot.name} has no series-elastic drives: no actuator stage to excite")
        y, jerk = dyn.motor_regressor_along()
        return cs.Function("y", [dyn.q, dyn.qd, dyn.qdd, jerk], [cs.cse(y)]), 4 * robot.dof
    if stage != "load":
        raise ValueError(f"stage must be load or actuator, got {stage!r}")
    base = base_parameters(robot, dyn)
    jerk = cs.SX.sym("qddd", robot.dof)
    return cs.Function("y", [dyn.q, dyn.qd, dyn.qdd, jerk], [cs.cse(dyn.regressor(list(base.columns)))]), base.n_base


Nlp = tuple[cs.Function, np.ndarray, np.ndarray, "_SvdObjective"]


def _nlp(robot: Robot, settings: ExciteSettings, stage: str) -> Nlp:
    """IPOPT on the design problem (module docstring), its constraint bounds (lbg, ubg) and the
    objective's callback, which must live as long as the solver (CasADi keeps no reference to it)."""
    lim = _limits(robot, settings)
    n, L, N = robot.dof, settings.harmonics, settings.grid
    regressor, nb = stage_regressor(robot, stage)
    fourier = fourier_function(n, L, settings.base_frequency).map(N)
    x = cs.MX.sym("x", n * (2 * L + 1))
    a, b, q0 = cs.reshape(x[: n * L], n, L), cs.reshape(x[n * L : 2 * n * L], n, L), x[2 * n * L :]
    t = np.arange(N) / (N * settings.base_frequency)
    q, qd, qdd = fourier(cs.DM(t).T, cs.repmat(a, 1, N), cs.repmat(b, 1, N), cs.repmat(q0, 1, N))
    jerk = jerk_function(n, L, settings.base_frequency).map(N)(cs.DM(t).T, cs.repmat(a, 1, N), cs.repmat(b, 1, N))
    wide = regressor.map(N)(q, qd, qdd, jerk)
    objective = _SvdObjective("excite_" + settings.objective, settings.objective, n, N, nb)
    # the limits hold on the objective's grid; within_limits then scales the design until they hold
    # for every t (a scale of 0.991 for the iiwa's default design). They are linear in x: IPOPT gets
    # them as one constant sparse matrix (a row touches one joint's 2 L + 1 coefficients). Their
    # count sets IPOPT's own cost per iteration: on a 10x finer grid (14021 rows for the iiwa
    # against 1421) it was 5x, and a dense matrix 5x more again (CPU s for 20 iterations, this machine)
    rows = [
        (cs.vec(q), np.repeat(lim["q_min"][None], N, 0).T.ravel("F"), np.repeat(lim["q_max"][None], N, 0).T.ravel("F")),
        (cs.vec(qd), np.tile(-lim["qd"], N), np.tile(lim["qd"], N)),
        (start_conditions(a, b), np.zeros(3 * n), np.zeros(3 * n)),
    ]
    finite_qdd = np.isfinite(lim["qdd"])
    if np.any(finite_qdd):
        rows.append(
            (
                cs.vec(qdd),
                np.tile(np.where(finite_qdd, -lim["qdd"], -np.inf), N),
                np.tile(np.where(finite_qdd, lim["qdd"], np.inf), N),
            )
        )
    linear = cs.vertcat(*[r[0] for r in rows])
    jac = cs.Function("limits_jac", [x], [cs.jacobian(linear, x)])(0.0)  # exact: q, qd, qdd are linear in x
    rows = [(cs.mtimes(jac, x), np.concatenate([r[1] for r in rows]), np.concatenate([r[2] for r in rows]))]
    if settings.torque_limits:
        dyn = Dynamics(robot)
        rnea = cs.Function("tau", [dyn.q, dyn.qd, dyn.qdd, dyn.pi], [dyn.rnea(dyn.pi)]).map(N)
        std = cs.repmat(cs.DM(robot.standard_parameters()), 1, N)
        rows.append((cs.vec(rnea(q, qd, qdd, std)), np.tile(-lim["tau"], N), np.tile(lim["tau"], N)))
    g = cs.vertcat(*[r[0] for r in rows])
    lbg, ubg = np.concatenate([r[1] for r in rows]), np.concatenate([r[2] for r in rows])
    solver = cs.nlpsol(
        "excite",
        "ipopt",
        {"x": x, "f": objective(wide), "g": g},
        {
            "ipopt.hessian_approximation": "limited-memory",
            "ipopt.max_iter": settings.max_iter,
            "ipopt.print_level": 0,
            "ipopt.sb": "yes",
            "print_time": False,
            "ipopt.tol": 1e-8,
            # the objective is a Python callback already: a report per iteration costs no GIL hand-over more
            **callback_options(x.numel(), g.numel()),
        },
    )
    return solver, lbg, ubg, objective


@one_blas_thread
def _solve(nlp: Nlp, x0: np.ndarray, report: Report | None = None) -> dict[str, Any]:
    """One start: the solution x, the objective, IPOPT's status, the largest constraint violation;
    ``report(iteration)`` after each IPOPT iteration (ipopt_progress).
    On one BLAS thread: the objective's Gram matrix and eigh are 57 x 57 for the iiwa, where OpenBLAS's
    second thread made each call 100-300x slower while the other core was busy (0.29 s against 1 ms
    for eigh, this machine), and a thread count that depends on the machine changed the rounding and
    so the design (the iiwa's objective after 60 iterations: 81.5 on one thread, 84.3 on two)."""
    t0 = time.perf_counter()
    solver, lbg, ubg, _ = nlp
    with reporting(report):
        sol = solver(x0=x0, lbg=lbg, ubg=ubg)
    gv = np.array(sol["g"]).ravel()
    return {
        "x": np.array(sol["x"]).ravel(),
        "objective": float(sol["f"]),
        "status": solver.stats()["return_status"],
        "violation": float(np.max(np.r_[lbg - gv, gv - ubg, 0.0])),
        "seconds": time.perf_counter() - t0,
    }


_NLPS: dict[tuple[str, ExciteSettings, str], Nlp] = {}


def excite_start(source: RobotSource, settings: ExciteSettings, stage: str, x0: np.ndarray) -> dict[str, Any]:
    """One random start as a pure work item (any executor, any machine): the problem is built from
    the description's text once per worker process."""
    key = (source.key, settings, stage)
    if key not in _NLPS:
        _NLPS[key] = _nlp(source.robot(), settings, stage)
    return _solve(_NLPS[key], x0)


def start_points(robot: Robot, settings: ExciteSettings) -> list[np.ndarray]:
    """The random starts, drawn in order from the seed: velocity amplitudes about a quarter of each
    limit spread over the harmonics, positions mid-range."""
    lim = _limits(robot, settings)
    n, L = robot.dof, settings.harmonics
    mid = (lim["q_min"] + lim["q_max"]) / 2
    rng = np.random.default_rng(settings.seed)
    return [
        np.concatenate(
            [
                rng.uniform(-1, 1, (n, L)).ravel("F") * np.tile(lim["qd"] / (2 * L), L),
                rng.uniform(-1, 1, (n, L)).ravel("F") * np.tile(lim["qd"] / (2 * L), L),
                mid,
            ]
        )
        for _ in range(settings.starts)
    ]


def design(
    robot: Robot,
    settings: ExciteSettings = ExciteSettings(),
    progress: Callable[[int, int, float], None] | None = None,
    stage: str = "load",
    executor: Executor | None = None,
    source: RobotSource | None = None,
    iteration: Callable[[int, int], None] | None = None,
) -> DesignResult:
    """Optimise the excitation (see the module docstring); progress(start, starts, best cond) after
    each start, iteration(start from 0, IPOPT iteration) inside the starts run here (not with an
    executor: its workers do not report back).
    ``stage``: the regressor it excites (stage_regressor: load, or an elastic arm's actuator).
    ``executor``: runs the starts as pure items (excite_start) carrying ``source``, the robot's
    description (required with it); without one they run here one after the other. The same seed
    gives the same design either way."""
    problems = settings.problems()
    if problems:
        raise ValueError("; ".join(problems))
    t_start = time.perf_counter()
    if settings.torque_limits and robot.elastic:
        raise ValueError(
            f"{robot.name} has series-elastic joints: --torque-limits bounds the links' torque, "
            "not the motors'; leave it out"
        )
    if executor is not None and source is None:
        raise ValueError("design: an executor needs the description's source (RobotSource) to send")
    lim = _limits(robot, settings)
    n, L = robot.dof, settings.harmonics
    regressor, nb = stage_regressor(robot, stage)
    x0s = start_points(robot, settings)
    if executor is None:
        nlp = _nlp(robot, settings, stage)
        solved: Iterator[dict[str, Any]] = (
            _solve(nlp, x0, None if iteration is None else partial(iteration, k)) for k, x0 in enumerate(x0s)
        )
    else:
        assert source is not None
        futures = [executor.submit(excite_start, source, settings, stage, x0) for x0 in x0s]
        solved = (fu.result() for fu in futures)
    best: tuple[float, np.ndarray] | None = None
    starts = []
    for k, sol in enumerate(solved):
        f, viol = sol["objective"], sol["violation"]
        starts.append({"objective": f, "status": sol["status"], "violation": viol, "seconds": sol["seconds"]})
        if viol <= 1e-6 and np.isfinite(f) and (best is None or f < best[0]):
            best = (f, sol["x"])
        if progress is not None:
            progress(k + 1, settings.starts, float("nan") if best is None else best[0])
    if best is None:
        raise RuntimeError("no start reached a feasible excitation; try more --starts or wider limits")
    xs = best[1]
    exc = Excitation(
        robot.name,
        L,
        settings.base_frequency,
        xs[: n * L].reshape((n, L), order="F"),
        xs[n * L : 2 * n * L].reshape((n, L), order="F"),
        xs[2 * n * L :].copy(),
        stage,
    )
    exc = within_limits(exc, lim, settings.report_rate)
    if settings.torque_limits:
        exc = within_torque_limits(robot, exc, lim["tau"], settings.report_rate)
    cond = regressor_cond(robot, exc, settings.report_rate, regressor, nb)
    return DesignResult(exc, cond, best[0], time.perf_counter() - t_start, starts, asdict(settings))


def _grid(exc: Excitation, rate: float) -> tuple[np.ndarray, float]:
    """One period on a uniform grid at least as fine as ``rate`` (periodic: t = T is t = 0); h its spacing."""
    k = max(int(np.ceil(exc.period * rate - 1e-9)), 4 * exc.harmonics)
    return np.arange(k) * (exc.period / k), exc.period / k


def continuous_bounds(exc: Excitation, rate: float) -> dict[str, np.ndarray]:
    """Per joint, bounds that hold for every t (not only on a grid) of max(q - q0), max(q0 - q),
    max|qd|, max|qdd|: the maximum on a grid of spacing h <= 1/rate plus (h/2) sup|f'|, since every t
    lies within h/2 of a grid point and f moves at most sup|f'| per second. For the Fourier series,
    sup|f'| <= sum_l of the amplitudes of f' (triangle inequality): with A_l = sqrt(a_l^2 + b_l^2),
    sup|qd| <= sum A_l, sup|qdd| <= sum w l A_l, sup|qddd| <= sum (w l)^2 A_l. All four bounds are
    homogeneous of degree 1 in (a, b)."""
    t, h = _grid(exc, rate)
    q, qd, qdd = exc.evaluate(t)
    wl = 2.0 * np.pi * exc.base_frequency * np.arange(1, exc.harmonics + 1)
    amp = np.hypot(exc.a, exc.b)  # (n, L)
    dev = q - exc.q0
    return {
        "q_above": dev.max(axis=0) + h / 2 * amp.sum(axis=1),
        "q_below": (-dev).max(axis=0) + h / 2 * amp.sum(axis=1),
        "qd": np.abs(qd).max(axis=0) + h / 2 * (amp * wl).sum(axis=1),
        "qdd": np.abs(qdd).max(axis=0) + h / 2 * (amp * wl**2).sum(axis=1),
    }


def within_limits(exc: Excitation, lim: dict[str, np.ndarray], rate: float) -> Excitation:
    """Scale the series (about q0; the start conditions are homogeneous, so they still hold) until
    the q, qd, qdd limits hold for every t (continuous_bounds, from a grid at ``rate``), not only on
    the optimisation's grid: an excitation sampled at any rate stays inside its limits."""
    b = continuous_bounds(exc, rate)
    ratios = [
        b["qd"] / lim["qd"],
        b["qdd"] / lim["qdd"],
        b["q_above"] / np.maximum(lim["q_max"] - exc.q0, 1e-300),
        b["q_below"] / np.maximum(exc.q0 - lim["q_min"], 1e-300),
    ]
    worst = float(np.max(ratios))
    if worst <= 1.0:
        return exc
    f = 1.0 / (worst * (1 + 1e-12))
    return scaled(exc, f)


def scaled(exc: Excitation, f: float) -> Excitation:
    """The same series with amplitudes times f about the same q0 (start conditions still hold)."""
    return Excitation(exc.robot, exc.harmonics, exc.base_frequency, exc.a * f, exc.b * f, exc.q0, exc.stage)


def torque_rate_function(robot: Robot) -> cs.Function:
    """(q, qd, qdd; qddd) -> (tau, dtau/dt): the description's rnea and its time derivative by the
    chain rule (CasADi jtimes along qd, qdd, qddd). Built once per bound search."""
    dyn = Dynamics(robot)
    tau = dyn.rnea(cs.SX(cs.DM(robot.standard_parameters())))
    x, dx = cs.vertcat(dyn.q, dyn.qd, dyn.qdd), cs.vertcat(dyn.qd, dyn.qdd, cs.SX.sym("qddd", robot.dof))
    return cs.Function("tau_rate", [x, dx[2 * robot.dof :]], [tau, cs.jtimes(tau, x, dx)])


def torque_bound(tau_rate: cs.Function, exc: Excitation, rate: float) -> np.ndarray:
    """Per joint, max|tau(t)| along the excitation for every t, as far as a grid can tell: the grid
    maximum (spacing h <= 1/rate) plus h max|dtau/dt| -- twice the (h/2) sup|dtau/dt| a point between
    samples can add, the factor 2 a stated margin for taking sup|dtau/dt| from the same grid (tau
    is not a Fourier series, so no closed-form bound). ``tau_rate``: torque_rate_function."""
    t, h = _grid(exc, rate)
    q, qd, qdd = exc.evaluate(t)
    jerk = np.array(
        jerk_function(len(exc.q0), exc.harmonics, exc.base_frequency).map(len(t))(
            t[None, :], np.tile(exc.a, len(t)), np.tile(exc.b, len(t))
        )
    )
    tau_v, rate_v = (np.array(v) for v in tau_rate.map(len(t))(np.vstack([q.T, qd.T, qdd.T]), jerk))
    return np.abs(tau_v).max(axis=1) + h * np.abs(rate_v).max(axis=1)


def within_torque_limits(robot: Robot, exc: Excitation, tau_max: np.ndarray, rate: float) -> Excitation:
    """The largest amplitude scale in (0, 1] (bisection, 30 steps) at which torque_bound holds;
    tau is not homogeneous in the amplitudes (gravity at q0 stays), so the scale is searched."""
    f = torque_rate_function(robot)

    def holds(scale: float) -> bool:
        return bool(np.all(torque_bound(f, scaled(exc, scale), rate) <= tau_max))

    if holds(1.0):
        return exc
    if not holds(0.0):
        raise ValueError(f"{robot.name}: gravity alone at the excitation's q0 exceeds the torque limits")
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return scaled(exc, lo)


def regressor_cond(
    robot: Robot, exc: Excitation, rate: float, regressor: cs.Function | None = None, nb: int | None = None
) -> float:
    """cond(Y) of one period sampled at ``rate`` Hz (unscaled SI columns, as Xu et al. (2020) report); Y the
    base regressor unless ``regressor`` (q, qd, qdd, qddd) -> Y (n x nb) is given (stage_regressor)."""
    if regressor is None or nb is None:
        regressor, nb = stage_regressor(robot, "load")
    traj = exc.trajectory(1.0 / rate)
    t = np.asarray(traj.time, float)
    (jerk,) = numeric(
        jerk_function(robot.dof, exc.harmonics, exc.base_frequency).map(len(t)),
        t[None, :],
        np.tile(exc.a, len(t)),
        np.tile(exc.b, len(t)),
    )
    (wide,) = numeric(regressor.map(len(t)), traj.q.T, traj.qd.T, traj.qdd.T, jerk)
    return condition_number(stack(wide, nb))


def random_excitation(
    robot: Robot, seed: int, speed: float = 0.5, harmonics: int = 5, base_frequency: float = 0.05, rate: float = 1000.0
) -> Excitation:
    """A smooth Fourier motion with random coefficients (no optimisation): projected onto the start
    conditions (at rest in q0, the middle of each joint's range, every period), then scaled so that
    q stays within the limits and |qd|, |qdd| within ``speed`` x theirs (Birjandi & Haddadin's 20 s
    "Fourier-like excitation" at the defaults)."""
    lim = _limits(robot, ExciteSettings())
    n = robot.dof
    rng = np.random.default_rng(seed)
    ls = np.arange(1, harmonics + 1, dtype=float)
    a = rng.normal(size=(n, harmonics)) / ls
    b = rng.normal(size=(n, harmonics)) / ls
    a -= a.mean(axis=1, keepdims=True)  # sum_l a_l = 0
    c = np.vstack([ls, 1.0 / ls])  # sum_l l b_l = sum_l b_l / l = 0
    b -= (b @ c.T) @ np.linalg.solve(c @ c.T, c)
    q0 = (lim["q_min"] + lim["q_max"]) / 2
    qdd = np.where(np.isfinite(lim["qdd"]), lim["qdd"], 2.0)
    scaled = dict(lim, qd=speed * lim["qd"], qdd=speed * qdd)
    big = Excitation(robot.name, harmonics, base_frequency, a * 1e3, b * 1e3, q0)
    return within_limits(big, scaled, rate)
