"""Inverse-dynamics identification (Xu et al. 2020 §II-A, Kirchhoff (2011) §4.2.4): the stacked base regressor,
ordinary and weighted least squares with relative standard deviations (Xu et al. 2020 eq. 7), essential
parameters by iterative elimination.

The regressor of a log is the generated C (``<robot>_regressor_batch``: a loop over the samples in
C, through cffi), as the design has it: host tools run the very C the controller runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import casadi as cs
import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from codegen.model.robot import Coulomb, Robot
from codegen.symbolic.dynamics import smooth_coulomb
from codegen.symbolic.params import BaseParameters
from host_tools.bindings.compiled import CompiledDynamics, generated_folder


@dataclass(frozen=True)
class Model:
    """What identification needs of a robot: its base parameters and the base regressor (generated C).

    ``robot`` may differ from the compiled C's robot in its smooth Coulomb scales only (a candidate
    of identify's scale fit, with_coulomb_scales): those columns (FC_j, non-zero only in joint j's
    equation) are then recomputed from the same CasADi expression (smooth_coulomb) with the
    robot's scales, the rest of the regressor is the C's. No candidate regenerates or rebuilds C."""

    robot: Robot
    base: BaseParameters
    compiled: CompiledDynamics  # the robot's generated C, double precision
    compiled_coulomb: Coulomb  # the Coulomb model the compiled C has
    # the last regressor computed, with the arrays it was computed from (identify asks for the
    # same run's regressor for the fit and for the friction terms' load: 60 MB, 0.1 s, once)
    _last: list[tuple[tuple[np.ndarray, ...], np.ndarray]] = field(default_factory=list, compare=False, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return self.base.names

    def true_base(self) -> np.ndarray:
        """The description's own base parameters, beta = K pi."""
        return self.base.values(self.robot.standard_parameters())

    def regressor(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Y_b at every sample of (K, n) arrays: (K, n, nb). Read-only: the last one is shared."""
        last = self._last[0] if self._last else None  # one read: another thread may replace it
        if last is not None and all(a is b for a, b in zip(last[0], (q, qd, qdd))):
            return last[1]
        y = self.compiled.regressor_batch(q, qd, qdd)
        if self.robot.coulomb != self.compiled_coulomb:
            for j, column in enumerate(self.coulomb_columns()):
                y[:, j, column] = self.coulomb_shape(qd)[:, j]
        self._last[:] = [((q, qd, qdd), y)]
        return y

    def stacked(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Y_b stacked over the samples (Xu et al. 2020 eq. 5): (K n, nb), sample after sample."""
        k, n = np.shape(q)
        return self.regressor(q, qd, qdd).reshape(k * n, len(self.names))

    def coulomb_columns(self) -> list[int]:
        """The base column of each joint's Coulomb parameter FC_j (one per joint): the column whose
        kept standard parameter is FC_j, whatever else regrouped into it -- an ordinary URDF's
        rounded angles (1.57079632679) regroup 1e-11 x IA2 into FC1 and name it FC1R; the column
        is still FC1's own (Y_b = Y[:, kept]). FC_j is never regrouped away where it is declared:
        its column, coul(qd_j) in joint j's equation only, is independent of every other."""
        standard = list(self.robot.standard_parameter_names)
        columns = {standard[i]: b for b, i in enumerate(self.base.columns)}
        missing = [j + 1 for j in range(self.robot.dof) if f"FC{j + 1}" not in columns]
        if missing:
            raise ValueError(
                f"{self.robot.name}: FC{missing[0]} is not among the base parameters' columns "
                "(no Coulomb friction declared for that joint): no Coulomb scale to fit"
            )
        return [columns[f"FC{j + 1}"] for j in range(self.robot.dof)]

    def coulomb_shape(self, qd: np.ndarray) -> np.ndarray:
        """tanh(qd_j / scale_j) with this robot's scales, (K, n) (the generated C's expression)."""
        c = self.robot.coulomb
        scales = np.array([c.scale(j) for j in range(self.robot.dof)], float)
        return _coulomb_function(self.robot.dof)(np.asarray(qd, float), scales)

    def with_robot(self, robot: Robot) -> Model:
        """The same C and base parameters for ``robot`` (other Coulomb scales only), cached."""
        if robot.digest not in _MODELS:
            _MODELS[robot.digest] = Model(robot, self.base, self.compiled, self.compiled_coulomb)
        return _MODELS[robot.digest]


@cache
def _coulomb_function(n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """smooth_coulomb as a numeric function of (qd (K, n), scales (n,)) -> (K, n)."""
    qd, scale = cs.SX.sym("qd", n), cs.SX.sym("scale", n)
    f = cs.Function("coulomb", [qd, scale], [smooth_coulomb(qd, scale)])

    mapped: dict[int, cs.Function] = {}

    def evaluate(qd_k: np.ndarray, scales: np.ndarray) -> np.ndarray:
        k = len(qd_k)
        if k not in mapped:
            mapped[k] = f.map(k)
        return np.array(mapped[k](qd_k.T, scales)).T

    return evaluate


_MODELS: dict[str, Model] = {}

# BLAS on one thread for identification's least squares: its matrices are tall and narrow (about
# 7000 x 52 for a 97 s run of a 6-joint arm), where OpenBLAS's threads cost more than they give --
# a QR took 18 ms on one thread and 300-350 ms on two while the other core was busy (this machine).
# A decorator (threadpoolctl, the maintained way to set it at run time) on the entry points, once.
one_blas_thread = threadpool_limits.wrap(limits=1, user_api="blas")


def model(robot: Robot) -> Model:
    """The identification model of a robot (cached by its description's digest)."""
    if robot.digest not in _MODELS:
        # the robot's default folder, the one load() builds: every folder holds the same dynamics,
        # and its manifest the base parameters generation derived for it (base_parameters)
        compiled = CompiledDynamics(generated_folder(robot))
        _MODELS[robot.digest] = Model(robot, BaseParameters.from_manifest(compiled.manifest), compiled, robot.coulomb)
    return _MODELS[robot.digest]


@dataclass
class Fit:
    """A least-squares estimate of (a subset of) the base parameters."""

    names: list[str]
    values: np.ndarray
    rsd: np.ndarray  # relative standard deviation, % (Xu et al. 2020 eq. 7)
    sigma2: float  # residual variance (of the weighted residual for WLS)
    kept: list[int]  # indices into the base parameters
    rms: np.ndarray  # per-joint RMS of the (unweighted) torque residual
    removed: list[str] = field(default_factory=list)  # essential: eliminated, in order

    def full(self, nb: int) -> np.ndarray:
        """As a base-parameter vector (eliminated ones 0)."""
        out = np.zeros(nb)
        out[self.kept] = self.values
        return out


def least_squares(
    y: np.ndarray,
    tau: np.ndarray,
    n: int,
    names: list[str] | tuple[str, ...],
    joint_weights: np.ndarray | None = None,
    kept: list[int] | None = None,
    rows: np.ndarray | None = None,
) -> Fit:
    """OLS (joint_weights None) or WLS with one weight 1/sigma_j^2 per joint (Kirchhoff 2011 eq. 4.47).
    y: (K n, nb) stacked regressor, tau: (K, n) or (K n,) torques; ``rows`` (K n,) bool selects the
    equations used (default all). RSD per Xu et al. (2020) eq. 7 on the weighted problem:
    C = sigma^2 (Y^T W Y)^-1, sigma^2 = |W^1/2 r|^2 / (r - b)."""
    kept = list(range(y.shape[1])) if kept is None else list(kept)
    t = np.asarray(tau, float).reshape(-1)
    w = np.ones(len(t)) if joint_weights is None else np.tile(np.asarray(joint_weights, float), len(t) // n)
    use = np.ones(len(t), bool) if rows is None else np.asarray(rows, bool).reshape(-1)
    a, t, w = y[np.ix_(use, np.asarray(kept, dtype=np.intp))], t[use], w[use]
    sw = np.sqrt(w)
    aw, tw = a * sw[:, None], t * sw
    dof = len(t) - len(kept)
    if dof <= 0:
        raise ValueError(f"{len(t)} equations for {len(kept)} parameters: not enough data")
    # one QR for the solution and the covariance (base parameters: full column rank by
    # construction); a rank-deficient set of columns falls back to the minimum-norm solution
    qq, rr = np.linalg.qr(aw)
    diag = np.abs(np.diag(rr))
    if diag.size and diag.min() > 1e-12 * diag.max():
        values = scipy.linalg.solve_triangular(rr, qq.T @ tw)
    else:
        values = np.linalg.lstsq(aw, tw, rcond=None)[0]
    r = tw - aw @ values
    sigma2 = float(r @ r / dof)
    rinv = np.linalg.inv(rr)
    cov = sigma2 * rinv @ rinv.T  # sigma^2 (A^T W A)^-1 without forming it
    with np.errstate(divide="ignore"):
        rsd = 100.0 * np.sqrt(np.diag(cov)) / np.abs(values)
    full = (np.asarray(tau, float).reshape(-1) - y[:, kept] @ values).reshape(-1, n)
    return Fit([names[i] for i in kept], values, rsd, sigma2, kept, rms_per_joint(full, use.reshape(-1, n)))


def rms_per_joint(e: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """RMS of e (K, n) per joint over its ``rows`` (K, n) bool: the equations a fit used (a joint
    with none: over all its samples)."""
    count = np.sum(rows, axis=0)
    used = np.sqrt(np.sum(np.where(rows, e, 0.0) ** 2, axis=0) / np.maximum(count, 1))
    return np.where(count > 0, used, np.sqrt(np.mean(e**2, axis=0)))


def essential(
    y: np.ndarray,
    tau: np.ndarray,
    n: int,
    names: list[str] | tuple[str, ...],
    joint_weights: np.ndarray | None = None,
    min_abs: float = 0.01,
    max_rsd: float = 40.0,
    rows: np.ndarray | None = None,
) -> Fit:
    """Xu et al. (2020) §II-A: while some parameter is both small (|value| < min_abs) and poorly identified
    (RSD > max_rsd %), remove the one of those with the largest RSD and re-estimate."""
    kept = list(range(y.shape[1]))
    removed: list[str] = []
    while True:
        fit = least_squares(y, tau, n, names, joint_weights, kept, rows)
        poor = [(r, k) for k, (v, r) in enumerate(zip(fit.values, fit.rsd)) if abs(v) < min_abs and r > max_rsd]
        if not poor or len(kept) == 1:
            fit.removed = removed
            return fit
        _, worst = max(poor)
        removed.append(names[kept[worst]])
        del kept[worst]
