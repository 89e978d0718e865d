"""Friction terms beyond the description's viscous + Coulomb model, with run-time coefficients and
shape parameters (chosen per joint and fitted by ``manipgen identify`` on a recorded run, issue #24;
docs/identification.md):

  tau_f = FD z + FL |g(q_hat)| z_L + FS c(qd_hat) exp(-(qd_hat / v_s)^2)

- z, z_L: position-domain (Dahl) states per joint with lengths ``dahl_length``,
  ``load_dahl_length``: after a position step dq, z <- sgn(dq) - (sgn(dq) - z) exp(-|dq| / length),
  the exact solution of dz/dq = (sgn(dq) - z) / length; driven by the encoder's position steps
  (``out.q``, as identification drives them), 0 at the first sample;
- g(q_hat): the gravity torque with the run-time parameters (payload included), the load the
  drive holds (load-dependent friction of geared drives). Identification fits FL against the
  description's gravity (``manipgen identify``): an approximation where the
  identified masses differ from the description's (Liu et al.'s LWA-4P: up to 0.75 N m of FL torque
  on joint 2, RMS 0.35). Both alternatives measured worse on the run the thresholds were checked
  on (docs/real-data.md, "The terms in the generated C");
- c: the Coulomb shape (tanh(qd / v_c) with ``model.coulomb_scale``, or sgn), times the Stribeck
  decay with velocity ``stribeck_velocity``.

The observers add tau_f to their model's friction; the controllers compensate the description's
friction only (a Dahl state fed forward acts as stiction compensation, which a tuned loop did not
ask for). With the coefficients at 0 (the default) the terms vanish and the pipeline is the
description's model.
"""

from __future__ import annotations

import casadi as cs

from codegen.symbolic.dynamics import dahl_step, stribeck

from .base import Block, Field, sx_function
from .context import Ctx

DAHL_LENGTH = 1e-3  # rad (m): the lengths' default (no effect while their coefficient is 0)
STRIBECK_VELOCITY = 0.1  # rad/s (m/s): likewise


def build(ctx: Ctx) -> Block:
    n = ctx.n
    model, pi = ctx.model_inputs()
    q_enc, q, qd = ctx.sym("q"), ctx.sym("q_hat"), ctx.sym("qd_hat")
    last, z, z_load = ctx.sym("q_last"), ctx.sym("z"), ctx.sym("z_load")
    fd, length, fl, load_length = ctx.sym("fd"), ctx.sym("dahl_length"), ctx.sym("fl"), ctx.sym("load_dahl_length")
    fs, v_s = ctx.sym("fs"), ctx.sym("stribeck_velocity")
    dq = q_enc - last
    z_n, z_load_n = dahl_step(z, dq, length), dahl_step(z_load, dq, load_length)
    load = cs.fabs(ctx.call("gravity", q, pi))
    coulomb = ctx.dyn.coulomb(qd, ctx.coulomb_scale)
    tau = fd * z_n + fl * load * z_load_n + fs * stribeck(coulomb, qd, v_s)
    step = sx_function(
        "step",
        [
            ("out.q", q_enc),
            ("out.q_hat", q),
            ("out.qd_hat", qd),
            ("st.fric.q_last", last),
            ("st.fric.z", z),
            ("st.fric.z_load", z_load),
            ("cfg.fric.fd", fd),
            ("cfg.fric.dahl_length", length),
            ("cfg.fric.fl", fl),
            ("cfg.fric.load_dahl_length", load_length),
            ("cfg.fric.fs", fs),
            ("cfg.fric.stribeck_velocity", v_s),
            *model,
        ],
        [("st.fric.z", z_n), ("st.fric.z_load", z_load_n), ("st.fric.q_last", q_enc), ("st.fric.tau", tau)],
        "Dahl states and the terms' torque",
    )
    unit = "N m or N per joint"
    return Block(
        kind="fric",
        name="terms",
        doc=__doc__ or "",
        template="friction",
        config=[
            Field("fd", "real", (n,), f"FD: Dahl friction's coefficient ({unit})", (0.0,) * n),
            Field(
                "dahl_length", "real", (n,), "Dahl length of z (rad or m)", (DAHL_LENGTH,) * n, low=0.0, low_open=True
            ),
            Field("fl", "real", (n,), "FL: load-dependent friction's coefficient (per N m of |g(q)|)", (0.0,) * n),
            Field(
                "load_dahl_length",
                "real",
                (n,),
                "Dahl length of z_L (rad or m)",
                (DAHL_LENGTH,) * n,
                low=0.0,
                low_open=True,
            ),
            Field("fs", "real", (n,), f"FS: Stribeck friction's coefficient ({unit})", (0.0,) * n),
            Field(
                "stribeck_velocity",
                "real",
                (n,),
                "Stribeck velocity v_s (rad/s or m/s)",
                (STRIBECK_VELOCITY,) * n,
                low=0.0,
                low_open=True,
            ),
        ],
        state=[
            Field("q_last", "real", (n,), "encoder position of the last sample"),
            Field("z", "real", (n,), "Dahl state z"),
            Field("z_load", "real", (n,), "Dahl state z_L of the load-dependent term"),
            Field("tau", "real", (n,), "the terms' torque tau_f this sample (N m or N)"),
        ],
        functions=[step],
    )
