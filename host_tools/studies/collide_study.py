"""Collision items of a study (`manipgen study`, host_tools.studies.study): collide's scenario
(host_tools.studies.collide) as a Monte-Carlo over robots x model-error draws x friction error on/off
x observers, one item per observer and draw.

A spec's ``collide:`` is one grid or a list of grids::

    collide:
      - robots: [kuka_iiwa14]
        seeds: 100                 # draws 0..99 (or a list); a seed is collide's --seed: the model
                                   # error's factors and the motions
        model_errors: [0.1]
        friction_error: [false, true]
        observers: [momentum, adaptive]   # default: collide's, less those the robot lacks sensors for
        cutoffs: [1, 10, 100]      # any other CollideSettings field: the contact kinds and the set-up
        impact_speeds: [0.1, 0.25, 0.5]
        push: {hz: 0.2, seconds: 1.5}     # the constant push (push: none: without)

The contact kinds are collide's: filtered steps (one per cut-off: a first-order rise, 10-90 % in
ln 9 / (2 pi f)), Hunt-Crossley impacts (one per target tip speed), and the study's constant push:
the step's ``amplitude`` on the same joint at each event, low-passed at ``push.hz`` and held for
``push.seconds`` (the whole window in which its detection counts): a contact that an adaptive observer
could absorb while it builds up.

An item's result is collide's JSON entry of its observer (observer_item: the same numbers as the
observer's entry of ``manipgen collide ROBOT --seed S --model-error E``, bit for bit, whatever else
the study holds), plus the push's delays, each impact's target speed and the seconds of the check
motion on which the false alarms were counted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from codegen.errors import DescriptionError
from codegen.model.robot import lacking_motion_limits
from codegen.model.yamlio import Located, Path_t, number
from host_tools.bindings.loopback import Replays, SimulationError
from host_tools.bindings.rt import Realtime
from host_tools.bindings.source import RobotSource
from host_tools.studies import collide
from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES, lacking_sensors

GRID_KEYS = {"robots", "seeds", "model_errors", "friction_error", "observers", "push"}
# CollideSettings fields a grid may set (the others are its axes, or collide's)
SETTINGS = {
    f.name
    for f in fields(collide.CollideSettings)
    if f.name not in ("seed", "model_error", "friction_error", "observers")
}
PUSH = {"hz": 0.2, "seconds": 1.5}  # a push building up over seconds (time constant 0.8 s), held 1.5 s

TABLE = """
CREATE TABLE IF NOT EXISTS collide_items (
    key TEXT PRIMARY KEY,        -- the item's canonical JSON (CollideItem.key)
    robot TEXT NOT NULL,
    observer TEXT NOT NULL,
    model_error REAL NOT NULL,
    friction_error INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    result TEXT NOT NULL,        -- the observer's entry (sorted keys), or {"error": ...}
    seconds REAL NOT NULL,       -- wall time on the worker (not part of the result)
    cpu_seconds REAL NOT NULL,   -- its worker process's CPU time
    finished TEXT NOT NULL       -- UTC, ISO 8601
)
"""


@dataclass(frozen=True)
class CollideItem:
    """One observer on one draw: what a worker needs, and nothing else."""

    robot: str  # the name the spec gives
    description: str  # RobotSource.key
    observer: str
    seed: int
    model_error: float
    friction_error: bool
    settings: str  # the other CollideSettings fields, canonical JSON
    push_hz: float  # 0: no push
    push_s: float
    code: str = ""  # host_tools.studies.study.code_fingerprint
    arithmetic: str = ""  # host_tools.bindings.libm.libm_fingerprint

    @property
    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def collide_settings(self) -> collide.CollideSettings:
        given: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(self.settings).items()
        }
        return replace(
            collide.CollideSettings(**given),
            seed=self.seed,
            model_error=self.model_error,
            friction_error=self.friction_error,
            observers=(self.observer,),
        )

    @property
    def draw(self) -> tuple[str, str, int, float, bool, str, float, float]:
        """What the observers of one draw share (the threshold ratio's momentum is the same draw's)."""
        return (
            self.robot,
            self.description,
            self.seed,
            self.model_error,
            self.friction_error,
            self.settings,
            self.push_hz,
            self.push_s,
        )


def _axis(doc: Located, path: Path_t, grid: dict[str, Any], key: str, default: list[Any]) -> list[Any]:
    value = grid.get(key, default)
    if not isinstance(value, list) or not value:
        raise doc.error((*path, key), f"must be a non-empty list, got {value!r}")
    return value


def _seeds(doc: Located, path: Path_t, value: Any) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise doc.error(path, f"a number of draws is >= 1, got {value}")
        return list(range(value))
    if not isinstance(value, list) or not value:
        raise doc.error(path, f"is a number of draws (seeds 0..N-1) or a non-empty list of seeds, got {value!r}")
    for i, s in enumerate(value):
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise doc.error((*path, i), f"a seed is an integer >= 0, got {s!r}")
    return value


def _settings(doc: Located, path: Path_t, grid: dict[str, Any]) -> dict[str, Any]:
    """The grid's CollideSettings fields, typed as collide's defaults are."""
    defaults = collide.CollideSettings()
    out: dict[str, Any] = {}
    for key in sorted(set(grid) & SETTINGS):
        default, value = getattr(defaults, key), grid[key]
        where = (*path, key)
        if isinstance(default, tuple):
            if not isinstance(value, list) or not value:
                raise doc.error(where, f"must be a non-empty list, got {value!r}")
            out[key] = [number(doc, (*where, i), v) for i, v in enumerate(value)]
        elif isinstance(default, bool) or isinstance(default, str):
            if type(value) is not type(default):
                raise doc.error(where, f"must be a {type(default).__name__}, got {value!r}")
            out[key] = value
        elif isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool):
                raise doc.error(where, f"must be an integer, got {value!r}")
            out[key] = value
        else:
            out[key] = number(doc, where, value)
    return out


def _push(doc: Located, path: Path_t, value: Any) -> tuple[float, float]:
    if value is None or value == "none":  # YAML null too
        return 0.0, 0.0
    if not isinstance(value, dict) or set(value) - set(PUSH):
        raise doc.error(path, f"is none or a mapping of hz and seconds, got {value!r}")
    hz = number(doc, (*path, "hz"), value.get("hz", PUSH["hz"]))
    seconds = number(doc, (*path, "seconds"), value.get("seconds", PUSH["seconds"]))
    if not (hz > 0 and seconds > 0):
        raise doc.error(path, f"hz and seconds must be > 0, got {hz:g}, {seconds:g}")
    return hz, seconds


def load_grids(
    doc: Located, spec_dir: Path, code: str, arithmetic: str
) -> tuple[list[CollideItem], dict[str, RobotSource]]:
    """The collision items of the spec's ``collide:`` (one grid or a list), carrying the client's ``code``
    and ``arithmetic`` fingerprints (run_task checks them on the worker); errors name file and field."""
    raw = doc.data["collide"]
    grids = raw if isinstance(raw, list) else [raw]
    items: list[CollideItem] = []
    sources: dict[str, RobotSource] = {}
    for g, grid in enumerate(grids):
        path: Path_t = ("collide", g) if isinstance(raw, list) else ("collide",)
        if not isinstance(grid, dict):
            raise doc.error(path, "a collision grid is a mapping (robots:, seeds:, model_errors:, ...)")
        unknown = sorted(set(grid) - GRID_KEYS - SETTINGS)
        if unknown:
            raise doc.error(
                (*path, unknown[0]), f"unknown key; a grid's keys are {', '.join(sorted(GRID_KEYS | SETTINGS))}"
            )
        seeds = _seeds(doc, (*path, "seeds"), grid.get("seeds", 1))
        errors = [
            number(doc, (*path, "model_errors", i), v)
            for i, v in enumerate(_axis(doc, path, grid, "model_errors", [0.1]))
        ]
        friction = _axis(doc, path, grid, "friction_error", [False])
        for i, f in enumerate(friction):
            if not isinstance(f, bool):
                raise doc.error((*path, "friction_error", i), f"must be true or false, got {f!r}")
        settings = _settings(doc, path, grid)
        push_hz, push_s = _push(doc, (*path, "push"), grid.get("push", PUSH))
        asked = grid.get("observers")
        if asked is not None:
            for i, o in enumerate(_axis(doc, path, grid, "observers", [])):
                if o not in ENTRIES:
                    raise doc.error(
                        (*path, "observers", i), f"unknown observer {o!r}; choose from {', '.join(ENTRIES)}"
                    )
        for r, name in enumerate(_axis(doc, path, grid, "robots", [])):
            where = (*path, "robots", r)
            source = _source(doc, where, spec_dir, str(name))
            robot = source.robot()
            if lacking_motion_limits(robot):  # a stated stand-in, as collide's (each item's entry says it)
                source = replace(source, standin_limits=True)
                robot = source.robot()
            sources[source.key] = source
            lacking = {o: why for o in asked or () if (why := lacking_sensors(ENTRIES[o], robot))}
            if lacking:
                o, why = next(iter(lacking.items()))
                raise doc.error(where, f"observer {o}: {why}")
            observers = asked or [o for o in DEFAULT_OBSERVERS if lacking_sensors(ENTRIES[o], robot) is None]
            for seed, me, fe in ((s, m, f) for m in errors for f in friction for s in seeds):
                item = CollideItem(
                    str(name),
                    source.key,
                    observers[0],
                    seed,
                    me,
                    fe,
                    json.dumps(settings, sort_keys=True),
                    push_hz,
                    push_s,
                    code,
                    arithmetic,
                )
                try:
                    s = item.collide_settings()
                    collide.check_settings(robot, s)
                except (ValueError, TypeError) as exc:
                    raise doc.error(path, str(exc)) from None
                if push_hz and max(s.events) + push_s > s.duration:
                    raise doc.error(
                        (*path, "push", "seconds"),
                        f"the push from the last event ({max(s.events):g} s) must end inside the "
                        f"{s.duration:g} s motion",
                    )
                items += [replace(item, observer=o) for o in observers]
    return list(dict.fromkeys(items)), sources


def _source(doc: Located, where: Path_t, spec_dir: Path, spec: str) -> RobotSource:
    try:
        return RobotSource.named_in(spec_dir, spec)
    except DescriptionError as exc:
        raise doc.error(where, str(exc)) from None


def _push_delays(
    item: CollideItem, s: collide.CollideSettings, runs: collide.Runs
) -> Callable[[Realtime, collide.Designed], dict[str, Any]]:
    """The ``more`` of observer_item: the push at each event on the designed pipeline (collide's
    filtered steps with the push's cut-off, hold and window; on the observer's runs: Runs.nominal)."""
    runs = runs.nominal(ENTRIES[item.observer])

    def more(rt: Realtime, d: collide.Designed) -> dict[str, Any]:
        push = replace(s, cutoffs=(item.push_hz,), hold=item.push_s, window=item.push_s)
        kept = collide.ObserverResult({}, np.zeros(0), {}, {})  # its traces are not kept
        delays = collide._collisions(rt, d, push, runs, item.observer, kept, lambda _: None)
        return {"push_delays_ms": delays[f"{item.push_hz:g}"]}

    return more


_SHARED: dict[tuple[str, collide.CollideSettings], collide.Runs] = {}


def shared_runs(item: CollideItem, source: RobotSource, s: collide.CollideSettings) -> collide.Runs:
    """collide.shared_runs of the item's draw, kept for the draw's next observer on this worker
    (the items come draw after draw; the motions and the impacts' run cost about one observer's
    work on planar2). A pure function's value: the items' results are the same however they are spread."""
    key = (item.description, replace(s, observers=()))
    if key not in _SHARED:
        _SHARED.clear()  # one draw at a time: the last one's
        # the draw's every observer shares the runs: the commissioning run's model whenever the
        # study asks for it (whichever observer comes first)
        _SHARED[key] = collide.shared_runs(source.robot(), s, identify=s.model == "identified")
    return _SHARED[key]


def run_collide_draw(items: tuple[CollideItem, ...], source: RobotSource) -> list[tuple[dict[str, Any], float, float]]:
    """Observers of one draw (items of one CollideItem.draw; the caller checked the code fingerprint),
    as `manipgen collide` runs them: the draw's shared runs once, then the observers fed alike one
    after the other, each later one's plant runs replayed from the first's where its commands are
    theirs (collide.feed_item: bit for bit the closed loop, checked at every sample), so an item's
    entry is the one it gets alone. Per item, in order: (its entry, wall s, CPU s; the shared runs'
    time counted in the first item's). An item whose closed loop diverges is stored with its
    ``error`` (the same on every rerun)."""
    assert len({it.draw for it in items}) == 1, "one draw's items"
    t0, c0 = time.perf_counter(), time.process_time()
    timed: dict[str, tuple[dict[str, Any], float, float]] = {}
    runs: collide.Runs | None = None
    failed: dict[str, Any] = {}
    try:
        runs = shared_runs(items[0], source, items[0].collide_settings())
    except (SimulationError, ValueError) as exc:
        failed = {"error": f"{type(exc).__name__}: {exc}"}
    by_observer = {it.observer: it for it in items}
    for group in collide.feeds(tuple(by_observer)):
        plants = Replays(record=len(group) > 1)
        for obs in group:
            item = by_observer[obs]
            result = dict(failed) if runs is None else _observer_entry(item, source, runs, plants)
            timed[obs] = (result, time.perf_counter() - t0, time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
    return [timed[it.observer] for it in items]


def _observer_entry(item: CollideItem, source: RobotSource, runs: collide.Runs, plants: Replays) -> dict[str, Any]:
    try:
        s = item.collide_settings()
        more = _push_delays(item, s, runs) if item.push_hz else None
        result = collide.observer_item(source, s, item.observer, runs, more=more, plants=plants).entry
        result["check_s"] = (len(runs.test.time) - runs.k0) * source.robot().sample_period  # the false alarms' exposure
        unbounded = lacking_motion_limits(replace(source, standin_limits=False).robot())
        result["standin_limits"] = collide.standin_doc(unbounded) if unbounded else None
    except (SimulationError, ValueError) as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    return result


def write_collide_item(db: Any, item: CollideItem, result: dict[str, Any], seconds: float, cpu: float) -> None:
    """One finished item, in its own transaction."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT OR REPLACE INTO collide_items VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
            (
                item.key,
                item.robot,
                item.observer,
                item.model_error,
                int(item.friction_error),
                item.seed,
                json.dumps(result, sort_keys=True),
                seconds,
                cpu,
            ),
        )


class CollideRow(NamedTuple):
    item: CollideItem
    result: dict[str, Any]
    seconds: float
    cpu_seconds: float


def stored_collisions(db: Any, items: tuple[CollideItem, ...]) -> list[CollideRow]:
    """The items found in the store, in the spec's order."""
    rows = {
        k: (json.loads(r), s, c)
        for k, r, s, c in db.execute("SELECT key, result, seconds, cpu_seconds FROM collide_items")
    }
    return [CollideRow(it, *rows[it.key]) for it in items if it.key in rows]
