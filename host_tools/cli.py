"""The `manipgen` console entry point: codegen's commands plus those that run the generated C."""

from __future__ import annotations

import argparse
from typing import Sequence

from codegen.cli import add_robot_arguments, build_parser, run


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import demo

    return demo(args.robot, out=args.out, states=args.states)


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = build_parser()
    d = sub.add_parser("demo", help="generate, build (make) and check a robot's C end to end")
    add_robot_arguments(d)
    d.add_argument("--out", default="out", help="folder for the generated C and the build")
    d.add_argument("--states", type=int, default=1000, help="random states for the numeric check")
    d.set_defaults(handler=cmd_demo)
    return run(parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
