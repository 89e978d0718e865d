#!/usr/bin/env python3
"""What limits the IMU-fed model-adaptive observer (issue #25 item 3): one collision-free 40 s design
run (two of `manipgen collide`'s motions) per variant, ±10 % inertial model error, the largest
|r| after the first second per joint (a threshold before its margin), and the RMS error of the qd,
qdd the observer was fed. Variants isolate one cause each:

- the observer fed by the encoder-only Kalman filter; the imu estimator with Birjandi & Haddadin's BMI055 (at
  +-2 g, at the paper's 1 g, at 16 g: no clipping), with a faster process model (q_var 1e4: the IMUs
  weigh more), with ideal sensors (no noise, no bias, 30 bits, 16 g: only the sensors' low-pass is
  left), with ideal sensors whose low-pass is at 450 Hz and which the filter takes as exact (the
  best a sampled, band-limited sensor gives); and exact qd, qdd (adaptive_measured);
- the adaptive observer's momentum form (qd only; the friction's switching enters as its integral over
  a sample) fed by the Kalman filter, by the BMI055s and by exact qd;
- the same on a plant whose Coulomb friction is smooth (``--smooth``: tanh with 0.01 rad/s in plant
  and model): the description's sign friction makes the simulated arm's qdd jump by 2 FC / M at every
  velocity reversal, which no band-limited sensor follows.

    .venv/bin/python bench/imu_limits.py [--robot kuka_iiwa14] [--smooth]     # about 4 minutes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen.model.description import load_robot  # noqa: E402
from codegen.model.robot import LINK_PARAMS  # noqa: E402
from codegen.resources import bundled_robot_path  # noqa: E402
from host_tools.bindings.imu_sensors import ImuSensors  # noqa: E402
from host_tools.bindings.loopback import simulate  # noqa: E402
from host_tools.bindings.rt import load_rt  # noqa: E402
from host_tools.identification.excitation import random_excitation  # noqa: E402
from host_tools.studies.collide import concatenated  # noqa: E402

G0 = 9.80665
G16 = 16 * G0
IDEAL = {"gyro_density": 0.0, "acc_density": 0.0, "gyro_bias": 0.0, "acc_bias": 0.0, "bits": 30, "acc_range": G16}
# weights for sensors taken as exact: tiny noise, a process model that follows them
TRUSTED = {"est.acc_range": G16, "est.noise_gyro": 1e-7, "est.noise_acc": 1e-6, "est.q_var": 1e8}
VARIANTS: dict[str, tuple[str, str, ImuSensors | None, dict[str, float]]] = {
    "momentum (Kalman qd)": ("kalman", "momentum", None, {}),
    "adaptive, Kalman qd, qdd": ("kalman", "adaptive", None, {}),
    "adaptive, IMUs (BMI055, 2 g)": ("imu", "adaptive", ImuSensors(), {}),
    "adaptive, IMUs at Birjandi & Haddadin's 1 g": ("imu", "adaptive", ImuSensors(acc_range=G0), {"est.acc_range": G0}),
    "adaptive, IMUs, 16 g range": ("imu", "adaptive", ImuSensors(acc_range=G16), {"est.acc_range": G16}),
    "adaptive, IMUs, q_var 1e4": ("imu", "adaptive", ImuSensors(), {"est.q_var": 1e4}),
    "adaptive, ideal IMUs (low-pass only)": ("imu", "adaptive", ImuSensors(**IDEAL), {"est.acc_range": G16}),  # type: ignore[arg-type]
    # the best a band-limited sensor can give: ideal IMUs whose low-pass sits near the Nyquist
    # frequency (450 Hz at 1 kHz), weighed as nearly exact (the filter follows them)
    "adaptive, ideal IMUs at 450 Hz, trusted": (
        "imu",
        "adaptive",
        ImuSensors(**IDEAL, gyro_cutoff=1e6, acc_cutoff=1e6),  # type: ignore[arg-type]
        TRUSTED,
    ),
    "adaptive, exact qd, qdd": ("kalman", "adaptive_measured", None, {}),
    # the momentum form (qd only): the friction's switching enters as its integral over a sample
    "adaptive_momentum, Kalman qd": ("kalman", "adaptive_momentum", None, {}),
    "adaptive_momentum, IMUs (BMI055, 2 g)": ("imu", "adaptive_momentum", ImuSensors(), {}),
    "adaptive_momentum, exact qd": ("kalman", "adaptive_momentum_measured", None, {}),
}


def smooth_copy(spec: str, folder: Path) -> str:
    """The description with its Coulomb friction smooth (tanh, 0.01 rad/s)."""
    path = bundled_robot_path(spec)
    if path is None:
        raise SystemExit(f"{spec}: --smooth needs a bundled robot")
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("coulomb:")]
    out = folder / f"{spec}_smooth.yaml"
    out.write_text("\n".join(lines + ["coulomb: {model: tanh, velocity_scale: 0.01}"]) + "\n")
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="kuka_iiwa14")
    ap.add_argument("--smooth", action="store_true", help="smooth (tanh) Coulomb friction in plant and model")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = smooth_copy(args.robot, Path(tmp)) if args.smooth else args.robot
        robot = load_robot(spec)
        true = robot.standard_parameters()
        inertial = np.array([n.rstrip("0123456789") in LINK_PARAMS for n in robot.standard_parameter_names])
        model = true * np.where(inertial, 1 + np.random.default_rng(0).uniform(-0.1, 0.1, true.shape), 1.0)
        ts = robot.sample_period
        design = concatenated(
            [random_excitation(robot, 1 + i, base_frequency=1 / 20, rate=1 / ts).trajectory(ts) for i in range(2)]
        )
        print(f"{robot.name}, Coulomb friction {robot.coulomb.model}, ±10 % inertial error, 40 s collision-free\n")
        print("| variant | largest \\|r\\| (N m) | per joint | qd RMS error (rad/s) | qdd RMS error (rad/s^2) |")
        print("| --- | --: | --- | --- | --- |")
        for name, (est, obs, sensors, cfg) in VARIANTS.items():
            rt = load_rt(spec, estimator=est, observer=obs, controller="computed_torque")
            rt.config["model.params"] = model
            rt.config["det.reaction"] = 0
            rt.config["det.threshold"] = 1e30
            if obs.startswith("adaptive"):
                rt.config["obs.k_o"] = 100.0
                rt.config["obs.freeze"] = 0
            for key, value in cfg.items():
                rt.config[key] = value
            run = simulate(rt, design, true_params=true, imu=sensors)
            k0 = int(round(1.0 / ts))
            r = np.abs(run.out["r"][k0:]).max(axis=0)
            x = run.log.extra
            measured = obs.endswith("_measured")
            e_qd = "exact" if measured else np.sqrt(((run.out["qd_hat"] - x["qd_true"])[k0:] ** 2).mean(axis=0))
            e_qdd = "exact" if measured else np.sqrt(((run.out["qdd_hat"] - x["qdd_true"])[k0:] ** 2).mean(axis=0))
            if obs == "momentum" or obs.startswith("adaptive_momentum"):
                e_qdd = "not used"

            def fmt(v: object, digits: int) -> str:
                return v if isinstance(v, str) else " ".join(f"{a:.{digits}f}" for a in np.asarray(v))

            print(f"| {name} | {r.max():.3g} | {fmt(r, 2)} | {fmt(e_qd, 4)} | {fmt(e_qdd, 2)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
