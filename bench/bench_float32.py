"""Float32 against double: the real-time pipeline of the bundled robots over long closed-loop runs
(issue #10 item 4). Both builds replay the same contact-free closed-loop stream (host_tools.studies.precision).

    .venv/bin/python bench/bench_float32.py                          # 1 h at 1 kHz, every bundled robot
    .venv/bin/python bench/bench_float32.py --seconds 60 --robots kuka_iiwa14 franka_panda
    .venv/bin/python bench/bench_float32.py --drift-windows 3        # first vs last 3 windows (1 min)

Per robot and output: max |float - double|, the part beyond the Coulomb-sign term, the output's range,
error / range, the a-priori bound (docs/realtime.md "Float32 error bounds"), error / bound, and the
error of the first and last window (one 20 s cycle of the periodic motion); then a summary line with
the drift ratio and the float build's max |r| in the first and last window.
"""

from __future__ import annotations

import argparse
import os
import time

from codegen.model.description import load_robot
from codegen.resources import bundled_robots
from host_tools.studies.precision import compare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3600.0, help="simulated time per robot (s; default 1 h)")
    ap.add_argument("--robots", nargs="*", default=None, help="default: every bundled robot")
    ap.add_argument("--chunk", type=float, default=60.0, help="simulated seconds per C call")
    ap.add_argument("--drift-windows", type=int, default=3, help="windows (20 s each) compared, first vs last")
    args = ap.parse_args()
    robots = args.robots or list(bundled_robots())
    print(f"float32 vs double, {args.seconds:g} s of simulated time at each robot's rate, {os.cpu_count()} cores")
    t0 = time.perf_counter()
    summaries = []
    for i, robot in enumerate(robots):
        c = compare(load_robot(robot), seconds=args.seconds, chunk=args.chunk)
        print(c.table(header=i == 0), flush=True)
        w = args.drift_windows
        summaries.append(
            c.summary() + f"; drift over {w} windows: max {c.worst_drift('max', w):.2f}, "
            f"median {c.worst_drift('median', w):.2f}; counts below 2^24: {c.count_exact}"
        )
    print()
    for s in summaries:
        print("- " + s)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
