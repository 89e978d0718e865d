"""`manipgen study SPEC.yaml --store results.sqlite`: a resumable grid of estimator evaluations,
on this machine or a Dask cluster (host_tools.studies.study, docs/cluster.md)."""

from __future__ import annotations

import argparse
import json
import sqlite3
from typing import TYPE_CHECKING

from host_tools.cli.scheduler_option import add_scheduler, scheduler_refused

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from host_tools.studies.study import Study

EXAMPLE = """example SPEC.yaml (each list an axis of the grid; one item per combination):
  robots: [schunk_lwa4p]                 # bundled names or description files (next to the spec)
  setups: [liu]                      # RESOLUTION_MDEG@RATE_HZ items, or liu (its three)
  estimators: [findiff, movav, lsf, kalman, linhg, nlhg, slimod]
  model_errors: [0.0, 0.1]               # plant parameters x (1 + e)
  faults: [0.1]                          # fraction of samples lost on one axis (fault case)
  seeds: [0, 1, 2]
  tune: true                             # GA / grid search per item (else default or paper gains)
  generations: 20

collision items (a Monte-Carlo of manipgen collide; one item per observer and draw):
  collide:
    robots: [planar2]
    seeds: 100                           # draws 0..99: model-error factors and motions
    model_errors: [0.1]
    friction_error: [false, true]
    observers: [momentum, adaptive]      # default: collide's (less those needing absent IMUs)
    cutoffs: [1, 10, 100]                # steps' low-pass (Hz); impact_speeds, amplitude, ...
    push: {hz: 0.2, seconds: 1.5}        # the constant push, or none
  (docs/collision.md; examples/studies/collide.yaml)
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "study",
        help="a resumable grid of tunings and evaluations into an SQLite store (Liu et al. §IV)",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("spec", help="the study's YAML spec")
    s.add_argument("--store", required=True, help="SQLite file of finished items (created; a rerun resumes it)")
    s.add_argument("--report", action="store_true", help="make the tables and figures from the store (run nothing)")
    s.add_argument("--out", help="folder of the report (report.md/.json, figures); default: next to the store")
    add_scheduler(s, "items")
    s.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from codegen.errors import DescriptionError
    from host_tools.studies.study import (
        StoreError,
        WorkerMismatch,
        load_study,
    )

    console = Console(stderr=True, soft_wrap=True, markup=False)
    if scheduler_refused(args, console):
        return 2
    try:
        study = load_study(args.spec)
    except (DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}", markup=False, highlight=False)
        return 2
    store = Path(args.store)
    try:
        if args.report:
            return _report(study, store, Path(args.out) if args.out else store.parent, console)
        return _run(args, study, store, console)
    except (StoreError, WorkerMismatch) as exc:
        console.print(f"manipgen: error: {exc}", markup=False, highlight=False)
        return 2


def _run(args: argparse.Namespace, study: Study, store: Path, console: Console) -> int:
    import time

    from host_tools.cli.progress import ItemsBar
    from host_tools.studies.cluster import open_executor
    from host_tools.studies.collide_study import CollideItem, stored_collisions
    from host_tools.studies.study import StudyItem, open_store, run_study, stored

    t0 = time.perf_counter()
    with open_store(store) as db, ItemsBar(console, "items") as bar:

        def progress(done: int, total: int, item: StudyItem | CollideItem | None) -> None:
            if isinstance(item, CollideItem):
                what = f"{item.robot} seed {item.seed} {item.observer}"
            else:
                what = (
                    "" if item is None else f"{item.robot} {item.resolution_mdeg:g}@{item.rate_hz:g} {item.estimator}"
                )
            bar.update(done, total, what)

        try:
            with open_executor(args.scheduler) as executor:
                ran = run_study(study, db, executor, progress)
        except KeyboardInterrupt:
            bar.stop()
            kept = len(stored(db, study)) + len(stored_collisions(db, study.collisions))
            console.print(
                f"manipgen: interrupted; {kept} of {len(study.every_item)} items are in {store}: "
                "the same command continues from there"
            )
            return 130
    console.print(
        f"{ran} items run in {time.perf_counter() - t0:.0f} s, {len(study.every_item)} in {store}; "
        f"tables: manipgen study {args.spec} --store {store} --report"
    )
    return 0


def _computed_elsewhere(db: sqlite3.Connection, study: Study) -> dict[str, int]:
    """Per C-library fingerprint other than this machine's: how many of the study's items the store
    holds as computed with it (the same item but for its ``arithmetic``)."""
    from host_tools.bindings.libm import libm_fingerprint

    def without_arithmetic(key: str) -> tuple[str, str]:
        fields = json.loads(key)
        other = str(fields.pop("arithmetic", ""))
        return json.dumps(fields, sort_keys=True), other

    wanted = {without_arithmetic(it.key)[0] for it in study.items} | {
        without_arithmetic(it.key)[0] for it in study.collisions
    }
    counts: dict[str, int] = {}
    for table in ("items", "collide_items"):
        try:
            keys = [k for (k,) in db.execute(f"SELECT key FROM {table}")]  # two fixed table names
        except sqlite3.OperationalError:  # a store without that table
            continue
        for key in keys:
            bare, other = without_arithmetic(key)
            if bare in wanted and other != libm_fingerprint():
                counts[other] = counts.get(other, 0) + 1
    return counts


def _report(study: Study, store: Path, out: Path, console: Console) -> int:
    """report.md/.json of the evaluations; of the collision items, report.* when the spec has no
    evaluation, else collide_report.*."""
    from host_tools.bindings.libm import libm_fingerprint
    from host_tools.reports.collide_study import markdown, summary, write_collide_report
    from host_tools.reports.study import report, write_report
    from host_tools.studies.collide_study import stored_collisions
    from host_tools.studies.study import open_store, stored

    with open_store(store, create=False) as db:
        rows = stored(db, study)
        collisions = stored_collisions(db, study.collisions)
        missing = len(study.items) - len(rows) + len(study.collisions) - len(collisions)
        elsewhere = _computed_elsewhere(db, study) if missing else {}
    for fingerprint, count in elsewhere.items():
        console.print(
            f"manipgen: {count} of the study's items are in {store} as computed with another C library's kernels "
            f"(libm fingerprint {fingerprint}; here {libm_fingerprint()}): they are not reported here. Report "
            "where the study ran, or with the GLIBC_TUNABLES it ran with (docs/cluster.md)"
        )
    written = []
    if study.items:
        written += write_report(rows, len(study.items), out)
        print(report(rows, len(study.items))[0], end="")
    if study.collisions:
        total = len(study.collisions)
        written += write_collide_report(collisions, total, out, "collide_report" if study.items else "report")
        print(markdown(summary(collisions, total)), end="")
    console.print(f"wrote {', '.join(written)} in {out}/")
    return 0
