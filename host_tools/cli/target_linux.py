"""`manipgen target linux`: the generated step in a real-time Linux process over UDP (issue #48)."""

from __future__ import annotations

import argparse

from host_tools.cli.generate import add_robot_arguments, robot_of
from host_tools.cli.progress import stage


def add_parser(actions: argparse._SubParsersAction) -> None:
    """The `linux` action of `manipgen target` (its own options: no --cpu)."""
    a = actions.add_parser(
        "linux",
        help="real-time Linux: <robot>_rt_linux runs the step at the pipeline's rate (clock_nanosleep, SCHED_FIFO "
        "where permitted) and exchanges UDP datagrams with the host loopback's plant on 127.0.0.1, on the demo's "
        "collision run",
    )
    add_robot_arguments(a)
    a.add_argument("--estimator", help="velocity estimator (default: the description's)")
    a.add_argument("--observer", help="collision observer (default: the description's)")
    a.add_argument("--controller", help="controller (default: the description's)")
    a.add_argument("--out", help="build folder (default out/target/<robot>-linux)")
    a.add_argument(
        "--seconds", type=float, default=8.0, help="length of the collision run, push at half time (8: the demo's)"
    )
    a.add_argument(
        "--drop",
        type=int,
        action="append",
        default=[],
        metavar="K",
        help="the plant does not send sample K's input datagram (fault injection: the program must count it and "
        "run the sample on held inputs); repeatable",
    )
    a.add_argument("--cc", default="cc", help="the C compiler (default cc; gcc and clang build it warning-free)")
    a.add_argument(
        "--plant-priority",
        type=int,
        default=70,
        metavar="P",
        help="the plant's SCHED_FIFO priority where permitted, below the program's 80 (default 70; 0: the default "
        "policy, whose answers come late on a loaded machine)",
    )
    a.add_argument("--json", action="store_true", help="print the JSON document")
    a.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError
    from host_tools.target import linux
    from host_tools.target.cortex_m import TargetError

    console = Console(stderr=True, soft_wrap=True, markup=False)
    options = {"estimator": args.estimator, "observer": args.observer, "controller": args.controller}
    try:
        robot = robot_of(args)
        out = Path(args.out) if args.out else Path("out") / "target" / f"{robot.c_name}-linux"
        with stage(console, f"{robot.name} in a real-time Linux loop: design, build, run ..."):
            doc = linux.linux(robot, out, options, frozenset(args.drop), args.seconds, args.cc, args.plant_priority)
    except (ValueError, ConfigError, OptionError, DescriptionError, OSError, TargetError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    from host_tools.cli.target import write_report  # target's parser registers this command

    return write_report(out, "linux", doc, linux.table(doc), args.json)
