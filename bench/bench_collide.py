#!/usr/bin/env python3
"""Where one ``manipgen collide`` run spends its time (issue #46): the scenario run once in this
process with its stages wrapped and timed -- wall and CPU (user + sys of this process) -- and the
C loopback's share measured as the time inside ``simulate``'s single C call.

Stages: ``load_rt`` / ``load`` (generation + compilation on a cold cache, the cache look-up and the
cffi import on a warm one), ``simulate`` (of it, ``C loopback`` is the one C call), the threshold
design (``design_from_outputs``), the threshold traces (``threshold_along``), the tip forces
(``tip_force_along``), the filtered steps (``filtered_step``); ``rest`` is everything else.

Nothing here asserts on timings: it measures and prints. Use your own cache
(``MANIPGEN_CACHE=/tmp/<you>_cache``); run it twice to see the warm cache.

Usage::

    .venv/bin/python bench/bench_collide.py kuka_iiwa14 [--observers momentum adaptive] [--seed 0]
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from host_tools.bindings import loopback
from host_tools.bindings.source import RobotSource
from host_tools.studies import collide
from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES, lacking_sensors

WALL: dict[str, float] = defaultdict(float)
CPU: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def timed(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        w, c = time.perf_counter(), _cpu()
        try:
            return f(*args, **kw)
        finally:
            WALL[name] += time.perf_counter() - w
            CPU[name] += _cpu() - c
            CALLS[name] += 1

    return wrapper


def _wrap_runner() -> None:
    """Time the loopback's one C call (the function _runner hands to simulate)."""
    runner = loopback._runner

    def wrapped(*args: Any, **kw: Any) -> tuple[Any, ...]:
        got = runner(*args, **kw)
        return (timed("  C loopback", got[0]), *got[1:])

    loopback._runner = wrapped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("robot")
    p.add_argument("--observers", nargs="+")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    source = RobotSource.of(args.robot)
    robot = source.robot()
    observers = tuple(args.observers or (o for o in DEFAULT_OBSERVERS if not lacking_sensors(ENTRIES[o], robot)))
    _wrap_runner()
    for name in ("load_rt", "load", "design_from_outputs", "threshold_along", "filtered_step"):
        setattr(collide, name, timed(name, getattr(collide, name)))
    # the closed loops (collide's own and the feeds' first observers', through loopback.Replays) and
    # the other observers' replays of them (rt_run on the recorded inputs)
    collide.simulate = loopback.simulate = timed("simulate", loopback.simulate)
    loopback.replay = timed("replay", loopback.replay)
    collide.tip_force_along = timed("tip_force_along", collide.tip_force_along)
    w, c = time.perf_counter(), _cpu()
    collide.scenario(source, collide.CollideSettings(seed=args.seed, observers=observers))
    wall, cpu = time.perf_counter() - w, _cpu() - c
    print(f"{args.robot}, {len(observers)} observers: {wall:.1f} s wall, {cpu:.1f} s CPU (user + sys)")
    print(f"{'stage':24} {'calls':>6} {'wall s':>8} {'CPU s':>8} {'CPU %':>6}")
    for name in WALL:
        print(f"{name:24} {CALLS[name]:6d} {WALL[name]:8.2f} {CPU[name]:8.2f} {100 * CPU[name] / cpu:6.1f}")
    top = [k for k in WALL if not k.startswith(" ")]
    rest_w, rest_c = wall - sum(WALL[k] for k in top), cpu - sum(CPU[k] for k in top)
    print(f"{'rest':24} {'':6} {rest_w:8.2f} {rest_c:8.2f} {100 * rest_c / cpu:6.1f}")


if __name__ == "__main__":
    main()
