"""planar2 against the textbook two-link formulas (M, C, g), written here independently."""

from __future__ import annotations

import numpy as np

from host_tools import load
from tests.tooling import ROOT

M1, M2, L1, LC1, LC2, G = 2.0, 1.5, 1.0, 0.5, 0.4, 9.81
I1, I2 = 2.0 * 1.0**2 / 12, 1.5 * 0.8**2 / 12
IA = (0.01, 0.005)
FV, FC = (0.1, 0.05), (0.2, 0.1)


def textbook(q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    m11 = I1 + I2 + M1 * LC1**2 + M2 * (L1**2 + LC2**2 + 2 * L1 * LC2 * c2) + IA[0]
    m12 = I2 + M2 * (LC2**2 + L1 * LC2 * c2)
    m22 = I2 + M2 * LC2**2 + IA[1]
    h = -M2 * L1 * LC2 * s2
    c = np.array([[h * qd[1], h * (qd[0] + qd[1])], [-h * qd[0], 0.0]])  # Christoffel form
    g = np.array(
        [
            (M1 * LC1 + M2 * L1) * G * np.cos(q[0]) + M2 * LC2 * G * np.cos(q[0] + q[1]),
            M2 * LC2 * G * np.cos(q[0] + q[1]),
        ]
    )
    return np.array([[m11, m12], [m12, m22]]), c, g


def test_planar2_matches_the_textbook() -> None:
    dyn = load("planar2")
    rng = np.random.default_rng(7)
    for _ in range(500):
        q, qd, qdd = rng.uniform(-np.pi, np.pi, 2), rng.normal(0, 2, 2), rng.normal(0, 5, 2)
        m, c, g = textbook(q, qd)
        assert np.allclose(dyn.mass_matrix(q), m, rtol=1e-13, atol=1e-13)
        assert np.allclose(dyn.coriolis_matrix(q, qd), c, rtol=1e-12, atol=1e-12)
        assert np.allclose(dyn.gravity(q), g, rtol=1e-13, atol=1e-12)
        friction = np.array(FV) * qd + np.array(FC) * np.sign(qd)
        assert np.allclose(dyn.friction(qd), friction, rtol=1e-14, atol=1e-14)
        assert np.allclose(dyn.rnea(q, qd, qdd), m @ qdd + c @ qd + g + friction, rtol=1e-12, atol=1e-12)
    # tip: l1 + l2 along x at q = 0, straight up (+y) at q = (pi/2, 0)
    assert np.allclose(dyn.tip_pose(np.zeros(2))[:3, 3], [1.8, 0, 0], atol=1e-15)
    assert np.allclose(dyn.tip_pose(np.array([np.pi / 2, 0]))[:3, 3], [0, 1.8, 0], atol=1e-15)


def test_planar2_with_a_payload(tmp_path) -> None:
    """A payload at the tip (mass mp, small inertia ip) changes link 2 by the closed-form sums."""

    text = ROOT.joinpath("robots", "planar2.yaml").read_text()
    mp, ip = 0.7, 0.002
    text += f"payload: {{mass: {mp}, com: [0.8, 0, 0], inertia: [{ip}, 0, 0, {ip}, 0, {ip}]}}\n"
    path = tmp_path / "planar2_payload.yaml"
    path.write_text(text)
    dyn = load(path)
    m2 = M2 + mp
    lc2 = (M2 * LC2 + mp * 0.8) / m2
    i2 = I2 + M2 * (LC2 - lc2) ** 2 + mp * (0.8 - lc2) ** 2 + ip
    rng = np.random.default_rng(8)
    for _ in range(100):
        q, _, _ = rng.uniform(-np.pi, np.pi, 2), rng.normal(0, 2, 2), rng.normal(0, 5, 2)
        c2 = np.cos(q[1])
        m = np.array(
            [
                [
                    I1 + i2 + M1 * LC1**2 + m2 * (L1**2 + lc2**2 + 2 * L1 * lc2 * c2) + IA[0],
                    i2 + m2 * (lc2**2 + L1 * lc2 * c2),
                ],
                [i2 + m2 * (lc2**2 + L1 * lc2 * c2), i2 + m2 * lc2**2 + IA[1]],
            ]
        )
        g = np.array(
            [
                (M1 * LC1 + m2 * L1) * G * np.cos(q[0]) + m2 * lc2 * G * np.cos(q[0] + q[1]),
                m2 * lc2 * G * np.cos(q[0] + q[1]),
            ]
        )
        assert np.allclose(dyn.mass_matrix(q), m, rtol=1e-12, atol=1e-12)
        assert np.allclose(dyn.gravity(q), g, rtol=1e-12, atol=1e-12)
