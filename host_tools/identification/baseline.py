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
from host_tools.identification.least_squares import least_squares, model

BASELINE_JOINT_PARAMETERS = ("IA", "FV", "FC", "FO")
BASELINE_COULOMB_SCALE = 0.01  # rad/s (m/s): seed 000's data README finds tanh(qd / 0.01) fits its arm
COLUMNS = "rigid-body base parameters + per joint IA (rotor), FV (viscous), FC tanh(qd/v) (Coulomb), FO (offset)"
METHOD = "ordinary least squares, unconstrained, every sample, the identification's filtering and torque delay"


def baseline_robot(robot: Robot) -> Robot:
    """The description with the baseline's joint model (its links as they are)."""
    if robot.coulomb.model == "tanh":
        coulomb = robot.coulomb
    else:
        coulomb = Coulomb("tanh", (BASELINE_COULOMB_SCALE,))
    if robot.joint_parameters == BASELINE_JOINT_PARAMETERS and coulomb == robot.coulomb:
        return robot
    return replace(
        robot,
        joint_parameters=BASELINE_JOINT_PARAMETERS,
        coulomb=coulomb,
        digest=digest_of(robot.digest.encode(), b"baseline_ls", repr(coulomb).encode()),
    )


def baseline_fit(robot: Robot, y: np.ndarray, tau: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """The baseline's parameters from its observation (Y stacked, tau; ``rows``: the equations
    used, default all: the samples the input checks left)."""
    return least_squares(y, tau, robot.dof, model(robot).names, rows=rows).values


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
