"""`manipgen demo`: generate, build (make) and check a robot's C end to end."""

from __future__ import annotations

import argparse

from host_tools.cli.generate import add_robot_arguments


def add_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="generate, build (make) and check a robot's C end to end")
    add_robot_arguments(d)
    d.add_argument("--out", help="the folder to generate and build in (default out/<robot>)")
    d.add_argument("--states", type=int, default=1000, help="random states for the numeric check")
    d.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from host_tools.studies.demo import demo

    return demo(
        args.robot,
        out=args.out,
        states=args.states,
        base_link=args.base_link,
        tip_link=args.tip_link,
        overlay=args.overlay,
    )
