"""`manipgen record`: a collision-free run on the loopback, written as a log (the input of `manipgen
thresholds`, so that designing thresholds needs no Python)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from host_tools.cli.generate import add_robot_arguments, chain_flags, robot_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "record",
        help="a collision-free closed-loop run on the loopback, saved as a log (.npz) for `manipgen thresholds`",
    )
    add_robot_arguments(r)
    r.add_argument(
        "--out",
        required=True,
        action="append",
        help="the log to write (.npz, docs/realtime.md); with --hostile also .csv or .bag (ROS 1, JointState), "
        "and --out may be given more than once (the same rows in each: the NPZ taken row by row, the CSV and "
        "the bag resampled on reading)",
    )
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
    add_hostile_arguments(r)
    r.set_defaults(handler=run)


def add_hostile_arguments(r: argparse.ArgumentParser) -> None:
    h = r.add_argument_group(
        "hostile log (development data that looks like a real arm's log: host_tools.data.hostile, docs/realtime.md)"
    )
    h.add_argument(
        "--hostile",
        action="store_true",
        help="write the run as a field logger would: jittered stamps, gaps, repeated samples, the drive's "
        "filtered velocity, torque offsets and noise, a plant friction of another shape than the "
        "description's (each below, stated in --planted)",
    )
    h.add_argument("--planted", help="JSON of what was planted (gap and repeat stamps, offsets, friction)")
    h.add_argument("--jitter", type=float, help="s: std of the sampling instants (default: the sample period / 20)")
    h.add_argument("--gaps", type=int, default=4, help="gaps (runs of rows left out) (default: 4)")
    h.add_argument("--gap-samples", default="3-9", help="rows left out per gap, FIRST-LAST (default: 3-9)")
    h.add_argument("--repeats", type=int, default=5, help="rows repeating the one before at a new stamp (default: 5)")
    h.add_argument(
        "--drive-filter",
        type=float,
        default=0.005,
        help="s: time constant of the drive's first-order filter on its encoder's finite difference, the "
        "recorded velocity (default: 0.005)",
    )
    h.add_argument("--torque-noise", type=float, help="N m: std of the torque noise (default: 1e-3 x the torque limit)")
    h.add_argument(
        "--offset",
        help="J:V[,J:V...]: constant torque offsets, N m, joints 1-based (default: +FC/2 on the first joint)",
    )
    h.add_argument(
        "--stribeck",
        help="J:FS:VS[,...]: the plant's Stribeck terms (N m, rad/s) (default: joint 2, FS = its FC, VS = 0.07)",
    )
    h.add_argument(
        "--coulomb-scale",
        type=float,
        help="rad/s: the plant's Coulomb shape tanh(qd / this) instead of the description's (sgn or its tanh)",
    )


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from host_tools.bindings.loopback import SimulationError, simulate
    from host_tools.bindings.rt import ConfigError, load_rt
    from host_tools.data.light_joints import warn_light_joints
    from host_tools.data.logs import fingerprint
    from host_tools.data.loop_response import step_response_of
    from host_tools.identification.excitation import Excitation
    from host_tools.studies.scenarios import fit_to_limits, saturated

    if not (args.duration > 0 and args.periods >= 1 and args.model_error > -1):
        print("manipgen: error: --duration must be > 0, --periods >= 1, --model-error > -1", file=sys.stderr)
        return 2
    robot = robot_of(args)
    warn_light_joints(robot)  # the run's own tracking of these joints would be flagged (one notice)
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
        spec = _hostile_settings(args, robot.dof)
    except ValueError as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    if spec is not None:
        from host_tools.data.hostile import plant_parameters

        # the plant's friction is the hostile log's own, added along the motion; the controller's model
        # is the frictionless plant's (a friction feed-forward against a frictionless light joint
        # throws it about: M kp is its stiffness)
        params = plant_parameters(robot, params)
        if "model.params" in rt.config.keys():
            rt.config["model.params"] = plant_parameters(robot, np.asarray(rt.config["model.params"], float))
    try:
        result = simulate(rt, traj, true_params=params)
    except SimulationError as exc:
        print(f"manipgen: error: the simulation failed: {exc}", file=sys.stderr)
        return 1
    h = step_response_of(rt)  # the loop's answer to the motion's acceleration steps: the checks allow for it
    if h is not None:
        result.log.extra["qdd_step_response"] = h
    if spec is None:
        result.log.extra.update(fingerprint(robot))  # the chain and the description hash it ran on
        result.log.save(args.out[0])
    else:
        try:
            _write_hostile(robot, result.log, spec, args)
        except ValueError as exc:  # a run too short for the defects asked for
            print(f"manipgen: error: {exc}", file=sys.stderr)
            return 2
    tau_max = rt.config["ctl.tau_max"] if "ctl.tau_max" in rt.config.keys() else [j.limits.tau for j in robot.joints]
    at_limit = saturated(result.log.extra["tau_cmd"], np.asarray(tau_max, float))
    if at_limit.any():
        joints = ", ".join(f"joint {i + 1}: {int(c)} at {tau_max[i]:.3g} N m" for i, c in enumerate(at_limit) if c)
        print(
            f"manipgen: error: wrote {', '.join(args.out)}, but tau_cmd reached the torque limit in "
            f"{int(at_limit.sum())} samples ({joints}): a saturated run is no collision-free reference for "
            "thresholds; the motion needs more torque than the description's limits (check them: the URDF's "
            "effort, an overlay's tau)",
            file=sys.stderr,
        )
        return 1
    if spec is None:  # a hostile log's defects are planted: its checks find them by design
        friction_ff = float(rt.config["ctl.friction_ff"]) if "ctl.friction_ff" in rt.config.keys() else 0.0
        for line in off_trajectory_notes(robot, result.log, friction_ff > 0.0, args.out[0]):
            print(f"manipgen: warning: {line}", file=sys.stderr)
    speed = np.max(np.abs(result.log.extra["qd_true"]), axis=0)
    k, seconds = len(result.log), len(result.log) * rt.sample_period
    run = f"{k} samples ({seconds:.1f} s) of {robot.name} ({rt.label})"
    if spec is not None:  # the rows written are the hostile line's (gaps dropped, repeats added)
        run = f"a {k}-sample run ({seconds:.1f} s) of {robot.name} ({rt.label}), logged as the rows above"
    print(
        f"wrote {', '.join(args.out)}: {run}, collision-free; peak joint speeds "
        + ", ".join(f"{v:.2f}" for v in speed)
        + " rad/s (or m/s). Next: "
        + (
            f"manipgen thresholds {args.robot}{chain_flags(args)} {args.out[0]} --out config.json"
            if args.trajectory == "generated"
            else f"manipgen identify {args.robot}{chain_flags(args)} {args.out[0]} --excitation {args.trajectory}"
        )
    )
    return 0


def off_trajectory_notes(robot: Any, log: Any, friction_ff: bool, out: str) -> list[str]:
    """What the input checks will say of the run just recorded when it leaves its desired motion
    (the off_trajectory check, host_tools.data.checks): a line per joint, and where the joint's
    desired motion only crept there (under MOVING of its peak speed: rest to the checks) while the
    controller fed its Coulomb friction forward at sgn(qd_d), why: the feed-forward leaves the plant's
    friction nothing to meet in the direction of the creep, and a joint that M_jj Kp holds only
    loosely (a light wrist) runs ahead (issue 45: TALOS's left wrist, 27-115 counts ahead of a creep
    of 1-12, 4 without friction)."""
    import numpy as np

    from host_tools.data.checks import MOVING, check_log

    checks = check_log(log, robot, out)
    notes = []
    for j in range(robot.dof):
        spans = [f for f in checks.findings if f.kind == "off_trajectory" and f.joint == j + 1]
        if not spans:
            continue
        speed = np.abs(np.asarray(log.qd_des)[:, j])
        creep = max(float(np.max(speed[f.first : f.last + 1])) for f in spans)
        why = ""
        if friction_ff and robot.joints[j].FC > 0.0 and creep < MOVING * float(np.max(speed)):
            why = (
                f"; its desired motion only creeps there (|qd_d| <= {creep:.2g}, under {MOVING:.0%} of its peak "
                f"{float(np.max(speed)):.2g}) while the controller feeds its Coulomb friction forward at "
                f"sgn(qd_d) (FC {robot.joints[j].FC:g}): nothing holds the joint back in the creep's direction "
                "but M_jj Kp, which a light joint lacks; another --seed moves differently"
            )
        err = np.abs(np.asarray(log.q_des)[:, j] - np.asarray(log.extra["q_true"])[:, j])
        worst = max(float(np.max(err[f.first : f.last + 1])) for f in spans)
        notes.append(
            f"{out}: joint {j + 1} leaves its desired motion in {len(spans)} span(s) from t = {spans[0].t0:.3f} "
            f"to {spans[-1].t1:.3f} s ({sum(f.samples for f in spans)} samples), |q_des - q| up to {worst:.3g} "
            f"(the input checks' bound {checks.bounds['off_trajectory_bound'][j]:.3g}){why}; thresholds and "
            "identify leave these samples out (--keep-flagged keeps them)"
        )
    return notes


def _pairs(text: str | None, width: int, flag: str) -> dict[int, tuple[float, ...]] | None:
    """``J:V[:W],...`` -> {joint 0-based: (V[, W])}; None if not given."""
    if text is None:
        return None
    out = {}
    for item in text.split(","):
        parts = item.split(":")
        try:
            if len(parts) != width + 1:
                raise ValueError
            out[int(parts[0]) - 1] = tuple(float(v) for v in parts[1:])
        except ValueError:
            form = "J:V" if width == 1 else "J:FS:VS"
            raise ValueError(f"{flag}: {item!r}: expected {form} (joint 1-based, numbers), comma-separated") from None
    return out


def _hostile_settings(args: argparse.Namespace, dof: int) -> Any:
    """The Hostile settings of the flags, or None without --hostile (then none of its flags may be given)."""
    from host_tools.data.hostile import Hostile

    flags = ("planted", "jitter", "offset", "stribeck", "torque_noise", "coulomb_scale")
    given = [f for f in flags if getattr(args, f) is not None]
    if not args.hostile:
        if given or any(not str(o).lower().endswith(".npz") for o in args.out) or len(args.out) > 1:
            raise ValueError(
                "--planted, --jitter, --offset, --stribeck, --torque-noise, --coulomb-scale, a .csv or .bag --out and "
                "several --out belong to --hostile"
            )
        return None
    bad = [o for o in args.out if not str(o).lower().endswith((".npz", ".csv", ".bag"))]
    if bad:
        raise ValueError(f"--out {bad[0]}: a hostile log is written as .npz, .csv or .bag")
    try:
        lo, hi = (int(v) for v in args.gap_samples.split("-"))
    except ValueError:
        raise ValueError(f"--gap-samples: {args.gap_samples!r}: expected FIRST-LAST (rows, e.g. 3-9)") from None
    offsets = _pairs(args.offset, 1, "--offset")
    h = Hostile(
        jitter=args.jitter,
        gaps=args.gaps,
        gap_samples=(lo, hi),
        repeats=args.repeats,
        drive_filter=args.drive_filter,
        torque_noise=args.torque_noise,
        offsets=None if offsets is None else {j: v[0] for j, v in offsets.items()},
        stribeck=_pairs(args.stribeck, 2, "--stribeck"),  # type: ignore[arg-type]
        coulomb_scale=args.coulomb_scale,
        seed=args.seed,
    )
    h.check()
    for flag, spec in (("--offset", h.offsets), ("--stribeck", h.stribeck)):
        bad = [j + 1 for j in spec or {} if not 0 <= j < dof]
        if bad:
            raise ValueError(f"{flag}: joint {bad[0]}: {args.robot} has joints 1..{dof}")
    return h


def _write_hostile(robot: Any, log: Any, spec: Any, args: argparse.Namespace) -> None:
    from codegen.errors import warn
    from host_tools.data.hostile import as_log, hostile, unplanted, write_bag, write_csv

    left_out = unplanted(robot, spec)
    if left_out is not None:
        warn(robot.file, "friction", left_out)
    rec = hostile(robot, log, spec)
    for out in args.out:
        if str(out).lower().endswith(".csv"):
            write_csv(rec, out, robot)
        elif str(out).lower().endswith(".bag"):
            write_bag(rec, out, robot)
        else:
            as_log(rec, robot).save(out)
    if args.planted:
        rec.write_planted(args.planted)
    gaps = ", ".join(f"{a:.3f}..{b:.3f}" for a, b in rec.gaps) or "none"
    repeats = f"at {', '.join(f'{t:.3f}' for t in rec.repeats)} s" if rec.repeats else "none"
    print(f"hostile: {len(rec.time)} rows; gaps (stamps before..after, s): {gaps}; repeated rows: {repeats}")
