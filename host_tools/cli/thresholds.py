"""`manipgen thresholds`: collision thresholds fitted to a collision-free log's residual, with a margin
from held-out parts of the run (host_tools.studies.thresholds)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from codegen.blocks import registry
from host_tools.cli.generate import add_beyond_limits, add_robot_arguments, robot_of
from host_tools.cli.progress import stage
from host_tools.cli.scheduler_option import add_scheduler, executor_for, scheduler_refused, source_of
from host_tools.studies.design_model import MODELS
from host_tools.studies.thresholds import BLOCKS, TARGET

if TYPE_CHECKING:
    from rich.console import Console

    from codegen.model.robot import Robot
    from host_tools.bindings.rt import Realtime
    from host_tools.studies.design_model import IdentifiedModel
    from host_tools.studies.thresholds import Designed, DesignSettings, Recording

HOUR = 3600.0  # s: --false-alarm-rate is a probability per hour of motion


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "thresholds",
        help="collision thresholds fitted to a collision-free log (threshold + kv |qd| + ka |qdd| + standstill "
        "part), with a margin from held-out parts of the run",
    )
    add_robot_arguments(t)
    add_beyond_limits(t)
    t.add_argument(
        "data",
        nargs="+",
        help="collision-free logs: .npz (docs/realtime.md), a Liu et al. .mat run, a ROS bag with one "
        "JointState topic (several: manipgen import-log --topic first) or a CSV (time, q, [qd,] tau; "
        "irregular stamps resampled); several runs: the thresholds cover them all and the margin comes from "
        "each run held out in turn (the spread between runs)",
    )
    t.add_argument(
        "--observer",
        choices=[n for n, o in registry.observers().items() if o.replays_logs],
        help="the residual to design for (default: the description's; the *_measured observers read measured "
        "motion, which a log does not carry)",
    )
    t.add_argument("--estimator", help="velocity estimator of the pipeline (default: the description's)")
    t.add_argument("--config", help="config JSON to start from (gains of the observer, encoders, model)")
    t.add_argument(
        "--model",
        choices=MODELS,
        default="auto",
        help="the model the residual is computed with: the description's (or --config's model.params), or one "
        "identified on the design runs with identify's defaults, each held-out block's (several runs: each "
        "run's) margin from a model identified without it; auto (the default): both, keeping the lower sum of "
        "mean thresholds (the description's with --config's model.params, --static, a model-adaptive observer "
        "or series-elastic joints)",
    )
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
        "--false-alarm-rate",
        type=float,
        metavar="P",
        help="per-joint margins instead: an extreme-value (Gumbel) fit to each joint's held-out block maxima, "
        "designed so that an hour of motion reaches --target with probability P (--target 1: P is the false-alarm "
        "probability per hour)",
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
        nargs="+",
        help="other collision-free runs (any format DATA takes): their residual against the thresholds; exit code 1 "
        "if one has false alarms",
    )
    t.add_argument("--plot", metavar="PNG", help="r(t) per joint with the thresholds (and --check's run)")
    t.add_argument("--json", action="store_true", help="print the JSON document")
    add_scheduler(t, "--tune candidates", "here, one after the other")
    t.set_defaults(handler=run)


def _options_refused(args: argparse.Namespace, console: Console) -> bool:
    """The options' values checked together (one line naming them); True: refused (exit 2)."""
    if not (
        (args.margin is None or args.margin >= 1)
        and 0 < args.target <= 1
        and args.blocks >= 2
        and args.floor >= 0
        and args.skip >= 0
        and (args.false_alarm_rate is None or 0 < args.false_alarm_rate < 1)
    ):
        console.print(
            "manipgen: error: --margin must be >= 1, --target in (0, 1], --blocks >= 2, --floor and --skip >= 0, "
            "--false-alarm-rate in (0, 1)"
        )
        return True
    if args.plot and not args.plot.lower().endswith(".png"):
        console.print(f"manipgen: error: --plot {args.plot}: the residual plot is a PNG (name it .png)")
        return True
    if args.margin is not None and args.false_alarm_rate is not None:
        console.print("manipgen: error: --margin gives the margin; --false-alarm-rate derives it: give one")
        return True
    return False


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError, with_config_terms
    from host_tools.data.checks import check_log
    from host_tools.data.formats import read_log
    from host_tools.data.logs import LogError
    from host_tools.reports.thresholds import document, plot, text
    from host_tools.studies.design_model import choose
    from host_tools.studies.thresholds import DesignSettings, Recording

    console = Console(stderr=True, soft_wrap=True, markup=False)
    if scheduler_refused(args, console) or _options_refused(args, console):
        return 2
    settings = DesignSettings(
        args.margin,
        args.target,
        args.blocks,
        args.static,
        args.floor,
        args.skip,
        args.keep_flagged,
        args.tune,
        args.false_alarm_rate,
        None if args.false_alarm_rate is None else HOUR,
    )
    try:
        robot = robot_of(args)
        if args.config:  # the friction terms it sets (identify's choice) are generated
            robot = with_config_terms(robot, args.config)
        recordings = []
        for path in [*args.data, *(args.check or ())]:
            f = read_log(path, robot)
            found = check_log(f.log, robot, path, beyond_limits=args.beyond_limits)
            recordings.append(Recording(f.log, found, f.samples))
        data, checked = recordings[: len(args.data)], recordings[len(args.data) :]
        for r in recordings:
            for line in r.checks.lines():
                console.print(f"manipgen: check: {line}")
        designs: dict[str, tuple[Designed, Realtime]] = {}
        if args.model != "identified":  # first: its errors (a run that barely moves, ...) are the log's
            designs["description"] = _design(args, robot, None, data, checked, settings, console)
        described = designs.get("description")
        identified, note = _identified(args, robot, data, settings, console, described and described[1])
        if identified is not None:
            designs["identified"] = _design(args, robot, identified, data, checked, settings, console)
        choice = choose(args.model, {k: d for k, (d, _) in designs.items()}, identified, note)
        result, rt = designs[choice.used]
        if args.plot:
            plot(result, Path(args.plot))
        if args.out:
            rt.config.save(args.out)
    except (ValueError, LogError, ConfigError, OptionError, DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    # --check: false alarms on another run make the exit code 1 (the thresholds do not hold there)
    failed = 1 if result.false_alarms > 0 else 0
    if args.json:
        print(json.dumps(document(result, choice), indent=1))
        return failed
    written = [
        (path, what)
        for path, what in (
            (
                args.out,
                "config (det.threshold, kv, ka, ks, vs set; load it with rt.config.load)"
                if choice.used == "description"
                else f"config (the model identified on the {'runs' if len(args.data) > 1 else 'run'} -- "
                "model.params, its friction terms' fric.* -- and "
                "det.threshold, kv, ka, ks, vs; generate the pipeline with --friction-from it, then load it)",
            ),
            (args.plot, "residual plot"),
        )
        if path
    ]
    print(text(result, written, choice), end="")
    return failed


def _identified(
    args: argparse.Namespace,
    robot: Robot,
    data: list[Recording],
    settings: DesignSettings,
    console: Console,
    described: Realtime | None,
) -> tuple[IdentifiedModel | None, str]:
    """The model identified on the design run (--model identified, or auto beside the description's
    pipeline ``described``), or None and why not."""
    from host_tools.bindings.rt import config_values
    from host_tools.studies.design_model import ADAPTIVE_NOTE, STATIC_NOTE, identify_for_design

    if args.model == "description":
        return None, ""
    why = ""
    observer = registry.observers().get(str(described.rt_manifest["observer"])) if described is not None else None
    if robot.elastic:
        why = "series-elastic joints: identify's rigid model reads the links' torque, such a log holds the motors'"
    elif observer is not None and observer.adaptive:
        why = ADAPTIVE_NOTE
    elif args.static and args.model == "auto":
        why = STATIC_NOTE
    elif args.config and "model.params" in config_values(args.config):
        why = f"--config {args.config} gives the model (model.params)"
    if why:
        if args.model == "identified":
            raise ValueError(f"--model identified: {why}")
        return None, why
    on = "the runs" if len(data) > 1 else "the run"
    try:
        with stage(console, f"identifying the model on {on} ...") as status:
            return identify_for_design(robot, data, settings, lambda s: status.update(s)), ""
    except ValueError as err:
        if args.model == "identified":
            raise ValueError(f"--model identified: {err}") from None
        console.print(f"manipgen: note: the description's model only: identification on {on} failed: {err}")
        return None, f"identification on {on} failed: {err}"


def _design(
    args: argparse.Namespace,
    robot: Robot,
    identified: IdentifiedModel | None,
    data: list[Recording],
    checked: list[Recording],
    settings: DesignSettings,
    console: Console,
) -> tuple[Designed, Realtime]:
    """design_on with the description's model (``identified`` None) or the identified one (its
    pipeline generated with every friction term its fits set); the pipeline with the design."""
    from contextlib import nullcontext
    from dataclasses import replace

    from codegen.model.robot import with_friction_terms
    from host_tools.bindings.rt import load_rt
    from host_tools.bindings.source import PipelineSource
    from host_tools.studies.thresholds import coulomb_floor, design_on, tunable

    if identified is not None:
        robot = with_friction_terms(robot, identified.terms)
    rt = load_rt(robot, estimator=args.estimator, observer=args.observer)
    gain = tunable(rt) if args.tune else None
    if args.config:
        rt.config.load(args.config)
    if identified is not None:
        for key, value in identified.config.items():
            rt.config[key] = value
    with (
        stage(console, f"tuning {gain.what} on the run ...") if gain else nullcontext(),
        executor_for(args.scheduler if gain else None) as executor,
    ):
        pipeline = (  # the workers' pipelines with the config's friction terms too
            None
            if executor is None
            else PipelineSource.of(
                replace(source_of(args), friction_terms=robot.friction_terms), args.estimator, args.observer
            )
        )
        folds = None if identified is None else list(identified.folds)
        # the level at rest: the model's friction jumps by 2 (FC + FS) through zero velocity, and a
        # resting joint holds anywhere within it (issue #46's floor, collide's too)
        stribeck = rt.config["fric.fs"] if "fric.fs" in rt.config.keys() else None
        at_rest = coulomb_floor(robot, rt.config["model.params"], settings.target, stribeck)
        return design_on(rt, data, settings, checked, executor, pipeline, folds, at_rest), rt
