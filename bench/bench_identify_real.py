"""Wall time of `manipgen identify` on Liu et al.'s LWA-4P runs (issue #24's goal: <= 3 s on a 2-core
machine, otherwise idle, warm build cache), where it goes (`stage_seconds`), and what it buys over
the peer measured in the same run: plain least squares on the same data (`baseline_ls`: the
textbook model and method, its own time in the same process).

    .venv/bin/python bench/bench_identify_real.py            # ~30 s; --repeats N, --data DIR

The command runs as a user runs it (a fresh process each time: imports included); the first run
warms the build cache and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "lwa4p"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--data", type=Path, default=DATA)
    args = p.parse_args()
    rows = []
    for fit, val in (("FinDiff", "MovAv"), ("MovAv", "FinDiff")):
        cmd = [
            sys.executable,
            "-m",
            "host_tools.cli",
            "identify",
            "schunk_lwa4p",
            str(args.data / f"4ms_{fit}_run1.mat"),
            "--validate",
            str(args.data / f"4ms_{val}_run1.mat"),
            "--json",
        ]
        subprocess.run(cmd, capture_output=True, check=True)  # warm the build cache
        walls, doc = [], {}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, check=True, text=True)
            walls.append(time.perf_counter() - t0)
            doc = json.loads(out.stdout)
        rows.append((f"{fit} -> {val}", walls, doc))
    print(f"`manipgen identify schunk_lwa4p RUN --validate OTHER`, {args.repeats} runs each, a fresh process per run\n")
    print(
        "| pair | wall median (s) | min | max | in-process (s) | baseline_ls (s) | validation RMS sum / baseline_ls |"
    )
    print("| --- | --: | --: | --: | --: | --: | --: |")
    for name, walls, doc in rows:
        print(
            f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} | {doc['seconds']:.2f} "
            f"| {doc['stage_seconds']['baseline_ls']:.3f} | {doc['baseline_ls']['base_ratio_sum']:.3f} |"
        )
    print("\nstage_seconds of the last run (physical runs on the other core, alongside the stages after it):\n")
    for name, _, doc in rows:
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in doc["stage_seconds"].items()))


if __name__ == "__main__":
    main()
