"""Friction terms beyond the description's viscous + Coulomb model, with run-time coefficients and
shape parameters (chosen per joint and fitted by ``manipgen identify`` on a recorded run, issue #24;
docs/identification.md):

  tau_f = FD z + FL |g(q_hat)| z_L + FS c(qd_hat) exp(-(qd_hat / v_s)^2) + FT tanh(qd_hat / v_t) + FO

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
  decay with velocity ``stribeck_velocity``;
- FT tanh(qd_hat / v_t): a smooth Coulomb term with its own scale ``smooth_scale``, beside the
  description's Coulomb shape: a joint whose friction rises through zero velocity over v_t (a
  sigmoid friction model; identification chooses v_t where the data ask for it whatever the
  description's shape says, issue #44);
- FO: a constant offset torque (asymmetric Coulomb friction, or a torque sensor's offset) on a joint
  whose description identifies no FO of its own (identification offers it only there); it has no
  shape parameter.

Generated per joint for the terms the description declares (``friction:``, Robot.friction_terms;
``manipgen generate --friction-from CONFIG`` adds those an identified config sets): a joint's
other terms are not in the C, and a non-zero coefficient for them is refused (Field.unused) rather
than ignored; without any term the pipeline has no such block. The coefficients and shape
parameters of the generated terms are run-time config: identification's fitted lengths and
velocities reach the firmware without regenerating where the form is the same.

The observers add tau_f to their model's friction; the controllers compensate the description's
friction only (a Dahl state fed forward acts as stiction compensation, which a tuned loop did not
ask for). With the coefficients at 0 (the default) the terms vanish and the pipeline is the
description's model.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs

from codegen.model.robot import FRICTION_TERMS
from codegen.symbolic.dynamics import dahl_step, smooth_coulomb, stribeck

from .base import Block, Field, sx_function
from .context import Ctx

DAHL_LENGTH = 1e-3  # rad (m): the lengths' default (no effect while their coefficient is 0)
STRIBECK_VELOCITY = 0.1  # rad/s (m/s): likewise
SMOOTH_SCALE = 0.1  # rad/s (m/s): likewise
UNIT = "N m or N per joint"


@dataclass(frozen=True)
class Term:
    """One term's run-time fields: its coefficient and shape parameter (and Dahl state, if any)."""

    name: str  # as the description's friction: section names it (FRICTION_TERMS)
    title: str
    coefficient: str
    shape: str  # its shape parameter ('' = none: the offset)
    shape_doc: str
    shape_default: float
    state: str = ""  # its Dahl state ('' = none)
    coefficient_doc: str = ""
    state_doc: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        """Its run-time config fields: the coefficient, and the shape parameter if it has one."""
        return (self.coefficient, self.shape) if self.shape else (self.coefficient,)


TERMS = {
    t.name: t
    for t in (
        Term(
            "dahl",
            "Dahl",
            "fd",
            "dahl_length",
            "Dahl length of z (rad or m)",
            DAHL_LENGTH,
            "z",
            f"FD: Dahl friction's coefficient ({UNIT})",
            "Dahl state z",
        ),
        Term(
            "load",
            "load-dependent",
            "fl",
            "load_dahl_length",
            "Dahl length of z_L (rad or m)",
            DAHL_LENGTH,
            "z_load",
            "FL: load-dependent friction's coefficient (per N m of |g(q)|)",
            "Dahl state z_L of the load-dependent term",
        ),
        Term(
            "stribeck",
            "Stribeck",
            "fs",
            "stribeck_velocity",
            "Stribeck velocity v_s (rad/s or m/s)",
            STRIBECK_VELOCITY,
            coefficient_doc=f"FS: Stribeck friction's coefficient ({UNIT})",
        ),
        Term(
            "smooth",
            "smooth Coulomb",
            "ft",
            "smooth_scale",
            "velocity scale v_t of the smooth Coulomb term FT tanh(qd / v_t) (rad/s or m/s)",
            SMOOTH_SCALE,
            coefficient_doc=f"FT: the smooth Coulomb term's coefficient ({UNIT})",
        ),
        Term(
            "offset",
            "offset",
            "fo",
            "",
            "",
            0.0,
            coefficient_doc=f"FO: a constant offset torque ({UNIT})",
        ),
    )
}
assert tuple(TERMS) == FRICTION_TERMS
FIELDS = frozenset(f"fric.{k}" for t in TERMS.values() for k in t.fields)  # every term's


def missing(term: str) -> str:
    """Why a non-zero coefficient of a term the generated code lacks is refused (Field.unused_why,
    with {joints} and {value})."""
    return (
        f"the generated code has no {TERMS[term].title} term on {{joints}} (it would ignore {{value:g}}): "
        "declare it in the description (friction: {{terms: ...}} or {{model: general}}) or generate with "
        "--friction-from <config JSON>"
    )


def coefficient_term(key: str) -> str | None:
    """The term whose coefficient the config key ``fric.<field>`` is, or None (a shape parameter)."""
    return next((t.name for t in TERMS.values() if key == "fric." + t.coefficient), None)


def _torque(ctx: Ctx, syms: dict[str, cs.SX], dq: cs.SX, pi: cs.SX) -> tuple[cs.SX, dict[str, cs.SX]]:
    """tau_f per joint of the joint's terms only, and the Dahl states' update (a joint without the
    term keeps its state, 0)."""
    n, robot = ctx.n, ctx.robot
    q, qd = syms["q_hat"], syms["qd_hat"]
    updated = {t.state: [syms[t.state][j] for j in range(n)] for t in TERMS.values() if t.state in syms}
    used = {t for j in range(n) for t in robot.terms_of(j)}
    load = cs.fabs(ctx.call("gravity", q, pi)) if "load" in used else cs.SX.zeros(n)
    coulomb = ctx.dyn.coulomb(qd, ctx.coulomb_scale) if "stribeck" in used else cs.SX.zeros(n)
    tau = []
    for j in range(n):
        tau_j = cs.SX(0)
        for name in robot.terms_of(j):
            t = TERMS[name]
            coef = syms[t.coefficient][j]
            if name == "offset":  # no shape parameter
                tau_j += coef
                continue
            shape = syms[t.shape][j]
            if t.state:
                updated[t.state][j] = dahl_step(syms[t.state][j], dq[j], shape)
                tau_j += coef * updated[t.state][j] * (load[j] if name == "load" else 1)
            elif name == "smooth":
                tau_j += coef * smooth_coulomb(qd[j], shape)
            else:
                tau_j += coef * stribeck(coulomb[j], qd[j], shape)
        tau.append(tau_j)
    return cs.vertcat(*tau), {k: cs.vertcat(*v) for k, v in updated.items()}


def build(ctx: Ctx) -> Block:
    n, robot = ctx.n, ctx.robot
    model, pi = ctx.model_inputs()
    used = [t for t in TERMS.values() if any(t.name in robot.terms_of(j) for j in range(n))]
    states = [t.state for t in used if t.state]
    syms = {k: ctx.sym(k) for k in ("q", "q_hat", "qd_hat", "q_last", *states)}
    syms |= {k: ctx.sym(k) for t in used for k in t.fields}
    tau, updated = _torque(ctx, syms, syms["q"] - syms["q_last"], pi)
    position = [("out.q", syms["q"])] if states else []
    last = [("st.fric.q_last", syms["q_last"])] if states else []
    step = sx_function(
        "step",
        [
            *position,
            ("out.q_hat", syms["q_hat"]),
            ("out.qd_hat", syms["qd_hat"]),
            *last,
            *((f"st.fric.{s}", syms[s]) for s in states),
            *((f"cfg.fric.{k}", syms[k]) for t in used for k in t.fields),
            *model,
        ],
        [
            *((f"st.fric.{s}", updated[s]) for s in states),
            *(("st.fric.q_last", syms["q"]),) * bool(states),
            ("st.fric.tau", tau),
        ],
        "Dahl states and the terms' torque",
    )
    config: list[Field] = []
    for t in used:
        unused = tuple(j for j in range(n) if t.name not in robot.terms_of(j))
        config.append(
            Field(t.coefficient, "real", (n,), t.coefficient_doc, (0.0,) * n, unused=unused, unused_why=missing(t.name))
        )
        if t.shape:
            config.append(Field(t.shape, "real", (n,), t.shape_doc, (t.shape_default,) * n, low=0.0, low_open=True))
    state = [Field("q_last", "real", (n,), "encoder position of the last sample")] if states else []
    state += [Field(t.state, "real", (n,), t.state_doc) for t in used if t.state]
    return Block(
        kind="fric",
        name="terms",
        doc=__doc__ or "",
        template="friction",
        config=config,
        state=[*state, Field("tau", "real", (n,), "the terms' torque tau_f this sample (N m or N)")],
        functions=[step],
        options={"terms": tuple(robot.terms_of(j) for j in range(n)), "position": bool(states)},
    )
