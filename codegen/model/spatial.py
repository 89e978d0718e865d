"""Numeric rigid-body helpers for building the model (not the dynamics: those live in CasADi).

Rotation matrices built from angles snap entries within 1e-12 of 0, +-1/2 and +-1 to the exact
value, so that e.g. alpha = pi/2 gives exact zeros and CasADi folds them away at generation time.
Sines, cosines and products are computed by codegen.model.exact (correctly rounded, no BLAS), so that the
model -- and every number generation prints from it -- is the same on every machine.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import casadi as cs
import numpy as np

from codegen.model import exact

_EXACT = (0.0, 0.5, -0.5, 1.0, -1.0)


def snap(x: float) -> float:
    for e in _EXACT:
        if abs(x - e) < 1e-12:
            return e
    return x


def snapped(a: np.ndarray) -> np.ndarray:
    return np.vectorize(snap, otypes=[float])(a)


def rot_x(t: float) -> np.ndarray:
    c, s = snap(exact.cos(t)), snap(exact.sin(t))
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(t: float) -> np.ndarray:
    c, s = snap(exact.cos(t)), snap(exact.sin(t))
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(t: float) -> np.ndarray:
    c, s = snap(exact.cos(t)), snap(exact.sin(t))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def homogeneous(r: np.ndarray, p: np.ndarray | tuple[float, ...] | list[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = r
    t[:3, 3] = p
    return t


def trans(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    return homogeneous(np.eye(3), (x, y, z))


def rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return snapped(exact.matmul(rot_z(yaw), rot_y(pitch), rot_x(roll)))


def inverse(t: np.ndarray) -> np.ndarray:
    r = t[:3, :3]
    return homogeneous(r.T, -exact.matmul(r.T, t[:3, 3]))


def skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def z_to_axis(axis: np.ndarray) -> np.ndarray:
    """A rotation R with R @ e_z = axis (unit). Exact for the coordinate axes."""
    a = np.asarray(axis, dtype=float)
    a = a / exact.norm(a)
    axes = {
        (0, 0, 1): np.eye(3),
        (0, 0, -1): rot_x(math.pi),
        (1, 0, 0): rot_y(math.pi / 2),
        (-1, 0, 0): rot_y(-math.pi / 2),
        (0, 1, 0): rot_x(-math.pi / 2),
        (0, -1, 0): rot_x(math.pi / 2),
    }
    key = tuple(int(round(v)) for v in a)
    if np.allclose(a, key, atol=1e-12) and key in axes:
        return axes[key]
    z = np.array([0.0, 0.0, 1.0])
    v = exact.cross(z, a)
    s, c = exact.norm(v), float(a[2])
    k = skew(v / s)
    return np.eye(3) + s * k + (1 - c) * exact.matmul(k, k)


# --- the 10 inertial parameters of a body (Xu et al. 2020 eq. 3 order) ------------------------------
# p = [M, MX, MY, MZ, XX, XY, XZ, YY, YZ, ZZ]: mass, first moment m*c, inertia about the frame origin.


def inertia_matrix(p: np.ndarray) -> np.ndarray:
    return np.array([[p[4], p[5], p[6]], [p[5], p[7], p[8]], [p[6], p[8], p[9]]])


def pack(m: float, h: np.ndarray, i_o: np.ndarray) -> np.ndarray:
    return np.array([m, h[0], h[1], h[2], i_o[0, 0], i_o[0, 1], i_o[0, 2], i_o[1, 1], i_o[1, 2], i_o[2, 2]])


def transform_inertial_cs(m: Any, h: Any, i_b: Any, r: Any, o: Any) -> tuple[Any, Any, Any]:
    """Inertial parameters (m, first moment h, inertia about the origin) given in frame B,
    re-expressed in frame A, where B's pose in A is (r, o). Works on CasADi SX/DM.

    I_A = R I_B R^T - m S(o)S(o) - S(o)S(Rh) - S(Rh)S(o): the parallel-axis theorem (Xu et al. 2020
    eq. 14) in its general form. This is the only place it is written: the numeric model building
    (transform_inertial) and the symbolic composite-rigid-body algorithm (codegen.symbolic.dynamics) call it.
    """
    rh = cs.mtimes(r, h)
    so, srh = cs.skew(o), cs.skew(rh)
    i_a = cs.mtimes([r, i_b, r.T]) - m * cs.mtimes(so, so) - cs.mtimes(so, srh) - cs.mtimes(srh, so)
    return m, rh + m * o, i_a


@functools.cache
def _transform_inertial_exact() -> exact.MpFunction:
    m, h, i_b = cs.SX.sym("m"), cs.SX.sym("h", 3), cs.SX.sym("i_b", 3, 3)
    r, o = cs.SX.sym("r", 3, 3), cs.SX.sym("o", 3)
    return exact.MpFunction(
        cs.Function("transform_inertial", [m, h, i_b, r, o], list(transform_inertial_cs(m, h, i_b, r, o)))
    )


def transform_inertial(p: np.ndarray, t_ab: np.ndarray) -> np.ndarray:
    """Numeric form of transform_inertial_cs on the 10-vector p, with t_ab the pose of B in A
    (the same CasADi expression, evaluated exactly enough to round once: codegen.model.exact)."""
    p, t_ab = np.asarray(p, dtype=float), np.asarray(t_ab, dtype=float)
    return np.array(_transform_inertial_bits(p.shape, p.tobytes(), t_ab.shape, t_ab.tobytes()))


@functools.lru_cache(maxsize=4096)
def _transform_inertial_bits(
    p_shape: tuple[int, ...], p_bytes: bytes, t_shape: tuple[int, ...], t_bytes: bytes
) -> tuple[float, ...]:
    """transform_inertial by the bits of its inputs: the exact evaluation (3 ms) runs once per input,
    not once per call (Dynamics.links maps each joint's ten unit vectors at every symbolic build,
    about 500 calls per generated pipeline of a 7-joint arm; the suite generates hundreds)."""
    p, t_ab = np.frombuffer(p_bytes).reshape(p_shape), np.frombuffer(t_bytes).reshape(t_shape)
    m, h, i_a = (
        exact.from_mp(x)
        for x in _transform_inertial_exact()([p[0]], p[1:4], inertia_matrix(p), t_ab[:3, :3], t_ab[:3, 3])
    )
    return tuple(float(v) for v in pack(float(m[0, 0]), h.ravel(), i_a))


def from_com(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """Standard parameters from mass, centre of mass and inertia about the COM (same axes)."""
    return transform_inertial(pack(mass, np.zeros(3), inertia_com), homogeneous(np.eye(3), com))


def inertia_about_com(p: np.ndarray) -> np.ndarray:
    """Inverse of from_com for the inertia (mass must be positive)."""
    c = p[1:4] / p[0]
    return inertia_matrix(transform_inertial(p, homogeneous(np.eye(3), -c)))
