"""Run-time model parameters: the standard parameter vector and an extra payload on the last link.

The observer, the model-based estimators and the controllers read ``st.model.pi`` = params with the
payload's 10 parameters (M, MX, ..., ZZ about the last link frame, Xu et al. (2020) eq. 3) added to the last
link's, and, for a description with smooth Coulomb friction, ``cfg.model.coulomb_scale`` (its tanh
scales, run-time so that fitted ones need no regeneration). Absent in a constant-parameter build (the
robot's own parameters are folded in).
"""

from __future__ import annotations

import casadi as cs
import numpy as np

from codegen.model.robot import LINK_PARAMS

from .base import Block, Field, sx_function
from .context import Ctx


def last_link_offset(ctx: Ctx) -> int:
    names = ctx.robot.standard_parameter_names
    return names.index(f"M{ctx.n}")


def build(ctx: Ctx) -> Block:
    ns = ctx.robot.n_standard
    params = cs.SX.sym("params", ns)
    payload = cs.SX.sym("payload", 10)
    k = last_link_offset(ctx)
    e = np.zeros((ns, 10))
    e[k : k + 10, :] = np.eye(10)
    pi = params + cs.mtimes(cs.DM(e), payload)
    derive = sx_function(
        "model_derive",
        [("cfg.model.params", params), ("cfg.model.payload", payload)],
        [("st.model.pi", pi)],
        "pi = params + payload added to the last link",
    )
    scale = []
    if ctx.coulomb_scale is not None:  # the smooth Coulomb friction's scales, e.g. fitted (manipgen identify)
        c = ctx.robot.coulomb
        scale = [
            Field(
                "coulomb_scale",
                "real",
                (ctx.n,),
                "Coulomb friction's velocity scale v_c per joint: FC tanh(qd / v_c) (rad/s or m/s)",
                tuple(c.scale(i) for i in range(ctx.n)),
                low=0.0,
                low_open=True,
            )
        ]
    return Block(
        kind="model",
        name="params",
        doc="Run-time dynamic parameters (standard vector, order of <robot>_standard_parameter_names)"
        + (", " if scale else " and ")
        + "an extra payload on the last link ("
        + ", ".join(LINK_PARAMS)
        + ", last link frame)"
        + (" and the Coulomb friction's velocity scales v_c." if scale else "."),
        config=[
            Field("params", "real", (ns,), "standard parameters (SI)", tuple(ctx.robot.standard_parameters())),
            Field("payload", "real", (10,), "extra payload on the last link, added to params", (0.0,) * 10),
            *scale,
        ],
        state=[Field("pi", "real", (ns,), "derived: params + payload")],
        derive=derive,
    )
