"""`manipgen thresholds`: collision thresholds fitted to a collision-free log's residual, with a margin
from held-out parts of the run (host_tools.studies.thresholds)."""

from __future__ import annotations

import argparse

from host_tools.cli.generate import add_robot_arguments, robot_of
from host_tools.cli.progress import stage
from host_tools.cli.scheduler_option import add_scheduler, executor_for, scheduler_refused, source_of
from host_tools.reports import plots
from host_tools.studies.thresholds import BLOCKS, TARGET


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "thresholds",
        help="collision thresholds fitted to a collision-free log (threshold + kv |qd| + ka |qdd| + standstill "
        "part), with a margin from held-out parts of the run",
    )
    add_robot_arguments(t)
    t.add_argument(
        "data",
        help="a collision-free log (.npz, docs/realtime.md), a seed 000 .mat run or a ROS bag with one "
        "JointState topic (several: manipgen import-log --topic first)",
    )
    t.add_argument(
        "--observer",
        choices=("momentum", "adaptive", "adaptive_momentum", "direct"),
        help="the residual to design for (default: the description's; the *_measured observers read measured "
        "motion, which a log does not carry)",
    )
    t.add_argument("--estimator", help="velocity estimator of the pipeline (default: the description's)")
    t.add_argument("--config", help="config JSON to start from (gains of the observer, encoders, model)")
    t.add_argument(
        "--margin",
        type=float,
        help="factor on the fitted envelope (>= 1; default: derived so that the worst held-out block's "
        "max |r| / threshold is --target)",
    )
    t.add_argument(
        "--target",
        type=float,
        default=TARGET,
        help="the worst held-out max |r| / threshold the derived margin gives (default %(default)g)",
    )
    t.add_argument(
        "--blocks", type=int, default=BLOCKS, help="held-out blocks the run is split into (default %(default)d)"
    )
    t.add_argument(
        "--static", action="store_true", help="a constant threshold per joint (kv = ka = ks = 0): max |r| x margin"
    )
    t.add_argument("--floor", type=float, default=0.0, help="added to every threshold's static part, N m")
    t.add_argument("--skip", type=float, default=0.5, help="seconds of start-up left out")
    t.add_argument(
        "--keep-flagged",
        action="store_true",
        help="design from the samples the input checks flag too (default: left out, and listed)",
    )
    t.add_argument(
        "--out", help="write the config JSON with det.threshold, kv, ka, ks, vs set (and the tuned settings)"
    )
    t.add_argument(
        "--tune",
        action="store_true",
        help="first choose the adaptive observer's damping lambda (obs.lam) that gives the lowest "
        "thresholds on DATA (its gain K and the estimator are kept)",
    )
    t.add_argument(
        "--check",
        metavar="OTHER",
        help="another collision-free run: its residual against the thresholds; exit code 1 if it has false alarms",
    )
    t.add_argument("--plot", metavar="PNG", help="r(t) per joint with the thresholds (and --check's run)")
    t.add_argument("--json", action="store_true", help="print the JSON document")
    add_scheduler(t, "--tune candidates", "here, one after the other")
    t.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError, load_rt
    from host_tools.bindings.source import PipelineSource
    from host_tools.data.checks import check_log, with_settling
    from host_tools.data.logs import LogError
    from host_tools.data.mat_logs import load_log
    from host_tools.studies.thresholds import (
        Check,
        Tuned,
        check_thresholds,
        design_thresholds,
        require_tunable,
        tune_adaptive,
    )

    console = Console(stderr=True, soft_wrap=True)
    if scheduler_refused(args, console):
        return 2
    if not (
        (args.margin is None or args.margin >= 1)
        and 0 < args.target <= 1
        and args.blocks >= 2
        and args.floor >= 0
        and args.skip >= 0
    ):
        console.print(
            "manipgen: error: --margin must be >= 1, --target in (0, 1], --blocks >= 2, --floor and --skip >= 0"
        )
        return 2
    if args.plot and not args.plot.lower().endswith(".png"):
        console.print(f"manipgen: error: --plot {args.plot}: the residual plot is a PNG (name it .png)")
        return 2
    tuned: Tuned | None = None
    check: Check | None = None
    try:
        robot = robot_of(args)
        rt = load_rt(robot, estimator=args.estimator, observer=args.observer)
        if args.tune:
            require_tunable(rt)
        if args.config:
            rt.config.load(args.config)
        log = load_log(args.data, robot)
        other = load_log(args.check, robot) if args.check else None
        checks = [check_log(log, robot, args.data)] + ([check_log(other, robot, args.check)] if other else [])
        for found in checks:
            for line in found.lines():
                console.print(f"manipgen: check: {line}")
        # the flagged samples and 0.5 s around them: the residual and the estimator carry them on
        leave_out = [None if args.keep_flagged else with_settling(c.flagged, log.sample_period) for c in checks]
        try:
            if args.tune:
                with (
                    stage(console, "tuning the adaptive observer's damping on the run ..."),
                    executor_for(args.scheduler) as executor,
                ):
                    pipeline = None
                    if executor is not None:
                        pipeline = PipelineSource.of(source_of(args), args.estimator, args.observer)
                    tuned = tune_adaptive(rt, log, args.skip, leave_out[0], executor, pipeline)
            design = design_thresholds(
                rt,
                log,
                args.margin,
                args.skip,
                args.floor,
                target=args.target,
                blocks=args.blocks,
                static=args.static,
                exclude=leave_out[0],
            )
        except ValueError as err:
            raise ValueError(f"{args.data}: {err}") from None
        if other is not None:
            try:
                check = check_thresholds(rt, other, design, args.skip, leave_out[1])
            except ValueError as err:
                raise ValueError(f"{args.check}: {err}") from None
        for key, value in design.config().items():
            rt.config[key] = value
        if args.plot:
            plots.threshold_residuals(
                design,
                rt.sample_period,
                Path(args.plot),
                f"{rt.name} ({rt.label})\nr on {Path(args.data).name}, {_shape(design.margin, args.static)}"
                + (f" + {args.floor:g}" if args.floor else "")
                + (f"; blue: {Path(args.check).name}" if args.check else ""),
                (Path(args.check).name, check) if check is not None else None,
            )
        if args.out:
            rt.config.save(args.out)
    except (ValueError, LogError, ConfigError, OptionError, DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    doc: dict[str, object] = {
        "robot": rt.name,
        "pipeline": rt.label,
        "shape": "static" if args.static else "fitted",
        "margin": design.margin,
        "margin_from": {
            "derived": not design.margin_given,
            "rule": "given (--margin)" if design.margin_given else "max(1, worst held-out max |r| / envelope) / target",
            "target": design.target,
            "blocks": int(design.held_out.shape[0]),
            "held_out_worst": float(design.held_out.max()),
            "held_out_ratio": design.held_out.tolist(),
        },
        "skip_s": args.skip,
        "floor": args.floor,
        "samples": design.samples,
        "flagged_left_out": design.excluded,
        "checks": [{**f, "source": c.source} for c in checks for f in c.as_json()],
        "acceleration": design.acceleration,
        "threshold": design.threshold.tolist(),
        "kv": design.kv.tolist(),
        "ka": design.ka.tolist(),
        "ks": design.ks.tolist(),
        "vs": design.vs.tolist(),
        "threshold_mean": design.threshold_mean.tolist(),
        "max_residual": design.max_residual.tolist(),
        "at_time_s": design.at_time.tolist(),
    }
    if tuned is not None:
        doc["tuned"] = {
            "obs.lam": tuned.lam,
            "objective": tuned.objective,
            "default_objective": tuned.default_objective,
            "candidates": [{"obs.lam": lam, "objective": obj} for lam, obj in tuned.table],
        }
    if check is not None:
        doc["check"] = {
            "data": args.check,
            "max_residual": check.max_residual.tolist(),
            "ratio": check.ratio.tolist(),
            "false_alarm_samples": check.false_alarm_samples.tolist(),
            "threshold_mean": check.threshold_mean.tolist(),
        }
    # --check: false alarms on the other run make the exit code 1 (the thresholds do not hold there)
    failed = 1 if check is not None and int(check.false_alarm_samples.sum()) > 0 else 0
    if args.json:
        print(json.dumps(doc, indent=1))
        return failed
    derived = (
        "given (--margin)"
        if design.margin_given
        else f"max(1, worst held-out ratio {design.held_out.max():.3f} of {design.held_out.shape[0]} blocks) / "
        f"target {design.target:g}"
    )
    print(
        f"{rt.name} ({rt.label}), {design.samples} samples after {args.skip:g} s"
        + (f" ({design.excluded} flagged left out)" if design.excluded else "")
        + f"; {_shape(design.margin, args.static)} + {args.floor:g}\nmargin {design.margin:.3f}: {derived}"
        + ("" if design.acceleration or args.static else "; the estimator gives no q-ddot: ka is moot (0)")
        + "\n"
    )
    if tuned is not None:
        print(
            f"tuned: obs.lam = {tuned.lam:g} (sum_j max|r_j| / RMS(tau_j): {tuned.objective:.3g}, was "
            f"{tuned.default_objective:.3g})\n"
        )
    head = "| joint | max abs(r) | at (s) | threshold | kv | ka | ks | vs | mean threshold |" + (
        " check: max abs(r) | ratio | samples above | mean threshold |" if check is not None else ""
    )
    print(head + "\n|" + " --: |" * 9 + (" --: | --: | --: | --: |" if check is not None else ""))
    for i in range(len(design.threshold)):
        row = (
            f"| {i + 1} | {design.max_residual[i]:.4g} | {design.at_time[i]:.3f} | {design.threshold[i]:.4g} | "
            f"{design.kv[i]:.4g} | {design.ka[i]:.4g} | {design.ks[i]:.4g} | {design.vs[i]:.3g} | "
            f"{design.threshold_mean[i]:.4g} |"
        )
        if check is not None:
            row += (
                f" {check.max_residual[i]:.4g} | {check.ratio[i]:.2f} | {int(check.false_alarm_samples[i])} | "
                f"{check.threshold_mean[i]:.4g} |"
            )
        print(row)
    print(f"\nsum of the mean thresholds: {design.threshold_mean.sum():.4g}")
    if check is not None:
        alarms = int(check.false_alarm_samples.sum())
        print(
            f"\n{args.check}: "
            + (
                "no false alarm"
                if alarms == 0
                else f"{alarms} samples above a threshold (false alarms: lower --target, or raise --margin or --floor)"
            )
        )
    for path, what in (
        (args.out, "config (det.threshold, kv, ka, ks, vs set; load it with rt.config.load)"),
        (args.plot, "residual plot"),
    ):
        if path:
            print(f"wrote {path}: {what}")
    return failed


def _shape(margin: float, static: bool) -> str:
    if static:
        return f"threshold = {margin:.3g} x max |r|"
    return f"threshold = {margin:.3g} x (the least-mean envelope of |r|: c0 + kv |qd| + ka |qdd| + ks exp(-|qd|/vs))"
