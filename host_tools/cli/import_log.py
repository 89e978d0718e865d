"""`manipgen import-log`: a recorded run (seed 000's LWA-4P .mat) -> the log format (.npz)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser("import-log", help="a recorded run (seed 000's LWA-4P .mat) -> the log format (.npz)")
    im.add_argument("file", help="a seed 000 run: time, q, dq_hat, q_d, I_c (../shared/data/lwa4p/4ms_*_run1.mat)")
    im.add_argument(
        "--robot",
        required=True,
        help="bundled name or a .yaml path (its encoders, gear ratios, torque constants and current limits)",
    )
    im.add_argument("--out", required=True, help="the log to write (.npz, docs/realtime.md)")
    im.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    import numpy as np

    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.data.logs import LogError
    from host_tools.data.mat_logs import import_mat

    try:
        robot = load_robot(args.robot)
        log = import_mat(args.file, robot)
        log.save(args.out)
    except (ValueError, LogError, DescriptionError, OSError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    rms = np.sqrt(np.mean(log.tau**2, axis=0))
    saturated = np.sum(log.extra["tau_saturated"], axis=0)
    print(
        f"{args.file} -> {args.out}: {robot.name}, {len(log.time)} samples every {log.sample_period:g} s "
        f"({log.time[-1] - log.time[0]:.1f} s; the current leads by 2 samples, so it starts at the third)"
    )
    print("joint       " + "".join(f"{j.name:>10}" for j in robot.joints))
    print("tau RMS N m " + "".join(f"{v:>10.3f}" for v in rms))
    print("saturated   " + "".join(f"{int(v):>10d}" for v in saturated))
    return 0
