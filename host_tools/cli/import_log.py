"""`manipgen import-log`: a recorded run (Liu et al.'s LWA-4P .mat, or a ROS 1/2 bag) -> the log format (.npz)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser(
        "import-log", help="a recorded run (Liu et al.'s LWA-4P .mat, or a ROS 1/2 bag) -> the log format (.npz)"
    )
    im.add_argument(
        "file",
        help="a Liu et al. run: time, q, dq_hat, q_d, I_c (../shared/data/lwa4p/4ms_*_run1.mat); or a ROS bag: "
        "a ROS 2 bag folder (metadata.yaml) or a .bag (ROS 1), .db3 or .mcap (ROS 2) file with "
        "sensor_msgs/JointState (joints by name; resampled to the robot's sample period)",
    )
    im.add_argument(
        "--robot",
        required=True,
        help="bundled name, a .yaml or a .urdf path (its encoders, gear ratios, torque constants and current limits)",
    )
    im.add_argument("--base-link", help="URDF: first link of the chain (default: the root)")
    im.add_argument("--tip-link", help="URDF: last link of the chain (default: the only leaf)")
    im.add_argument("--overlay", help="URDF: YAML with what URDF cannot say (friction, encoders, ...)")
    im.add_argument("--out", required=True, help="the log to write (.npz, docs/realtime.md)")
    im.add_argument("--topic", help="ROS bag: the JointState topic (default: the bag's only one), e.g. /joint_states")
    im.add_argument(
        "--command-topic",
        help="ROS bag: the commanded torque (JointState effort, or Float64MultiArray in the description's "
        "joint order) -> tau_cmd; tau stays the measured effort",
    )
    im.add_argument(
        "--start-position",
        help="q1,q2,... (rad or m): the joint positions at the run's first sample, needed where an encoder "
        "counter wraps within a joint's travel (e.g. 16 bits on the motor side); stored in the log",
    )
    im.add_argument(
        "--json",
        action="store_true",
        help="print the JSON document (robot, samples, sample_period, tau_rms, at_current_limit, checks) "
        "instead of the summary",
    )
    im.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    import numpy as np

    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.data.checks import (
        check_log,
        parse_start_position,
        require_absolute_positions,
        with_start_position,
    )
    from host_tools.data.json_doc import finite
    from host_tools.data.logs import LogError
    from host_tools.data.mat_logs import import_mat
    from host_tools.data.ros_bags import BagReport, is_bag, read_bag

    report: BagReport | None = None
    try:
        robot = load_robot(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)
        start = None if args.start_position is None else parse_start_position(args.start_position, robot)
        require_absolute_positions(robot, start)
        if is_bag(args.file):
            imported = read_bag(args.file, robot, topic=args.topic, command_topic=args.command_topic)
            log, report = imported.log, imported.report
        elif Path(args.file).is_dir():
            raise ValueError(f"{args.file}: a folder, but not a ROS 2 bag (no metadata.yaml in it)")
        elif args.topic or args.command_topic:
            raise ValueError(f"{args.file}: --topic and --command-topic belong to ROS bags (.bag, .db3, .mcap)")
        else:
            log = import_mat(args.file, robot)
        if start is not None:
            log = with_start_position(log, robot, start)
        checks = check_log(log, robot, args.file)
        log.save(args.out)
    except (ValueError, LogError, DescriptionError, OSError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    rms = np.sqrt(np.mean(log.tau**2, axis=0))
    saturated = np.sum(log.extra.get("tau_saturated", np.zeros(log.tau.shape, bool)), axis=0)
    if args.json:
        doc = {
            "file": args.file,
            "out": args.out,
            "robot": robot.name,
            "joints": [j.name for j in robot.joints],
            "samples": len(log.time),
            "sample_period": log.sample_period,
            "tau_rms": rms.tolist(),
            "at_current_limit": saturated.tolist(),
            "start_position": None if start is None else list(start),
            "checks": checks.as_json(),
            "flagged_samples": int(np.sum(checks.flagged)),
            "check_bounds": checks.bounds,
        }
        for line in checks.lines():  # the document on stdout, each finding also as one line on stderr
            print(f"manipgen: check: {line}", file=sys.stderr)
        print(json.dumps(finite(doc), indent=1))
        return 0
    if report is not None:
        print(
            f"{args.file} -> {args.out}: {robot.name}, {len(log.time)} samples every {log.sample_period:g} s "
            f"({log.time[-1] - log.time[0]:.1f} s from the first stamp of {report.topic})"
        )
        print("\n".join(report.lines()))
    else:
        print(
            f"{args.file} -> {args.out}: {robot.name}, {len(log.time)} samples every {log.sample_period:g} s "
            f"({log.time[-1] - log.time[0]:.1f} s; the current leads by 2 samples, so it starts at the third)"
        )
    print("joint       " + "".join(f"{j.name:>10}" for j in robot.joints))
    print("tau RMS N m " + "".join(f"{v:>10.3f}" for v in rms))
    if "tau_saturated" in log.extra:
        print("at I limit  " + "".join(f"{int(v):>10d}" for v in saturated))
    print("\n".join(f"check: {line}" for line in checks.lines()) or "checks: no findings")
    if checks.findings:
        print(
            f"flagged: {int(np.sum(checks.flagged))} of {len(log.time)} samples, left out of identify and "
            "thresholds (--keep-flagged keeps them)"
        )
    return 0
