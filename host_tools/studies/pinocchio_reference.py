"""Pinocchio as the referee: the generated functions' definitions evaluated with Pinocchio, random
states, and the comparison rule -- shared by `manipgen verify` and the peer tests (tests/peers).

Pinocchio's ``rnea`` already includes ``model.armature * qdd`` (= IA qdd) and ``crba`` the armature
on the diagonal; joint friction FV qd + FC coul(qd) + FO is not a Pinocchio notion and is added here
from the description's values (:class:`Friction`).

The comparison rule (issue 2) is normwise per state: ``||a - b|| <= rtol ||b|| + atol`` with the
Euclidean norm for vectors and the Frobenius norm for matrices (b = Pinocchio). Importing this
module needs Pinocchio (``pip install manipgen[verify]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from host_tools.studies.identities import States
from host_tools.studies.pinocchio_models import load_yaml, num, standard_params_pinocchio, tanh_scales

# issue 2: double builds; a float build's own rounding (2^-24 ~ 6e-8) times the expression depth
DOUBLE_TOL = (1e-9, 1e-12)
FLOAT_TOL = (1e-4, 1e-6)


# ----------------------------------------------------------------------------------------------
# Friction (not part of a Pinocchio model)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Friction:
    """tau_f = FV qd + FC coul(qd) + FO; coul = sign, or tanh(qd / velocity_scale)."""

    fv: np.ndarray
    fc: np.ndarray
    fo: np.ndarray
    velocity_scale: np.ndarray | None = None  # per joint (or one for all); None: sign

    def __call__(self, qd: np.ndarray) -> np.ndarray:
        qd = np.asarray(qd, dtype=float)
        shape = np.sign(qd) if self.velocity_scale is None else np.tanh(qd / self.velocity_scale)
        return self.fv * qd + self.fc * shape + self.fo

    @staticmethod
    def zero(n: int) -> Friction:
        return Friction(np.zeros(n), np.zeros(n), np.zeros(n))

    @staticmethod
    def from_yaml(path: Path) -> Friction:
        return Friction.from_doc(load_yaml(path))

    @staticmethod
    def from_doc(doc: dict[str, Any]) -> Friction:
        """From a robot YAML's (or a URDF overlay's) joints and coulomb model; missing values are 0."""
        coulomb = doc.get("coulomb") or {"model": "sign"}
        scale = tanh_scales(coulomb["velocity_scale"]) if coulomb.get("model", "sign") == "tanh" else None
        joints = doc["joints"]
        col = {k: np.array([num(j.get(k, 0.0)) for j in joints]) for k in ("FV", "FC", "FO")}
        return Friction(col["FV"], col["FC"], col["FO"], scale)


# ----------------------------------------------------------------------------------------------
# Pinocchio references
# ----------------------------------------------------------------------------------------------
class PinReference:
    """The generated functions' definitions, evaluated with Pinocchio (double precision)."""

    def __init__(
        self, model: pin.Model, friction: Friction, tip_frame: str, base_frame: str | None = None, name: str = ""
    ) -> None:
        """``tip_frame``: Pinocchio's frame of our tip; ``base_frame``: of our base (None: the world)."""
        self.model, self.data, self.friction = model, model.createData(), friction
        self.nv = model.nv
        self.tip_id = model.getFrameId(tip_frame)
        self.base_id = None if base_frame is None else model.getFrameId(base_frame)
        for fid, frame in ((self.tip_id, tip_frame), (self.base_id, base_frame)):
            if fid is not None and fid >= model.nframes:
                raise LookupError(f"{name or model.name}: Pinocchio model has no frame {frame!r}")
        self.pi_pin = standard_params_pinocchio(model).ravel()
        self._continuous = [j.nq == 2 for j in list(model.joints)[1:]]

    def config(self, q: np.ndarray) -> np.ndarray:
        """Joint angles as Pinocchio's configuration: a continuous joint's is (cos q, sin q)."""
        if not any(self._continuous):
            return q
        out: list[float] = []
        for continuous, value in zip(self._continuous, q):
            out += [np.cos(value), np.sin(value)] if continuous else [value]
        return np.array(out)

    def rnea(self, q, qd, qdd):
        return pin.rnea(self.model, self.data, self.config(q), qd, qdd) + self.friction(qd)

    def crba(self, q):
        M = pin.crba(self.model, self.data, self.config(q))
        return np.triu(M) + np.triu(M, 1).T

    def coriolis(self, q, qd):
        return pin.computeCoriolisMatrix(self.model, self.data, self.config(q), qd) @ qd

    def gravity(self, q):
        return pin.computeGeneralizedGravity(self.model, self.data, self.config(q))

    def nonlinear_effects(self, q, qd):
        return pin.nonLinearEffects(self.model, self.data, self.config(q), qd) + self.friction(qd)

    def aba(self, q, qd, tau):
        return pin.aba(self.model, self.data, self.config(q), qd, tau - self.friction(qd))

    def regressor_torque(self, q, qd, qdd):
        """computeJointTorqueRegressor . pi + IA qdd + friction (the regressor has neither)."""
        Y = pin.computeJointTorqueRegressor(self.model, self.data, self.config(q), qd, qdd)
        return Y @ self.pi_pin + self.model.armature * qdd + self.friction(qd)

    def _base_inverse(self) -> pin.SE3:
        return pin.SE3.Identity() if self.base_id is None else self.data.oMf[self.base_id].inverse()

    def tip_pose(self, q):
        pin.framesForwardKinematics(self.model, self.data, self.config(q))
        return (self._base_inverse() * self.data.oMf[self.tip_id]).homogeneous

    def tip_jacobian(self, q):
        """[v; omega] of the tip origin, axes of our base frame."""
        J = pin.computeFrameJacobian(
            self.model, self.data, self.config(q), self.tip_id, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        )
        R = self._base_inverse().rotation
        return np.vstack([R @ J[:3], R @ J[3:]])


# ----------------------------------------------------------------------------------------------
# The comparison rule (the states: host_tools.studies.identities.random_states)
# ----------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    robot: str
    quantity: str
    worst_rel: float  # max over states of ||a - b|| / ||b||
    worst_ratio: float  # max over states of ||a - b|| / (rtol ||b|| + atol)  (<= 1 passes)
    failures: int
    count: int
    message: str

    @property
    def ok(self) -> bool:
        return self.failures == 0


def compare(
    robot: str, quantity: str, ours: np.ndarray, ref: np.ndarray, tol: tuple[float, float], states: States | None = None
) -> Comparison:
    ours = np.asarray(ours, dtype=float).reshape(len(ref), -1)
    ref = np.asarray(ref, dtype=float).reshape(len(ref), -1)
    rtol, atol = tol
    err = np.linalg.norm(ours - ref, axis=1)
    scale = np.linalg.norm(ref, axis=1)
    ratio = err / (rtol * scale + atol)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(scale > 0.0, err / scale, np.where(err > 0.0, np.inf, 0.0))
    if not np.all(np.isfinite(ours)):
        ratio = np.where(np.isfinite(ours).all(axis=1), ratio, np.inf)
    k = int(np.argmax(ratio))
    failures = int(np.sum(~(ratio <= 1.0)))
    msg = (
        f"{robot}: {quantity}: {failures}/{len(ref)} states outside ||a-b|| <= {rtol:g}*||b|| + "
        f"{atol:g}; worst relative error {rel.max():.3e}; worst state #{k}: ||a-b|| = "
        f"{err[k]:.3e}, ||b|| = {scale[k]:.3e}"
    )
    if states is not None:
        np.set_printoptions(precision=6, linewidth=160)
        msg += f"\n  q = {states.q[k]!r}\n  qd = {states.qd[k]!r}\n  qdd = {states.qdd[k]!r}"
    msg += f"\n  ours      = {ours[k]!r}\n  pinocchio = {ref[k]!r}"
    return Comparison(robot, quantity, float(rel.max()), float(ratio.max()), failures, len(ref), msg)
