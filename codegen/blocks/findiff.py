"""Finite difference and moving average (Liu et al. §II-A, eq. 4).

qd_hat_k = (q_k - q_{k-p}) / (p * T_s): the difference first, then one division by the constant
p * T_s (a double product made at generation time) -- exactly the operation order that reproduces
Liu et al.'s recorded real-robot estimates bit for bit (4 ms LWA-4P logs: findiff p = 1, movav p = 3).
``findiff`` is p = 1. The first sample fills the history with q (no start-up spike).
"""

from __future__ import annotations

from collections.abc import Mapping

import casadi as cs

from . import registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs


def build(ctx: Ctx, p: int) -> Block:
    n = ctx.n
    q = ctx.sym("q")
    hist = cs.SX.sym("hist", n * p)
    h = cs.reshape(hist, p, n)  # column i: q_{k-1} ... q_{k-p} of joint i
    qd = (q - h[p - 1, :].T) / (p * ctx.ts)
    shifted = cs.vertcat(q.T, h[: p - 1, :]) if p > 1 else q.T
    step = sx_function(
        "step",
        [("out.q", q), ("st.est.hist", hist)],
        [("out.q_hat", q), ("out.qd_hat", qd), ("out.qdd_hat", cs.SX.zeros(n)), ("st.est.hist", shifted)],
        "(q_k - q_{k-p}) / (p T_s)",
    )
    init = sx_function("init", [("out.q", q)], [("st.est.hist", cs.repmat(q.T, p, 1))], "history := q")
    name = "findiff" if p == 1 else "movav"
    return Block(
        kind="est",
        name=name,
        doc=__doc__ or "",
        options={"p": p},
        state=[Field("hist", "real", (n, p), "q_{k-1} ... q_{k-p} per joint")],
        outputs=outputs(n),
        functions=[init, step],
    )


def _window(o: Mapping[str, float]) -> str | None:
    p = o["p"]
    return None if 1 <= p <= 64 else f"movav: window p must be in 1..64, got {p:g}"


FINDIFF = registry.Estimator(
    name="findiff",
    summary="finite difference (Liu et al. eq. 4)",
    build=lambda ctx, choice: build(ctx, 1),
    in_study=True,
)
MOVAV = registry.Estimator(
    name="movav",
    summary="moving average over p samples (Liu et al. eq. 4)",
    build=lambda ctx, choice: build(ctx, int(choice.get("p"))),
    options={"p": int},
    defaults={"p": 2},
    check=_window,
    grid=tuple(f"movav:p={p}" for p in range(2, 7)),
    in_study=True,
)
registry.register(FINDIFF, MOVAV)
