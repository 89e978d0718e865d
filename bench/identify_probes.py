"""Independent probes of `identify` and `thresholds` (issue #44): a plant the defaults were not developed on.

A Franka Panda whose plant friction is, per joint, a sigmoid shifted in velocity,

    f(qd) = s (phi1 / (1 + exp(-phi2 (qd + phi3))) - phi1 / (1 + exp(-phi2 phi3))),

the form Gaz et al. (2019) identified on the real Panda (phi1 0.3-1.3 N m, phi2 5-17 s/rad, phi3
-0.05..0.04 rad/s below: values of that order, not their table; ``s`` scales them), identified
with the bundled description (sign Coulomb, FC 0, FV 0.003: none of this shape in it). The logs are
`manipgen record franka_panda --hostile` (jitter, gaps, repeated rows, a drive's velocity, torque
noise) of seeds 11 (30 s, fit) and 12 (20 s, validation), with the plant's friction replaced by
this one and no planted offset (f(0) = 0, but the two sides' levels differ: phi3 makes it
asymmetric). Nothing in identify or thresholds was chosen on these runs.

Printed, per route (the CSV; the same rows as a ROS 1 bag) and ``--velocity`` choice: the
validation RMS sums over plain least squares' (the physical set `config_identified.json` carries,
and the base fit), the worst joint's ratio, and the form each joint took; then thresholds (the
defaults, and `--static`) designed on seed 11 and checked on seed 12, and each run split 60/40 in
time (design on the first 60 %, check the rest): the model `--model auto` kept (and the other's
sum), false-alarm samples, the worst max |r| / threshold, the sum of threshold_mean.

    .venv/bin/python bench/identify_probes.py [--scale 1 2] [--out DIR]   # ~2 min per scale
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from host_tools.cli import main as cli  # noqa: E402
from host_tools.data import hostile  # noqa: E402

ROBOT, DOF = "franka_panda", 7
PHI1 = np.array([0.546, 0.872, 0.641, 1.279, 0.839, 0.303, 0.565])  # N m: the sigmoid's height
PHI2 = np.array([5.12, 9.07, 10.1, 5.59, 8.35, 17.1, 10.3])  # s/rad: its steepness
PHI3 = np.array([0.0395, 0.0259, -0.0461, 0.0362, 0.0262, -0.0210, 0.0036])  # rad/s: its shift
FIT, VAL = (11, 30.0), (12, 20.0)  # (seed, s)
SPLIT = 0.6  # the share of a run the 60/40 thresholds design is made on


class ShiftedSigmoid:
    """The plant friction above, in the place of host_tools.data.hostile.PlantFriction."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.fv, self.fs, self.vs = np.zeros(DOF), np.zeros(DOF), np.zeros(DOF)
        self.fc = scale * PHI1  # what the planted JSON reports as the Coulomb level
        self.coulomb_scale = None

    def torque(self, qd: np.ndarray) -> np.ndarray:
        def sigmoid(x: np.ndarray) -> np.ndarray:
            return 1.0 / (1.0 + np.exp(-x))

        return self.scale * (PHI1 * sigmoid(PHI2 * (np.asarray(qd, float) + PHI3)) - PHI1 * sigmoid(PHI2 * PHI3))


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli(list(args))
    text = out.getvalue()
    return code, json.loads(text) if text.strip().startswith("{") else {}


def record(folder: Path, scale: float) -> tuple[Path, Path]:
    """The fit and validation CSVs of the probe (recorded once per folder)."""
    paths = []
    for seed, seconds in (FIT, VAL):
        csv = folder / f"seed{seed}.csv"
        if not csv.is_file() or not csv.with_suffix(".bag").is_file():
            with (
                mock.patch.object(hostile, "plant_friction", lambda robot, h: ShiftedSigmoid(scale)),
                mock.patch.object(hostile, "offsets", lambda robot, h, fc: np.zeros(robot.dof)),
            ):
                code, _ = _json(
                    "record",
                    ROBOT,
                    "--hostile",
                    "--duration",
                    str(seconds),
                    "--seed",
                    str(seed),
                    "--out",
                    str(csv),
                    "--out",
                    str(csv.with_suffix(".bag")),  # the same rows as a ROS 1 bag: the bag route
                )
            if code != 0:
                raise SystemExit(f"record seed {seed} failed")
        paths.append(csv)
    return paths[0], paths[1]


def split(csv: Path) -> tuple[Path, Path]:
    """The CSV's first SPLIT of its time span and the rest, as two CSVs."""
    lines = csv.read_text().splitlines()
    t = np.array([float(line.split(",", 1)[0]) for line in lines[1:]])
    k = int(np.searchsorted(t, t[0] + SPLIT * (t[-1] - t[0])))
    first, rest = csv.with_name(csv.stem + "_first.csv"), csv.with_name(csv.stem + "_rest.csv")
    first.write_text("\n".join([lines[0], *lines[1 : 1 + k]]) + "\n")
    rest.write_text("\n".join([lines[0], *lines[1 + k :]]) + "\n")
    return first, rest


def identify_rows(fit: Path, val: Path) -> list[str]:
    bags = {p: p.with_suffix(".bag") for p in (fit, val)}  # recorded beside the CSVs (record)
    rows = []
    for velocity in ("auto", "recorded", "estimate"):
        for route, (a, b) in (("csv", (fit, val)), ("bag", (bags[fit], bags[val]))):
            code, doc = _json("identify", ROBOT, str(a), "--validate", str(b), "--velocity", velocity, "--json")
            if code != 0:
                rows.append(f"| {route} | {velocity} | failed ({code}) | | | |")
                continue
            plain = np.array(doc["baseline_ls"]["validation_rms"])
            physical, base = np.array(doc["validation_rms"]["physical"]), np.array(doc["validation_rms"]["base"])
            used = doc.get("velocity", {}).get("used", "?")
            forms = "; ".join(f"{s['joint']}: {s['form']}" for s in doc["friction_terms"]["structure"])
            rows.append(
                f"| {route} | {velocity} ({used}) | {physical.sum():.4f} ({physical.sum() / plain.sum():.3f}x), "
                f"worst joint {np.max(physical / plain):.3f}x | {base.sum() / plain.sum():.3f}x, worst joint "
                f"{np.max(base / plain):.3f}x | {plain.sum():.4f} | {forms} |"
            )
    return rows


def threshold_rows(fit: Path, val: Path) -> list[str]:
    pairs = [("seed 11 -> seed 12", fit, val)]
    for p in (fit, val):
        first, rest = split(p)
        pairs.append((f"{p.stem}: first 60 % -> the rest", first, rest))
    rows = []
    for what, design, check in pairs:
        for flags in ((), ("--static",)):
            code, doc = _json("thresholds", ROBOT, str(design), "--check", str(check), *flags, "--json")
            if not doc:
                rows.append(f"| {what} | {' '.join(flags) or 'default'} | | failed ({code}) | | |")
                continue
            c, used, sums = doc["check"], doc["model"]["used"], doc["model"]["threshold_mean_sum"]
            model = used + "".join(f"; {k} {v:.3f}" for k, v in sums.items() if k != used)
            rows.append(
                f"| {what} | {' '.join(flags) or 'default'} | {model} | {sum(c['false_alarm_samples'])} | "
                f"{max(c['ratio']):.3f} | {sum(doc['threshold_mean']):.3f} |"
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, nargs="+", default=[1.0], help="the friction's scale s (default 1)")
    ap.add_argument("--out", default="out/identify_probes", help="folder for the logs (reused when present)")
    args = ap.parse_args()
    for scale in args.scale:
        folder = Path(args.out) / f"shifted_sigmoid_{scale:g}"
        folder.mkdir(parents=True, exist_ok=True)
        fit, val = record(folder, scale)
        print(f"\nPanda, shifted-sigmoid plant friction x {scale:g}: identify {fit.name} --validate {val.name}\n")
        print("| route | --velocity (used) | physical set / plain LS | base fit / plain LS | plain LS (N m) | forms |")
        print("| --- | --- | --: | --: | --: | --- |")
        print("\n".join(identify_rows(fit, val)))
        print(f"\nthresholds (--model auto, the default: the model auto kept; the other's sum), x {scale:g}\n")
        print(
            "| design -> check | thresholds | model | false-alarm samples | worst max abs r / threshold "
            "| sum threshold_mean (N m) |"
        )
        print("| --- | --- | --- | --: | --: | --: |")
        print("\n".join(threshold_rows(fit, val)))


if __name__ == "__main__":
    main()
