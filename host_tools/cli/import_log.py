"""`manipgen import-log`: a recorded run (an NPZ log, Liu et al.'s LWA-4P .mat, a ROS 1/2 bag or a CSV) ->
the log format (.npz), with its timing report and input checks."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from host_tools.cli.generate import add_beyond_limits

if TYPE_CHECKING:
    from codegen.model.robot import Robot
    from host_tools.data.checks import LogChecks
    from host_tools.data.formats import LogFile


def add_parser(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser(
        "import-log",
        help="a recorded run (an NPZ log, Liu et al.'s LWA-4P .mat, a ROS 1/2 bag or a CSV) -> the log format "
        "(.npz), with its timing report and input checks",
    )
    im.add_argument(
        "file",
        help="a Liu et al. run: time, q, dq_hat, q_d, I_c (../shared/data/lwa4p/4ms_*_run1.mat); a ROS bag: "
        "a ROS 2 bag folder (metadata.yaml) or a .bag (ROS 1), .db3 or .mcap (ROS 2) file with "
        "sensor_msgs/JointState (joints by name); a CSV: time, q1..qn[, qd1..qdn], tau1..taun (docs/realtime.md); "
        "or an NPZ log. Irregular stamps (a bag's, a CSV's) are resampled to the robot's sample period",
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
    add_beyond_limits(im)
    im.add_argument(
        "--json",
        action="store_true",
        help="print the JSON document (robot, samples, sample_period, timing, tau_rms, at_current_limit, "
        "recorded_velocity, checks) "
        "instead of the summary",
    )
    im.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.data.checks import check_log, parse_start_position
    from host_tools.data.formats import read_log
    from host_tools.data.json_doc import finite
    from host_tools.data.logs import LogError, fingerprint

    try:
        robot = load_robot(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)
        beyond = args.beyond_limits
        start = None if args.start_position is None else parse_start_position(args.start_position, robot, beyond)
        f = read_log(args.file, robot, topic=args.topic, command_topic=args.command_topic, start_position=start)
        checks = check_log(f.log, robot, args.file, beyond_limits=beyond)
        for key, value in fingerprint(robot).items():  # an NPZ of before the fingerprint: this description's
            f.log.extra.setdefault(key, value)
        f.log.save(args.out)
    except (ValueError, LogError, DescriptionError, OSError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        for line in checks.lines():  # the document on stdout, each finding also as one line on stderr
            print(f"manipgen: check: {line}", file=sys.stderr)
        print(json.dumps(finite(_document(args, robot, f, checks, start)), indent=1))
        return 0
    print("\n".join(_summary(args, robot, f, checks)))
    return 0


def _document(
    args: argparse.Namespace, robot: Robot, f: LogFile, checks: LogChecks, start: tuple[float, ...] | None
) -> dict[str, Any]:
    import numpy as np

    log = f.log
    saturated = np.sum(log.extra.get("tau_saturated", np.zeros(log.tau.shape, bool)), axis=0)
    return {
        "file": args.file,
        "out": args.out,
        "robot": robot.name,
        "joints": [j.name for j in robot.joints],
        "samples": len(log.time),
        "sample_period": log.sample_period,
        "timing": f.timing.as_json(),
        "tau_rms": _rms(log.tau).tolist(),
        "at_current_limit": saturated.tolist(),
        "start_position": None if start is None else list(start),
        # the log's own joint velocities (a CSV's qd_ columns, a bag's velocity field, a .mat run's
        # controller estimate), kept as qd_hat_logged: identify's --velocity recorded / auto reads them
        "recorded_velocity": "qd_hat_logged" in log.extra,
        "checks": checks.as_json(),
        "flagged_samples": int(np.sum(checks.flagged)),
        "check_bounds": checks.bounds,
    }


def _summary(args: argparse.Namespace, robot: Robot, f: LogFile, checks: LogChecks) -> list[str]:
    """The text summary: what was read, the timing report, a table per joint (columns two spaces
    apart at least, wide enough for the joint names), the findings."""
    import numpy as np

    log = f.log
    lines = [
        f"{args.file} -> {args.out}: {robot.name}, {len(log.time)} samples every {log.sample_period:g} s "
        f"({log.time[-1] - log.time[0]:.1f} s)",
        *f.lines(),
        "velocity    "
        + (
            "recorded (qd RMS below), kept: identify --velocity recorded fits with it, and auto compares it "
            "with its own estimate on a recorded run"
            if "qd_hat_logged" in log.extra
            else "none recorded: identify estimates it from the positions"
        ),
    ]
    rows = [("joint", [j.name for j in robot.joints])]
    rows.append(("tau RMS N m", [f"{v:.3f}" for v in _rms(log.tau)]))
    if "qd_hat_logged" in log.extra:
        rows.append(("qd RMS rad/s", [f"{v:.3f}" for v in _rms(log.extra["qd_hat_logged"])]))
    if "tau_saturated" in log.extra:
        rows.append(("at I limit", [str(int(v)) for v in np.sum(log.extra["tau_saturated"], axis=0)]))
    width = max(len(c) for _, cells in rows for c in cells) + 2
    head = max(len(h) for h, _ in rows) + 1
    lines += [f"{h:<{head}}" + "".join(f"{c:>{width}}" for c in cells) for h, cells in rows]
    lines += [f"check: {line}" for line in checks.lines()] or ["checks: no findings"]
    if checks.findings:
        lines.append(
            f"flagged: {int(np.sum(checks.flagged))} of {len(log.time)} samples, left out of identify and "
            "thresholds (--keep-flagged keeps them)"
        )
    return lines


def _rms(x: Any) -> Any:
    """Per column (joint) root mean square."""
    import numpy as np

    return np.sqrt(np.mean(np.asarray(x, float) ** 2, axis=0))
