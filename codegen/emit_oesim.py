"""The C of the closed-loop model for output-error identification (codegen.closed_loop's functions
as C bodies, the loop and the RK4 sensitivities as template structure): ``<robot>_oesim.{h,c}``,
built next to the robot's ``<robot>_dynamics.{h,c}`` (host-side, double precision)."""

from __future__ import annotations

from . import __version__
from .closed_loop import controller, inverse_dynamics_jacobian
from .cprint import literal
from .dynamics import Dynamics
from .emit import static_view, template_environment
from .model import Robot


def oesim_files(robot: Robot, sample_period: float | None = None) -> dict[str, str]:
    """{file name: text} of the closed-loop model at ``sample_period`` (default the robot's)."""
    ts = sample_period or robot.sample_period
    dyn = Dynamics(robot)
    ctl, ctl_jac = controller(robot, dyn, ts)
    bodies = [
        static_view(ctl, "findiff velocity + pid step (codegen.blocks), times the drive gains", "double"),
        static_view(ctl_jac, "its Jacobian with respect to (q_k, q_{k-1}, integ_k)", "double"),
        static_view(inverse_dynamics_jacobian(dyn), "d rnea / d(q, qd) at fixed qdd", "double"),
    ]
    p = robot.c_name
    ctx = {
        "p": p,
        "P": p.upper(),
        "version": __version__,
        "robot_name": robot.name,
        "ts": literal(ts, "double"),
        "bodies": bodies,
    }
    env = template_environment()
    return {
        f"{p}_oesim.h": env.get_template("oesim.h.j2").render(ctx),
        f"{p}_oesim.c": env.get_template("oesim.c.j2").render(ctx),
    }


def oesim_cdef(robot: Robot) -> str:
    """The declarations of ``<robot>_oesim.h`` for cffi."""
    p, n, ns = robot.c_name, robot.dof, robot.n_standard
    fields = "".join(f"    double {f}[{n}];\n" for f in ("kp", "kd", "ki", "i_max", "tau_max", "drive_gain"))
    return (
        f"typedef struct {{\n{fields}    double ctl_pi[{ns}];\n    int32_t substeps;\n}} {p}_oe_loop_t;\n"
        f"int {p}_oe_simulate(const {p}_oe_loop_t *loop, const double *pi, long n, const double *q_des, "
        "const double *qd_des, const double *q0, const double *qd0, double *q, double *qd, double *qdd, "
        "double *tau, double *y, const int32_t *cols, int32_t ncols, double *dq, double *dtau);"
    )
