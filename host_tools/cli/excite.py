"""`manipgen excite`: optimal Fourier excitation for identification (Xu et al. 2020 §II-B)."""

from __future__ import annotations

import argparse

from host_tools.cli.generate import add_robot_arguments, robot_of, sample_period_argument
from host_tools.cli.scheduler_option import add_scheduler, executor_for, scheduler_problem, source_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    x = sub.add_parser("excite", help="optimal Fourier excitation for identification (Xu et al. 2020 §II-B)")
    add_robot_arguments(x)  # the robot needs q and qd limits on every joint
    x.add_argument("--harmonics", type=int, default=5, help="L, harmonics per joint (Xu et al. 2020: 5)")
    x.add_argument(
        "--base-frequency", type=float, default=0.05, help="f_f in Hz; the period is 1/f_f (Xu et al. 2020: 0.05)"
    )
    x.add_argument(
        "--objective",
        choices=("cond", "logdet"),
        default="cond",
        help="cond(Y_b) or -log det(Y_b^T Y_b) (D-optimality)",
    )
    x.add_argument("--starts", type=int, default=4, help="random starts of IPOPT")
    x.add_argument("--max-iter", type=int, default=300, help="IPOPT iterations per start")
    x.add_argument("--grid", type=int, default=100, help="samples per period in the objective")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--torque-limits", action="store_true", help="keep |tau| within the joints' torque limits too")
    x.add_argument("--sample-period", type=sample_period_argument, help="s, of the generated C (default: the robot's)")
    x.add_argument(
        "--stage",
        choices=("load", "actuator"),
        default="load",
        help="the regressor to excite: the links' base regressor, or an elastic arm's actuators "
        "(Kirchhoff 2011 eq. 4.4; manipgen elastic identify --actuator)",
    )
    x.add_argument("--json", action="store_true", help="print the design as JSON")
    x.add_argument("--out", help="folder for excitation.json/.png and <robot>_excitation.{h,c}")
    add_scheduler(x, "random starts", "here, one after the other")
    x.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from host_tools.cli.progress import IterationsBar
    from host_tools.data.light_joints import warn_light_joints
    from host_tools.identification.excitation import ExciteSettings, design
    from host_tools.reports.excitation import write

    console = Console(stderr=True, soft_wrap=True, markup=False)
    settings = ExciteSettings(
        harmonics=args.harmonics,
        base_frequency=args.base_frequency,
        objective=args.objective,
        starts=args.starts,
        seed=args.seed,
        max_iter=args.max_iter,
        torque_limits=args.torque_limits,
        grid=args.grid,
    )
    problems = settings.problems() + [p for p in [scheduler_problem(args)] if p]
    if problems:
        console.print("manipgen: error: " + "; ".join(problems))
        return 2
    robot = robot_of(args)
    warn_light_joints(robot)  # its recording would be flagged off-trajectory on these joints (one notice)
    ts = args.sample_period or robot.sample_period
    try:
        bar = IterationsBar(console, "excitation design (IPOPT)", settings.starts, settings.max_iter)
        with bar, executor_for(args.scheduler) as executor:
            result = design(
                robot,
                settings,
                progress=lambda k, n, best: bar.ended(k, f"best {settings.objective} {best:.4g}"),
                stage=args.stage,
                executor=executor,
                source=source_of(args) if executor is not None else None,
                iteration=bar.iteration,
            )
        written = write(result, robot, ts, Path(args.out)) if args.out else []
    except (ValueError, RuntimeError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(
            f"{robot.name}: cond({'Y_b' if args.stage == 'load' else 'Y_m'}) = {result.cond:.1f} over one period at "
            f"{settings.report_rate:g} Hz "
            f"({settings.objective} objective {result.objective:.4g}; {len(result.starts)} starts, "
            f"{result.seconds:.0f} s)" + (f"\nwrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0
