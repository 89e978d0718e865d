#!/usr/bin/env python3
"""Where one observer's collision-free check run comes closest to (or crosses) its thresholds in
`manipgen collide` (issue #46): the docs' traces of a false alarm, measured.

For ROBOT's draw ``--seed`` (``--model-error``, ``--model``) and one observer, the observer's threshold
design and check motion exactly as collide runs them (host_tools.studies.collide), then:

- the thresholds, the check run's worst sample (time, joint, |r| / threshold, r) and how many samples
  lie above a threshold (after the skipped first second);
- the distance from the pose at the worst sample to the nearest pose of the design motions (rad, the
  norm over the joints, every 10th design sample);
- that joint's desired, true and estimated q-dot, 30 ms either side of the worst sample;
- ``--no-hold``: the same check run with the model-adaptive observer's hold off (obs.freeze = 0; the
  designed thresholds kept), its largest |r| per joint and samples above the thresholds;
- ``--save RUN.npz``: the plant's q and q-dot over the design motions in closed loop through the
  observer's pipeline (no detection; an IMU-fed one without its calibration or the draw's sensors);
  ``--diff A.npz B.npz`` compares two such files (e.g. one saved
  with ``MANIPGEN_NATIVE_ARITHMETIC=1``): the first time they differ by more than 1e-12 rad and their
  largest differences.

    .venv/bin/python bench/collide_check_peak.py planar2 --seed 2 --observer adaptive --no-hold
    .venv/bin/python bench/collide_check_peak.py kuka_iiwa14 --seed 1003 --observer momentum --model identified
    .venv/bin/python bench/collide_check_peak.py planar2 --seed 2 --observer momentum --save pinned.npz
    MANIPGEN_NATIVE_ARITHMETIC=1 .venv/bin/python bench/collide_check_peak.py planar2 --seed 2 \
        --observer momentum --save native.npz
    .venv/bin/python bench/collide_check_peak.py --diff pinned.npz native.npz
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_tools.bindings.loopback import Replays, simulate  # noqa: E402
from host_tools.bindings.source import RobotSource  # noqa: E402
from host_tools.studies import collide  # noqa: E402


def diff(a: Path, b: Path) -> None:
    x, y = np.load(a), np.load(b)
    ts = float(x["ts"])
    dq = np.abs(x["q"] - y["q"]).max(axis=1)
    dqd = np.abs(x["qd"] - y["qd"]).max(axis=1)
    apart = np.flatnonzero(dq > 1e-12)
    print(f"first sample apart by > 1e-12 rad: {'none' if not apart.size else f'{apart[0] * ts:.3f} s'}")
    print(f"largest |dq| {dq.max():.3g} rad at {dq.argmax() * ts:.3f} s; largest |dqd| {dqd.max():.3g} rad/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("robot", nargs="?", help="bundled robot name")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--observer", default="momentum")
    ap.add_argument("--model-error", type=float, default=0.1)
    ap.add_argument("--model", choices=collide.MODELS, default="description")
    ap.add_argument("--no-hold", action="store_true", help="also the check run with the hold off")
    ap.add_argument("--save", type=Path, help="write the design motions' closed-loop plant trace here")
    ap.add_argument("--diff", type=Path, nargs=2, help="compare two --save files and stop")
    args = ap.parse_args()
    if args.diff:
        diff(*args.diff)
        return
    if not args.robot:
        ap.error("a robot is needed (or --diff A B)")
    source = RobotSource.of(args.robot)
    robot = source.robot()
    s = collide.CollideSettings(
        seed=args.seed, model_error=args.model_error, observers=(args.observer,), model=args.model
    )
    collide.check_settings(robot, s)
    entry = collide.ENTRIES[args.observer]
    runs = collide.shared_runs(robot, s).nominal(entry)
    rt = collide._pipeline(robot, entry, s, runs.model)
    if args.save:
        run = simulate(rt, runs.design, true_params=runs.true)
        extra = run.log.extra
        np.savez(args.save, q=extra["q_true"], qd=extra["qd_true"], ts=robot.sample_period)
        print(f"wrote {args.save}")
        rt = collide._pipeline(robot, entry, s, runs.model)
    collide.calibrated(rt, robot, entry, s, runs.design.q[0])  # the IMUs' biases at rest, as collide's runs
    plants = Replays(record=False)
    imu = collide.Sensors(collide.ImuSensors(seed=s.seed)) if entry.imu else None
    d = collide._design(rt, s, runs, imu, plants, runs.least)
    check = collide._after(rt, d.learned, runs.test, runs.true, plants)
    k0, ts = runs.k0, robot.sample_period
    level = collide.threshold_along(check.out, d.thresholds)[k0:]
    r = check.out["r"][k0:]
    ratio = np.abs(r) / level
    k = int(ratio.max(axis=1).argmax())
    j = int(ratio[k].argmax())
    print(f"{robot.name} seed {s.seed}, {args.observer} on the {args.model} model")
    print("thresholds", np.round(d.thresholds.threshold, 4).tolist())
    print(
        f"worst sample of the check motion: {(k + k0) * ts:.3f} s, joint {j + 1}, |r| / threshold "
        f"{ratio[k, j]:.3f}, r {r[k, j]:+.4f}; samples above a threshold: {int((ratio > 1).any(axis=1).sum())}"
    )
    q = runs.test.q[k + k0]
    design = runs.design.q[runs.k_design :: 10]
    print(
        f"pose there {np.round(q, 3).tolist()} rad, {np.linalg.norm(design - q, axis=1).min():.3f} rad from the "
        "nearest design pose"
    )
    extra, out = check.log.extra, check.out
    for kk in range(k + k0 - 30, min(k + k0 + 31, len(out["r"])), 5):
        print(
            f"  {kk * ts:.3f} s: r {out['r'][kk, j]:+.4f}, qd_d {out['qd_d'][kk, j]:+.6f}, "
            f"qd {extra['qd_true'][kk, j]:+.6f}, qd_hat {out['qd_hat'][kk, j]:+.6f}"
        )
    if args.no_hold:
        rt.config["obs.freeze"] = 0 * np.asarray(rt.config["obs.freeze"])
        free = collide._after(rt, d.learned, runs.test, runs.true, plants).out["r"][k0:]
        print(
            f"hold off: largest |r| {np.round(np.abs(free).max(axis=0), 3).tolist()}, samples above a threshold: "
            f"{int((np.abs(free) / level > 1).any(axis=1).sum())}"
        )


if __name__ == "__main__":
    main()
