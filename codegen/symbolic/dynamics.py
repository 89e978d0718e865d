"""Symbolic rigid-body dynamics in CasADi SX: every formula of the generated C exists here once.

Frames: the dynamics run in body frames J_i, the frame of joint i after its motion (joint axis = z
through the origin). Link parameters given in the user's link frame (post_i relative to J_i) are
mapped to J_i by a constant 10x10 matrix (linear in the parameters), so the regressor is still taken
with respect to the user's parameters, named in the user's frames.

Newton-Euler (Kirchhoff 2011 §3.3 / §4.2.2, Khalil's modified recursion): with the link parameters
(M, first moment MS = M c, inertia about the frame origin) every force and moment is linear in the
parameters, so Y = d(tau)/d(pi) is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import casadi as cs
import numpy as np

from codegen.model import exact, spatial
from codegen.model.robot import JOINT_PARAMS, Robot, coupling_matrix

SX = cs.SX


@dataclass(frozen=True)
class LinkSym:
    m: SX
    h: SX  # 3x1 first moment
    inertia: SX  # 3x3 about the J_i origin


def _rot_z(c: SX, s: SX) -> SX:
    return cs.vertcat(cs.horzcat(c, -s, 0), cs.horzcat(s, c, 0), cs.horzcat(0, 0, 1))


def smooth_coulomb(qd: SX, scale: SX | cs.DM) -> SX:
    """The smooth Coulomb shape tanh(qd_i / scale_i) per joint (rad/s or m/s): the description's
    ``coulomb: {model: tanh}``; identification evaluates it with symbolic scales to choose them."""
    return cs.tanh(qd / scale)


def dahl_step(z: SX, dq: SX, length: SX | cs.DM) -> SX:
    """Position-domain (Dahl) friction state after a position step dq (rad or m), per element:
    z <- sgn(dq) - (sgn(dq) - z) exp(-|dq| / length), the exact solution of
    dz/dq = (sgn(dq) - z) / length over the step; z in [-1, 1] follows the motion's direction over a
    travel of about ``length`` and holds at rest (dq = 0 keeps z): a geared drive's pre-sliding
    hysteresis, which does not flip with a noisy velocity near zero as tanh(qd / v) does."""
    direction = cs.sign(dq)
    return direction - (direction - z) * cs.exp(-cs.fabs(dq) / length)


def stribeck(coulomb: SX, qd: SX, velocity: SX | cs.DM) -> SX:
    """Stribeck friction's shape: the Coulomb shape times exp(-(qd / v_s)^2) (v_s in rad/s or m/s)."""
    return coulomb * cs.exp(-((qd / velocity) ** 2))


def ltdl_solve(m: SX, b: SX, parent: list[int]) -> tuple[SX, SX]:
    """x = M^-1 b and the pivots d of M = L^T D L (L unit lower triangular), unrolled in the graph.

    Featherstone's LTDL factorisation ("Efficient factorization of the joint-space inertia matrix
    for branched kinematic trees", 2005, Table 1 and the back-substitutions of Table 2): it runs
    from the tip, and L has non-zeros only where j is an ancestor of i (``parent[i]``: the parent
    joint of i, -1 at the base; i - 1 on a serial chain, where M is dense), so a branched tree's
    zeros are never touched. No square root, one reciprocal per pivot. M is positive definite
    exactly when every pivot d_k > 0 (the caller checks); for a positive definite M the pivots are
    its Schur complements, so no division is by a quantity that can vanish for valid inputs.
    """
    n = m.shape[0]
    h = [[m[i, j] for j in range(n)] for i in range(n)]
    inv = [SX(0)] * n
    for k in reversed(range(n)):
        inv[k] = 1 / h[k][k]
        i = parent[k]
        while i >= 0:
            a = h[k][i] * inv[k]
            j = i
            while j >= 0:
                h[i][j] = h[i][j] - a * h[k][j]
                j = parent[j]
            h[k][i] = a
            i = parent[i]
    x = [b[i] for i in range(n)]
    for i in reversed(range(n)):  # L^T y = b
        j = parent[i]
        while j >= 0:
            x[j] = x[j] - h[i][j] * x[i]
            j = parent[j]
    x = [x[i] * inv[i] for i in range(n)]  # D z = y
    for i in range(n):  # L x = z
        j = parent[i]
        while j >= 0:
            x[i] = x[i] - h[i][j] * x[j]
            j = parent[j]
    return cs.vertcat(*x), cs.vertcat(*[h[k][k] for k in range(n)])


class Dynamics:
    """Symbolic model of one robot. Expressions are built once (lazily) and shared."""

    def __init__(self, robot: Robot) -> None:
        self.robot = robot
        self.n = robot.dof
        self.q = SX.sym("q", self.n)
        self.qd = SX.sym("qd", self.n)
        self.qdd = SX.sym("qdd", self.n)
        self.tau = SX.sym("tau", self.n)
        self.pi = SX.sym("pi", robot.n_standard)
        # constant transform from J_{i-1} to the fixed part before joint i: post_{i-1} . pre_i
        self._a: list[np.ndarray] = []
        prev_post = np.eye(4)
        for j in robot.joints:
            self._a.append(spatial.snapped(exact.matmul(prev_post, j.pre_matrix)))
            prev_post = j.post_matrix
        self._tip = spatial.snapped(exact.matmul(prev_post, robot.tip_matrix))

    # --- parameters ---------------------------------------------------------------------------
    def _param_slices(self) -> list[tuple[int, dict[str, int]]]:
        """Per joint: index of its first link parameter and the indices of its joint parameters."""
        out, k = [], 0
        jp = self.robot.joint_parameters
        for _ in range(self.n):
            idx = {p: k + 10 + jp.index(p) for p in JOINT_PARAMS if p in jp}
            out.append((k, idx))
            k += 10 + len(idx)
        return out

    def links(self, pi: SX) -> list[LinkSym]:
        """Link parameters in the body frames J_i (linear in pi)."""
        out = []
        for (k, _), joint in zip(self._param_slices(), self.robot.joints):
            t = np.column_stack([spatial.transform_inertial(e, joint.post_matrix) for e in np.eye(10)])
            p = cs.mtimes(cs.DM(spatial.snapped(t)), pi[k : k + 10])
            i3 = cs.vertcat(cs.horzcat(p[4], p[5], p[6]), cs.horzcat(p[5], p[7], p[8]), cs.horzcat(p[6], p[8], p[9]))
            out.append(LinkSym(p[0], p[1:4], i3))
        return out

    def joint_param(self, pi: SX, joint: int, name: str) -> SX:
        idx = self._param_slices()[joint][1]
        return pi[idx[name]] if name in idx else SX(0)

    # --- kinematics ---------------------------------------------------------------------------
    @cached_property
    def _trig(self) -> list[tuple[SX, SX]]:
        return [(cs.cos(self.q[i]), cs.sin(self.q[i])) for i in range(self.n)]

    def joint_transform(self, i: int) -> tuple[SX, SX]:
        """(R_i, p_i): pose of J_i in J_{i-1} (J_0 = base)."""
        a = self._a[i]
        ra, pa = cs.DM(a[:3, :3]), cs.DM(a[:3, 3])
        if self.robot.joints[i].type == "revolute":
            c, s = self._trig[i]
            return cs.mtimes(ra, _rot_z(c, s)), SX(pa)
        return SX(ra), pa + cs.mtimes(ra, cs.vertcat(0, 0, self.q[i]))

    @cached_property
    def base_poses(self) -> list[tuple[SX, SX]]:
        """Pose of every J_i in the base frame."""
        r, p = SX.eye(3), SX.zeros(3)
        out = []
        for i in range(self.n):
            ri, pi_ = self.joint_transform(i)
            r, p = cs.mtimes(r, ri), p + cs.mtimes(r, pi_)
            out.append((r, p))
        return out

    @cached_property
    def tip_pose(self) -> SX:
        """4x4 homogeneous pose of the tip frame in the base frame."""
        r, p = self.base_poses[-1]
        rt, pt = cs.DM(self._tip[:3, :3]), cs.DM(self._tip[:3, 3])
        return cs.vertcat(cs.horzcat(cs.mtimes(r, rt), p + cs.mtimes(r, pt)), cs.DM([[0, 0, 0, 1]]))

    @cached_property
    def tip_jacobian(self) -> SX:
        """6xn geometric Jacobian of the tip: rows [v (tip origin); omega], base frame axes."""
        p_tip = self.tip_pose[:3, 3]
        cols = []
        for i, joint in enumerate(self.robot.joints):
            r, p = self.base_poses[i]
            z = r[:, 2]
            if joint.type == "revolute":
                cols.append(cs.vertcat(cs.cross(z, p_tip - p), z))
            else:
                cols.append(cs.vertcat(z, SX.zeros(3)))
        return cs.horzcat(*cols)

    # --- Newton-Euler ---------------------------------------------------------------------------
    def rigid_body_torque(self, qd: SX, qdd: SX, pi: SX, gravity: bool = True) -> SX:
        """tau = M(q) qdd + C(q, qd) qd + g(q) of the rigid bodies (no rotor inertia, no friction).

        Body-frame forward recursion for omega, omega-dot and the origin's acceleration (gravity
        enters as a base acceleration -g), then backward recursion of forces and moments.
        """
        links = self.links(pi)
        z = cs.DM([0, 0, 1])
        w, wd = SX.zeros(3), SX.zeros(3)
        vd = -cs.DM(self.robot.gravity) if gravity else SX.zeros(3)
        forces, moments, transforms = [], [], []
        for i, joint in enumerate(self.robot.joints):
            r, p = self.joint_transform(i)
            transforms.append((r, p))
            rt = r.T
            vd = cs.mtimes(rt, vd + cs.cross(wd, p) + cs.cross(w, cs.cross(w, p)))
            w_in, wd = cs.mtimes(rt, w), cs.mtimes(rt, wd)
            if joint.type == "revolute":
                w = w_in + z * qd[i]
                wd = wd + cs.cross(w_in, z * qd[i]) + z * qdd[i]
            else:
                w = w_in
                vd = vd + 2 * cs.cross(w, z * qd[i]) + z * qdd[i]
            lk = links[i]
            forces.append(lk.m * vd + cs.cross(wd, lk.h) + cs.cross(w, cs.cross(w, lk.h)))
            moments.append(cs.mtimes(lk.inertia, wd) + cs.cross(w, cs.mtimes(lk.inertia, w)) + cs.cross(lk.h, vd))
        tau = [SX(0)] * self.n
        f, nm = SX.zeros(3), SX.zeros(3)
        for i in reversed(range(self.n)):
            if i + 1 < self.n:
                r, p = transforms[i + 1]
                rf = cs.mtimes(r, f)
                f, nm = forces[i] + rf, moments[i] + cs.mtimes(r, nm) + cs.cross(p, rf)
            else:
                f, nm = forces[i], moments[i]
            tau[i] = nm[2] if self.robot.joints[i].type == "revolute" else f[2]
        return cs.vertcat(*tau)

    @cached_property
    def velocities(self) -> list[tuple[SX, SX]]:
        """Per link (w_i, v_i): its angular velocity and its J_i origin's velocity, in J_i,
        propagated outward from the base at rest."""
        z = cs.DM([0, 0, 1])
        w, v = SX.zeros(3), SX.zeros(3)
        out = []
        for i, joint in enumerate(self.robot.joints):
            r, p = self.joint_transform(i)
            rt = r.T
            v, w = cs.mtimes(rt, v + cs.cross(w, p)), cs.mtimes(rt, w)
            if joint.type == "revolute":
                w = w + z * self.qd[i]
            else:
                v = v + z * self.qd[i]
            out.append((w, v))
        return out

    def kinetic_energy(self, pi: SX) -> SX:
        """T(q, qd) = sum over links of 1/2 m v.v + v.(w x h) + 1/2 w' I w, plus 1/2 IA qd^2.

        Velocities propagate outward in body frames (v: the link frame origin, h = m c the first
        moment, I about the origin). p = dT/dqd = M qd and dT/dq = C(q, qd)' qd (Christoffel C):
        momentum_terms computes both by a recursion (DESIGN.md, measured hints).
        """
        links = self.links(pi)
        energy = SX(0)
        for (w, v), lk in zip(self.velocities, links):
            energy += (
                0.5 * lk.m * cs.dot(v, v) + cs.dot(v, cs.cross(w, lk.h)) + 0.5 * cs.dot(w, cs.mtimes(lk.inertia, w))
            )
        for i in range(self.n):
            energy += 0.5 * self.joint_param(pi, i, "IA") * self.qd[i] ** 2
        return energy

    def momentum_terms(self, pi: SX) -> tuple[SX, SX]:
        """(p, dT/dq): the generalized momentum p = M(q) qd (rotor inertia included) and
        dT/dq = C(q, qd)' qd (Christoffel C), the momentum observer's ingredients, by one outward
        and one inward recursion (no M, no C, no gradient of T).

        Body i's momentum about the J_i origin, in J_i: l_i = m v + w x h, k_i = I w + h x v
        (dT_i/dv, dT_i/dw). The subtree's composite (L_j, K_j) is carried inward like Newton-Euler's
        forces. p_j = S_j . (K_j, L_j) + IA_j qd_j (S_j: joint j's axis, z of J_j). Moving joint j
        moves its subtree rigidly by S_j: a descendant's velocity changes by S_j x (V_i - V_j) and its
        inertia rotates with it, which adds -(S_j x V_i) . h_i to dT_i/dq_j (T_i = V_i . h_i / 2 is
        frame-invariant), so dT/dq_j = -(S_j x V_j) . H_j = -S_j . (V_j x* H_j) (Featherstone's
        spatial cross products):
        the z part of -(w_j x K_j + v_j x L_j) for a revolute joint, of -(w_j x L_j) for a
        prismatic one. Equal to the gradients of kinetic_energy to rounding (tested)."""
        links = self.links(pi)
        n = self.n
        p_out, dt_out = [SX(0)] * n, [SX(0)] * n
        kc, lc = SX.zeros(3), SX.zeros(3)
        for i in reversed(range(n)):
            (w, v), lk = self.velocities[i], links[i]
            k, lin = cs.mtimes(lk.inertia, w) + cs.cross(lk.h, v), lk.m * v + cs.cross(w, lk.h)
            if i + 1 < n:
                r, p = self.joint_transform(i + 1)
                rl = cs.mtimes(r, lc)
                k, lin = k + cs.mtimes(r, kc) + cs.cross(p, rl), lin + rl
            kc, lc = k, lin
            rotor = self.joint_param(pi, i, "IA") * self.qd[i]
            if self.robot.joints[i].type == "revolute":
                p_out[i] = k[2] + rotor
                dt_out[i] = -(w[0] * k[1] - w[1] * k[0] + v[0] * lin[1] - v[1] * lin[0])
            else:
                p_out[i] = lin[2] + rotor
                dt_out[i] = -(w[0] * lin[1] - w[1] * lin[0])
        return cs.vertcat(*p_out), cs.vertcat(*dt_out)

    def coulomb(self, qd: SX, scale: SX | None = None) -> SX:
        """The Coulomb shape: sgn(qd), or tanh(qd / scale) with the description's scales or, given,
        ``scale`` (the pipeline's run-time ``model.coulomb_scale``)."""
        c = self.robot.coulomb
        if c.model == "sign":
            return cs.sign(qd)
        return smooth_coulomb(qd, cs.DM([c.scale(i) for i in range(qd.shape[0])]) if scale is None else scale)

    def friction(self, qd: SX, pi: SX, scale: SX | None = None) -> SX:
        """FV qd + FC sgn(qd) + FO per joint (link side, N m or N); ``scale``: see coulomb."""
        sg = self.coulomb(qd, scale)
        return cs.vertcat(
            *[
                self.joint_param(pi, i, "FV") * qd[i]
                + self.joint_param(pi, i, "FC") * sg[i]
                + self.joint_param(pi, i, "FO")
                for i in range(self.n)
            ]
        )

    def rotor(self, qdd: SX, pi: SX) -> SX:
        return cs.vertcat(*[self.joint_param(pi, i, "IA") * qdd[i] for i in range(self.n)])

    def rnea_frictionless(self, pi: SX) -> SX:
        """M(q) qdd + C qd + g + IA qdd: the inverse dynamics without the joints' friction."""
        return self.rigid_body_torque(self.qd, self.qdd, pi) + self.rotor(self.qdd, pi)

    def rnea(self, pi: SX, scale: SX | None = None) -> SX:
        """Full inverse dynamics: M(q) qdd + C qd + g + IA qdd + friction(qd); ``scale``: see coulomb."""
        return self.rnea_frictionless(pi) + self.friction(self.qd, pi, scale)

    def gravity(self, pi: SX) -> SX:
        """g(q) from the subtrees' composite mass and first moment (carried inward by
        spatial.transform_inertial_cs): uniform gravity acts on a subtree as its whole mass at its
        centre, so g_j = z . (H_j x a_j) for a revolute joint and z . (m_j a_j) for a prismatic one,
        a_j = -gravity in J_j. The rnea at qd = qdd = 0 to rounding (tested), with fewer operations."""
        links = self.links(pi)
        acc: list[SX] = []
        a = SX(-cs.DM(self.robot.gravity))
        for i in range(self.n):
            a = cs.mtimes(self.joint_transform(i)[0].T, a)
            acc.append(a)
        out = [SX(0)] * self.n
        mc, hc = SX(0), SX.zeros(3)
        for i in reversed(range(self.n)):
            m, h = links[i].m, links[i].h
            if i + 1 < self.n:
                r, p = self.joint_transform(i + 1)
                cm, ch, _ = spatial.transform_inertial_cs(mc, hc, SX.zeros(3, 3), r, p)
                m, h = m + cm, h + ch
            mc, hc = m, h
            a = acc[i]
            out[i] = h[0] * a[1] - h[1] * a[0] if self.robot.joints[i].type == "revolute" else m * a[2]
        return cs.vertcat(*out)

    def coriolis(self, pi: SX) -> SX:
        """C(q, qd) qd by Newton-Euler with zero acceleration and no gravity."""
        return self.rigid_body_torque(self.qd, SX.zeros(self.n), pi, gravity=False)

    def nonlinear_effects(self, pi: SX) -> SX:
        """C qd + g + friction(qd): the rnea at zero acceleration (forward dynamics' right side)."""
        return self.rigid_body_torque(self.qd, SX.zeros(self.n), pi) + self.friction(self.qd, pi)

    def forward_dynamics(self, pi: SX) -> tuple[SX, SX]:
        """(qdd, d): qdd = M(q)^-1 (tau - n(q, qd)) by ltdl_solve on the serial chain's parent
        array, M and n in one graph (their kinematics shared), and the pivots d of M (all > 0 exactly
        when M is positive definite)."""
        parent = list(range(-1, self.n - 1))
        return ltdl_solve(self.mass_matrix(pi), self.tau - self.nonlinear_effects(pi), parent)

    # --- series-elastic drives (Kirchhoff 2011 §3.2) ---------------------------------------------------
    @cached_property
    def theta(self) -> SX:
        return SX.sym("theta", self.n)

    @cached_property
    def thetad(self) -> SX:
        return SX.sym("thetad", self.n)

    @cached_property
    def tau_m(self) -> SX:
        return SX.sym("tau_m", self.n)

    def _elastic(self, key: str) -> cs.DM:
        drives = [j.elastic for j in self.robot.joints]
        if any(d is None for d in drives):
            raise ValueError(f"{self.robot.name} has no series-elastic drives")
        return cs.DM([getattr(d, key) for d in drives])

    @cached_property
    def coupling(self) -> np.ndarray:
        return coupling_matrix(self.robot.joints)

    def elastic_torque(self, stiffness: SX | cs.DM | None = None, damping: SX | cs.DM | None = None) -> SX:
        """tau_el = K (theta - q - A q) + D (thetad - qd - A qd) (Kirchhoff 2011 eqs. 3.10, 3.25); K, D the
        description's unless given (run-time config of the observer, identified values)."""
        a = cs.DM(self.coupling)
        k = self._elastic("stiffness") if stiffness is None else stiffness
        d = self._elastic("damping") if damping is None else damping
        return k * (self.theta - self.q - a @ self.q) + d * (self.thetad - self.qd - a @ self.qd)

    def elastic_joint_torque(self, stiffness: SX | cs.DM | None = None, damping: SX | cs.DM | None = None) -> SX:
        """(I + A)^T tau_el: the link-side joint torque the drives transmit. (I + A)^T: the spring's
        torque reaches the coupled joints too -- the virtual work of tau_el . d(theta - q - A q);
        eq. 3.24 has A = 0, its coupling only moves the equilibrium."""
        return cs.DM(np.eye(self.n) + self.coupling).T @ self.elastic_torque(stiffness, damping)

    def elastic_link_force(self, pi: SX) -> SX:
        """(I + A)^T tau_el - n(q, qd): the link side's right-hand side, M(q) qdd = this (eq. 3.24)."""
        return self.elastic_joint_torque() - self.nonlinear_effects(pi)

    def motor_gravity(self, pi: SX) -> SX:
        """(I + A)^-T g(q): the spring torque tau_el, hence the motor torque, that holds the links
        still at q (the elastic controller's gravity compensation, Kirchhoff (2011) §3.2.4)."""
        return cs.DM(exact.inv(np.eye(self.n) + self.coupling).T) @ self.gravity(pi)

    def motor_equilibrium(self, pi: SX, stiffness: SX | cs.DM | None = None) -> tuple[SX, SX]:
        """The motor positions holding the links still at q against gravity, and their rate along qd:
        theta = q + A q + K^-1 (I + A)^-T g(q), theta-dot its time derivative -- the elastic
        controller's theta_d and a simulation's rest start. Kirchhoff (2011) eq. 3.28 has K^-1 g(q) + q +
        alpha_c(q); the (I + A)^-T is ours, the static balance of our link side (I + A)^T tau_el = g.
        K the description's unless given."""
        k = self._elastic("stiffness") if stiffness is None else stiffness
        theta = cs.DM(np.eye(self.n) + self.coupling) @ self.q + self.motor_gravity(pi) / k
        return theta, cs.jtimes(theta, self.q, self.qd)

    def motor_acceleration(self) -> SX:
        """thetadd = (tau_m - d_vm thetad - d_cm sgn(thetad) - tau_el) / I_m (Kirchhoff 2011 eq. 3.23)."""
        return (
            self.tau_m
            - self._elastic("motor_viscous") * self.thetad
            - self._elastic("motor_coulomb") * self.coulomb(self.thetad)
            - self.elastic_torque()
        ) / self._elastic("motor_inertia")

    def motor_regressor(self) -> SX:
        """Y_m with tau_m - I_m thetadd = Y_m [d_e, d_vm, k_e, d_Cm] per joint (Kirchhoff 2011 eq. 4.4, its
        column order; block diagonal, n x 4n; the deflections with the coupling of eq. 3.10)."""
        a = cs.DM(self.coupling)
        defl, rate = self.theta - self.q - a @ self.q, self.thetad - self.qd - a @ self.qd
        sg = self.coulomb(self.thetad)
        y = SX.zeros(self.n, 4 * self.n)
        for i in range(self.n):
            y[i, 4 * i : 4 * i + 4] = cs.horzcat(rate[i], self.thetad[i], defl[i], sg[i])
        return y

    def motor_regressor_along(self) -> tuple[SX, SX]:
        """Y_m (eq. 4.4) along a planned link motion (q, qd, qdd, qddd) with the motors where the
        springs must be to drive it: tau_el = (I + A)^-T rnea(q, qd, qdd) (eq. 3.24), theta = q + A q
        + K^-1 tau_el and its rate (the spring damping neglected, as Kirchhoff (2011) §3.2.3 does for
        planning). For designing the actuator stage's excitation (Kirchhoff 2011 §4.2.3); returns
        (Y_m, qddd symbol)."""
        jerk = SX.sym("qddd", self.n)
        inv = cs.DM(exact.inv(np.eye(self.n) + self.coupling).T)
        tau_el = inv @ self.rnea(cs.SX(cs.DM(self.robot.standard_parameters())))
        rate = cs.jtimes(tau_el, cs.vertcat(self.q, self.qd, self.qdd), cs.vertcat(self.qd, self.qdd, jerk))
        a = cs.DM(np.eye(self.n) + self.coupling)
        k = self._elastic("stiffness")
        theta, thetad = a @ self.q + tau_el / k, a @ self.qd + rate / k
        y = cs.substitute(self.motor_regressor(), cs.vertcat(self.theta, self.thetad), cs.vertcat(theta, thetad))
        return y, jerk

    # --- composite rigid body algorithm ---------------------------------------------------------
    def mass_matrix(self, pi: SX) -> SX:
        """M(q) including the reflected rotor inertias IA on the diagonal (symmetric, n x n).

        Composite-rigid-body algorithm in body frames: composite inertias are accumulated from the
        tip with transform_inertial_cs, then each column is the composite's reaction to a unit
        acceleration of its joint, carried down the chain.
        """
        links = self.links(pi)
        comp = [(lk.m, lk.h, lk.inertia) for lk in links]
        transforms = [self.joint_transform(i) for i in range(self.n)]
        for i in reversed(range(1, self.n)):
            r, p = transforms[i]
            m, h, ii = spatial.transform_inertial_cs(*comp[i], r, p)
            cm, ch, ci = comp[i - 1]
            comp[i - 1] = (cm + m, ch + h, ci + ii)
        z = cs.DM([0, 0, 1])
        mm = [[SX(0)] * self.n for _ in range(self.n)]
        for i in range(self.n):
            m, h, ii = comp[i]
            if self.robot.joints[i].type == "revolute":
                f, nm = cs.cross(z, h), cs.mtimes(ii, z)
            else:
                f, nm = m * z, cs.cross(h, z)
            j = i
            while True:
                val = nm[2] if self.robot.joints[j].type == "revolute" else f[2]
                mm[i][j] = val
                mm[j][i] = val
                if j == 0:
                    break
                r, p = transforms[j]
                rf = cs.mtimes(r, f)
                f, nm = rf, cs.mtimes(r, nm) + cs.cross(p, rf)
                j -= 1
        out = cs.vertcat(*[cs.horzcat(*row) for row in mm])
        return out + cs.diag(cs.vertcat(*[self.joint_param(pi, i, "IA") for i in range(self.n)]))

    def coriolis_matrix(self, pi: SX) -> SX:
        """C(q, qd) from the Christoffel symbols of M, so that Mdot - 2C is skew-symmetric:
        C_ij = sum_k 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) qd_k."""
        m = self.mass_matrix(pi)
        dm = [cs.jacobian(m[:, k], self.q) for k in range(self.n)]  # dm[k][i, l] = dM_ik/dq_l
        rows = []
        for i in range(self.n):
            row = []
            for j in range(self.n):
                row.append(
                    sum((0.5 * (dm[j][i, k] + dm[k][i, j] - dm[k][j, i]) * self.qd[k] for k in range(self.n)), SX(0))
                )
            rows.append(cs.horzcat(*row))
        return cs.vertcat(*rows)

    # --- regressor -------------------------------------------------------------------------------
    def regressor(self, columns: list[int] | None = None) -> SX:
        """Y(q, qd, qdd) with rnea = Y pi (columns: a subset of the standard parameters)."""
        tau = self.rnea(self.pi)
        if columns is None:
            return cs.jacobian(tau, self.pi)
        return cs.jacobian(tau, self.pi)[:, columns]
