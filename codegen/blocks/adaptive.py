"""Model-adaptive collision observer (seed 001 eqs. 9-21), discrete, and the tip wrench (eq. 28).

The model error tau_e = Y_b(q, qd, qdd) dtheta (base regressor, inertial and joint-parameter
columns; dtheta the parameter error) is the observer state (n values), dtheta_hat = Y+ tau_e_hat
(eq. 21) with the damped pseudo-inverse Y+ = Y^T (Y Y^T + lambda I)^-1 (an n x n Cholesky solve,
never a b x b one). Each sample k, with q, qd, qdd from the estimator (``kalman`` gives qdd):
  1. tau_e^- = Y_k dtheta_hat_{k-1}: the regressor's change applied to the last estimate -- eq. 9's
     Ydot dtheta_hat term integrated over the sample, i.e. Ydot by the difference of consecutive
     regressors (no jerk estimate);
  2. r_k = Y_k theta_hat + tau_f + tau_e^- - tau_k (eq. 16; Y theta_hat = rnea with the model
     parameters; tau_f the friction terms beyond viscous + Coulomb, codegen.blocks.friction, 0 unless
     configured):
     the external torque estimate, in the joint torque's sign convention;
  3. tau_e_hat = tau_e^- - (1 - exp(-K T)) r_k: eq. 11's correction Y dtheta_hat-dot = -K r, the
     exact decay of eq. 19 over one sample (with Y and tau held), never overshooting for K T > 1;
  4. dtheta_hat_k = Y_k^T x, (Y_k Y_k^T + lambda I) x = tau_e_hat.
With a constant external torque r decays as r_k+1 = exp(-K T) r_k (eq. 19-20: r is a high-pass of
tau_ext with corner K), so detection latches (det block) rather than relying on r staying high; and
with ``freeze`` (default) the adaptation stops while a collision is latched (dtheta_hat kept): a
sustained contact is not absorbed into the model error, r keeps showing it, and in.reset starts
the observer afresh. freeze = 0 is seed 001's observer (it adapts through contacts). A non-finite regressor or
solve (NaN/inf inputs) re-initialises the
observer (dtheta_hat = 0) instead of keeping NaN.
The first sample, and every in.reset, sets tau_e_hat = tau - Y theta_hat (the model error seen then)
and r = 0.
Tip wrench (seed 001 eq. 28): f = J+^T r = (J J^T + lambda_f I)^-1 J r, J the tip Jacobian [v; w]
(base frame), a 6 x 6 Cholesky solve: the force (N) and moment (N m) at the tip that explain r.
"""

from __future__ import annotations

import casadi as cs
import numpy as np

from . import registry
from .base import Block, Data, Field, evaluate, per_joint, sx_function
from .context import Ctx


def build(
    ctx: Ctx, k: float | tuple[float, ...] = 100.0, lam: float = 1e-6, lam_f: float = 1e-6, measured: bool = False
) -> Block:
    """``measured``: qd and qdd from the inputs ``in.qd_meas``, ``in.qdd_meas`` (IMU-fused estimates as
    seed 001 assumes, or a simulator's truth) instead of the estimator's qd_hat, qdd_hat."""
    n, ts = ctx.n, ctx.ts
    dyn, base = ctx.dyn, ctx.base
    nb = base.n_base
    model, pi = ctx.model_inputs()
    y_fn = cs.Function("y", [dyn.q, dyn.qd, dyn.qdd], [dyn.regressor(list(base.columns))])
    q, qd, qdd, tau, tau_e, kk = (ctx.sym(s) for s in ("q", "qd", "qdd", "tau", "tau_e", "k_o"))
    dth = cs.SX.sym("dtheta", nb)
    la, laf = cs.SX.sym("lam"), cs.SX.sym("lam_f")
    y = y_fn(q, qd, qdd)
    pred = y @ dth
    terms, tau_f = ctx.friction_terms()
    r = ctx.call("rnea", q, qd, qdd, pi) + tau_f + pred - tau
    tau_e_n = pred - (1 - cs.exp(-kk * ts)) * r
    gram = y @ y.T + la * cs.SX.eye(n)
    src = motion_source(measured)
    predict = sx_function(
        "predict",
        [
            ("out.q_hat", q),
            (src[0], qd),
            (src[1], qdd),
            ("in.tau", tau),
            ("st.obs.tau_e", tau_e),
            ("st.obs.dtheta", dth),
            ("cfg.obs.k_o", kk),
            ("cfg.obs.lam", la),
        ]
        + model
        + terms,
        [("st.obs.y", y), ("st.obs.gram", gram), ("st.obs.pred", pred), ("st.obs.tau_e", tau_e_n), ("out.r", r)],
        "Y_b, Y Y^T + lambda I, the corrected tau_e and r",
    )
    ys, x = cs.SX.sym("y", n * nb), cs.SX.sym("x", n)  # C's y[nb][n] (Y^T row-major) is Y column-major
    adapt = sx_function(
        "adapt",
        [("st.obs.y", ys), ("st.obs.x", x)],
        [("st.obs.dtheta", cs.reshape(ys, n, nb).T @ x)],
        "dtheta_hat = Y^T x",
    )
    j = cs.Function("j", [dyn.q], [dyn.tip_jacobian])(q)
    rr = ctx.sym("r")
    wrench = sx_function(
        "wrench",
        [("out.q_hat", q), ("out.r", rr), ("cfg.obs.lam_f", laf)],
        [("st.obs.jjt", j @ j.T + laf * cs.SX.eye(6)), ("out.f_tip", j @ rr)],
        "J J^T + lambda_f I and J r (solved in place for f)",
    )
    extra = motion_inputs(n) if measured else []
    return Block(
        kind="obs",
        name="adaptive_measured" if measured else "adaptive",
        doc=__doc__ or "",
        template="adaptive",
        inputs=extra,
        config=[
            Field(
                "k_o",
                "real",
                (n,),
                "observer gain K per joint (seed 001's K; the same config key as the momentum observer's K_O), 1/s",
                per_joint(k, n),
                low=0.0,
                high=1.0 / ts,
            ),
            Field("lam", "real", (), "damping lambda of Y+ (units of Y^2)", (lam,), low=0.0, low_open=True),
            Field("lam_f", "real", (), "damping lambda_f of J+ (m^2)", (lam_f,), low=0.0, low_open=True),
            Field(
                "freeze",
                "uint8",
                (),
                "1: keep dtheta_hat while a collision is latched, 0: adapt always (seed 001)",
                (1.0,),
                choices=(0.0, 1.0),
            ),
        ],
        state=[
            Field("tau_e", "real", (n,), "observer state: the model error Y dtheta_hat (N m or N)"),
            Field("dtheta", "real", (nb,), "dtheta_hat: base-parameter error estimate (eq. 21)"),
            Field("pred", "real", (n,), "workspace: Y_k dtheta_hat_{k-1}"),
            Field("y", "real", (nb, n), "workspace: Y_b^T of this sample"),
            Field("gram", "real", (n, n), "workspace: Y Y^T + lambda I"),
            Field("x", "real", (n,), "workspace: (Y Y^T + lambda I)^-1 tau_e"),
            Field("jjt", "real", (6, 6), "workspace: J J^T + lambda_f I"),
        ],
        outputs=[
            Field("r", "real", (n,), "residual r: external joint torque estimate (N m or N)"),
            Field("f_tip", "real", (6,), "tip wrench estimate [f (N); m (N m)], base frame"),
        ],
        functions=[predict, adapt, wrench],
        reference=reference,
    )


def motion_inputs(n: int) -> list[Field]:
    """The extra inputs of the *_measured observers: q-dot and q-ddot from outside the pipeline."""
    return [
        Field("qd_meas", "real", (n,), "measured joint velocity (rad/s or m/s)"),
        Field(
            "qdd_meas",
            "real",
            (n,),
            "measured joint acceleration at this instant, under the torque of the last sample (rad/s^2 or m/s^2)",
        ),
    ]


def motion_source(measured: bool) -> tuple[str, str]:
    """Bindings of q-dot and q-ddot: the measured inputs or the estimator's outputs."""
    return ("in.qd_meas", "in.qdd_meas") if measured else ("out.qd_hat", "out.qdd_hat")


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The C's mg_cholesky_solve: None where it fails (a not positive definite or not finite; a
    non-finite b goes through, as in C)."""
    if not np.all(np.isfinite(a)):
        return None
    try:
        c = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.solve(c.T, np.linalg.solve(c, b))


def reference(d: Data, block: Block) -> None:
    evaluate(block.fn("predict"), d)
    if d["loc.first"] or d["in.reset"]:  # tau_e := tau - Y theta_hat, r = 0
        d["st.obs.tau_e"] = d["st.obs.pred"] - d["out.r"]
        d["out.r"] = d["out.r"] * 0.0
    if not (d["cfg.obs.freeze"] and d["st.det.collision"]):
        x = _solve(d["st.obs.gram"], d["st.obs.tau_e"])
        ok = x is not None
        if x is not None:
            d["st.obs.x"] = x
            evaluate(block.fn("adapt"), d)
            ok = bool(np.all(np.isfinite(d["st.obs.dtheta"])))
        if not ok:
            for key in ("st.obs.x", "st.obs.dtheta", "st.obs.tau_e"):
                d[key] = np.zeros_like(d[key])
    evaluate(block.fn("wrench"), d)
    f = _solve(d["st.obs.jjt"], d["out.f_tip"])
    d["out.f_tip"] = np.zeros(6) if f is None else f


registry.register(
    registry.Observer(
        name="adaptive",
        summary="model-adaptive observer, estimated q-dot and q-ddot (seed 001 eqs. 9-21)",
        build=build,
        needs_acceleration=True,
        window=10,  # the adaptive residual is a high-pass of the contact: isolate within 10 samples
        fields=("k_o", "lam", "lam_f", "freeze"),
    ),
    registry.Observer(
        name="adaptive_measured",
        summary="model-adaptive observer, measured q-dot and q-ddot as inputs (seed 001's IMU set-up)",
        build=lambda ctx: build(ctx, measured=True),
        window=10,
        fields=("k_o", "lam", "lam_f", "freeze"),
    ),
)
