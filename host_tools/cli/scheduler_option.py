"""The --scheduler option of every command that fans out (host_tools.studies.cluster)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from rich.console import Console

    from host_tools.bindings.source import RobotSource

HELP = (
    "where the {items} run: local:N (a Dask cluster of N worker processes here) or a running "
    "Dask scheduler's address, tcp://HOST:8786 (default: {default}; needs pip install 'manipgen[cluster]')"
)
POOL = "a process pool on this machine's cores"


def add_scheduler(parser: argparse.ArgumentParser, items: str, default: str = POOL) -> None:
    """--scheduler; ``items``: what fans out, ``default``: where it runs without the option."""
    parser.add_argument("--scheduler", metavar="ADDRESS|local:N", help=HELP.format(items=items, default=default))


def scheduler_problem(args: argparse.Namespace) -> str | None:
    """The one line to print (exit 2) when --scheduler cannot be used, else None."""
    from host_tools.studies.cluster import SchedulerError, reach_scheduler

    try:
        reach_scheduler(args.scheduler)
    except SchedulerError as exc:
        return str(exc)
    return None


def source_of(args: argparse.Namespace) -> RobotSource:
    """The description of add_robot_arguments' arguments, as work items carry it."""
    from host_tools.bindings.source import RobotSource

    return RobotSource.of(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)


@contextmanager
def executor_for(scheduler: str | None) -> Iterator[Executor | None]:
    """--scheduler's executor, or None without the option: the command's own local default (its
    items one after the other, or threads, where that is what it did before clusters)."""
    if scheduler is None:
        yield None
        return
    from host_tools.studies.cluster import open_executor

    with open_executor(scheduler) as executor:
        yield executor


def scheduler_refused(args: argparse.Namespace, console: Console) -> bool:
    """Print the one line (and return True: exit 2) when --scheduler cannot be used."""
    problem = scheduler_problem(args)
    if problem:
        console.print(f"manipgen: error: {problem}", markup=False, highlight=False)
    return problem is not None
