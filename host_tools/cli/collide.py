"""`manipgen collide`: collision detection scenario (Birjandi & Haddadin §IV): thresholds, delays, false alarms."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host_tools.cli.generate import add_robot_arguments
from host_tools.cli.progress import stage
from host_tools.cli.scheduler_option import add_scheduler, executor_for, scheduler_refused
from host_tools.data.json_doc import finite
from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES, lacking_sensors

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from host_tools.studies.collide import CollideSettings


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "collide", help="collision detection scenario (Birjandi & Haddadin §IV): thresholds, delays, false alarms"
    )
    add_robot_arguments(c)
    c.add_argument(
        "--model-error", type=float, default=0.1, help="model = description x U(1 -+ this) (Birjandi & Haddadin: 0.1)"
    )
    c.add_argument("--amplitude", type=float, default=5.0, help="external torque step, N m")
    c.add_argument(
        "--joint",
        type=int,
        default=1,
        help="joint the external torque acts on (1-based; Birjandi & Haddadin: the first link)",
    )
    c.add_argument(
        "--observers",
        nargs="+",
        help="residuals to compare (*_measured: exact qd, qdd from the simulator; *_imu: qd, qdd from simulated IMUs, "
        "one per link (the description's imus:), *_imu_tip: one at the tip; adaptive_momentum*: the adaptive "
        "observer in momentum form, qd only; also direct_imu and every registered observer). Default: "
        f"{' '.join(DEFAULT_OBSERVERS)}, less those that need sensors the description lacks (one notice)",
    )
    c.add_argument(
        "--seed",
        type=int,
        default=0,
        help="draw S: the model error's, and the motions' (random excitations S+1..S+5 design the thresholds, "
        "S+6 is the check motion with the collisions, S+7 the warm-up)",
    )
    c.add_argument(
        "--friction-error",
        action="store_true",
        help="the model error also on the joint parameters (viscous, Coulomb friction); default: inertial only, "
        "as Birjandi & Haddadin's simulations",
    )
    c.add_argument(
        "--shape",
        choices=("static", "fitted"),
        default="static",
        help="thresholds: a constant per joint, or with velocity, acceleration and standstill parts (manipgen "
        "thresholds' fit); both designed on the design motion with a held-out margin, and both with a level at "
        "rest of at least 2 FC / target (Coulomb friction: docs/collision.md)",
    )
    c.add_argument(
        "--setup",
        default="collide",
        help="the set-up record the pipelines run (host_tools.studies.paper_setups): collide (default: the "
        "model-adaptive observers hold their adaptation near the threshold) or birjandi (Birjandi & Haddadin's: "
        "they adapt through contacts)",
    )
    c.add_argument(
        "--model",
        choices=("description", "identified"),
        default="description",
        help="the non-adaptive observers' model (momentum, direct*; observer and controller): the drawn one "
        "(Birjandi & Haddadin's set-up), or the one identified on a commissioning run of the warm-up motion(s), "
        "held out from the threshold design; the model-adaptive observers keep the drawn model",
    )
    c.add_argument("--json", action="store_true", help="print the JSON document")
    c.add_argument("--out", help="folder for collide.{json,md,png}")
    add_scheduler(
        c,
        "observers' runs",
        "a process pool on this machine's cores, one feed (the observers fed by one estimator) per process; "
        "one feed: here, one observer after the other",
    )
    c.set_defaults(handler=run)


@contextmanager
def _executor(scheduler: str | None, settings: CollideSettings) -> Iterator[Executor | None]:
    """--scheduler's executor; without it a process pool of a process per feed (collide.feeds: each
    simulates its plant runs once and replays them through its other observers), or none (here, with
    the progress of each observer) for one feed or one core. More feeds than cores share the cores:
    the feeds' lengths are unequal (the iiwa's Kalman feed 12.8 s of CPU, the per-link IMU feed's 11.3,
    the tip IMU's 5.7), and the OS's time-sharing ends them all at about max(the longest, the sum /
    the cores), where a pool of one process per core ends at its fuller process's sum (docs/collision.md,
    "A process per feed, more feeds than cores")."""
    from host_tools.studies.cluster import open_executor
    from host_tools.studies.collide import feeds

    workers = len(feeds(settings.observers)) if (os.cpu_count() or 1) > 1 else 1
    if scheduler is not None:
        with executor_for(scheduler) as executor:
            yield executor
    elif workers > 1:
        with open_executor(None, workers) as pool:
            yield pool
    else:
        yield None


def _asked(args: argparse.Namespace) -> CollideSettings:
    """The scenario's settings the command line gives (the observers: the defaults)."""
    from host_tools.studies.collide import CollideSettings

    return CollideSettings(
        model_error=args.model_error,
        amplitude=args.amplitude,
        joint=args.joint,
        seed=args.seed,
        friction_error=args.friction_error,
        shape=args.shape,
        setup=args.setup,
        model=args.model,
    )


def _defaults_only(args: argparse.Namespace) -> bool:
    """Whether collide was asked for nothing but its scenario's defaults (and where to write)."""
    from host_tools.studies.collide import CollideSettings

    return _asked(args) == CollideSettings() and not args.observers and args.scheduler is None


def _elastic_scenario(args: argparse.Namespace, console: Any) -> int:
    """A series-elastic arm's collide with the defaults: Kirchhoff (2011)'s scenario, as `manipgen elastic
    collide` runs it, said in a note (Birjandi & Haddadin's needs a link-side torque; issue #46)."""
    from host_tools.cli import elastic
    from host_tools.studies.elastic_collision import ScenarioSettings

    console.print(
        f"manipgen: note: {args.robot} has series-elastic joints: Birjandi & Haddadin's scenario needs a "
        "link-side torque, so this runs Kirchhoff (2011)'s with the tau_el observer (manipgen elastic collide; "
        "docs/elastic.md)"
    )
    s = ScenarioSettings()
    run_args = argparse.Namespace(
        action="collide",
        robot=args.robot,
        out=args.out,
        json=args.json,
        threshold=s.threshold,
        k_r=s.k_r,
        force=getattr(args, "force", False),
    )
    return int(elastic.run(run_args))


def run(args: argparse.Namespace) -> int:
    import numpy as np
    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from codegen.model.robot import lacking_motion_limits
    from host_tools.bindings.source import RobotSource
    from host_tools.reports.collision import markdown, standin_line, write
    from host_tools.studies.collide import check_settings, scenario, standin_doc

    console = Console(stderr=True, soft_wrap=True, markup=False)
    if scheduler_refused(args, console):
        return 2
    unknown = [o for o in args.observers or () if o not in ENTRIES]
    if unknown:
        console.print(f"manipgen: error: unknown observer(s) {', '.join(unknown)}; choose from {', '.join(ENTRIES)}")
        return 2
    if not (args.amplitude > 0 and np.isfinite(args.amplitude) and args.seed >= 0):
        console.print("manipgen: error: --amplitude must be a positive number of N m, --seed >= 0")
        return 2
    try:
        source = RobotSource.of(args.robot, args.base_link, args.tip_link, args.overlay)
        robot = source.robot()
        if robot.elastic and _defaults_only(args):
            return _elastic_scenario(args, console)
        check_settings(robot, _asked(args))  # e.g. an elastic arm: refused before any note
        unbounded = lacking_motion_limits(robot)
        if unbounded:  # a stated stand-in, not an error (issue #46: collide on any description)
            source = replace(source, standin_limits=True)
            robot = source.robot()
            console.print(f"manipgen: note: {standin_line(standin_doc(unbounded))}")
        missing = {o: why for o in args.observers or DEFAULT_OBSERVERS if (why := lacking_sensors(ENTRIES[o], robot))}
        if missing and args.observers:  # asked for by name: refused before any work
            name, why = next(iter(missing.items()))
            raise ValueError(f"{robot.file}: observer {name}: {why}")
        if missing:
            reasons = sorted(set(missing.values()))
            console.print(f"manipgen: note: left out {', '.join(missing)}: {'; '.join(reasons)}")
        settings = replace(
            _asked(args), observers=tuple(o for o in args.observers or DEFAULT_OBSERVERS if o not in missing)
        )
        with stage(console, "collision scenario ...") as status, _executor(args.scheduler, settings) as executor:
            result = scenario(source, settings, progress=lambda s: status.update(s), executor=executor)
        result.doc["standin_limits"] = standin_doc(unbounded) if unbounded else None
        written = write(result, Path(args.out)) if args.out else []
    except (ValueError, OptionError, DescriptionError, OSError, RuntimeError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    limited = [name for name, o in result.doc["observers"].items() if o["closed_loop"]["torque_limited"]]
    if limited:
        console.print(
            f"manipgen: note: the closed loop of {', '.join(limited)} hit its torque limit on the collision-free "
            "design run (closed_loop.at_torque_limit): with this model error the controller left its linear range, "
            "so those rows measure the loop, not the observer"
        )
    if args.json:
        print(json.dumps(finite(result.doc), indent=1, allow_nan=False))  # a run's inf (a diverged loop): null
    else:
        print(
            markdown(result.doc)
            + f"\n{result.doc['seconds']:.0f} s"
            + (f"; wrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0
