"""Wall time of the identification stages on the KUKA iiwa 14 (issue #5's figures): excitation
design (Xu et al.'s settings) and physical-parameter retrieval (5 starts, Xu et al.'s kappa).

    .venv/bin/python bench/bench_identification.py          # ~3 min on 2 cores

Peer for the retrieval, measured in the same run on the same problem (objective, bounds, total mass,
eliminated parameters) from the same starts: scipy's SLSQP with finite-difference gradients -- what
a MATLAB fmincon user (Xu et al. 2020) would get without exact derivatives. Xu et al.'s own figure: 9854.5 s
for its multi-start in MATLAB.
"""

from __future__ import annotations

import time

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import casadi as cs
import numpy as np
from scipy.optimize import minimize

from codegen.model.description import load_robot
from host_tools.identification.excitation import ExciteSettings, design
from host_tools.identification.least_squares import model
from host_tools.identification.physical import PhysicalSettings, bounds, joint_estimates, physical_of, retrieve
from host_tools.identification.pipeline import IdentSettings, identify, synthetic_log

XU_RETRIEVAL_S = 9854.5


def main() -> None:
    robot = load_robot("kuka_iiwa14")
    t0 = time.perf_counter()
    res = design(robot, ExciteSettings(harmonics=5, base_frequency=0.05, starts=1, max_iter=150))
    t_excite = time.perf_counter() - t0
    exc = res.excitation
    log = synthetic_log(robot, exc, periods=6, torque_noise=0.2, seed=0)
    settings = IdentSettings()
    ident, _, (y, tau, qd) = identify(robot, log, exc, settings)
    rows = np.abs(qd).reshape(-1) >= settings.min_speed
    kept = ident.essential.kept
    m = model(robot)
    y_e, t = y[rows][:, kept], tau.reshape(-1)[rows]
    eliminated = [i for i in range(len(m.names)) if i not in set(kept)]
    sigma = np.abs(ident.base.values) * ident.base.rsd / 100
    span = (
        ident.base.values[eliminated] - 3 * sigma[eliminated],
        ident.base.values[eliminated] + 3 * sigma[eliminated],
    )
    # all 5 starts, as the peer runs them; Xu et al.'s objective (the essential parameters)
    phys_settings = PhysicalSettings(starts=5, agreeing=5, objective="essential")
    t0 = time.perf_counter()
    phys = retrieve(robot, m.base.k, kept, y_e, t, ident.essential.values, phys_settings, span)
    t_ours = time.perf_counter() - t0

    # the peer: SLSQP, finite differences, the same problem and starts
    _, lo, hi = bounds(robot, phys_settings, joint_estimates(robot, m.base.k, kept, ident.essential.values))
    x = cs.SX.sym("x", len(lo))
    _, pi = physical_of(x, robot)
    pi_fn = cs.Function("pi", [x], [pi])
    k_e, k_x = m.base.k[kept], m.base.k[eliminated]
    stride = 10 + len(robot.joint_parameters)
    total = float(sum(robot.standard_parameters()[j * stride] for j in range(robot.dof)))

    def f(v: np.ndarray) -> float:
        r = t - y_e @ (k_e @ np.array(pi_fn(v)).ravel())
        return float(r @ r)

    cons = [
        {
            "type": "ineq",
            "fun": lambda v: np.array(
                [
                    sum(v[j * stride] for j in range(robot.dof)) - 0.5 * total,
                    1.5 * total - sum(v[j * stride] for j in range(robot.dof)),
                ]
            ),
        },
        {
            "type": "ineq",
            "fun": lambda v: np.r_[
                k_x @ np.array(pi_fn(v)).ravel() - span[0], span[1] - k_x @ np.array(pi_fn(v)).ravel()
            ],
        },
    ]
    rng = np.random.default_rng(phys_settings.seed)
    best_peer = np.inf
    ended: list[str] = []  # scipy's message of each start that did not succeed
    t0 = time.perf_counter()
    for _ in range(phys_settings.starts):
        x0 = lo + (hi - lo) * rng.uniform(0, 1, len(lo))
        sol = minimize(
            f, x0, method="SLSQP", bounds=list(zip(lo, hi)), constraints=cons, options={"maxiter": 500, "ftol": 1e-12}
        )
        best_peer = min(best_peer, float(np.sqrt(sol.fun)))
        if not sol.success:
            ended.append(str(sol.message))
    t_peer = time.perf_counter() - t0

    print(
        f"excitation design (iiwa, L = 5, 0.05 Hz, 1 start): {t_excite:.1f} s, cond(Y_b) = {res.cond:.1f} "
        f"(Xu et al. 2020: 156.3)"
    )
    print()
    print("| physical retrieval, 5 starts | wall time (s) | best objective (N m) |")
    print("| --- | --: | --: |")
    print(f"| manipgen (CasADi + IPOPT, exact Hessian) | {t_ours:.2f} | {phys.objective:.5g} |")
    print(f"| peer: scipy SLSQP, finite differences | {t_peer:.2f} | {best_peer:.5g} |")
    print(f"| Xu et al. (2020) (MATLAB multi-start, its data) | {XU_RETRIEVAL_S:.1f} | 75.06 |")
    print()
    # a peer that succeeded on no start did not solve the problem: its time is no ratio
    succeeded = phys_settings.starts - len(ended)
    ratio = f"{t_peer / t_ours:.0f}x" if succeeded else "none (the peer solved it from no start)"
    print(
        f"least-squares essential objective: {phys.base_objective:.5g} N m; "
        f"ratio peer / manipgen: {ratio}; Xu et al. (2020) / manipgen: {XU_RETRIEVAL_S / t_ours:.0f}x"
    )
    failed = ", ".join(f"{ended.count(m)} x {m!r}" for m in sorted(set(ended)))
    others = f"; the others ended: {failed}" if ended else ""
    print(f"peer: {succeeded} of {phys_settings.starts} starts succeeded{others}")


if __name__ == "__main__":
    main()
