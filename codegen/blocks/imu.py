"""IMU-fused joint velocity and acceleration (what seed 001 assumes, §III-c; its refs [1, 2]).

Each link-mounted IMU (the description's ``imus:``; option ``tip=1``: one IMU at the tip frame
instead, seed 001's online set-up) gives three gyroscope and three accelerometer readings, linear in
qd and in qdd respectively (codegen.symbolic.imu):

  y_g = H_g(q) qd + v_g,              H_g = d gyro / d qd
  y_a = H_a(q) qdd + c_a(q, qd) + v_a,  H_a = d acc / d qdd,  c_a = acc at qdd = 0

with q the encoder's position. Each sample:

0. The encoders alone: the ``kalman`` block's filter (codegen.blocks.kalman, its gain ``est.gain``
   designed the same way) gives qd_enc, qdd_enc, the prior of steps 1-2, with standard deviations
   ``prior_qd``, ``prior_qdd``: weak by default (1 rad/s, 100 rad/s^2), so the IMUs decide what
   they see, as seed 001 assumes. Not the filter's own steady-state covariance: where the motion's
   jerk exceeds its Q that covariance claims far more than the filter achieves (planar2: it claims
   qd to 1e-3 rad/s and is 0.07 off; the iiwa: qdd to 0.01 rad/s^2, 0.04-1.2 rad/s^2 RMS
   achieved), and the fusion would then trust it over the sensors.
1. Rates from the gyroscopes: the least-squares qd with qd_enc as a weak prior (variance
   ``prior_qd``^2; it decides what no gyroscope sees, e.g. six of seven joints with one IMU at the
   tip), readings of variance ``noise_gyro``^2, solved exactly by one 3x3 Kalman update per IMU in
   turn (no matrix larger than 3x3 is inverted, no library call). With one IMU per link this is
   the relative gyro rate along each joint axis.
2. Accelerations from the accelerometers the same way, the fused qd (step 4) in c_a: the kinematic
   recursion solved algebraically (prior: qdd_enc, variance ``prior_qdd``^2).
3. A reading at the end of its range (|y| >= (1 - 1e-3) full scale: clipped) is left out; the
   calibrated biases ``gyro_bias``, ``acc_bias`` are subtracted first.
4. Encoders anchor the result: a complementary filter per joint adds the low-passed (first order,
   ``wv`` rad/s) difference between the encoder's finite difference and the IMU rate, which removes
   a slowly changing gyroscope bias and gives the joints no IMU sees the encoder's low-passed
   rate; the same at ``wa`` between the fused rate's finite difference and the IMU acceleration.
   A finite difference is the mean over the sample, so it is held against the mean of the IMUs'
   last two values (against the newest alone it would leave T/2 qdd in qd_hat, 3.5e-3 rad/s on
   planar2's test motion):

  qd_hat = qd_imu + s_v,   s_v += a_v ((q - q_prev) / T - (qd_imu + qd_imu_prev) / 2 - s_v)
  qdd_hat = qdd_imu + s_a, s_a += a_a ((qd_hat - qd_hat_prev) / T - (qdd_imu + qdd_imu_prev) / 2 - s_a)

  with a_v = 1 - exp(-wv T), a_a = 1 - exp(-wa T).

Exact, noise-free readings and wv = wa = 0 give the true qd, qdd up to the prior's pull,
(noise / prior)^2 relative (tests/rt/test_imu_fusion.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import casadi as cs

from codegen.errors import DescriptionError
from codegen.model.robot import Imu, Robot
from codegen.symbolic import imu as imu_model

from . import kalman, registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs, reference

G0 = 9.80665  # m/s^2 per g
DEG = 0.017453292519943295  # rad per degree
# seed 001 §V's BMI055 as set there: gyroscope +-1000 deg/s, accelerometer +-1 g, 12 bits; the
# per-sample noise: density sqrt(ENBW) (second-order Butterworth ENBW = 1.11 f_c) with the
# quantisation step / sqrt(12) added in quadrature
GYRO_RANGE = 1000.0 * DEG  # rad/s
ACC_RANGE = 1.0 * G0  # m/s^2
NOISE_GYRO = 3.2e-3  # rad/s: 0.014 deg/s/sqrt(Hz) sqrt(1.11 * 64 Hz) = 2.1e-3, (2000/4096 deg/s)/sqrt(12) = 2.5e-3
NOISE_ACC = 0.025  # m/s^2: 150 ug/sqrt(Hz) sqrt(1.11 * 250 Hz) = 0.0245, (2 g/4096)/sqrt(12) = 1.4e-3
CLIPPED = 1e-3  # a reading within this fraction of full scale is taken as clipped


def _inv3(s: cs.SX) -> cs.SX:
    """Inverse of a symmetric positive definite 3x3 matrix by its adjugate."""
    a, b, c, d, e, f = s[0, 0], s[0, 1], s[0, 2], s[1, 1], s[1, 2], s[2, 2]
    c00, c01, c02 = d * f - e * e, c * e - b * f, b * e - c * d
    c11, c12, c22 = a * f - c * c, b * c - a * e, a * d - b * b
    det = a * c00 + b * c01 + c * c02
    return cs.vertcat(cs.horzcat(c00, c01, c02), cs.horzcat(c01, c11, c12), cs.horzcat(c02, c12, c22)) / det


def fuse(x: cs.SX, prior: cs.SX, h: cs.SX, y: cs.SX, noise: cs.SX) -> cs.SX:
    """argmin |H x - y|^2 / noise^2 + sum_j (x_j - x_prior_j)^2 / prior_j^2: one Kalman update per
    three rows of H (one IMU's axes) from P = diag(prior^2); rows of H and y set to zero drop out."""
    p = cs.diag(prior**2)
    for i in range(h.shape[0] // 3):
        hi, yi = h[3 * i : 3 * i + 3, :], y[3 * i : 3 * i + 3]
        ph = cs.mtimes(p, hi.T)
        k = cs.mtimes(ph, _inv3(cs.mtimes(hi, ph) + noise**2 * cs.SX.eye(3)))
        x = x + cs.mtimes(k, yi - cs.mtimes(hi, x))
        p = p - cs.mtimes(k, ph.T)
    return x


def placements(robot: Robot, tip: bool) -> tuple[Imu, ...]:
    """The IMUs the estimator reads: the description's, or one at the tip frame."""
    if tip:
        return (imu_model.tip_imu(robot),)
    if not robot.imus:
        raise DescriptionError(
            robot.file,
            "imus",
            "the imu estimator reads the description's IMUs: add an imus: list ({link: <joint>, xyz: [m], "
            "rpy: [rad]} per IMU), or use imu:tip=1 for one IMU at the tip frame",
        )
    return robot.imus


def build(ctx: Ctx, tip: bool = False) -> Block:
    n, ts, d = ctx.n, ctx.ts, ctx.dyn
    imus = placements(ctx.robot, tip)
    m = len(imus)
    gyro, acc = imu_model.readings(d, imus)
    model = cs.Function(
        "imu_model",
        [d.q, d.qd],
        [cs.jacobian(gyro, d.qd), cs.jacobian(acc, d.qdd), cs.substitute(acc, d.qdd, cs.SX.zeros(n))],
    )
    q, q_prev = ctx.sym("q"), ctx.sym("q_prev")
    qd_imu, qdd_imu, s_v, s_a, qd_prev = (ctx.sym(s) for s in ("qd_imu", "qdd_imu", "s_v", "s_a", "qd_prev"))
    yg, ya, bg, ba = (cs.SX.sym(s, 3 * m) for s in ("gyro", "acc", "gyro_bias", "acc_bias"))
    sg, sa, rg, ra = (cs.SX.sym(s) for s in ("noise_gyro", "noise_acc", "rg", "ra"))
    pv, pa = ctx.sym("prior_qd"), ctx.sym("prior_qdd")
    alpha = cs.SX.sym("alpha", 2)

    def kept(y: cs.SX, full: cs.SX) -> cs.SX:
        return cs.if_else(cs.fabs(y) < (1 - CLIPPED) * full, 1, 0)

    kg, ka = kept(yg, rg), kept(ya, ra)
    # step 0: the encoder-only Kalman filter (as codegen.blocks.kalman)
    ad, _ = kalman.discrete_model(ts)
    valid, xs, ks = ctx.sym("valid"), cs.SX.sym("x", 3 * n), cs.SX.sym("k", 3 * n)
    xp = cs.mtimes(cs.DM(ad), cs.reshape(xs, 3, n))
    xe = xp + cs.reshape(ks, 3, n) * cs.repmat((q.T - xp[0, :]) * valid.T, 3, 1)
    hg = model(q, qd_imu)[0]  # H_g depends on q only
    qd_i = fuse(xe[1, :].T, pv, hg * kg, (yg - bg) * kg, sg)
    s_v1 = s_v + alpha[0] * ((q - q_prev) / ts - (qd_i + qd_imu) / 2 - s_v)
    qd_hat = qd_i + s_v1
    _, ha, ca = model(q, qd_hat)
    qdd_i = fuse(xe[2, :].T, pa, ha * ka, (ya - ba - ca) * ka, sa)
    s_a1 = s_a + alpha[1] * ((qd_hat - qd_prev) / ts - (qdd_i + qdd_imu) / 2 - s_a)
    qdd_hat = qdd_i + s_a1
    cfg = [
        ("cfg.est.noise_gyro", sg),
        ("cfg.est.noise_acc", sa),
        ("cfg.est.prior_qd", pv),
        ("cfg.est.prior_qdd", pa),
        ("cfg.est.gyro_range", rg),
        ("cfg.est.acc_range", ra),
        ("cfg.est.gyro_bias", bg),
        ("cfg.est.acc_bias", ba),
    ]
    state = [
        ("st.est.qd_imu", qd_imu),
        ("st.est.qdd_imu", qdd_imu),
        ("st.est.s_v", s_v),
        ("st.est.s_a", s_a),
        ("st.est.q_prev", q_prev),
        ("st.est.qd_prev", qd_prev),
    ]
    step = sx_function(
        "step",
        [
            ("out.q", q),
            ("loc.valid", valid),
            ("in.imu_gyro", yg),
            ("in.imu_acc", ya),
            *cfg,
            ("cfg.est.gain", ks),
            *state,
            ("st.est.x", xs),
            ("st.est.alpha", alpha),
        ],
        [
            ("out.q_hat", q),
            ("st.est.x", xe),
            ("out.qd_hat", qd_hat),
            ("out.qdd_hat", qdd_hat),
            ("st.est.qd_imu", qd_i),
            ("st.est.qdd_imu", qdd_i),
            ("st.est.s_v", s_v1),
            ("st.est.s_a", s_a1),
            ("st.est.q_prev", q),
            ("st.est.qd_prev", qd_hat),
        ],
        "the IMUs' least-squares qd, qdd, then the encoders' complementary correction",
    )
    zero = cs.SX.zeros(n)
    init = sx_function(
        "init",
        [("out.q", q)],
        [(b, zero) for b, _ in state if b != "st.est.q_prev"]
        + [("st.est.q_prev", q), ("st.est.x", cs.vertcat(q.T, cs.SX.zeros(2, n)))],
        "at rest at the first position",
    )
    wv, wa = cs.SX.sym("wv"), cs.SX.sym("wa")
    derive = sx_function(
        "imu_derive",
        [("cfg.est.wv", wv), ("cfg.est.wa", wa)],
        [("st.est.alpha", cs.vertcat(1 - cs.exp(-wv * ts), 1 - cs.exp(-wa * ts)))],
        "the complementary filters' first-order gains",
    )
    where = ", ".join(f"{u.name} on link {u.link + 1}" for u in imus)
    return Block(
        kind="est",
        name="imu",
        doc=(__doc__ or "") + f"\nIMUs here: {where}.\n",
        config=[
            Field(
                "noise_gyro",
                "real",
                (),
                "gyroscope noise per sample, standard deviation (rad/s)",
                (NOISE_GYRO,),
                low=0.0,
                low_open=True,
            ),
            Field(
                "noise_acc",
                "real",
                (),
                "accelerometer noise per sample, standard deviation (m/s^2)",
                (NOISE_ACC,),
                low=0.0,
                low_open=True,
            ),
            Field(
                "prior_qd",
                "real",
                (n,),
                "the encoder filter's rate: standard deviation (rad/s; weak)",
                (1.0,) * n,
                low=0.0,
                low_open=True,
            ),
            Field(
                "prior_qdd",
                "real",
                (n,),
                "the encoder filter's acceleration: standard deviation (rad/s^2; weak)",
                (100.0,) * n,
                low=0.0,
                low_open=True,
            ),
            Field("gyro_range", "real", (), "gyroscope full scale (rad/s)", (GYRO_RANGE,), low=0.0, low_open=True),
            Field("acc_range", "real", (), "accelerometer full scale (m/s^2)", (ACC_RANGE,), low=0.0, low_open=True),
            Field("gyro_bias", "real", (m, 3), "calibrated gyroscope bias per IMU and axis (rad/s)"),
            Field("acc_bias", "real", (m, 3), "calibrated accelerometer bias per IMU and axis (m/s^2)"),
            Field(
                "gain",
                "real",
                (n, 3),
                "the encoder filter's steady-state gain per joint (as the kalman block's)",
                (0.0,) * (3 * n),
            ),
            Field("wv", "real", (), "crossover of the rates' encoder correction (rad/s)", (2.0,), low=0.0),
            Field("wa", "real", (), "crossover of the accelerations' correction (rad/s)", (0.5,), low=0.0),
        ],
        state=[
            Field("qd_imu", "real", (n,), "the IMUs' rate (rad/s)"),
            Field("qdd_imu", "real", (n,), "the IMUs' acceleration (rad/s^2)"),
            Field("s_v", "real", (n,), "the encoders' rate correction (rad/s)"),
            Field("s_a", "real", (n,), "the acceleration correction (rad/s^2)"),
            Field("q_prev", "real", (n,), "previous position sample"),
            Field("qd_prev", "real", (n,), "previous fused rate"),
            Field("alpha", "real", (2,), "derived: the complementary filters' gains"),
            Field("x", "real", (n, 3), "the encoder filter's [q, qd, qdd] per joint"),
        ],
        outputs=outputs(n),
        inputs=[
            Field("imu_gyro", "real", (m, 3), "gyroscope readings per IMU, sensor axes (rad/s)"),
            Field(
                "imu_acc", "real", (m, 3), "accelerometer readings per IMU (specific force a - g), sensor axes (m/s^2)"
            ),
        ],
        functions=[init, step],
        derive=derive,
        reference=reference,
        options={"tip": int(tip), "q_var": (kalman.DEFAULT_Q,) * n},
    )


def _check(opts: Mapping[str, float]) -> str | None:
    return None if opts.get("tip", 0) in (0, 1) else "tip must be 0 (the description's IMUs) or 1 (one at the tip)"


SPEC = registry.Estimator(
    name="imu",
    summary="link-mounted IMUs fused with the encoders (seed 001 §III-c, its refs [1, 2])",
    build=lambda ctx, choice: build(ctx, tip=bool(choice.get("tip"))),
    options={"tip": int},
    defaults={"tip": 0},
    check=_check,
    acceleration="always",
    design_keys=("q_var", "r_var"),
    finish=kalman.finish_gain,
)
registry.register(SPEC)
