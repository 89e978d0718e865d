#!/usr/bin/env python3
"""Convert the Schunk LWA-4P nominal model (MATLAB) into ``robots/schunk_lwa4p.yaml``.

Data: the public data package of Liu et al., S. B. Liu, A. Giusti, M. Althoff, "Velocity Estimation
of Robot Manipulators: An Experimental Comparison", IEEE Open Journal of Control Systems; data DOI
10.21227/tse3-h285, file ``modelSchunkLWA4P.mat``. Its layout (MATLAB v5, nested structs)::

    robot.KinPar.DHext     6x4 standard DH table, columns [a, alpha, theta_offset, d] (m, rad)
    robot.KinPar.B         3x3 base rotation (identity in the file; anything else is refused)
    robot.KinPar.NJ        number of joints (6)
    robot.DynPar(i).m      link mass (kg)
    robot.DynPar(i).r_com  3x1 centre of mass in DH frame i (the distal frame), m
    robot.DynPar(i).I      3x3 inertia about the centre of mass, axes of DH frame i, kg m^2
    robot.DynPar(i).DJ     drive: Im (rotor inertia, kg m^2), jbv (viscous, N m s/rad), jbc
                           (Coulomb, N m), k_tau (N m/A), k_r (gear ratio), tau_lim (N m),
                           curr_lim (mA), dq_lim / ddq_lim (0 = not given), Ke

Mapping onto the YAML schema (docs/robot_yaml.md), as established in
shared/data/lwa4p/README.md: convention ``dh`` with theta = theta_offset; IA = Im * k_r^2 (rotor
inertia reflected to the joint); FV = jbv; FC = jbc; gear_ratio = k_r; limits.tau = tau_lim;
Coulomb friction tanh(qd / 0.01); sample period 4 ms; encoder 1 mdeg on the link side
(360000 counts per revolution, 32-bit signed).

The output is deterministic: numbers are written with ``repr`` precision (angles that are exact
float multiples of pi are written as ``pi/2``-style expressions, which read back to the same
float), no time stamps, no absolute paths.

Usage::

    python robots/convert_lwa4p.py [--mat path/to/modelSchunkLWA4P.mat] [--out robots/schunk_lwa4p.yaml]
"""

from __future__ import annotations

import argparse
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np
import scipy.io

DEFAULT_MAT = Path("/work/shared/data/lwa4p/modelSchunkLWA4P.mat")
DEFAULT_OUT = Path(__file__).resolve().parent / "schunk_lwa4p.yaml"

SAMPLE_PERIOD = 0.004  # s, the 250 Hz loop of Liu et al.'s experiments
COULOMB_VELOCITY_SCALE = 0.01  # rad/s, tanh(qd / 0.01) fits the data better than sign(qd)
ENCODER_CPR = 360000  # 1 mdeg resolution on the link side
GRAVITY = (0.0, 0.0, -9.81)


@dataclass(frozen=True)
class Drive:
    """Drive data of one joint, as stored in ``DynPar(i).DJ``."""

    Im: float
    jbv: float
    jbc: float
    k_r: float
    k_tau: float  # N m/A at the motor shaft
    curr_lim: float  # mA
    tau_lim: float
    dq_lim: float
    ddq_lim: float


@dataclass(frozen=True)
class Link:
    """Inertial data of one link (about its COM, axes of DH frame i) and its joint's drive."""

    m: float
    r_com: tuple[float, float, float]
    inertia: np.ndarray  # 3x3
    drive: Drive


@dataclass(frozen=True)
class LwaModel:
    dh: np.ndarray  # n x 4, columns [a, alpha, theta_offset, d]
    links: tuple[Link, ...]


def _scalar(value: Any) -> float:
    """A MATLAB scalar (any numeric dtype, any 1-element shape) as a Python float."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"expected a scalar, got shape {arr.shape}")
    return float(arr.reshape(()))


def _field(struct: Any, name: str) -> Any:
    """Field ``name`` of a MATLAB struct loaded with ``struct_as_record=True`` (1x1 record array)."""
    if struct.dtype.names is None or name not in struct.dtype.names:
        raise KeyError(f"field {name!r} missing (have {struct.dtype.names})")
    return struct[name].reshape(-1)[0] if struct.size == 1 else struct[name]


def load_model(mat_path: Path) -> LwaModel:
    """Read ``robot.KinPar`` and ``robot.DynPar`` from the .mat file."""
    data = scipy.io.loadmat(str(mat_path), struct_as_record=True, squeeze_me=False)
    robot = data["robot"]
    kin = _field(robot, "KinPar")
    dyn = _field(robot, "DynPar")

    dh = np.asarray(_field(kin, "DHext"), dtype=float)
    n = int(_scalar(_field(kin, "NJ")))
    base = np.asarray(_field(kin, "B"), dtype=float)
    if dh.shape != (n, 4):
        raise ValueError(f"DHext has shape {dh.shape}, expected ({n}, 4)")
    if not np.array_equal(base, np.eye(3)):
        raise ValueError(f"KinPar.B is not the identity ({base.tolist()}): not supported")
    if dyn.size != n:
        raise ValueError(f"DynPar has {dyn.size} entries, expected {n}")

    links = []
    for i in range(n):
        rec = dyn.reshape(-1)[i]
        dj = rec["DJ"].reshape(-1)[0]
        drive = Drive(
            Im=_scalar(dj["Im"]),
            jbv=_scalar(dj["jbv"]),
            jbc=_scalar(dj["jbc"]),
            k_r=_scalar(dj["k_r"]),
            k_tau=_scalar(dj["k_tau"]),
            curr_lim=_scalar(dj["curr_lim"]),
            tau_lim=_scalar(dj["tau_lim"]),
            dq_lim=_scalar(dj["dq_lim"]),
            ddq_lim=_scalar(dj["ddq_lim"]),
        )
        inertia = np.asarray(rec["I"], dtype=float)
        com = np.asarray(rec["r_com"], dtype=float).reshape(-1)
        if inertia.shape != (3, 3) or not np.array_equal(inertia, inertia.T):
            raise ValueError(f"DynPar({i + 1}).I is not a symmetric 3x3 matrix")
        if com.shape != (3,):
            raise ValueError(f"DynPar({i + 1}).r_com is not a 3-vector")
        links.append(
            Link(m=_scalar(rec["m"]), r_com=(float(com[0]), float(com[1]), float(com[2])), inertia=inertia, drive=drive)
        )
    return LwaModel(dh=dh, links=tuple(links))


def _pi_expression(x: float) -> str | None:
    """``k*pi/n`` text whose float value (evaluated left to right) is exactly ``x``, or None."""
    if x == 0.0 or not math.isfinite(x):
        return None
    for den in (1, 2, 3, 4, 6, 12):
        k = round(abs(x) * den / math.pi)
        if k == 0 or k > 4 * den:
            continue
        numerator = math.pi if k == 1 else k * math.pi
        value = numerator if den == 1 else numerator / den
        if value == abs(x):  # float negation is exact, so the sign can be prefixed
            text = "pi" if k == 1 else f"{k}*pi"
            if den != 1:
                text += f"/{den}"
            return ("-" if x < 0 else "") + text
    return None


def fmt(x: float, angle: bool = False) -> str:
    """A float in the YAML, losslessly: ``repr`` (round-trips), or an exact pi expression."""
    x = float(x)
    if angle:
        expr = _pi_expression(x)
        if expr is not None:
            return expr
    if x == 0.0:
        return "0.0"  # also folds -0.0
    text = repr(x)
    if "e" in text and "." not in text.split("e")[0]:
        # YAML 1.1 (PyYAML) reads 1e-05 as a string: keep a decimal point in the mantissa.
        mant, exp = text.split("e")
        text = f"{mant}.0e{exp}"
    return text


def fmt_list(values: Sequence[float]) -> str:
    return "[" + ", ".join(fmt(v) for v in values) + "]"


def render(model: LwaModel, mat_sha256: str) -> str:
    """The YAML text of the robot description."""
    out: list[str] = [
        "# Schunk LWA-4P (6 revolute joints), nominal model.",
        "#",
        "# GENERATED by robots/convert_lwa4p.py from modelSchunkLWA4P.mat - do not edit by hand.",
        f"# modelSchunkLWA4P.mat sha256: {mat_sha256}",
        '# Data: Liu et al., S. B. Liu, A. Giusti, M. Althoff, "Velocity Estimation of Robot Manipulators:',
        '# An Experimental Comparison", IEEE Open Journal of Control Systems; data DOI 10.21227/tse3-h285.',
        "#",
        "# Conventions (shared/data/lwa4p/README.md): standard DH (DHext columns [a, alpha, theta_offset,",
        "# d]); link inertia about the COM, COM and inertia in DH frame i (the distal frame);",
        "# IA = Im * k_r^2; FV = jbv, FC = jbc (joint side); gear_ratio = k_r; limits.tau = tau_lim;",
        "# torque_constant = k_tau; limits.current = curr_lim / 1000 (A). Encoders: 1 mdeg (360000 cpr).",
        "# The file gives no position/velocity/acceleration limits (dq_lim = ddq_lim = 0).",
        "# Links 1 and 3 share identical values and joints 1-4 share motor data: the model is approximate.",
        "# Theta offsets of 1.2246467991473532e-16 are MATLAB's sin(pi) residue, kept as in the file.",
        "name: schunk_lwa4p",
        'source: "Liu et al. data package (Liu, Giusti, Althoff), doi:10.21227/tse3-h285, modelSchunkLWA4P.mat"',
        "convention: dh",
        f"gravity: {fmt_list(GRAVITY)}",
        f"sample_period: {fmt(SAMPLE_PERIOD)}",
        "joint_parameters: [IA, FV, FC]",
        f"coulomb: {{model: tanh, velocity_scale: {fmt(COULOMB_VELOCITY_SCALE)}}}",
        "# Real-time defaults: Liu et al.'s loop (computed torque, Kp = 100, Kd = 13) with its linear",
        "# high-gain observer and the Table 8 gains (1 mdeg, 250 Hz: eps = 0.01).",
        "realtime:",
        "  estimator: linhg",
        "  observer: momentum",
        "  controller: computed_torque",
        "  config:",
        "    linhg.eps: 0.01",
        "    linhg.h1: [15.63, 19.54, 17.09, 9.43, 15.75, 19.02]",
        "    linhg.h2: [32.11, 50.34, 34.72, 25.92, 19.05, 38.35]",
        "    ctl.kp: 100.0",
        "    ctl.kd: 13.0",
        "joints:",
    ]
    for i, (row, link) in enumerate(zip(model.dh, model.links), start=1):
        a, alpha, theta, d = (float(v) for v in row)
        drv = link.drive
        limits = []
        if drv.dq_lim > 0.0:
            limits.append(f"qd: {fmt(drv.dq_lim)}")
        if drv.ddq_lim > 0.0:
            limits.append(f"qdd: {fmt(drv.ddq_lim)}")
        limits.append(f"tau: {fmt(drv.tau_lim)}")
        # tau_lim = k_tau k_r curr_lim / 1000 (the README's check of tau = k_r k_tau I / 1000)
        if not math.isclose(drv.tau_lim, drv.k_tau * drv.k_r * drv.curr_lim / 1000.0, rel_tol=1e-9):
            raise ValueError(f"joint {i}: tau_lim {drv.tau_lim} != k_tau k_r curr_lim / 1000")
        limits.append(f"current: {fmt(drv.curr_lim / 1000.0)}")
        inertia = link.inertia
        six = (inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2])
        out += [
            f"  - name: J{i}",
            "    type: revolute",
            f"    dh: {{theta: {fmt(theta, angle=True)}, d: {fmt(d)}, a: {fmt(a)}, alpha: {fmt(alpha, angle=True)}}}",
            f"    limits: {{{', '.join(limits)}}}",
            f"    gear_ratio: {fmt(drv.k_r)}",
            f"    torque_constant: {fmt(drv.k_tau)}   # N m/A: tau = k_r k_tau I (I_c in mA / 1000)",
            f"    encoder: {{cpr: {ENCODER_CPR}, side: link, bits: 32, signed: true}}",
            f"    IA: {fmt(drv.Im * drv.k_r**2)}   # Im = {fmt(drv.Im)} kg m^2 times k_r^2",
            f"    FV: {fmt(drv.jbv)}",
            f"    FC: {fmt(drv.jbc)}",
            "    link:",
            f"      mass: {fmt(link.m)}",
            f"      com: {fmt_list(link.r_com)}",
            f"      inertia: {fmt_list(six)}",
            "      inertia_about: com",
        ]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mat", type=Path, default=DEFAULT_MAT, help=f"modelSchunkLWA4P.mat (default: {DEFAULT_MAT})")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output YAML (default: schunk_lwa4p.yaml next to this script)"
    )
    args = parser.parse_args(argv)

    model = load_model(args.mat)
    digest = hashlib.sha256(args.mat.read_bytes()).hexdigest()
    text = render(model, digest)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)  # never leave a half-written file behind
    print(f"wrote {args.out} ({len(model.links)} joints)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
