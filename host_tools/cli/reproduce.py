"""`manipgen reproduce PAPER`: a paper's headline tables and claims, ours beside the paper's, a
verdict per claim (host_tools.studies.reproduce); the docs' tables are written from it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host_tools.cli.scheduler_option import add_scheduler, scheduler_refused
from host_tools.studies.reproduce.papers import ALL, PAPERS

if TYPE_CHECKING:
    from concurrent.futures import Executor
    from contextlib import AbstractContextManager

    from rich.console import Console

    from host_tools.studies.reproduce.records import Paper, Reproduction, Tier

PROJECT = Path(__file__).resolve().parents[2]  # a checkout's root (docs/ and ../shared/data next to it)


def default_data() -> Path:
    """The papers' data packages: $MANIPGEN_SHARED_DATA, else ../shared/data next to the project."""
    return Path(os.environ.get("MANIPGEN_SHARED_DATA", PROJECT.parent / "shared" / "data"))


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "reproduce",
        help="a paper's headline tables and claims, ours beside the paper's, with a verdict per claim",
        description=__doc__,
    )
    r.add_argument(
        "paper",
        metavar="PAPER",
        help=f"{', '.join(PAPERS)} or {ALL} (by first author and year, as docs/references.md cites them; "
        "the author alone names its paper: xu)",
    )
    r.add_argument(
        "--quick",
        action="store_true",
        help="the quick tier, a few minutes for all: no tuning, no design (Liu et al.: its own gains, Table 5, "
        "Experiment 1; Birjandi & Haddadin: collide on planar2, four observers; Xu et al.: the iiwa round trip on a "
        "stored excitation; Kirchhoff: the two stages on stored designs; Brunot et al.: a short ur5 closed loop); "
        "without it the full tier (Liu et al.: also the GA tuning, 20+ min on 2 cores; Birjandi & Haddadin: "
        "also kuka_iiwa14 at three seeds, the step timed; Xu et al., Kirchhoff: fresh designs; Brunot et al.: "
        "a longer run, timed)",
    )
    r.add_argument("--json", action="store_true", help="print the JSON document instead of the tables")
    r.add_argument(
        "--data",
        type=Path,
        help="the folder of the papers' data packages (Liu et al.'s in lwa4p/; default: $MANIPGEN_SHARED_DATA, "
        "else ../shared/data next to the project); without it, what needs them is reported as not run",
    )
    r.add_argument(
        "--write-docs", action="store_true", help="rewrite the docs' blocks of these tables (<!-- reproduce ... -->)"
    )
    r.add_argument(
        "--check-docs",
        action="store_true",
        help="compare the docs' blocks with this run, value by value; exit 1 naming each that moved",
    )
    r.add_argument("--docs", type=Path, default=PROJECT / "docs", help="the docs folder (default: the project's)")
    add_scheduler(r, "full tier's GA batches and grid variants")
    r.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from host_tools.reports.reproduce import NOT_YET, document, markdown
    from host_tools.studies.reproduce.papers import paper, resolve
    from host_tools.studies.reproduce.records import Paper, Pending

    console = Console(stderr=True, soft_wrap=True, markup=False)
    try:
        records = [paper(k) for k in resolve(args.paper)]
    except KeyError as exc:
        console.print(f"manipgen: error: {exc.args[0]}", markup=False, highlight=False)
        return 2
    papers = [p for p in records if isinstance(p, Paper)]
    pending = [p for p in records if isinstance(p, Pending)]
    if not papers:
        console.print(f"manipgen: error: {pending[0].citation} ({pending[0].key}): {NOT_YET}", markup=False)
        return 2
    if (args.write_docs or args.check_docs) and not args.docs.is_dir():
        console.print(f"manipgen: error: --docs {args.docs}: no such folder", markup=False, highlight=False)
        return 2
    if scheduler_refused(args, console):
        return 2
    reps = _run(papers, args, console)
    print(json.dumps(document(reps, pending), indent=1) if args.json else markdown(reps, pending))
    return _docs(reps, args, console)


def _run(papers: list[Paper[Any]], args: argparse.Namespace, console: Console) -> list[Reproduction]:
    """Each paper's tier; the quick tier fans nothing out, the full one through --scheduler."""
    from contextlib import nullcontext

    from host_tools.bindings.source import RobotSource
    from host_tools.cli.progress import stage
    from host_tools.studies.cluster import InlineExecutor, open_executor
    from host_tools.studies.reproduce.papers import reproduce
    from host_tools.studies.reproduce.records import Inputs

    tier: Tier = "quick" if args.quick else "full"
    reps = []
    where: AbstractContextManager[Executor] = (
        open_executor(args.scheduler) if tier == "full" else nullcontext(InlineExecutor())
    )
    with where as executor:
        for paper in papers:
            with stage(console, f"{paper.citation}: {tier} tier ...") as status:
                robots = {name: RobotSource.of(name) for name in paper.robots}  # loaded once, here
                inputs = Inputs(args.data or default_data(), executor, status.update, robots)
                reps.append(reproduce(paper, tier, inputs))
            console.print(f"{paper.citation}: {tier} tier in {reps[-1].seconds:.0f} s", markup=False, highlight=False)
    return reps


def _docs(reps: list[Reproduction], args: argparse.Namespace, console: Console) -> int:
    from host_tools.reports.docs_blocks import drift, write_docs

    try:
        if args.write_docs:
            written, missing = write_docs(args.docs, reps)
            for line in written:
                console.print(f"wrote {line}", markup=False, highlight=False)
            for name in missing:
                console.print(f"no block for {name} in {args.docs}", markup=False, highlight=False)
        problems = drift(args.docs, reps) if args.check_docs else []
    except (ValueError, OSError) as exc:
        console.print(f"manipgen: error: {exc}", markup=False, highlight=False)
        return 2
    for line in problems:
        console.print(f"manipgen: docs drifted: {line}", markup=False, highlight=False)
    if args.check_docs and not problems:
        console.print(f"docs match: every block of {', '.join(r.key for r in reps)} in {args.docs}", markup=False)
    return 1 if problems else 0
