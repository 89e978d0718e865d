"""IMU-fused joint velocity and acceleration (what Birjandi & Haddadin assumes, §III-c; its refs [1, 2]).

Each link-mounted IMU (the description's ``imus:``; option ``tip=1``: one IMU at the tip frame
instead, Birjandi & Haddadin's online set-up) gives three gyroscope and three accelerometer readings, linear in
qd and in qdd respectively (the rigid-body kinematics of the links carrying them):

  y_g = H_g(q) qd + v_g,              H_g = d gyro / d qd
  y_a = H_a(q) qdd + c_a(q, qd) + v_a,  H_a = d acc / d qdd,  c_a = acc at qdd = 0

with q the encoder's position. Each sample:

1. Predict: per joint the constant-jerk model of the ``kalman`` estimator (
   z = [q, qd, qdd], A_d, Gamma_d under zero-order hold), with its covariance P carried at run time:
   z- = A_d z, P- = A_d P A_d^T + q_var Gamma_d Gamma_d^T.
2. The IMUs' rates: the least-squares qd from the gyroscopes (readings of variance
   ``noise_gyro``^2), with z-'s qd as a weak prior (variance ``prior_qd``^2: it only fills what no
   gyroscope sees, e.g. six of seven joints with one IMU at the tip), solved exactly by one 3x3
   Kalman update per IMU in turn (no matrix larger than 3x3 is inverted, no library call). With
   one IMU per link this is the relative gyro rate along each joint axis. Its posterior variance
   per joint says how well the IMUs see that joint (about prior_qd^2 where they do not).
3. The IMUs' accelerations the same way from the accelerometers, the kinematic recursion solved
   algebraically (c_a at the IMUs' rate u_v of step 4; prior: z-'s qdd, ``prior_qdd``). c_a
   carries the rate's error: each IMU's readings are weighed with noise_acc^2 I + J P_v J^T, J =
   d c_a / d qd of that IMU, P_v the rates' posterior covariance from step 2. Where the gyroscopes
   leave a combination of rates to the weak prior (one IMU at the tip) that term is large on the
   axes that combination's centripetal part reaches; without it, a tip accelerometer of a planar
   two-link arm near the stretched pose put that error into qdd by 1 / sin q2 (±1.2 rad/s^2 on
   planar2, 2026-12-01).
   A reading at the end of its range (|y| >= (1 - 1e-3) full scale: clipped) is left out; the
   calibrated biases ``gyro_bias``, ``acc_bias`` are subtracted first.
4. Bias: a complementary filter per joint removes what is left of a slowly changing bias from the
   IMUs' rate: the low-passed (first order, ``wv`` rad/s) difference between the encoder's finite
   difference and the IMU rate is added to it; the same at ``wa`` for the acceleration against
   the fused rate's finite difference. A finite difference is the mean over the sample, so it is
   held against the mean of the IMUs' last two values (against the newest alone it would leave
   T/2 qdd, 3.5e-3 rad/s on planar2's test motion):
     u_v = qd_i + s_v,   s_v += a_v ((q - q_prev) / T - (qd_i + qd_i,prev) / 2 - s_v)
     u_a = qdd_i + s_a,  s_a += a_a ((qd_f - qd_f,prev) / T - (qdd_i + qdd_i,prev) / 2 - s_a)
   with a_v = 1 - exp(-wv T), a_a = 1 - exp(-wa T); out.qd_imu, out.qdd_imu are u_v, u_a.
5. Update per joint with three scalar measurements, each weighed by its variance: the encoder's q
   (``r_var``, the encoder's quantisation as the kalman block's R; skipped on a lost sample), u_v
   (variance from step 2) and u_a (from step 3). qd_f is the rate after the first two.

So the IMUs weigh in where they are better than the encoders under the process model ``q_var``
(default the kalman block's 10 rad^2/s^6: a fine encoder then outweighs them at low frequency; a
larger q_var follows fast motion with the IMUs). Exact, noise-free readings with wv = wa = 0 give
u_v, u_a equal to the true qd, qdd up to the prior's pull, (noise / prior)^2 relative
(tests/codegen/blocks/test_imu_fusion.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import casadi as cs

from codegen.errors import DescriptionError
from codegen.model.robot import Imu, Robot
from codegen.symbolic import imu as imu_model
from codegen.symbolic.functions import FunctionSpec

from . import kalman, registry
from .base import Block, Field, sx_function
from .context import Ctx
from .estimator import outputs

G0 = 9.80665  # m/s^2 per g
DEG = 0.017453292519943295  # rad per degree
# Birjandi & Haddadin §V's BMI055: gyroscope +-1000 deg/s, 12 bits; accelerometer 12 bits over +-2 g, the
# BMI055's smallest range (its data sheet: 2, 4, 8, 16 g). Birjandi & Haddadin writes "1 g": at +-1 g every
# axis near the vertical clips on gravity alone, and where the only axis that sees a joint's
# acceleration clips, the IMUs lose it (planar2's IMU 1: the IMUs' qdd RMS error 2.8 rad/s^2 at
# +-1 g, 0.05 at +-2 g; bench/imu_limits.py prints both). The per-sample noise: density
# sqrt(ENBW) (second-order Butterworth ENBW = 1.11 f_c) with the quantisation step / sqrt(12)
# added in quadrature.
GYRO_RANGE = 1000.0 * DEG  # rad/s
ACC_RANGE = 2.0 * G0  # m/s^2
NOISE_GYRO = 3.2e-3  # rad/s: 0.014 deg/s/sqrt(Hz) sqrt(1.11 * 64 Hz) = 2.1e-3, (2000/4096 deg/s)/sqrt(12) = 2.5e-3
NOISE_ACC = 0.025  # m/s^2: 150 ug/sqrt(Hz) sqrt(1.11 * 250 Hz) = 0.0245, (4 g/4096)/sqrt(12) = 2.8e-3
CLIPPED = 1e-3  # a reading within this fraction of full scale is taken as clipped


def _inv3(s: cs.SX) -> cs.SX:
    """Inverse of a symmetric positive definite 3x3 matrix by its adjugate."""
    a, b, c, d, e, f = s[0, 0], s[0, 1], s[0, 2], s[1, 1], s[1, 2], s[2, 2]
    c00, c01, c02 = d * f - e * e, c * e - b * f, b * e - c * d
    c11, c12, c22 = a * f - c * c, b * c - a * e, a * d - b * b
    det = a * c00 + b * c01 + c * c02
    return cs.vertcat(cs.horzcat(c00, c01, c02), cs.horzcat(c01, c11, c12), cs.horzcat(c02, c12, c22)) / det


def fuse(
    x: cs.SX, prior: cs.SX, h: cs.SX, y: cs.SX, noise: cs.SX, extra: list[cs.SX] | None = None
) -> tuple[cs.SX, cs.SX]:
    """argmin (H x - y)^T R^-1 (H x - y) + sum_j (x_j - x_prior_j)^2 / prior_j^2 and its posterior
    covariance P: one Kalman update per three rows of H (one IMU's axes) from P = diag(prior^2);
    rows of H and y set to zero drop out. R is block diagonal, per IMU noise^2 I plus ``extra``'s
    3x3 for that IMU (what else its readings carry: the error of a term computed from an estimate)."""
    p = cs.diag(prior**2)
    for i in range(h.shape[0] // 3):
        hi, yi = h[3 * i : 3 * i + 3, :], y[3 * i : 3 * i + 3]
        ph = cs.mtimes(p, hi.T)
        r = noise**2 * cs.SX.eye(3) + (extra[i] if extra is not None else 0)
        k = cs.mtimes(ph, _inv3(cs.mtimes(hi, ph) + r))
        x = x + cs.mtimes(k, yi - cs.mtimes(hi, x))
        p = p - cs.mtimes(k, ph.T)
    return x, p


def scalar_update(
    z: cs.SX, p: cs.SX, i: int, value: cs.SX, variance: cs.SX, on: cs.SX | float = 1
) -> tuple[cs.SX, cs.SX]:
    """One scalar measurement of z[i] (a joint's [q, qd, qdd], covariance p 3x3): Kalman update,
    skipped where ``on`` is 0."""
    k = p[:, i] / (p[i, i] + variance) * on
    return z + k * (value - z[i]), p - cs.mtimes(k, p[i, :])


UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))  # the covariance's six entries kept per joint


def symmetric(row: cs.SX) -> cs.SX:
    """3x3 symmetric matrix from its upper triangle (UPPER order)."""
    a, b, c, d, e, f = (row[k] for k in range(6))
    return cs.vertcat(cs.horzcat(a, b, c), cs.horzcat(b, d, e), cs.horzcat(c, e, f))


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


@dataclasses.dataclass(frozen=True)
class _Symbols:
    """The step's arguments: the encoder's position, the readings, the configuration, the state."""

    q: cs.SX
    q_prev: cs.SX
    valid: cs.SX
    qd_imu: cs.SX
    qdd_imu: cs.SX
    s_v: cs.SX
    s_a: cs.SX
    qd_prev: cs.SX
    yg: cs.SX
    ya: cs.SX
    bg: cs.SX
    ba: cs.SX
    sg: cs.SX
    sa: cs.SX
    rg: cs.SX
    ra: cs.SX
    pv: cs.SX
    pa: cs.SX
    q_var: cs.SX
    r_var: cs.SX
    alpha: cs.SX
    zs: cs.SX
    ps: cs.SX


def _symbols(ctx: Ctx, m: int) -> _Symbols:
    n = ctx.n
    q, q_prev, valid = ctx.sym("q"), ctx.sym("q_prev"), ctx.sym("valid")
    qd_imu, qdd_imu, s_v, s_a, qd_prev = (ctx.sym(s) for s in ("qd_imu", "qdd_imu", "s_v", "s_a", "qd_prev"))
    yg, ya, bg, ba = (cs.SX.sym(s, 3 * m) for s in ("gyro", "acc", "gyro_bias", "acc_bias"))
    sg, sa, rg, ra = (cs.SX.sym(s) for s in ("noise_gyro", "noise_acc", "rg", "ra"))
    pv, pa, q_var, r_var = ctx.sym("prior_qd"), ctx.sym("prior_qdd"), ctx.sym("q_var"), ctx.sym("r_var")
    alpha, zs, ps = cs.SX.sym("alpha", 2), cs.SX.sym("z", 3 * n), cs.SX.sym("p", 6 * n)
    return _Symbols(
        q, q_prev, valid, qd_imu, qdd_imu, s_v, s_a, qd_prev, yg, ya, bg, ba, sg, sa, rg, ra, pv, pa, q_var, r_var,
        alpha, zs, ps,
    )  # fmt: skip


def _imu_model(ctx: Ctx, imus: tuple[Imu, ...]) -> cs.Function:
    """(q, qd) -> H_g, H_a, c_a, d c_a / d qd: the IMUs' readings' kinematics (module docstring)."""
    d = ctx.dyn
    gyro, acc = imu_model.readings(d, imus)
    ca = cs.substitute(acc, d.qdd, cs.SX.zeros(ctx.n))
    return cs.Function(
        "imu_model", [d.q, d.qd], [cs.jacobian(gyro, d.qd), cs.jacobian(acc, d.qdd), ca, cs.jacobian(ca, d.qd)]
    )


def _kept(y: cs.SX, full: cs.SX) -> cs.SX:
    """1 where a reading is within its range, 0 where it is clipped."""
    return cs.if_else(cs.fabs(y) < (1 - CLIPPED) * full, 1, 0)


def _fused(x: _Symbols, model: cs.Function, n: int, ts: float) -> dict[str, cs.SX]:
    """One sample of the filter (steps 1-5 of the module docstring): its outputs and new state by binding."""
    kg, ka = _kept(x.yg, x.rg), _kept(x.ya, x.ra)
    # 1. predict (the kalman block's discrete constant-jerk model)
    ad, gd = (cs.DM(a) for a in kalman.discrete_model(ts))
    z = [cs.mtimes(ad, x.zs[3 * j : 3 * j + 3]) for j in range(n)]
    p = [
        cs.mtimes(cs.mtimes(ad, symmetric(x.ps[6 * j : 6 * j + 6])), ad.T) + x.q_var[j] * cs.mtimes(gd, gd.T)
        for j in range(n)
    ]
    # 2. the IMUs' rates; 4. their bias correction; 5. encoder and rate updates
    prior_v = cs.vertcat(*[zj[1] for zj in z])
    qd_i, cov_v = fuse(prior_v, x.pv, model(x.q, prior_v)[0] * kg, (x.yg - x.bg) * kg, x.sg)
    var_v = cs.diag(cov_v)
    s_v1 = x.s_v + x.alpha[0] * ((x.q - x.q_prev) / ts - (qd_i + x.qd_imu) / 2 - x.s_v)
    u_v = qd_i + s_v1
    for j in range(n):
        z[j], p[j] = scalar_update(z[j], p[j], 0, x.q[j], x.r_var[j], x.valid[j])
        z[j], p[j] = scalar_update(z[j], p[j], 1, u_v[j], var_v[j])
    qd_f = cs.vertcat(*[zj[1] for zj in z])
    # 3. the IMUs' accelerations at that rate; 4.; 5. acceleration update
    _, ha, ca, jc = model(x.q, u_v)
    # what c_a carries of the rate's error, per IMU: J P_v J^T (a clipped axis's row dropped with it)
    jk = [(jc * ka)[3 * i : 3 * i + 3, :] for i in range(ka.shape[0] // 3)]
    extra = [cs.mtimes(cs.mtimes(ji, cov_v), ji.T) for ji in jk]
    qdd_i, cov_a = fuse(cs.vertcat(*[zj[2] for zj in z]), x.pa, ha * ka, (x.ya - x.ba - ca) * ka, x.sa, extra)
    var_a = cs.diag(cov_a)
    s_a1 = x.s_a + x.alpha[1] * ((qd_f - x.qd_prev) / ts - (qdd_i + x.qdd_imu) / 2 - x.s_a)
    u_a = qdd_i + s_a1
    for j in range(n):
        z[j], p[j] = scalar_update(z[j], p[j], 2, u_a[j], var_a[j])
    z_out = cs.vertcat(*z)
    p_out = cs.vertcat(*[cs.vertcat(*[pj[a, b] for a, b in UPPER]) for pj in p])
    return {
        "out.q_hat": z_out[0::3],
        "out.qd_hat": z_out[1::3],
        "out.qdd_hat": z_out[2::3],
        "out.qd_imu": u_v,
        "out.qdd_imu": u_a,
        "st.est.z": z_out,
        "st.est.p": p_out,
        "st.est.qd_imu": qd_i,
        "st.est.qdd_imu": qdd_i,
        "st.est.s_v": s_v1,
        "st.est.s_a": s_a1,
        "st.est.q_prev": x.q,
        "st.est.qd_prev": qd_f,
    }


def _state_bindings(x: _Symbols) -> list[tuple[str, cs.SX]]:
    """The state the step carries besides the filter's z and p."""
    return [
        ("st.est.qd_imu", x.qd_imu),
        ("st.est.qdd_imu", x.qdd_imu),
        ("st.est.s_v", x.s_v),
        ("st.est.s_a", x.s_a),
        ("st.est.q_prev", x.q_prev),
        ("st.est.qd_prev", x.qd_prev),
    ]


def _step(x: _Symbols, model: cs.Function, n: int, ts: float) -> FunctionSpec:
    cfg = [
        ("cfg.est.noise_gyro", x.sg),
        ("cfg.est.noise_acc", x.sa),
        ("cfg.est.prior_qd", x.pv),
        ("cfg.est.prior_qdd", x.pa),
        ("cfg.est.gyro_range", x.rg),
        ("cfg.est.acc_range", x.ra),
        ("cfg.est.gyro_bias", x.bg),
        ("cfg.est.acc_bias", x.ba),
        ("cfg.est.q_var", x.q_var),
        ("cfg.est.r_var", x.r_var),
    ]
    inputs = [("out.q", x.q), ("loc.valid", x.valid), ("in.imu_gyro", x.yg), ("in.imu_acc", x.ya), *cfg]
    inputs += [*_state_bindings(x), ("st.est.z", x.zs), ("st.est.p", x.ps), ("st.est.alpha", x.alpha)]
    return sx_function(
        "step",
        inputs,
        list(_fused(x, model, n, ts).items()),
        "predict; the IMUs' least-squares qd, qdd with their bias correction; update with the encoder and them",
    )


def _init(x: _Symbols, n: int) -> FunctionSpec:
    zero = cs.SX.zeros(n)
    start_p = cs.vertcat(*[cs.vertcat(x.r_var[j], 0, 0, x.pv[j] ** 2, 0, x.pa[j] ** 2) for j in range(n)])
    return sx_function(
        "init",
        [("out.q", x.q), ("cfg.est.r_var", x.r_var), ("cfg.est.prior_qd", x.pv), ("cfg.est.prior_qdd", x.pa)],
        [(b, zero) for b, _ in _state_bindings(x) if b != "st.est.q_prev"]
        + [
            ("st.est.q_prev", x.q),
            ("st.est.z", cs.vertcat(*[cs.vertcat(x.q[j], 0, 0) for j in range(n)])),
            ("st.est.p", start_p),
        ],
        "at rest at the first position, the rate and acceleration known to their priors",
    )


def _derive(ts: float) -> FunctionSpec:
    wv, wa = cs.SX.sym("wv"), cs.SX.sym("wa")
    return sx_function(
        "imu_derive",
        [("cfg.est.wv", wv), ("cfg.est.wa", wa)],
        [("st.est.alpha", cs.vertcat(1 - cs.exp(-wv * ts), 1 - cs.exp(-wa * ts)))],
        "the complementary filters' first-order gains",
    )


def _positive(name: str, shape: tuple[int, ...], doc: str, default: tuple[float, ...]) -> Field:
    return Field(name, "real", shape, doc, default, low=0.0, low_open=True)


def _config(n: int, m: int) -> list[Field]:
    return [
        _positive("noise_gyro", (), "gyroscope noise per sample, standard deviation (rad/s)", (NOISE_GYRO,)),
        _positive("noise_acc", (), "accelerometer noise per sample, standard deviation (m/s^2)", (NOISE_ACC,)),
        _positive("prior_qd", (n,), "the encoder filter's rate: standard deviation (rad/s; weak)", (1.0,) * n),
        _positive(
            "prior_qdd", (n,), "the encoder filter's acceleration: standard deviation (rad/s^2; weak)", (100.0,) * n
        ),
        _positive("gyro_range", (), "gyroscope full scale (rad/s)", (GYRO_RANGE,)),
        _positive("acc_range", (), "accelerometer full scale (m/s^2)", (ACC_RANGE,)),
        Field("gyro_bias", "real", (m, 3), "calibrated gyroscope bias per IMU and axis (rad/s)"),
        Field("acc_bias", "real", (m, 3), "calibrated accelerometer bias per IMU and axis (m/s^2)"),
        _positive(
            "q_var",
            (n,),
            "process noise: the jerk's variance per joint (rad^2/s^6; as the kalman block's Q)",
            (kalman.DEFAULT_Q,) * n,
        ),
        _positive(
            "r_var",
            (n,),
            "the encoder's variance per joint (rad^2; default its quantisation, as the kalman block's R)",
            (1e-8,) * n,
        ),
        Field("wv", "real", (), "crossover of the rates' encoder correction (rad/s)", (2.0,), low=0.0),
        Field("wa", "real", (), "crossover of the accelerations' correction (rad/s)", (0.5,), low=0.0),
    ]


def _state(n: int) -> list[Field]:
    return [
        Field("qd_imu", "real", (n,), "the IMUs' rate (rad/s)"),
        Field("qdd_imu", "real", (n,), "the IMUs' acceleration (rad/s^2)"),
        Field("s_v", "real", (n,), "the encoders' rate correction (rad/s)"),
        Field("s_a", "real", (n,), "the acceleration correction (rad/s^2)"),
        Field("q_prev", "real", (n,), "previous position sample"),
        Field("qd_prev", "real", (n,), "previous fused rate"),
        Field("alpha", "real", (2,), "derived: the complementary filters' gains"),
        Field("z", "real", (n, 3), "the filter's [q, qd, qdd] per joint"),
        Field("p", "real", (n, 6), "its covariance per joint: p00 p01 p02 p11 p12 p22"),
    ]


def build(ctx: Ctx, tip: bool = False) -> Block:
    n, ts = ctx.n, ctx.ts
    imus = placements(ctx.robot, tip)
    m = len(imus)
    model = _imu_model(ctx, imus)
    x = _symbols(ctx, m)
    step = _step(x, model, n, ts)
    init = _init(x, n)
    derive = _derive(ts)
    where = ", ".join(f"{u.name} on link {u.link + 1}" for u in imus)
    return Block(
        kind="est",
        name="imu",
        doc=(__doc__ or "") + f"\nIMUs here: {where}.\n",
        config=_config(n, m),
        state=_state(n),
        outputs=outputs(n)
        + [
            Field("qd_imu", "real", (n,), "the IMUs' own rate, bias-corrected (rad/s)"),
            Field("qdd_imu", "real", (n,), "the IMUs' own acceleration, bias-corrected (rad/s^2)"),
        ],
        inputs=[
            Field("imu_gyro", "real", (m, 3), "gyroscope readings per IMU, sensor axes (rad/s)"),
            Field(
                "imu_acc", "real", (m, 3), "accelerometer readings per IMU (specific force a - g), sensor axes (m/s^2)"
            ),
        ],
        functions=[init, step],
        derive=derive,
        options={"tip": int(tip)},
    )


def _finish(block: Block, blocks: list[Block], robot: Robot, given: registry.Design, ts: float) -> None:
    """r_var from the encoder the block reads, as the kalman block's R (Liu et al. §II-C)."""
    enc = next(b for b in blocks if b.kind == "enc")
    by_enc = {f.name: f.default_array() for f in enc.config}
    r_var = tuple(kalman.measurement_variances(by_enc["cpr"], by_enc["gear"]).tolist())
    by = {f.name: i for i, f in enumerate(block.config)}
    block.config[by["r_var"]] = dataclasses.replace(block.config[by["r_var"]], default=r_var)


def gyros_see_every_joint(robot: Robot, tip: bool) -> bool:
    """Whether the IMUs' gyroscopes see every joint's rate on its own: every joint revolute, with an
    IMU on its link (the joint's rate is that gyro's less the link before's). One IMU at the tip of an
    arm of more than one joint sees three combinations; a prismatic joint turns no gyroscope."""
    links = {u.link for u in placements(robot, tip)}
    return all(j.type == "revolute" for j in robot.joints) and links >= set(range(robot.dof))


def _check(opts: Mapping[str, float]) -> str | None:
    return None if opts.get("tip", 0) in (0, 1) else "tip must be 0 (the description's IMUs) or 1 (one at the tip)"


SPEC = registry.Estimator(
    name="imu",
    summary="link-mounted IMUs fused with the encoders (Birjandi & Haddadin §III-c, its refs [1, 2])",
    build=lambda ctx, choice: build(ctx, tip=bool(choice.get("tip"))),
    options={"tip": int},
    defaults={"tip": 0},
    check=_check,
    acceleration="always",
    genes=(registry.Gene("est.q_var", 1e-3, 1e7),),
    finish=_finish,
    sensors=("imu_gyro", "imu_acc"),  # the loopback's simulated IMUs (host_tools.bindings.imu_sensors)
)
registry.register(SPEC)
