"""The C of the closed-loop model for output-error identification (codegen.closed_loop's functions
as C bodies, the loop and the RK4 sensitivities as template structure): ``<robot>_oesim.{h,c}``,
built next to the robot's ``<robot>_dynamics.{h,c}`` (host-side, double precision)."""

from __future__ import annotations

from typing import Any

import casadi as cs

from . import __version__
from .closed_loop import controller, inverse_dynamics_jacobian
from .cprint import body, literal
from .dynamics import Dynamics
from .emit import template_environment
from .model import Robot


def _static(fn: cs.Function, doc: str) -> dict[str, Any]:
    ins = [fn.name_in(i) for i in range(fn.n_in())]
    outs = [fn.name_out(i) for i in range(fn.n_out())]
    bd = body(fn, ins, outs, "double", indent="    ")
    used = {fn.instruction_input(k)[0] for k in range(fn.n_instructions()) if fn.instruction_id(k) == cs.OP_INPUT}
    return {"name": fn.name(), "doc": doc, "ops": bd.ops, "lines": bd.lines,
            "unused": [a for i, a in enumerate(ins) if i not in used],
            "params": ", ".join([f"const real_t *{a}" for a in ins] + [f"real_t *{a}" for a in outs])}


def oesim_files(robot: Robot, sample_period: float | None = None) -> dict[str, str]:
    """{file name: text} of the closed-loop model at ``sample_period`` (default the robot's)."""
    ts = sample_period or robot.sample_period
    dyn = Dynamics(robot)
    ctl, ctl_jac = controller(robot, dyn, ts)
    bodies = [_static(ctl, "findiff velocity + pid step (codegen.blocks), times the drive gains"),
              _static(ctl_jac, "its Jacobian with respect to (q_k, q_{k-1}, integ_k)"),
              _static(inverse_dynamics_jacobian(dyn), "d rnea / d(q, qd) at fixed qdd")]
    p = robot.c_name
    ctx = {"p": p, "P": p.upper(), "version": __version__, "robot_name": robot.name,
           "ts": literal(ts, "double"), "bodies": bodies}
    env = template_environment()
    return {f"{p}_oesim.h": env.get_template("oesim.h.j2").render(ctx),
            f"{p}_oesim.c": env.get_template("oesim.c.j2").render(ctx)}


def oesim_cdef(robot: Robot) -> str:
    """The declarations of ``<robot>_oesim.h`` for cffi."""
    p, n, ns = robot.c_name, robot.dof, robot.n_standard
    fields = "".join(f"    double {f}[{n}];\n" for f in ("kp", "kd", "ki", "i_max", "tau_max", "drive_gain"))
    return (f"typedef struct {{\n{fields}    double ctl_pi[{ns}];\n    int32_t substeps;\n}} {p}_oe_loop_t;\n"
            f"int {p}_oe_simulate(const {p}_oe_loop_t *loop, const double *pi, long n, const double *q_des, "
            "const double *qd_des, const double *q0, const double *qd0, double *q, double *qd, double *qdd, "
            "double *tau, double *y, const int32_t *cols, int32_t ncols, double *dq, double *dtau);")
