"""Resumable studies: a grid of estimator evaluations (Liu et al. §IV) written to an SQLite store.

    manipgen study SPEC.yaml --store results.sqlite [--scheduler local:4 | tcp://host:8786]
    manipgen study SPEC.yaml --store results.sqlite --report [--out DIR]

The spec (YAML) spans robots x set-ups (resolution, rate) x estimators x model errors x fault
rates x seeds; each combination is one item: the estimator tuned on its set-up's tuning motion (the
GA or the grid search, ``tune: true``) or with its default/paper gains, then evaluated on the test
motion, under lost samples and at a switch-on (host_tools.studies.evaluate). A ``collide:`` grid
adds collision items: collide's scenario, one observer on one draw (host_tools.studies.collide_study,
its own table in the store). Items are pure: an
item's result depends only on its fields and the description's text, so it is the same on any worker
(with the same pinned numpy, CasADi and libm: docs/cluster.md) and may be retried after a lost node.

The store (stdlib sqlite3, WAL journal) holds one row per finished item, written in its own
transaction as the item completes; a rerun skips the rows present, so an interrupted study loses at
most the items in flight. A row's key is the item's canonical JSON, which includes the description's
hash and every setting: a changed spec or description makes new rows, never mixes old ones in.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, as_completed
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np

import host_tools
from codegen.blocks import registry
from codegen.errors import DescriptionError
from codegen.model.yamlio import Located, Path_t, load_yaml, number
from host_tools.bindings.compiled import generator_fingerprint
from host_tools.bindings.libm import libm_fingerprint
from host_tools.bindings.loopback import SimulationError
from host_tools.bindings.source import RobotSource
from host_tools.studies.cluster import InlineExecutor
from host_tools.studies.collide_study import TABLE, CollideItem, load_grids, run_collide_draw, write_collide_item
from host_tools.studies.evaluate import LIU_SETUPS, EstimatorRequest, Setup, evaluate

SPEC_KEYS = {
    "robots",
    "setups",
    "estimators",
    "model_errors",
    "faults",
    "seeds",
    "tune",
    "tune_faults",
    "generations",
    "gains",
    "collide",  # collision items (host_tools.studies.collide_study)
}
# PRAGMA user_version of a store this code writes; a store of another version is refused (one line)
STORE_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    key TEXT PRIMARY KEY,        -- the item's canonical JSON (StudyItem.key)
    robot TEXT NOT NULL,
    resolution_mdeg REAL NOT NULL,
    rate_hz REAL NOT NULL,
    estimator TEXT NOT NULL,
    model_error REAL NOT NULL,
    faults REAL NOT NULL,
    seed INTEGER NOT NULL,
    result TEXT NOT NULL,        -- the estimator's entry of the evaluation JSON (sorted keys)
    seconds REAL NOT NULL,       -- the item's wall time on its worker (timing: not part of the result)
    cpu_seconds REAL NOT NULL,   -- its worker process's CPU time (what it costs; wall time grows on a busy node)
    finished TEXT NOT NULL       -- UTC, ISO 8601
)
"""


@dataclass(frozen=True)
class StudyItem:
    """One tuning + evaluation: what a worker needs, and nothing else."""

    robot: str  # the name the spec gives (bundled name or file)
    description: str  # RobotSource.key: the description's hash
    resolution_mdeg: float
    rate_hz: float
    estimator: str
    model_error: float
    faults: float
    seed: int
    tune: bool
    tune_faults: bool
    generations: int
    gains: str
    # the generator's and this code's fingerprint: a worker running another manipgen refuses the item
    code: str = ""
    # the C library's arithmetic (host_tools.bindings.libm): a worker whose libm differs refuses the item
    arithmetic: str = ""

    @property
    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def setup(self, source: RobotSource) -> Setup:
        return Setup(
            source,
            resolution_mdeg=self.resolution_mdeg,
            rate_hz=self.rate_hz,
            faults=self.faults,
            seed=self.seed,
            tune=self.tune,
            tune_faults=self.tune_faults,
            generations=self.generations,
            model_error=self.model_error,
            gains=self.gains,
        )


@dataclass(frozen=True)
class Study:
    file: str
    items: tuple[StudyItem, ...]
    sources: dict[str, RobotSource]  # by StudyItem.description (and CollideItem.description)
    collisions: tuple[CollideItem, ...] = ()

    @property
    def every_item(self) -> tuple[StudyItem | CollideItem, ...]:
        return self.items + self.collisions


def _list(doc: Located, key: str, default: list[Any] | None = None) -> list[Any]:
    value = doc.data.get(key, default)
    if value is None:
        raise doc.error((key,), "is required (a list)")
    if not isinstance(value, list) or not value:
        raise doc.error((key,), f"must be a non-empty list, got {value!r}")
    return value


def _setups(doc: Located) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for i, item in enumerate(_list(doc, "setups", ["liu"])):
        path: Path_t = ("setups", i)
        if item == "liu":
            out += LIU_SETUPS
            continue
        parts = str(item).split("@")
        if len(parts) != 2:
            raise doc.error(path, f"a set-up is RESOLUTION_MDEG@RATE_HZ (e.g. 10@125) or liu, got {item!r}")
        res, rate = number(doc, path, parts[0]), number(doc, path, parts[1])
        if not (res > 0 and np.isfinite(res)) or not 0 < rate <= 100000:
            raise doc.error(path, f"resolution must be > 0 mdeg and the rate in (0, 100000] Hz, got {item!r}")
        out.append((res, rate))
    return out


def load_study(path: str | Path) -> Study:
    """Read and check a study spec; every error names the file and the field."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise doc.error((), "a study spec is a mapping (robots:, setups:, estimators:, ...)")
    unknown = sorted(set(doc.data) - SPEC_KEYS)
    if unknown:
        raise doc.error((unknown[0],), f"unknown key; the spec's keys are {', '.join(sorted(SPEC_KEYS))}")
    collisions, sources = (
        load_grids(doc, Path(path).parent, code_fingerprint(), libm_fingerprint())
        if "collide" in doc.data
        else ([], {})
    )
    if collisions and set(doc.data) == {"collide"}:  # no estimator evaluations
        return Study(str(path), (), sources, tuple(collisions))
    known = registry.estimators()
    estimators = _list(doc, "estimators", list(registry.study_estimators()))
    for i, e in enumerate(estimators):
        if not isinstance(e, str) or e not in known:
            raise doc.error(("estimators", i), f"unknown estimator {e!r}; choose from {', '.join(known)}")
    flags = {}
    for key in ("tune", "tune_faults"):
        flags[key] = doc.data.get(key, False)
        if not isinstance(flags[key], bool):
            raise doc.error((key,), f"must be true or false, got {flags[key]!r}")
    generations = doc.data.get("generations", 20)
    if not isinstance(generations, int) or isinstance(generations, bool) or generations < 1:
        raise doc.error(("generations",), f"must be an integer >= 1, got {generations!r}")
    gains = doc.data.get("gains", "default")
    if gains not in ("default", "paper"):
        raise doc.error(("gains",), f"is default or paper (Liu et al.'s tuned gains), got {gains!r}")
    seeds = _list(doc, "seeds", [0])
    for i, s in enumerate(seeds):
        if not isinstance(s, int) or isinstance(s, bool):
            raise doc.error(("seeds", i), f"a seed is an integer, got {s!r}")
    model_errors = [number(doc, ("model_errors", i), v) for i, v in enumerate(_list(doc, "model_errors", [0.0]))]
    for i, v in enumerate(model_errors):
        if not v > -1:
            raise doc.error(("model_errors", i), f"a model error e scales the parameters by 1 + e > 0, got {v:g}")
    faults = [number(doc, ("faults", i), v) for i, v in enumerate(_list(doc, "faults", [0.1]))]
    for i, v in enumerate(faults):
        if not 0 <= v < 1:
            raise doc.error(("faults", i), f"a fault rate is the fraction of samples lost, in [0, 1), got {v:g}")
    setups = _setups(doc)
    items = []
    for i, name in enumerate(_list(doc, "robots")):
        spec = str(name)
        try:
            source = RobotSource.named_in(Path(path).parent, spec)
        except DescriptionError as exc:
            raise doc.error(("robots", i), str(exc)) from None
        sources[source.key] = source
        for (res, rate), est, me, fr, seed in (
            (s, e, m, f, d) for s in setups for e in estimators for m in model_errors for f in faults for d in seeds
        ):
            item = StudyItem(
                spec,
                source.key,
                res,
                rate,
                est,
                me,
                fr,
                seed,
                gains=str(gains),
                generations=generations,
                code=code_fingerprint(),
                arithmetic=libm_fingerprint(),
                **flags,
            )
            problems = item.setup(source).problems()
            if problems:
                raise doc.error(("robots", i), "; ".join(dict.fromkeys(problems)))
            items.append(item)
    return Study(str(path), tuple(dict.fromkeys(items)), sources, tuple(collisions))


@cache
def code_fingerprint() -> str:
    """The generator's fingerprint and a hash of the host code an item runs (host_tools without its
    command line, report and target parts): what an item's result depends on besides its fields (part of
    the item's key, checked on the worker)."""
    h = hashlib.sha256(generator_fingerprint().encode())
    root = Path(host_tools.__file__).parent
    presentation = ("cli", "reports", "target")
    for path in sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in presentation):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


Task = tuple[StudyItem | CollideItem, ...]  # what one worker runs at a time: an item, or one draw's collision items


def tasks(todo: list[StudyItem | CollideItem]) -> list[Task]:
    """The items to run, as work: an evaluation item alone; the collision items of one draw together
    (run_task: collide's sharing across the draw's observers), in the order of each task's first item."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for it in todo:
        groups.setdefault(("draw", *it.draw) if isinstance(it, CollideItem) else ("item", it.key), []).append(it)
    return [tuple(g) for g in groups.values()]


def run_task(task: Task, source: RobotSource) -> list[tuple[dict[str, Any], float, float]]:
    """One task on a worker (its own build cache; no nested pool): per item, (its result: the
    estimator's evaluation entry or the observer's collide entry; wall seconds; CPU seconds). An item
    that cannot be evaluated (every grid variant diverges, say) is stored with its ``error``: the same
    on every rerun, so it is not retried."""
    checks = (
        (
            task[0].code,
            code_fingerprint(),
            "this worker runs another manipgen than the client (code fingerprints differ: {here} here, {there} "
            "there): install the same commit and constraints.txt on every node (docs/cluster.md)",
        ),
        (
            task[0].arithmetic,
            libm_fingerprint(),
            "this worker's C library computes sin, cos, exp, tanh or pow in other last bits than the client's "
            "(libm fingerprints differ: {here} here, {there} there; glibc picks its kernels per CPU): run every "
            'node and the client with the same libm and GLIBC_TUNABLES (docs/cluster.md, "Identical results on '
            'every node")',
        ),
    )
    for there, here, refusal in checks:
        if there != here:
            raise WorkerMismatch(refusal.format(here=here, there=there))
    if isinstance(task[0], CollideItem):
        return run_collide_draw(cast(tuple[CollideItem, ...], task), source)
    item = cast(StudyItem, task[0])
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        doc = evaluate(item.setup(source), (EstimatorRequest(item.estimator),), executor=InlineExecutor()).doc
        result = doc["estimators"][item.estimator]
    except (SimulationError, ValueError) as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    return [(result, time.perf_counter() - t0, time.process_time() - c0)]


class WorkerMismatch(RuntimeError):
    """A worker whose manipgen differs from the client's (its results could differ)."""


class StoreError(ValueError):
    """A store that cannot be opened or is not this version's study store (one line for the user)."""


@contextmanager
def open_store(path: str | Path, create: bool = True) -> Iterator[sqlite3.Connection]:
    """The store, in WAL mode (readers, e.g. --report, never block the writer); created if absent
    and ``create``. Any other SQLite file, or a store of another version, is refused (StoreError)."""
    try:
        if not create and not Path(path).is_file():
            raise StoreError(f"{path}: no such store (run the study first)")
        with closing(sqlite3.connect(str(path), isolation_level=None)) as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            if version != STORE_VERSION and (version or tables):
                raise StoreError(
                    f"{path}: not a study store of this manipgen (SQLite user_version {version}, this version "
                    f"writes {STORE_VERSION}; tables {', '.join(tables) or 'none'}): give another --store"
                )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(SCHEMA)
            db.execute(TABLE)  # added to version 2: older stores gain the (empty) table
            db.execute(f"PRAGMA user_version = {STORE_VERSION}")
            yield db
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot use it as a study store ({exc})") from None


def done_keys(db: sqlite3.Connection) -> set[str]:
    return {row[0] for table in ("items", "collide_items") for row in db.execute(f"SELECT key FROM {table}")}


def write_item(
    db: sqlite3.Connection, item: StudyItem | CollideItem, result: dict[str, Any], seconds: float, cpu_seconds: float
) -> None:
    """One finished item, in its own transaction (committed before the next item is looked at)."""
    if isinstance(item, CollideItem):
        write_collide_item(db, item, result, seconds, cpu_seconds)
        return
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT OR REPLACE INTO items VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
            (
                item.key,
                item.robot,
                item.resolution_mdeg,
                item.rate_hz,
                item.estimator,
                item.model_error,
                item.faults,
                item.seed,
                json.dumps(result, sort_keys=True),
                seconds,
                cpu_seconds,
            ),
        )


def run_study(
    study: Study,
    db: sqlite3.Connection,
    executor: Executor,
    progress: Callable[[int, int, StudyItem | CollideItem | None], None] | None = None,
) -> int:
    """Run the items not yet in the store through ``executor``, writing each as it completes;
    ``progress(done, total, item just finished)``. Returns the number of items run now."""
    done = done_keys(db)
    todo = [it for it in study.every_item if it.key not in done]
    total, finished = len(study.every_item), len(study.every_item) - len(todo)
    if progress is not None:
        progress(finished, total, None)
    futures: dict[Future[list[tuple[dict[str, Any], float, float]]], Task] = {
        executor.submit(run_task, task, study.sources[task[0].description]): task for task in tasks(todo)
    }
    try:
        for fu in as_completed(futures):
            for item, (result, seconds, cpu_seconds) in zip(futures[fu], fu.result(), strict=True):
                write_item(db, item, result, seconds, cpu_seconds)
                finished += 1
                if progress is not None:
                    progress(finished, total, item)
    finally:
        for fu in futures:
            fu.cancel()
    return len(todo)


class Stored(NamedTuple):
    item: StudyItem
    result: dict[str, Any]
    seconds: float  # wall, on the worker
    cpu_seconds: float


def stored(db: sqlite3.Connection, study: Study) -> list[Stored]:
    """The study's items found in the store, in the spec's order."""
    rows = {
        k: (json.loads(r), s, c) for k, r, s, c in db.execute("SELECT key, result, seconds, cpu_seconds FROM items")
    }
    return [Stored(it, *rows[it.key]) for it in study.items if it.key in rows]
