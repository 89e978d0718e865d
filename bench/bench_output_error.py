"""Wall time of output-error identification on ur5 with Brunot et al.'s data size (34 500 samples at
1 kHz): IDIM-LS, DIDIM, CLIE (exact and finite-difference sensitivities) and CLOE, on 2 cores.
Goals (issue #6): DIDIM <= 10 s, CLIE with exact sensitivities <= 60 s (the paper: 1 min and 23 min
in Simulink + lsqnonlin).

    .venv/bin/python bench/bench_output_error.py          # ~2 min on 2 cores

Peer, measured in the same run: one closed-loop simulation of the same 34 500 samples written the
way a Python user would with Pinocchio (tests/peers/pinocchio_closed_loop.py: pinocchio.aba from
the same UR5 URDF, armature = rotor inertia, friction and the pid step in numpy, RK4 once per
sample); its positions are checked against ours, then the time of a finite-difference CLIE built
on it is extrapolated: (b + 1) simulations per Jacobian. Run from the repository root.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

from host_tools.bindings.source import RobotSource
from host_tools.identification.closed_loop import ClosedLoopModel
from host_tools.identification.closed_loop_run import OESynthetic, oe_data, synthetic_run
from host_tools.identification.output_error import Identification, OESettings, description_start

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the peer lives in tests/peers
from tests.peers.pinocchio_closed_loop import simulate_ur5  # noqa: E402


def main() -> None:
    opts = OESynthetic()
    source = RobotSource.of("ur5")
    robot = source.robot()
    log, loop = synthetic_run(robot, opts)
    data = oe_data(robot, log)
    model = ClosedLoopModel(source)
    beta = model.ident.true_base()
    t0 = time.perf_counter()
    ours = model.simulate(beta, loop, data.q_des, data.qd_des, data.q[0], data.qd_des[0])
    t_sim = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.simulate(beta, loop, data.q_des, data.qd_des, data.q[0], data.qd_des[0], cols=range(model.n_base))
    t_sens = time.perf_counter() - t0
    peer_q, _, t_peer = simulate_ur5(
        model.robot, loop, data.q_des, data.qd_des, data.q[0], data.qd_des[0], data.sample_period
    )
    agree = float(np.abs(peer_q - ours.q).max())

    rows = []
    ident_exact = Identification(model, loop, data, OESettings(sensitivities="exact"))
    ref, kept = ident_exact.idim_ls()
    rows.append(("IDIM-LS", ref))
    start = description_start(model, opts.init_error, opts.seed)
    for label, method, ident in (
        ("DIDIM", "didim", ident_exact),
        ("CLIE, exact sensitivities", "clie", ident_exact),
        ("CLIE, finite differences", "clie", Identification(model, loop, data, OESettings(sensitivities="fd"))),
        ("CLOE, exact sensitivities", "cloe", ident_exact),
    ):
        rows.append((label, ident.run(method, start, kept)))  # type: ignore[arg-type]
    n_jac = next(r.iterations for label, r in rows if label.startswith("CLIE, exact"))  # Jacobians
    peer_clie = t_peer * (len(kept) + 1) * n_jac

    print(
        f"ur5, {len(data.q)} samples at {1 / data.sample_period:g} Hz, {len(kept)} essential parameters, "
        f"start: CAD {opts.init_error:.0%} off\n"
    )
    print("| closed-loop simulation, 34 500 samples | seconds | ratio |")
    print("| --- | --: | --: |")
    print(f"| manipgen C (oesim) | {t_sim:.3f} | 1 |")
    print(
        f"| manipgen C with the exact sensitivities of all {model.n_base} base parameters | {t_sens:.3f} | "
        f"{t_sens / t_sim:.1f} |"
    )
    print(
        f"| Python + pinocchio.aba (same loop; max |Δq| against ours {agree:.1e} rad) | {t_peer:.2f} | "
        f"{t_peer / t_sim:.0f} |\n"
    )
    print("| method | seconds | iterations | μ_min | cond | goal | Brunot et al. (2019) |")
    print("| --- | --: | --: | --: | --: | --: | --: |")
    goals = {
        "DIDIM": ("<= 10 s", "1 min"),
        "CLIE, exact sensitivities": ("<= 60 s", "23 min"),
        "CLIE, finite differences": ("—", "23 min"),
        "CLOE, exact sensitivities": ("—", "23 min"),
    }
    for label, r in rows:
        goal, paper = goals.get(label, ("—", "—"))
        print(f"| {label} | {r.seconds:.1f} | {r.iterations} | {r.mu_min:.3g} | {r.cond:.4g} | {goal} | {paper} |")
    print(
        f"| CLIE, finite differences on the Python + Pinocchio simulation (extrapolated: {len(kept) + 1} "
        f"simulations x {n_jac} Jacobians) | {peer_clie:.0f} | — | — | — | — | — |"
    )


if __name__ == "__main__":
    main()
