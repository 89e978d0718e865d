"""Generalized momentum observer (De Luca; Birjandi & Haddadin eqs. 24-26, Kirchhoff (2011) eqs. 5.2-5.10), discrete.

  p = M(q) qd = dT/dqd,  beta = g(q) - C(q, qd)^T qd + friction(qd) + tau_f,  C^T qd = dT/dq
  I_k = I_{k-1} + T (tau_k - beta_k + r_{k-1}),   r_k = K_O (p_k - p_0 - I_k)

T(q, qd) is the kinetic energy (rotor inertia included); p and dT/dq come from one outward (link
velocities) and one inward (composite momenta) recursion, so neither M, M-dot nor the Coriolis
matrix is formed; tau_f: the friction terms beyond viscous + Coulomb (``st.fric.tau``, the [fric] block; 0
unless configured). q and qd are the estimator's q_hat, qd_hat; tau is ``in.tau``, the link-side actuator torque
(measured or commanded) over the last sample. With a perfect model r obeys dr/dt = K_O (tau_ext - r)
(eq. 26): a first-order low-pass of the external torque with time constant 1/K_O; in discrete time
the pole is 1 - K_O T. An elastic arm's torque is the springs' instead of ``in.tau`` (Kirchhoff 2011
§5.2, eqs. 5.6-5.10; its tau_el, times (I + A)^T -- ours, the torque the coupled springs put on the
links, see docs/robot_yaml.md): (I + A)^T tau_el, tau_el = K (theta - q - A q) + D (thetad - qd - A qd) from
both estimators (q_hat, qd_hat, theta_hat, thetad_hat) and the run-time K, D (cfg.obs.k_e, d_e:
set the identified ones) -- no acceleration and no motor torque needed. The rectangle rule leaves, with a
perfect model, r ~ -(T/2) d^2p/dt^2 in
motion (measured on the iiwa: 0.66 N m at most on joint 2 for 1 rad/s-class motion at 1 kHz).
The first sample sets p_0 and r = 0. Sign: r is the external torque acting on
the robot, in the joint torque's sign convention.
"""

from __future__ import annotations

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx


def build(ctx: Ctx, k_o: float | tuple[float, ...] = 25.0) -> Block:
    n, ts = ctx.n, ctx.ts
    model, pi = ctx.model_inputs()
    q, qd = ctx.sym("q"), ctx.sym("qd")
    p0, integ, r, k = ctx.sym("p0"), ctx.sym("integ"), ctx.sym("r"), ctx.sym("k_o")
    elastic: list[Field] = []
    if ctx.robot.elastic:  # Kirchhoff (2011) §5.2: the joint torque is the springs', (I + A)^T tau_el
        th, thd, ke, de = ctx.sym("theta"), ctx.sym("thetad"), ctx.sym("k_e"), ctx.sym("d_e")
        tau = ctx.call_elastic("elastic_joint_torque", q, qd, th, thd, ke, de)
        torque_in = [("out.theta_hat", th), ("out.thetad_hat", thd), ("cfg.obs.k_e", ke), ("cfg.obs.d_e", de)]
        drives = [j.elastic for j in ctx.robot.joints]
        elastic = [
            Field(
                "k_e",
                "real",
                (n,),
                "spring stiffness k_e per joint (N m/rad), e.g. identified",
                tuple(dr.stiffness for dr in drives if dr is not None),
                low=0.0,
            ),
            Field(
                "d_e",
                "real",
                (n,),
                "spring damping d_e per joint (N m s/rad)",
                tuple(dr.damping for dr in drives if dr is not None),
                low=0.0,
            ),
        ]
    else:
        tau = ctx.sym("tau")
        torque_in = [("in.tau", tau)]
    terms, tau_f = ctx.friction_terms()
    p = ctx.call("generalized_momentum", q, qd, pi)
    beta = ctx.call("gravity", q, pi) - ctx.call("ctqd", q, qd, pi) + ctx.call("friction", qd, pi) + tau_f
    integ_n = integ + ts * (tau - beta + r)
    r_n = k * (p - p0 - integ_n)
    step = sx_function(
        "step",
        [("out.q_hat", q), ("out.qd_hat", qd)]
        + torque_in
        + [("st.obs.p0", p0), ("st.obs.integ", integ), ("st.obs.r", r), ("cfg.obs.k_o", k)]
        + model
        + terms,
        [("st.obs.p", p), ("st.obs.integ", integ_n), ("st.obs.r", r_n), ("out.r", r_n)],
        "momentum, integral and residual",
    )
    return Block(
        kind="obs",
        name=SPEC.name,
        doc=__doc__ or "",
        template="momentum",
        config=[
            Field("k_o", "real", (n,), "observer gain K_O per joint (1/s)", per_joint(k_o, n), low=0.0, high=1.0 / ts)
        ]
        + elastic,
        state=[
            Field("p0", "real", (n,), "momentum at the first sample"),
            Field("p", "real", (n,), "momentum of this sample"),
            Field("integ", "real", (n,), "integral of tau - beta + r"),
            Field("r", "real", (n,), "residual"),
        ],
        outputs=[Field("r", "real", (n,), "residual r: external joint torque estimate (N m or N)")],
        functions=[step],
    )


SPEC = registry.Observer(
    name="momentum",
    summary="generalized-momentum observer (Birjandi & Haddadin eq. 7; Kirchhoff (2011) §5.2 with tau_el)",
    build=build,
    elastic=True,
    fields=("k_o",),
    collide=1,
    default=True,
)
registry.register(SPEC)
