"""Collision detection, isolation and reaction on the observer's residual (Kirchhoff 2011 §5.2-5.4).

Per joint the threshold is ``threshold + kv |qd_hat| + ka |qdd_hat| + ks exp(-|qd_hat| / vs)``: a
static part, parts growing with the estimated speed and acceleration (model errors of viscous
friction and inertia; an estimator without a q-ddot estimate gives 0, so ``ka`` does nothing there),
and a standstill part that is largest at rest and fades above the velocity scale ``vs`` (the torque
static friction holds at rest, which no tanh friction model predicts). ``manipgen thresholds`` fits
them on a collision-free run. A threshold of 0 means *not designed*: that joint
never detects. It is the default, so a robot whose thresholds nobody designed (``manipgen
thresholds`` from a collision-free run, or the description's ``realtime.config``) never stops on a
false collision. Hysteresis: a joint becomes *above* when |r| exceeds its threshold and stays so
until |r| falls below ``release`` x threshold. Debounce: a joint counts consecutive samples above; a
collision is declared when some joint has been above for ``debounce`` samples. Then, latched until
``in.reset`` (which also clears the hysteresis and the counts): ``collision`` = 1, q_col = q_hat,
and ``link`` = the highest joint (1-based) above its threshold at that sample or any of the next
``window`` ones (a force on link i moves only r_1..r_i, Kirchhoff (2011) eq. 5.17; the residuals rise at
different rates, so the first sample may not show all; the adaptive observer's window is short, its
residual being a high-pass of the contact). Reaction (``reaction``): 0 none (flag only), 1 stop
(q_d = q_col, qd_d = qdd_d = 0), 2 reflex (Kirchhoff 2011 §5.4: q_d = q_col + int K_R r, qd_d = K_R r,
qdd_d = 0). The desired trajectory actually used is in the output (``q_d``, ``qd_d``, ``qdd_d``).
"""

from __future__ import annotations

from typing import TypeVar

import casadi as cs

from codegen.symbolic.functions import FunctionSpec

from .base import Block, Field, per_joint, sx_function
from .context import Ctx

# the threshold's coefficients, in the order of ``level``'s arguments after qd_hat and qdd_hat (linear
# in each: ``manipgen thresholds`` fits them as a linear programme on the Jacobian of ``level``)
COEFFICIENTS = ("threshold", "kv", "ka", "ks")
# the longest debounce the config takes, samples (det.debounce's upper bound)
DEBOUNCE_MAX = 1e6


# the level's expressions are written once for either kind of CasADi symbol: the generated step's
# (SX) and the host's evaluation along a whole run (MX, host_tools.studies.thresholds.threshold_along)
Sym = TypeVar("Sym", cs.SX, cs.MX)


def _moving(qd: Sym, qdd: Sym, th: Sym, kv: Sym, ka: Sym) -> Sym:
    """threshold + kv |qd| + ka |qdd|: the level without its standstill part."""
    return th + kv * cs.fabs(qd) + ka * cs.fabs(qdd)


def _standstill(qd: Sym, ks: Sym, vs: Sym) -> Sym:
    """ks exp(-|qd| / vs): the standstill part."""
    return ks * cs.exp(-cs.fabs(qd) / vs)


def level(qd: Sym, qdd: Sym, th: Sym, kv: Sym, ka: Sym, ks: Sym, vs: Sym) -> Sym:
    """The detection threshold per joint (elementwise; 0 where ``th`` is 0: not detecting)."""
    return cs.if_else(th > 0, _moving(qd, qdd, th, kv, ka) + _standstill(qd, ks, vs), 0)


def _level(ctx: Ctx) -> tuple[FunctionSpec, FunctionSpec, FunctionSpec]:
    """The level in three functions, so that the step pays only for the parts a configuration uses
    (templates/rt/detect.c.j2): ``level``, all joints' level without the standstill part (``level``
    at ks = 0: its ks exp term is +0 there, so the bits are the same); ``constant``, the same at
    kv = ka = 0, run instead when every kv and ka is 0 (kv |qd_hat| and ka |qdd_hat| are +0 there for
    finite qd_hat and qdd_hat, so threshold + 0 + 0 has threshold's bits; a non-finite one is a
    numeric fault, which restarts the detection); and ``standstill``, one joint's: that level plus
    the standstill part where it detects. The sum's order is ``level``'s, so a joint with ks != 0
    gets the bits of ``level`` too."""
    qd, qdd = ctx.sym("qd"), ctx.sym("qdd")
    th, kv, ka = ctx.sym("threshold"), ctx.sym("kv"), ctx.sym("ka")
    moving = sx_function(
        "level",
        [("out.qd_hat", qd), ("out.qdd_hat", qdd), ("cfg.det.threshold", th), ("cfg.det.kv", kv), ("cfg.det.ka", ka)],
        [("st.det.level", cs.if_else(th > 0, _moving(qd, qdd, th, kv, ka), 0))],
        "threshold + kv |qd_hat| + ka |qdd_hat| (0: the joint does not detect); + ks exp(-|qd_hat| / vs): standstill",
    )
    zero = cs.SX.zeros(ctx.n)
    constant = sx_function(
        "constant",
        [("cfg.det.threshold", th)],
        [("st.det.level", cs.if_else(th > 0, _moving(qd, qdd, th, zero, zero), 0))],
        "the level where every kv and ka is 0 (called instead of level then): threshold (0: the joint does not detect)",
    )
    keys = ("st.det.level", "cfg.det.threshold", "out.qd_hat", "cfg.det.ks", "cfg.det.vs")
    one_joint = {k: cs.SX.sym(k) for k in keys}
    lv, th1, qd1, ks1, vs1 = one_joint.values()
    one = sx_function(  # one joint's: called with its elements (scalar bindings)
        "standstill",
        list(one_joint.items()),
        [("st.det.level", cs.if_else(th1 > 0, lv + _standstill(qd1, ks1, vs1), 0))],
        "one joint's level + ks exp(-|qd_hat| / vs) where it detects (called where ks != 0)",
    )
    return moving, constant, one


def _reflex(ctx: Ctx) -> FunctionSpec:
    qc, integ, r, kr = ctx.sym("q_col"), ctx.sym("integ"), ctx.sym("r"), ctx.sym("k_r")
    integ_n = integ + ctx.ts * kr * r
    return sx_function(
        "reflex",
        [("st.det.q_col", qc), ("st.det.integ", integ), ("out.r", r), ("cfg.det.k_r", kr)],
        [("st.det.integ", integ_n), ("out.q_d", qc + integ_n), ("out.qd_d", kr * r)],
        "q_d = q_col + int K_R r, qd_d = K_R r",
    )


def _threshold_config(
    n: int,
    threshold: float | tuple[float, ...],
    kv: float | tuple[float, ...],
    ka: float | tuple[float, ...],
    ks: float | tuple[float, ...],
    vs: float | tuple[float, ...],
) -> list[Field]:
    """The threshold's coefficients (``level``)."""
    return [
        Field(
            "threshold",
            "real",
            (n,),
            "static residual threshold (N m or N); 0: not designed, the joint does not detect",
            per_joint(threshold, n),
            low=0.0,
        ),
        Field("kv", "real", (n,), "speed-dependent threshold part (N m s/rad)", per_joint(kv, n), low=0.0),
        Field(
            "ka",
            "real",
            (n,),
            "acceleration-dependent threshold part (N m s^2/rad; 0 effect without a q-ddot estimate)",
            per_joint(ka, n),
            low=0.0,
        ),
        Field("ks", "real", (n,), "standstill threshold part at rest (N m)", per_joint(ks, n), low=0.0),
        Field(
            "vs",
            "real",
            (n,),
            "velocity scale of the standstill part (rad/s): it is ks/e at |qd_hat| = vs",
            per_joint(vs, n),
            low=0.0,
            low_open=True,
        ),
    ]


def _decision_config(
    n: int, release: float, debounce: int, reaction: int, k_r: float | tuple[float, ...], window: int
) -> list[Field]:
    """Hysteresis, debounce, reaction and isolation."""
    return [
        Field(
            "release",
            "real",
            (),
            "hysteresis: release below release x threshold (0..1)",
            (release,),
            low=0.0,
            high=1.0,
        ),
        Field(
            "debounce",
            "int32",
            (n,),
            "samples above threshold before a detection (>= 1)",
            per_joint(float(debounce), n),
            low=1.0,
            high=DEBOUNCE_MAX,
        ),
        Field(
            "reaction",
            "uint8",
            (),
            "MG_REACTION_NONE (0), MG_REACTION_STOP (1), MG_REACTION_REFLEX (2) (Kirchhoff 2011 §5.4)",
            (float(reaction),),
            choices=(0.0, 1.0, 2.0),
        ),
        Field("k_r", "real", (n,), "reflex gain K_R (rad/s per N m)", per_joint(k_r, n), low=0.0),
        Field(
            "window",
            "int32",
            (),
            "samples after the detection during which the isolated link may "
            "still rise (a low-pass residual rises slowly; the adaptive observer's high-pass one is "
            "best right after the impact)",
            (float(window),),
            low=0.0,
            high=1e9,
        ),
    ]


def _state(n: int) -> list[Field]:
    return [
        Field("level", "real", (n,), "workspace: this sample's thresholds (0: not detecting)"),
        Field("above", "uint8", (n,), "hysteresis state per joint"),
        Field("count", "int32", (n,), "consecutive samples above"),
        Field("collision", "uint8", (), "latched collision flag"),
        Field("link", "int32", (), "latched isolated link, 1-based (0: none)"),
        Field("q_col", "real", (n,), "q_hat at detection"),
        Field("integ", "real", (n,), "reflex integral of K_R r"),
        Field("since", "int32", (), "samples since the detection (saturates)"),
        Field("standstill", "uint8", (), "derived: 1 if some joint's ks is not 0 (the standstill part runs)"),
        Field("moving", "uint8", (), "derived: 1 if some joint's kv or ka is not 0 (level runs, else constant)"),
    ]


def build(
    ctx: Ctx,
    threshold: float | tuple[float, ...] = 0.0,
    kv: float | tuple[float, ...] = 0.0,
    ka: float | tuple[float, ...] = 0.0,
    ks: float | tuple[float, ...] = 0.0,
    vs: float | tuple[float, ...] = 0.01,
    release: float = 0.5,
    debounce: int = 3,
    reaction: int = 1,
    k_r: float | tuple[float, ...] = 0.03,
    window: int = 1_000_000,
) -> Block:
    n = ctx.n
    moving, constant, standstill = _level(ctx)
    reflex = _reflex(ctx)
    return Block(
        kind="det",
        name="threshold",
        doc=__doc__ or "",
        template="detect",
        config=_threshold_config(n, threshold, kv, ka, ks, vs)
        + _decision_config(n, release, debounce, reaction, k_r, window),
        state=_state(n),
        outputs=[
            Field("collision", "uint8", (), "1 from the detecting sample until in.reset"),
            Field("link", "int32", (), "isolated link, 1-based (0: none)"),
            Field("above", "uint8", (n,), "joints above their threshold this sample"),
        ],
        functions=[moving, constant, standstill, reflex],
    )
