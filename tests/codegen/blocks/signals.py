"""Plausible test inputs for the real-time pipeline: smooth joint motion, quantised by the encoder,
with lost samples, torques and a desired trajectory near the motion."""

from __future__ import annotations

import numpy as np


def smooth_motion(
    k: int, n: int, ts: float, seed: int, amplitude: float = 0.6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, qd, qdd (k, n): a sum of three sines per joint with random frequencies 0.2-1.5 Hz."""
    rng = np.random.default_rng(seed)
    t = np.arange(k) * ts
    q, qd, qdd = (np.zeros((k, n)) for _ in range(3))
    for j in range(n):
        for _ in range(3):
            a, w, ph = (
                amplitude / 3 * rng.uniform(0.5, 1.0),
                2 * np.pi * rng.uniform(0.2, 1.5),
                rng.uniform(0, 2 * np.pi),
            )
            q[:, j] += a * np.sin(w * t + ph)
            qd[:, j] += a * w * np.cos(w * t + ph)
            qdd[:, j] += -a * w * w * np.sin(w * t + ph)
    return q, qd, qdd


def inputs(
    k: int, n: int, ts: float, cpr: float, seed: int, loss: float = 0.05, tau_scale: float = 5.0
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    q, qd, qdd = smooth_motion(k, n, ts, seed)
    counts = np.round(q / (2 * np.pi / cpr)).astype(np.int64)
    valid = rng.random((k, n)) > loss
    valid[:5] = True
    tau = tau_scale * np.sin(np.arange(k)[:, None] * ts * rng.uniform(1, 3, n) + rng.uniform(0, 6, n))
    return {
        "counts": counts,
        "valid": valid.astype(np.uint8),
        "tau": tau,
        "q_des": q + 0.01 * np.sin(np.arange(k) * ts)[:, None],
        "qd_des": qd,
        "qdd_des": qdd,
        "q_true": q,
        "qd_true": qd,
    }
