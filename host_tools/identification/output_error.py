"""Output-error identification on the generated closed-loop model (Brunot et al. 2019): IDIM-LS as the
reference (§3.1), DIDIM (§3.3), CLIE and CLOE (§3.2) by Levenberg-Marquardt with finite-difference
(b + 1 simulations, in parallel) or exact sensitivities (host_tools.identification.closed_loop), and the
diagnostics of §5: singular values and condition number of the Jacobian, RSD, relative errors of
the simulated q and tau (Table 3), residual autocorrelation with 2 sigma bounds (Figs. 1-3).

Conventions: ``OEData.tau[k]`` is the torque held over sample k (the log's ``tau[k + 1]``); the
parameters are the base parameters (all, or the essential subset of IDIM-LS, others fixed at 0).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from codegen.model.robot import LINK_PARAMS
from host_tools.bindings.loopback import SimulationError
from host_tools.bindings.source import RobotSource
from host_tools.identification.closed_loop import ClosedLoopModel, Loop, Simulation
from host_tools.identification.least_squares import essential, least_squares, one_blas_thread
from host_tools.identification.processing import filtered_derivatives, parallel_decimate

Method = Literal["idim-ls", "didim", "clie", "cloe"]
METHODS: tuple[Method, ...] = ("idim-ls", "didim", "clie", "cloe")
Progress = Callable[[int, float], None]  # (iteration, criterion)


@dataclass(frozen=True)
class OEData:
    """A closed-loop run at the sample instants: measured positions q, the torque tau held over each
    sample, and the reference the controller tracked."""

    sample_period: float
    q: np.ndarray
    tau: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray

    def __post_init__(self) -> None:
        shapes = {np.shape(a) for a in (self.q, self.tau, self.q_des, self.qd_des)}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ValueError(f"q, tau, q_des and qd_des must be (K, n) arrays of one shape, got {sorted(shapes)}")
        for name in ("q", "tau", "q_des", "qd_des"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ValueError(f"{name} contains NaN or inf")


@dataclass(frozen=True)
class OESettings:
    sensitivities: Literal["exact", "fd"] = "exact"
    max_iterations: int = 30
    tolerance: float = 1e-6  # relative change of the criterion (and of the step, LM)
    fd_step: float = 1e-6  # relative finite-difference step (absolute floor 1e-6)
    dynamics_band: float = 10.0  # Hz, omega_dyn: IDIM-LS filters q at 5x, tau and Y at 2x (§5.1)
    lags: int = 50  # residual autocorrelation lags
    decimate: bool = False  # DIDIM/CLIE/CLOE on parallel-filtered, decimated signals (§5.2, Tables 4-5)
    workers: int = 0  # parallel simulations (0: one per core)


@dataclass
class Result:
    method: Method
    names: list[str]  # the estimated base parameters
    kept: list[int]  # their indices
    values: np.ndarray  # estimates
    rsd: np.ndarray  # relative standard deviations, %
    iterations: int
    seconds: float
    singular_values: np.ndarray  # of the Jacobian at the solution
    rel_error_q: np.ndarray  # per joint ||q_m - q_s|| / ||q_m|| (Brunot et al. 2019 Table 3)
    rel_error_tau: np.ndarray  # per joint ||tau - tau_s|| / ||tau||
    autocorrelation: np.ndarray  # (lags + 1, n) of the method's residual, per joint
    bound: float  # 2 sigma: 2 / sqrt(N) with N the residual's length per joint
    history: list[float] = field(default_factory=list)  # criterion per iteration

    @property
    def mu_min(self) -> float:
        return float(self.singular_values.min())

    @property
    def mu_max(self) -> float:
        return float(self.singular_values.max())

    @property
    def cond(self) -> float:
        return self.mu_max / self.mu_min if self.mu_min > 0 else float("inf")

    def full(self, nb: int) -> np.ndarray:
        out = np.zeros(nb)
        out[self.kept] = self.values
        return out

    def truth_errors(self, truth: np.ndarray) -> np.ndarray:
        """|estimate - truth| / |truth| of each estimate whose true value (a synthetic run's, over all
        base parameters) is not zero."""
        t = truth[self.kept]
        nz = np.abs(t) > 1e-9
        return np.abs(self.values - t)[nz] / np.abs(t[nz])


def autocorrelation(r: np.ndarray, lags: int) -> np.ndarray:
    """Normalised autocorrelation per column of r (K, n), lags 0..min(lags, K - 1) (1 at lag 0)."""
    r = np.asarray(r, float) - np.mean(r, axis=0)
    k = len(r)
    lags = min(lags, k - 1)
    den = np.sum(r * r, axis=0)
    den = np.where(den > 0, den, 1.0)
    return np.array([np.sum(r[: k - m] * r[m:], axis=0) / den for m in range(lags + 1)])


def _rsd(psi: np.ndarray, residual: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Brunot et al. (2019) eq. 10 with the residual variance: 100 sqrt(diag(sigma^2 (Psi^T Psi)^-1)) / |theta|."""
    dof = max(len(residual) - psi.shape[1], 1)
    sigma2 = float(residual @ residual / dof)
    _, r = np.linalg.qr(psi)
    rinv = np.linalg.inv(r)
    with np.errstate(divide="ignore"):
        return 100.0 * np.sqrt(sigma2 * np.sum(rinv * rinv, axis=1)) / np.abs(values)


def _rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    num = np.linalg.norm(a - b, axis=0)
    den = np.linalg.norm(a, axis=0)
    return num / np.where(den > 0, den, 1.0)


class Identification:
    """One closed-loop run, its model and the known loop; the methods share the simulator."""

    def __init__(
        self,
        model: ClosedLoopModel,
        loop: Loop,
        data: OEData,
        settings: OESettings = OESettings(),
        executor: Executor | None = None,
    ) -> None:
        """``executor``: where the sensitivities' simulations run as pure items (simulated_output),
        e.g. a Dask cluster's; default: threads here, sharing the loaded model."""
        if abs(data.sample_period - model.sample_period) > 1e-12 * model.sample_period:
            raise ValueError(
                f"the data are sampled every {data.sample_period:g} s, the model every {model.sample_period:g} s"
            )
        if data.q.shape[1] != model.n:
            raise ValueError(f"{data.q.shape[1]} joints in the data, the robot has {model.n}")
        self.model, self.loop, self.data, self.settings = model, loop, data, settings
        self.workers = settings.workers or os.cpu_count() or 1
        self.executor = executor
        self.names = list(model.ident.names)

    # --- the simulator ----------------------------------------------------------------------
    def simulate(self, beta: np.ndarray, **kw: object) -> Simulation:
        d = self.data
        return self.model.simulate(beta, self.loop, d.q_des, d.qd_des, d.q[0], d.qd_des[0], **kw)  # type: ignore[arg-type]

    def _map(self, fn: Callable[[int], np.ndarray], items: int) -> list[np.ndarray]:
        """Run fn(0..items-1) in parallel threads. Threads, not DESIGN's default process pool, are the
        local default: the C releases the GIL, and the work items share the loaded cffi library and
        the run's arrays, which a process pool would pickle per call."""
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(fn, range(items)))

    def _items(
        self, betas: list[np.ndarray], output: Literal["q", "tau"], cols: list[list[int]] | None
    ) -> list[np.ndarray]:
        """On the given executor, as pure items (simulated_output, carrying the description's text,
        the loop and the run): per beta of ``betas`` the output, or with ``cols`` (one beta) per
        entry the sensitivities to those columns."""
        assert self.executor is not None
        job = OEJob(self.model.source, self.model.sample_period, self.loop, self.data)
        if cols is not None:
            futures = [self.executor.submit(simulated_output, job, betas[0], output, c) for c in cols]
        else:
            futures = [self.executor.submit(simulated_output, job, b, output, None) for b in betas]
        return [fu.result() for fu in futures]

    def sensitivities(
        self, beta: np.ndarray, kept: list[int], output: Literal["q", "tau"], base: Simulation | None = None
    ) -> np.ndarray:
        """d output / d beta[kept], (K, n, len(kept)): exact (forward sensitivities, the columns split
        over the workers) or forward differences (len(kept) + 1 simulations, in parallel)."""
        if self.settings.sensitivities == "exact":
            groups = [
                [int(c) for c in g] for g in np.array_split(np.asarray(kept), min(self.workers, len(kept))) if len(g)
            ]
            if self.executor is not None:
                return np.concatenate(self._items([beta], output, groups), axis=2)

            def exact(i: int) -> np.ndarray:
                s = self.simulate(beta, cols=groups[i], dq=output == "q", dtau=output == "tau")
                out = s.dq if output == "q" else s.dtau
                assert out is not None
                return out

            return np.concatenate(self._map(exact, len(groups)), axis=2)
        ref = base if base is not None else self.simulate(beta)
        y0 = ref.q if output == "q" else ref.tau
        h = [self.settings.fd_step * max(abs(beta[i]), 1.0) for i in kept]
        stepped = []
        for i, hi in zip(kept, h):
            b = beta.copy()
            b[i] += hi
            stepped.append(b)
        if self.executor is not None:
            return np.stack([(y - y0) / hi for y, hi in zip(self._items(stepped, output, None), h)], axis=2)

        def column(i: int) -> np.ndarray:
            s = self.simulate(stepped[i])
            return ((s.q if output == "q" else s.tau) - y0) / h[i]

        return np.stack(self._map(column, len(kept)), axis=2)

    def filtered(self, a: np.ndarray) -> np.ndarray:
        """With settings.decimate: Brunot et al.'s parallel filter (zero-phase low-pass at 2 omega_dyn) and
        decimation along the samples of a (K, ...); else a itself."""
        if not self.settings.decimate:
            return a
        fs = 1.0 / self.data.sample_period
        return parallel_decimate([a], fs, min(2 * self.settings.dynamics_band, 0.45 * fs))[0]

    # --- the methods -------------------------------------------------------------------------
    # BLAS on one thread (least_squares.one_blas_thread): their QR, lstsq and SVD are of tall, narrow
    # matrices, where OpenBLAS's threads spin more than they give (round trip 18.4 -> 7.0 CPU-s)
    @one_blas_thread
    def idim_ls(self, kept: list[int] | None = None) -> tuple[Result, list[int]]:
        """§3.1: Butterworth (zero phase) on q at 5 omega_dyn, central differences, the parallel
        filter at 2 omega_dyn on tau and Y, decimation; OLS. Also returns the essential set."""
        t0 = time.perf_counter()
        d, s = self.data, self.settings
        fs = 1.0 / d.sample_period
        q, qd, qdd = filtered_derivatives(d.q, d.sample_period, min(5 * s.dynamics_band, 0.45 * fs))
        # the torque at instant k: the mean of the holds either side (what a smooth qdd_k sees)
        tau_k = np.vstack([d.tau[:1], (d.tau[:-1] + d.tau[1:]) / 2])
        k, n = q.shape
        y = self.model.ident.stacked(q, qd, qdd).reshape(k, n, -1)
        y_f, tau_f = parallel_decimate([y, tau_k], fs, min(2 * s.dynamics_band, 0.45 * fs))
        edge = max(1, len(y_f) // 50)  # filter edge effects
        y_f, tau_f = y_f[edge:-edge], tau_f[edge:-edge]
        if len(y_f) * n < 2 * y.shape[2]:
            raise ValueError(
                f"the run is too short for IDIM-LS: {len(y_f)} samples left after the parallel filter "
                f"and decimation to {2 * s.dynamics_band:g} Hz, {y.shape[2]} parameters; record longer"
            )
        ys = y_f.reshape(-1, y_f.shape[2])
        ess = essential(ys, tau_f, n, self.names)
        use = ess.kept if kept is None else kept
        fit = least_squares(ys, tau_f, n, self.names, kept=use)
        psi = ys[:, use]
        resid = (tau_f.reshape(-1) - psi @ fit.values).reshape(tau_f.shape)
        res = self._finish("idim-ls", use, fit.values, psi, resid, 1, t0, [float(np.sum(resid**2))])
        res.rsd = fit.rsd
        return res, ess.kept

    @one_blas_thread
    def didim(self, beta0: np.ndarray, kept: list[int], progress: Progress | None = None) -> Result:
        """§3.3: simulate with the current estimate, the regressor on the simulated states, linear LS
        (pseudo-linear regression); until the criterion changes by less than the tolerance. A new
        estimate that simulates worse (or cannot be simulated: M(q) not positive definite) is pulled
        halfway back to the last accepted one, up to 10 times (step halving: our safeguard)."""
        t0 = time.perf_counter()
        beta = np.zeros(len(self.names))  # the parameters not estimated are 0
        beta[kept] = np.asarray(beta0, float)[kept]
        tau_f = self.filtered(self.data.tau)
        tau = tau_f.reshape(-1)
        history: list[float] = []
        best: tuple[float, np.ndarray, Simulation] | None = None
        it = halvings = 0
        while True:
            try:
                s: Simulation | None = self.simulate(beta, regressor=True)
            except SimulationError:
                s = None
            crit = float(np.sum((tau - self.filtered(s.tau).reshape(-1)) ** 2)) if s is not None else np.inf
            if best is None and s is None:
                raise SimulationError("DIDIM: the start cannot be simulated (M(q) not positive definite)")
            if best is not None and not crit < best[0]:
                if halvings >= 10:
                    break
                beta = best[1] + 0.5 * (beta - best[1])
                halvings += 1
                continue
            assert s is not None
            converged = best is not None and best[0] - crit <= self.settings.tolerance * best[0]
            best, halvings = (crit, beta, s), 0
            history.append(crit)
            if progress:
                progress(it, crit)
            if converged or it >= self.settings.max_iterations:
                break
            assert s.y is not None
            beta = np.zeros_like(beta)
            beta[kept], *_ = np.linalg.lstsq(self.filtered(s.y[:, :, kept]).reshape(-1, len(kept)), tau, rcond=None)
            it += 1
        assert best is not None and best[2].y is not None
        beta = best[1]
        psi = self.filtered(best[2].y[:, :, kept]).reshape(-1, len(kept))
        resid = (tau - psi @ beta[kept]).reshape(tau_f.shape)
        return self._finish("didim", kept, beta[kept], psi, resid, it, t0, history)

    @one_blas_thread
    def output_error(
        self, method: Literal["clie", "cloe"], beta0: np.ndarray, kept: list[int], progress: Progress | None = None
    ) -> Result:
        """§3.2: Levenberg-Marquardt (MINPACK, as lsqnonlin) on tau - tau_s (CLIE) or q - q_s (CLOE)."""
        t0 = time.perf_counter()
        output: Literal["q", "tau"] = "tau" if method == "clie" else "q"
        measured_f = self.filtered(self.data.tau if output == "tau" else self.data.q)
        measured = measured_f.reshape(-1)
        scale = float(np.sqrt(np.mean(measured**2))) or 1.0
        template = np.zeros(len(self.names))  # the parameters not estimated are 0
        template[kept] = np.asarray(beta0, float)[kept]
        cache: dict[bytes, Simulation] = {}
        history: list[float] = []

        def full(x: np.ndarray) -> np.ndarray:
            b = template.copy()
            b[kept] = x
            return b

        def sim(x: np.ndarray) -> Simulation | None:
            key = x.tobytes()
            if key not in cache:
                cache.clear()
                try:
                    cache[key] = self.simulate(full(x))
                except SimulationError:
                    return None
            return cache[key]

        def residual(x: np.ndarray) -> np.ndarray:
            s = sim(x)
            if s is None:  # not simulable: a large residual, LM backs off
                return np.full(len(measured), 1e3 * scale)
            r = measured - self.filtered(s.tau if output == "tau" else s.q).reshape(-1)
            return r if np.all(np.isfinite(r)) else np.full(len(measured), 1e3 * scale)

        def jacobian(x: np.ndarray) -> np.ndarray:
            s = sim(x)
            return -self.filtered(self.sensitivities(full(x), kept, output, s)).reshape(-1, len(kept))

        x, iterations = levenberg_marquardt(
            residual, jacobian, template[kept], self.settings.max_iterations, self.settings.tolerance, history, progress
        )
        beta = full(x)
        s = self.simulate(beta)
        psi = self.filtered(self.sensitivities(beta, kept, output, s)).reshape(-1, len(kept))
        resid = (measured - self.filtered(s.tau if output == "tau" else s.q).reshape(-1)).reshape(measured_f.shape)
        return self._finish(method, kept, x, psi, resid, iterations, t0, history)

    # --- diagnostics -------------------------------------------------------------------------
    def _finish(
        self,
        method: Method,
        kept: list[int],
        values: np.ndarray,
        psi: np.ndarray,
        resid: np.ndarray,
        iterations: int,
        t0: float,
        history: list[float],
    ) -> Result:
        seconds = time.perf_counter() - t0
        sv = np.linalg.svd(psi, compute_uv=False)
        beta = np.zeros(len(self.names))
        beta[kept] = values
        try:
            s = self.simulate(beta)
            eq, et = _rel(self.data.q, s.q), _rel(self.data.tau, s.tau)
        except SimulationError:
            eq = et = np.full(self.model.n, np.inf)
        return Result(
            method,
            [self.names[i] for i in kept],
            list(kept),
            np.asarray(values, float),
            _rsd(psi, resid.reshape(-1), values),
            iterations,
            seconds,
            sv,
            eq,
            et,
            autocorrelation(resid, self.settings.lags),
            2.0 / np.sqrt(len(resid)),
            history,
        )

    def run(self, method: Method, beta0: np.ndarray, kept: list[int], progress: Progress | None = None) -> Result:
        if method == "idim-ls":
            return self.idim_ls(kept)[0]
        if method == "didim":
            return self.didim(beta0, kept, progress)
        return self.output_error(method, beta0, kept, progress)


def levenberg_marquardt(
    residual: Callable[[np.ndarray], np.ndarray],
    jacobian: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    max_jacobians: int,
    tol: float,
    history: list[float],
    progress: Progress | None = None,
) -> tuple[np.ndarray, int]:
    """Levenberg-Marquardt with Marquardt's scaling (damping lambda diag(J^T J)) on r(x) with
    Jacobian J = dr/dx. Written here rather than scipy's MINPACK wrapper because each Jacobian is a
    whole sensitivity simulation, the dominant cost: MINPACK cannot bound the number of Jacobians
    (its max_nfev counts residuals only) and scipy evaluates the first one twice. One Jacobian per
    accepted step; trial steps reuse its QR. Stops when the criterion |r|^2 drops by less than tol
    (relative) or the step is below tol (relative to x). Returns (x, Jacobians evaluated)."""
    x = np.asarray(x0, float).copy()
    r = residual(x)
    crit = float(r @ r)
    lam = 1e-3
    jacobians = 0
    while jacobians < max_jacobians:
        j = jacobian(x)
        jacobians += 1
        history.append(crit)
        if progress:
            progress(jacobians - 1, crit)
        d = np.sqrt(np.sum(j * j, axis=0))
        d = np.where(d > 0, d, 1.0)
        q, rr = np.linalg.qr(j / d)  # columns scaled: J D^-1 = Q R
        qtr = q.T @ r
        accepted = False
        while lam < 1e12:
            # min |r - J dx|^2 + lam |D dx|^2 in the scaled variable y = D dx: [R; sqrt(lam) I] y = [Q^T r; 0]
            a = np.vstack([rr, np.sqrt(lam) * np.eye(len(x))])
            y, *_ = np.linalg.lstsq(a, np.concatenate([qtr, np.zeros(len(x))]), rcond=None)
            step = -y / d  # r decreases along -J^-1 r: J = dr/dx
            r_new = residual(x + step)
            crit_new = float(r_new @ r_new)
            if crit_new < crit:
                accepted = True
                break
            lam *= 10
        if not accepted:
            break
        small_step = np.linalg.norm(step) <= tol * (np.linalg.norm(x) + tol)
        small_gain = crit - crit_new <= tol * crit
        x, r, crit, lam = x + step, r_new, crit_new, max(lam / 10, 1e-12)
        if small_step or small_gain:
            break
    history.append(crit)
    return x, jacobians


def description_start(model: ClosedLoopModel, error: float = 0.0, seed: int = 0) -> np.ndarray:
    """The description's (CAD) base parameters; with ``error`` > 0 each link's ten inertial
    parameters are scaled together by one uniform factor in [1 - error, 1 + error] (a density error:
    the link stays physically consistent) and each joint parameter (IA, FV, FC, ...) by its own."""
    robot = model.robot
    pi = robot.standard_parameters()
    if error > 0:
        rng = np.random.default_rng(seed)
        names = robot.standard_parameter_names
        kinds = [name.rstrip("0123456789") for name in names]
        link_of = [int(name[len(kind) :]) for name, kind in zip(names, kinds)]
        per_link = {j: rng.uniform(1 - error, 1 + error) for j in sorted(set(link_of))}
        factor = np.array(
            [
                per_link[j] if kind in LINK_PARAMS else rng.uniform(1 - error, 1 + error)
                for kind, j in zip(kinds, link_of)
            ]
        )
        pi = pi * factor
    return model.ident.base.k @ pi


@dataclass(frozen=True)
class OEJob:
    """What a worker needs to simulate the closed loop (anywhere: no cffi object, the description
    as text): the model's description and sample period, the known loop, the run."""

    robot: RobotSource
    sample_period: float
    loop: Loop
    data: OEData


_MODELS: dict[tuple[str, float], ClosedLoopModel] = {}
_MODELS_LOCK = threading.Lock()


def simulated_output(job: OEJob, beta: np.ndarray, output: Literal["q", "tau"], cols: list[int] | None) -> np.ndarray:
    """A pure work item of output error: the simulated ``output`` for beta, or with ``cols`` its
    sensitivities to those base parameters (K, n, len(cols)). The model is built once per worker."""
    key = (job.robot.key, job.sample_period)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = ClosedLoopModel(job.robot, job.sample_period)
    d = job.data
    s = _MODELS[key].simulate(
        beta, job.loop, d.q_des, d.qd_des, d.q[0], d.qd_des[0], cols=cols, dq=output == "q", dtau=output == "tau"
    )
    if cols is None:
        return s.q if output == "q" else s.tau
    out = s.dq if output == "q" else s.dtau
    assert out is not None
    return out
