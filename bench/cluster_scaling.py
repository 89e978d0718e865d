"""Scaling of `manipgen study` over Dask workers: one study on local:1 and local:2, to size a cluster.

    .venv/bin/python bench/cluster_scaling.py                   # schunk_lwa4p, 7 estimators tuned: minutes
    .venv/bin/python bench/cluster_scaling.py --quick           # planar2, 3 estimators, untuned
    .venv/bin/python bench/cluster_scaling.py --generations 5

Each scheduler runs the whole study (a fresh run, not a resumed one) into its own store in a
temporary folder. The build cache ($MANIPGEN_CACHE or ~/.cache/manipgen) is shared and warmed first:
the study runs once untimed on the default process pool (one seed, one generation: the same
pipelines), so no compile time is counted; the script checks that the timed runs built nothing. The
two stores' results must be identical (items are pure): exit 1 if not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from host_tools.bindings.build import cache_root
from host_tools.studies.cluster import open_executor
from host_tools.studies.collide_study import CollideItem
from host_tools.studies.study import Stored, StudyItem, load_study, open_store, run_study, stored

FULL: dict[str, Any] = {
    "robots": ["schunk_lwa4p"],
    "setups": ["10@125"],
    "estimators": ["findiff", "movav", "lsf", "kalman", "linhg", "nlhg", "slimod"],
    "tune": True,
    "generations": 2,
    "seeds": [0, 1],
}
QUICK: dict[str, Any] = {
    "robots": ["planar2"],
    "setups": ["10@125", "2@125"],
    "estimators": ["findiff", "movav", "linhg"],
    "tune": False,
    "seeds": [0, 1, 2],
}
SCHEDULERS = ("local:1", "local:2")  # what a 2-core machine allows


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in spec.items()), encoding="utf-8")
    return path


def built() -> set[str]:
    """The build cache's compiled modules and generated folders (to see whether a run compiled)."""
    root = cache_root()
    return {f"{d}/{p.name}" for d in ("modules", "generated") if (root / d).is_dir() for p in (root / d).iterdir()}


def progress(label: str) -> Callable[[int, int, StudyItem | CollideItem | None], None]:
    def report(done: int, total: int, item: StudyItem | CollideItem | None) -> None:
        print(f"\r  {label}: {done}/{total} items", end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report


def contents(store: Path) -> list[tuple[str, str]]:
    with open_store(store) as db:
        return sorted(db.execute("SELECT key, result FROM items"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="planar2, 2 set-ups, findiff/movav/linhg, untuned, 3 seeds")
    ap.add_argument("--generations", type=int, help="GA generations per tuned item (default 2)")
    args = ap.parse_args()
    spec = dict(QUICK if args.quick else FULL)
    load = os.getloadavg()[0]  # other work on the machine skews every figure
    if args.generations is not None:
        spec["generations"] = args.generations
    with tempfile.TemporaryDirectory(prefix="cluster_scaling_") as tmp:
        study = load_study(write_spec(Path(tmp) / "study.yaml", spec))
        warm = load_study(write_spec(Path(tmp) / "warm.yaml", {**spec, "seeds": spec["seeds"][:1], "generations": 1}))
        print(f"study: {json.dumps(spec)}: {len(study.items)} items", file=sys.stderr)
        t0 = time.perf_counter()
        with open_store(Path(tmp) / "warm.sqlite") as db, open_executor(None) as pool:
            run_study(warm, db, pool, progress("warm-up (default pool)"))
        warm_s = time.perf_counter() - t0
        before = built()
        runs: list[tuple[str, int, float, float, list[Stored]]] = []
        for scheduler in SCHEDULERS:
            store = Path(tmp) / f"{scheduler.replace(':', '_')}.sqlite"
            t0 = time.perf_counter()
            with open_store(store) as db, open_executor(scheduler) as executor:
                start_s = time.perf_counter() - t0
                t1 = time.perf_counter()
                run_study(study, db, executor, progress(scheduler))
                wall = time.perf_counter() - t1
                runs.append((scheduler, int(scheduler.split(":")[1]), start_s, wall, stored(db, study)))
        compiled = built() - before
        same = contents(Path(tmp) / "local_1.sqlite") == contents(Path(tmp) / "local_2.sqlite")

    print(f"Study: {json.dumps(spec)} = {len(study.items)} items (each: tune if asked, then evaluate).")
    print(
        f"Build cache warmed before timing ({warm_s:.0f} s untimed run of {len(warm.items)} items on the default "
        f"pool); the timed runs compiled {'nothing' if not compiled else f'{len(compiled)} new builds (NOT warm)'}."
    )
    print(f"Machine: {os.cpu_count()} CPUs, 1-min load average {load:.1f} at the start (should be ~0).")
    print("Wall time: run_study only, the cluster already started (its start-up time in the note below).\n")
    print("| scheduler | workers | items | wall s | items/s | speed-up vs local:1 | efficiency | mean worker s/item |")
    print("| --- | --: | --: | --: | --: | --: | --: | --: |")
    base = runs[0][3]
    for scheduler, workers, _, wall, rows in runs:
        mean = sum(r.seconds for r in rows) / len(rows)
        speedup = base / wall
        print(
            f"| {scheduler} | {workers} | {len(rows)} | {wall:.1f} | {len(rows) / wall:.3f} | {speedup:.2f}x | "
            f"{speedup / workers:.0%} | {mean:.2f} |"
        )
    print("\nCluster start-up (not in wall): " + ", ".join(f"{s} {st:.1f} s" for s, _, st, _, _ in runs))

    tuned = "tuned" if spec.get("tune") else "untuned (default gains)"
    print(f"\nPer-item cost by estimator ({tuned}, mean worker seconds per item):\n")
    print("| estimator | items | " + " | ".join(f"{s} s/item" for s, *_ in runs) + " | share of local:1 work |")
    print("| --- | --: |" + " --: |" * len(runs) + " --: |")
    per: list[dict[str, list[float]]] = []
    for *_, rows in runs:
        by: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            by[row.item.estimator].append(row.seconds)
        per.append(by)
    total1 = sum(sum(v) for v in per[0].values())
    for est, secs in per[0].items():
        means = " | ".join(f"{sum(p[est]) / len(p[est]):.2f}" for p in per)
        print(f"| {est} | {len(secs)} | {means} | {sum(secs) / total1:.0%} |")

    _, _, _, wall1, rows1 = runs[0]
    _, w2, _, wall2, _ = runs[-1]
    eff = base / wall2 / w2
    rate1 = len(rows1) / wall1
    print(
        f"\nTo size a cluster: wall s ~= items / (workers x efficiency x items-per-second-per-worker); here one "
        f"worker does {rate1:.3f} items/s and efficiency at {w2} workers is {eff:.0%}, so e.g. 1000 such items on "
        f"16 workers take ~{1000 / (16 * eff * rate1) / 60:.1f} min (efficiency measured at {w2} workers only; "
        f"per-item cost depends on the estimator, tuning and generations: see the table above)."
    )
    print(f"\nResults identical in both stores (key, result): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
