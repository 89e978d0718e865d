"""`manipgen evaluate`: velocity estimators in the closed loop (Liu et al. §IV), optionally GA-tuned."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from codegen.blocks import registry
from host_tools.cli.generate import add_beyond_limits, add_robot_arguments
from host_tools.cli.progress import stage
from host_tools.cli.scheduler_option import add_scheduler, scheduler_refused
from host_tools.reports import plots

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from rich.console import Console

    from host_tools.studies.evaluate import Setup


def add_parser(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("evaluate", help="velocity estimators in the closed loop (Liu et al. §IV), optionally GA-tuned")
    add_robot_arguments(e)  # the default trajectory: Liu et al.'s for schunk_lwa4p
    add_beyond_limits(e)
    e.add_argument(
        "--resolution-mdeg",
        type=float,
        help="link-side encoder resolution, millidegrees per count, on every joint (default: the "
        "description's coarsest joint, motor encoders divided by the gear ratio)",
    )
    e.add_argument(
        "--rate-hz", type=float, help="controller sample rate (default: 1 / the description's sample_period)"
    )
    e.add_argument(
        "--setups",
        nargs="+",
        metavar="MDEG@HZ",
        help="several set-ups in one go, e.g. 10@125 2@125 1@250, or liu for Liu et al.'s three (10@125 "
        "2@125 1@250) (one sub-folder each + fig9_setups.png; replaces --resolution-mdeg/--rate-hz; "
        "--json then prints a list)",
    )
    e.add_argument("--faults", type=float, default=0.1, help="fraction of lost samples on the last axis (fault case)")
    e.add_argument("--tune", action="store_true", help="GA-tune the observers (Table 3), grid-search the filters")
    e.add_argument(
        "--tune-faults",
        action="store_true",
        help="with --tune: tune with the fault case's lost samples on the tuning motion (Liu et al. Table 6's "
        "retuned columns, Fig. 8B); the ISE is still reported in normal and faulty operation",
    )
    e.add_argument("--generations", type=int, default=20, help="GA generations (Liu et al.: 20)")
    e.add_argument("--seed", type=int, default=0, help="random draw of the motion, noise and GA")
    e.add_argument(
        "--model-error",
        type=float,
        default=0.0,
        help="simulated robot's parameters = the model's x (1 + this): model-based observers feel it",
    )
    e.add_argument(
        "--estimators",
        nargs="+",
        default=list(registry.study_estimators()),
        help="any registered estimator, or a variant with its options (lsf:n=8,p=3 bde:n=2: evaluated as given, "
        "Liu et al. Table 5) (default: Liu et al.'s, " + " ".join(registry.study_estimators()) + ")",
    )
    e.add_argument(
        "--gains",
        default="default",
        help="default, or paper: Liu et al.'s tuned gains (Tables 4, 7, 8; schunk_lwa4p at 10@125, 2@125, "
        "1@250); with --log also the folder of a `--tune --out` run, and several comma-separated",
    )
    e.add_argument(
        "--log",
        nargs="+",
        metavar="RUN",
        help="recorded runs (.npz logs, Liu et al. .mat runs, ROS bags or CSVs: the formats identify and "
        "thresholds take): run the estimators over their encoder streams, ISE against Liu et al.'s offline "
        "ground truth (instead of the simulation)",
    )
    e.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    e.add_argument("--out", help="folder for evaluation.md/.csv/.json/.png")
    add_scheduler(e, "GA batches and grid variants")
    e.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.source import RobotSource
    from host_tools.studies.cluster import open_executor
    from host_tools.studies.evaluate import LIU_SETUPS, EstimatorRequest, Setup, own_setup

    console = Console(stderr=True, soft_wrap=True, markup=False)

    try:  # parsed once, here: the studies and the generator take them parsed
        args.requests = tuple(EstimatorRequest.parse(e) for e in args.estimators)
    except OptionError as exc:
        console.print(f"manipgen: error: --estimators: {exc}")
        return 2
    if scheduler_refused(args, console):
        return 2
    if args.log:
        return _evaluate_logs(args, console)
    if args.gains not in ("default", "paper"):
        console.print("manipgen: error: --gains is default or paper (a tuned folder goes with --log)")
        return 2
    try:
        # read once; the set-ups' work items carry its text
        source = RobotSource.of(args.robot, args.base_link, args.tip_link, args.overlay)
        own = own_setup(source.robot())
    except DescriptionError as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    pairs: list[tuple[float, float]] = [
        (
            own[0] if args.resolution_mdeg is None else args.resolution_mdeg,
            own[1] if args.rate_hz is None else args.rate_hz,
        )
    ]
    if args.setups:
        try:
            pairs = []
            for item in args.setups:
                if item == "liu":
                    pairs += LIU_SETUPS
                else:
                    resolution, rate = item.split("@")
                    pairs.append((float(resolution), float(rate)))
        except ValueError:
            console.print(f"manipgen: error: --setups takes RESOLUTION_MDEG@RATE_HZ items or liu, got {args.setups}")
            return 2
    setups = [
        Setup(
            source,
            resolution_mdeg=r,
            rate_hz=f,
            faults=args.faults,
            seed=args.seed,
            tune=args.tune,
            tune_faults=args.tune_faults,
            generations=args.generations,
            model_error=args.model_error,
            gains=args.gains,
        )
        for r, f in pairs
    ]
    problems = [p for s in setups for p in s.problems()]
    if problems:
        console.print("manipgen: error: " + "; ".join(dict.fromkeys(problems)))
        return 2
    docs = []
    with open_executor(args.scheduler) as executor:
        docs = _evaluate_setups(args, setups, console, executor)
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
    if args.out and len(docs) > 1:
        plots.evaluation_setups(docs, Path(args.out))
    return 0


def _evaluate_setups(
    args: argparse.Namespace, setups: list[Setup], console: Console, executor: Executor
) -> list[dict[str, Any]]:
    from pathlib import Path

    from host_tools.cli.progress import Bars
    from host_tools.reports.evaluation import summary, write_reports
    from host_tools.studies.evaluate import evaluate

    docs = []
    for setup in setups:
        resolution, rate = setup.resolution_mdeg, setup.rate_hz
        out = None if not args.out else Path(args.out) / (f"{resolution:g}mdeg_{rate:g}Hz" if args.setups else "")
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        with Bars(console) as bar:
            console.print(f"{setup.robot}: {resolution:g} mdeg, {rate:g} Hz")
            tasks = {r.label: bar.add_task(r.label, total=None, info="waiting") for r in args.requests}

            def progress(name: str, done: int, total: int, info: str) -> None:
                bar.update(tasks[name], completed=done, total=total, info=info)  # noqa: B023 (called within this iteration)

            evaluation = evaluate(setup, args.requests, progress=progress, executor=executor)
        if out is not None:
            write_reports(evaluation, setup, out)
        docs.append(evaluation.doc)
        if not args.json:
            print(summary(evaluation.doc, out))
    return docs


def _evaluate_logs(args: argparse.Namespace, console: Console) -> int:
    """manipgen evaluate ROBOT --log RUN [RUN ...]: the estimators over recorded encoder streams."""
    import json
    from pathlib import Path

    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError
    from host_tools.bindings.source import RobotSource
    from host_tools.data.checks import check_log
    from host_tools.data.formats import read_log
    from host_tools.data.logs import LogError
    from host_tools.reports.evaluation import log_table, write_log_reports
    from host_tools.studies.log_estimation import report

    gains = tuple(args.gains.split(","))
    for g in gains:
        if g not in ("default", "paper") and not (Path(g) / "evaluation.json").is_file():
            console.print(
                f"manipgen: error: --gains {g}: not default, paper nor a folder of `manipgen evaluate "
                "--tune --out` (evaluation.json)"
            )
            return 2
    try:
        source = RobotSource.of(args.robot, args.base_link, args.tip_link, args.overlay)
        robot = source.robot()  # loaded from the cache's copy of the description
        if Path(args.robot).is_file():  # the user's file, not the cache's copy, in what the checks say
            robot = dataclasses.replace(robot, file=args.robot)
        names = run_names(args.log)
        runs = {name: read_log(p, robot).log for name, p in zip(names, args.log)}
        # the input checks: reported (the estimators are scored on every sample; nothing is fitted)
        checks = {
            name: check_log(runs[name], robot, path, beyond_limits=args.beyond_limits)
            for name, path in zip(names, args.log)
        }
        for c in checks.values():
            for line in c.lines():
                console.print(f"manipgen: check: {line}", markup=False, highlight=False)
        with stage(console, "running the estimators over the logs ..."):
            doc, estimates = report(runs, source, gains, args.requests)
        for run, c in checks.items():
            doc["runs"][run]["checks"] = c.as_json()
        written = write_log_reports(doc, runs, estimates, gains[-1], Path(args.out)) if args.out else []
    except (ValueError, LogError, ConfigError, DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(log_table(doc) + (f"\nwrote {', '.join(written)} in {args.out}/" if written else ""))
    return 0


def run_names(paths: list[str]) -> list[str]:
    """Each --log's run name in the report: its file's stem, or its file name where two logs share a
    stem (the same run as CSV and bag: one run each, not one merged), or the path as given where two
    share that too; a log given twice is refused."""
    from pathlib import Path

    if len(set(paths)) < len(paths):
        twice = next(p for p in paths if paths.count(p) > 1)
        raise ValueError(f"--log {twice}: given twice")
    for name in (lambda p: Path(p).stem, lambda p: Path(p).name):
        names = [name(p) for p in paths]
        if len(set(names)) == len(names):
            return names
    return list(paths)  # distinct (checked above)
