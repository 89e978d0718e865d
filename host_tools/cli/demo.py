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
    from pathlib import Path

    from codegen.model.description import load_robot
    from host_tools.data.light_joints import warn_light_joints
    from host_tools.reports import demo as report
    from host_tools.studies import demo
    from host_tools.studies.identities import identity_checks

    robot = load_robot(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)
    warn_light_joints(robot)  # joints whose own tracking the input checks would flag (one notice)
    folder = Path(args.out) if args.out else Path("out") / robot.c_name
    print(report.generated(robot, demo.generate_into(robot, folder), folder))
    built = demo.build(robot, folder)
    if built is None:
        print("error: no C compiler (cc/gcc) on PATH")
        return 1
    print(report.built(built))
    checks = identity_checks(built.dynamics, args.states)
    print(report.identities(checks, args.states))
    loop = demo.loopback(robot)
    chain = (("base-link", args.base_link), ("tip-link", args.tip_link), ("overlay", args.overlay))
    spec = args.robot + "".join(f" --{k} {v}" for k, v in chain if v)
    print(report.collided(loop, report.save_collision(loop, folder), spec))
    print(report.estimated(*demo.estimators(robot, loop.fit.motion)))
    failed = demo.failures(checks, loop)
    print("PASS" if not failed else "FAIL: " + "; ".join(failed))
    return 0 if not failed else 1
