"""`manipgen record`: a collision-free run on the loopback, written as a log (the input of `manipgen
thresholds`, so that designing thresholds needs no Python)."""

from __future__ import annotations

import argparse
import sys

from host_tools.cli.generate import add_robot_arguments, chain_flags, robot_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "record",
        help="a collision-free closed-loop run on the loopback, saved as a log (.npz) for `manipgen thresholds`",
    )
    add_robot_arguments(r)
    r.add_argument("--out", required=True, help="the log to write (.npz, docs/realtime.md)")
    r.add_argument(
        "--trajectory",
        default="generated",
        help="generated: a smooth test motion within the joints' limits (sine, point-to-point and "
        "trapezoidal moves at half the velocity and acceleration limits, slower, smaller and around a "
        "posture that needs less torque where the inverse dynamics would need more than half a torque "
        "limit, as in `manipgen demo`); or an excitation.json of `manipgen excite`",
    )
    r.add_argument("--duration", type=float, default=20.0, help="seconds (generated motion)")
    r.add_argument("--periods", type=int, default=2, help="periods of an excitation.json")
    r.add_argument("--seed", type=int, default=11, help="the generated motion's random draw")
    r.add_argument("--estimator", help="velocity estimator (default: the description's)")
    r.add_argument("--observer", help="collision observer (default: the description's)")
    r.add_argument("--controller", help="controller (default: the description's)")
    r.add_argument("--config", help="config JSON of the pipeline (gains; its thresholds are ignored)")
    r.add_argument(
        "--model-error",
        type=float,
        default=0.0,
        help="the simulated robot's parameters = the model's x (1 + this): residuals as with a model error",
    )
    r.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from host_tools.bindings.loopback import SimulationError, simulate
    from host_tools.bindings.rt import ConfigError, load_rt
    from host_tools.identification.excitation import Excitation
    from host_tools.studies.scenarios import fit_to_limits, saturated

    if not (args.duration > 0 and args.periods >= 1 and args.model_error > -1):
        print("manipgen: error: --duration must be > 0, --periods >= 1, --model-error > -1", file=sys.stderr)
        return 2
    robot = robot_of(args)
    rt = load_rt(robot, estimator=args.estimator, observer=args.observer, controller=args.controller)
    try:
        if args.config:
            rt.config.load(args.config)
        if args.trajectory == "generated":
            motion = fit_to_limits(robot, rt.sample_period, args.duration).motion
            traj = motion.trajectory(robot, args.duration, rt.sample_period, args.seed)
        else:
            traj = Excitation.load(args.trajectory).trajectory(rt.sample_period, args.periods)
    except (ConfigError, ValueError, OSError, KeyError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    if "det.threshold" in rt.config.keys():
        rt.config["det.threshold"] = 0.0  # detection off: the run is the thresholds' input
    params = np.asarray(rt.manifest["standard_parameters"], float) * (1.0 + args.model_error)
    try:
        result = simulate(rt, traj, true_params=params)
    except SimulationError as exc:
        print(f"manipgen: error: the simulation failed: {exc}", file=sys.stderr)
        return 1
    result.log.save(args.out)
    tau_max = rt.config["ctl.tau_max"] if "ctl.tau_max" in rt.config.keys() else [j.limits.tau for j in robot.joints]
    at_limit = saturated(result.log.extra["tau_cmd"], np.asarray(tau_max, float))
    if at_limit.any():
        joints = ", ".join(f"joint {i + 1}: {int(c)} at {tau_max[i]:.3g} N m" for i, c in enumerate(at_limit) if c)
        print(
            f"manipgen: error: wrote {args.out}, but tau_cmd reached the torque limit in {int(at_limit.sum())} "
            f"samples ({joints}): a saturated run is no collision-free reference for thresholds; the motion "
            "needs more torque than the description's limits (check them: the URDF's effort, an overlay's tau)",
            file=sys.stderr,
        )
        return 1
    speed = np.max(np.abs(result.log.extra["qd_true"]), axis=0)
    print(
        f"wrote {args.out}: {len(result.log)} samples ({len(result.log) * rt.sample_period:.1f} s) of {rt.name} "
        f"({rt.label}), collision-free; peak joint speeds "
        + ", ".join(f"{v:.2f}" for v in speed)
        + " rad/s (or m/s). Next: manipgen thresholds "
        + f"{args.robot}{chain_flags(args)} {args.out} --out config.json"
    )
    return 0
