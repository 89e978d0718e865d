"""The --scheduler option of every command that fans out (host_tools.studies.cluster)."""

from __future__ import annotations

import argparse

HELP = (
    "where the fanned-out work runs: local:N (a Dask cluster of N worker processes here) or a running "
    "Dask scheduler's address, tcp://HOST:8786 (default: a process pool on this machine's cores; "
    "needs pip install 'manipgen[cluster]')"
)


def add_scheduler(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler", metavar="ADDRESS|local:N", help=HELP)


def scheduler_problem(args: argparse.Namespace) -> str | None:
    """The one line to print (exit 2) when --scheduler cannot be used, else None."""
    from host_tools.studies.cluster import SchedulerError, check_scheduler

    try:
        check_scheduler(args.scheduler)
    except SchedulerError as exc:
        return str(exc)
    return None
