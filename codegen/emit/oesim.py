"""The C of the closed-loop model for output-error identification (codegen.blocks.closed_loop's functions
as C bodies, the loop as template structure, the RK4 with sensitivities runtime/manipgen_loopback.h's):
``<robot>_oesim.{h,c}`` and that header, built next to the robot's ``<robot>_dynamics.{h,c}`` (host-side,
double precision)."""

from __future__ import annotations

from codegen import __version__
from codegen.blocks.closed_loop import controller, inverse_dynamics_jacobian
from codegen.emit.cfunction import view
from codegen.emit.cprint import literal
from codegen.emit.host import host_glue
from codegen.emit.templates import template_environment
from codegen.model.robot import Robot
from codegen.resources import resource_dir
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import FunctionSpec

LOOPBACK_RUNTIME = "manipgen_loopback.h"  # mg_rk4_sensitivities, mg_chain3


def oesim_files(robot: Robot, sample_period: float | None = None) -> dict[str, str]:
    """{file name: text} of the closed-loop model at ``sample_period`` (default the robot's): host-only
    files, for a folder's host/ beside the robot's dynamics."""
    ts = sample_period or robot.sample_period
    dyn = Dynamics(robot)
    ctl, ctl_jac = controller(robot, dyn, ts)
    bodies = [
        view(FunctionSpec.of(ctl, "findiff velocity + pid step (codegen.blocks), times the drive gains"), "double"),
        view(FunctionSpec.of(ctl_jac, "its Jacobian with respect to (q_k, q_{k-1}, integ_k)"), "double"),
        view(FunctionSpec.of(inverse_dynamics_jacobian(dyn), "d rnea / d(q, qd) at fixed qdd"), "double"),
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
        LOOPBACK_RUNTIME: (resource_dir("runtime") / LOOPBACK_RUNTIME).read_text(encoding="utf-8"),
    } | host_glue(env, ctx, [f"{p}_dynamics.h", f"{p}_oesim.h"], run=False)
