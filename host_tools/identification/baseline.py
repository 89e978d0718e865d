"""The plain least-squares baseline every identification report compares against (issue #24): the
same processed data and validation run, fitted by the textbook model and method, so a report's
"better" always means better than this on the same pair of runs.

Columns: the rigid-body base parameters, and per joint the rotor inertia IA, viscous FV, Coulomb FC
with tanh(qd / v) and a constant offset FO (v: the description's scale where its Coulomb model is
tanh, else BASELINE_COULOMB_SCALE; one scale, never fitted). Method: ordinary least squares,
unconstrained, every sample (no speed threshold, no weights, no essential-parameter elimination).
Processing: whatever the identification used (low-pass of q and central differences, the parallel
filter and decimation, the torque delay of the log import).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from codegen.model.robot import Coulomb, Robot, digest_of
from host_tools.identification.friction_terms import smooth_shapes

BASELINE_COULOMB_SCALE = 0.01  # rad/s (m/s): Liu et al.'s data README finds tanh(qd / 0.01) fits its arm
COLUMNS = "rigid-body base parameters + per joint IA (rotor), FV (viscous), FC tanh(qd/v) (Coulomb), FO (offset)"
METHOD = "ordinary least squares, unconstrained, every sample, the identification's filtering and torque delay"


def baseline_robot(robot: Robot) -> Robot:
    """The description with the baseline's Coulomb shape, tanh (its own scale, else
    BASELINE_COULOMB_SCALE): the same generated C serves it (least_squares.Model.with_robot)."""
    if robot.coulomb.model == "tanh":
        return robot
    coulomb = Coulomb("tanh", (BASELINE_COULOMB_SCALE,))
    return replace(robot, coulomb=coulomb, digest=digest_of(robot.digest.encode(), repr(coulomb).encode()))


def missing_joint_columns(robot: Robot) -> list[str]:
    """The baseline's joint parameters the description does not identify: their columns
    (joint_columns) are appended to its regressor (until 2026-12-01 only FO's; a description without
    IA, FV or FC, the iiwa's without IA, got no baseline)."""
    return [p for p in ("IA", "FV", "FC", "FO") if p not in robot.joint_parameters]


def joint_columns(missing: list[str], qd: np.ndarray, qdd: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(K, n, len(missing) n): the baseline's joint parameters the description lacks, each joint's
    column in its own equation only, parameter after parameter: IA_j qdd_j (the rotor inertia), FV_j
    qd_j, FC_j tanh(qd_j / scale_j) (the baseline's Coulomb shape: the fric block's smooth Coulomb
    expression, friction_terms.smooth_shapes), FO_j 1 (the offset)."""
    k, n = qd.shape
    coulomb = np.array([smooth_shapes(qd[:, [j]], scale[j : j + 1])[:, 0, 0] for j in range(n)]).T
    shapes = {"IA": qdd, "FV": qd, "FC": coulomb, "FO": np.ones((k, n))}
    out = np.zeros((k, n, len(missing) * n))
    for i, name in enumerate(missing):
        out[:, np.arange(n), i * n + np.arange(n)] = shapes[name]
    return out


def independent_columns(y: np.ndarray, first: int) -> list[int]:
    """The columns of ``y`` (rows, p) to keep: the first ``first`` (the description's base parameters,
    independent by construction) and each later one whose least-squares residual on the columns
    kept so far is above 1e-9 of its norm (not in their span). A joint parameter the description
    does not identify can already be part of a base parameter: a vertical first axis's rotor inertia
    IA_1 multiplies qdd_1 in joint 1's equation alone, as ZZ_1 does, and regrouping puts both in
    ZZ1R. Kept, it would make the fit rank-deficient. (Each column is tested against the kept ones
    only: a QR's diagonal without pivoting would also judge it against the dropped ones' directions.)"""
    kept = list(range(first))
    for i in range(first, y.shape[1]):
        column = y[:, i]
        norm = float(np.linalg.norm(column))
        if norm == 0.0:
            continue
        fit = np.linalg.lstsq(y[:, kept], column, rcond=None)[0] if kept else np.zeros(0)
        if np.linalg.norm(column - y[:, kept] @ fit) > 1e-9 * norm:
            kept.append(i)
    return kept


def baseline_doc(
    robot: Robot,
    beta: np.ndarray,
    fit_rms: np.ndarray,
    validation_rms: np.ndarray | None,
    ours: list[float] | None,
) -> dict[str, Any]:
    """The JSON's ``baseline_ls``: what it is, its figures, and ours relative to it (fractions)."""
    doc: dict[str, Any] = {
        "columns": COLUMNS,
        "method": METHOD,
        "coulomb_scale": list(robot.coulomb.velocity_scale),
        "n_parameters": int(len(beta)),
        "fit_rms": fit_rms.tolist(),
    }
    if validation_rms is not None:
        doc["validation_rms"] = validation_rms.tolist()
        doc["validation_rms_sum"] = float(np.sum(validation_rms))
        if ours is not None:
            doc["base_ratio"] = (np.asarray(ours) / validation_rms).tolist()
            doc["base_ratio_sum"] = float(np.sum(ours) / np.sum(validation_rms))
    return doc
