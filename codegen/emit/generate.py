"""Render a robot's generated C folder: templates/ (structure) + cprint bodies (arithmetic)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import casadi as cs
import jinja2

from codegen import __version__
from codegen.blocks import imu as imu_block
from codegen.blocks.base import Field
from codegen.blocks.encoder import sensor_function
from codegen.blocks.options import RtOptions, realtime_defaults
from codegen.blocks.pipeline import build_pipeline
from codegen.emit.cprint import Precision, body, literal
from codegen.emit.files import RECORD, digest, record_text, write_files
from codegen.emit.host import HOST_FOLDER, host_glue
from codegen.emit.references import with_references
from codegen.emit.rt import LOOPBACK_MAX_DELAY, RtEmitter
from codegen.errors import DescriptionError
from codegen.model.robot import Robot, c_comment_text, digest_of
from codegen.resources import resource_dir
from codegen.symbolic.contact import contact_function
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.functions import Arg, FunctionSpec, dynamics_functions
from codegen.symbolic.imu import readings_function
from codegen.symbolic.params import BaseParameters, base_parameters

RUNTIME_FILES = ("manipgen_linalg.h", "manipgen_rt.h")


@dataclass(frozen=True)
class Generated:
    robot: Robot
    base: BaseParameters
    files: dict[str, str]  # what goes on the target: file name -> content
    host: dict[str, str]  # host-only files (loopback, glue), in the folder's host/

    def write(self, out: Path) -> Path:
        """Write the folder (codegen.emit.files: atomic per file, never over a file manipgen did not
        write unless forced, identical files untouched, its own files no longer generated removed)."""
        write_files(out, self.files, prune=True)
        write_files(Path(out) / HOST_FOLDER, self.host, prune=True)
        return Path(out)

    def differences(self, out: Path, exact: bool = True) -> list[str]:
        """How the folder ``out`` differs from what :meth:`write` would leave there (one line per
        file: missing, differing, and with ``exact`` not generated any more), empty when
        byte-identical. ``exact`` (the repository's generated/): the folder holds nothing else, its
        ownership record included; otherwise (a user's folder) other files -- build products, a
        demo's logs, files of the user's -- and the record that lists them are not differences."""
        found: list[str] = []
        for folder, files in ((Path(out), self.files), (Path(out) / HOST_FOLDER, self.host)):
            fresh = dict(files)
            if exact:
                # the ownership record write_files leaves: a stale one would make regeneration
                # refuse the files as not manipgen's
                fresh[RECORD] = record_text({n: [digest(t.encode("utf-8"))] for n, t in fresh.items()})
            present = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
            found += [f"{folder}/{n}: missing" for n in sorted(set(fresh) - present)]
            if exact:
                found += [f"{folder}/{n}: not generated any more" for n in sorted(present - set(fresh))]
            found += [
                f"{folder}/{n}: differs from a fresh generation"
                for n in sorted(set(fresh) & present)
                if (folder / n).read_bytes() != fresh[n].encode("utf-8")
            ]
        return found


def template_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _view(
    spec: FunctionSpec | None,
    name: str,
    doc: str,
    inputs: tuple[Arg, ...],
    outputs: tuple[Arg, ...],
    precision: Precision,
    ret: str = "void",
    returns: str = "",
) -> dict[str, Any]:
    lines: tuple[str, ...] = ()
    ops: str = "see the functions it calls"
    unused: list[str] = []
    if spec is not None:
        b = body(spec.function, [a.name for a in inputs], [a.name for a in outputs], precision, indent="    ")
        lines, ops = b.lines, str(b.ops)
        used = {
            spec.function.instruction_input(k)[0]
            for k in range(spec.function.n_instructions())
            if spec.function.instruction_id(k) == cs.OP_INPUT
        }
        unused = [a.name for i, a in enumerate(inputs) if i not in used]
    return {
        "name": name,
        "doc_lines": textwrap.wrap(doc, 96),
        "inputs": inputs,
        "outputs": outputs,
        "lines": lines,
        "ops": ops,
        "unused": unused,
        "ret": ret,
        "returns": returns,
    }


def _sensor_view(n: int, precision: Precision) -> dict[str, Any]:
    """The loopback's encoder model (codegen.blocks.encoder.sensor_function) as C statements."""
    fn = sensor_function(n)
    ins = [b.split(".")[-1] for b in fn.inputs]
    bd = body(fn.function, ins, ["count"], precision, indent="    ")
    return {
        "doc": fn.doc,
        "lines": bd.lines,
        "ops": bd.ops,
        "params": ", ".join(f"const real_t *{a}" for a in ins) + ", real_t *count",
    }


def static_view(fn: cs.Function, doc: str, precision: Precision) -> dict[str, Any]:
    """A named CasADi function as a static C function's parts: its arguments are its own input and
    output names (const real_t *in..., real_t *out...); inputs it does not use are listed."""
    ins = [fn.name_in(i) for i in range(fn.n_in())]
    outs = [fn.name_out(i) for i in range(fn.n_out())]
    bd = body(fn, ins, outs, precision, indent="    ")
    used = {fn.instruction_input(k)[0] for k in range(fn.n_instructions()) if fn.instruction_id(k) == cs.OP_INPUT}
    return {
        "name": fn.name(),
        "doc": doc,
        "ops": bd.ops,
        "lines": bd.lines,
        "unused": [a for i, a in enumerate(ins) if i not in used],
        "params": ", ".join([f"const real_t *{a}" for a in ins] + [f"real_t *{a}" for a in outs]),
    }


def motion_inputs(inputs: Sequence[Field]) -> list[str]:
    """The pipeline's measured-motion inputs that the loopback fills in from the plant."""
    return [f.name for f in inputs if f.name in ("qd_meas", "qdd_meas")]


def _imu_view(robot: Robot, dyn: Dynamics, est: Any, precision: Precision) -> dict[str, Any] | None:
    """The loopback's simulated IMUs (those the pipeline's imu estimator reads), or None."""
    if est is None or est.name != imu_block.SPEC.name:
        return None
    imus = imu_block.placements(robot, bool(est.options.get("tip")))
    view = static_view(
        readings_function(dyn, imus), "exact readings of the pipeline's IMUs (codegen.symbolic.imu)", precision
    )
    return view | {"count": len(imus), "where": ", ".join(f"{u.name} on link {u.link + 1}" for u in imus)}


def generate(robot: Robot, precision: Precision = "double", rt: RtOptions | None = None) -> Generated:
    """The C folder of a robot: dynamics and the real-time pipeline (``rt``: default from the
    robot description's ``realtime:`` section)."""
    rt_options = rt if rt is not None else realtime_defaults(robot).options
    if robot.c_name == "manipgen":  # <robot>_rt.h would be the runtime's manipgen_rt.h
        raise DescriptionError(
            robot.file,
            "name",
            "'manipgen' is reserved: the robot's files would collide "
            "with the runtime headers (manipgen_rt.h); choose another name",
        )
    dyn = Dynamics(robot)
    base = base_parameters(robot, dyn)
    specs = dynamics_functions(dyn, base)
    views = [_view(s, s.name, s.doc, s.inputs, s.outputs, precision) for s in specs]
    n = robot.dof
    q, qd = specs[0].inputs[0], specs[0].inputs[1]
    tau = Arg("tau", n, "joint torques (N m or N), link side")
    qdd = Arg("qdd", n, "joint accelerations (rad/s^2 or m/s^2)")
    pi = Arg("pi", robot.n_standard, "standard parameters, order of <robot>_standard_names")
    fdoc = (
        "Forward dynamics qdd = M(q)^-1 (tau - n(q, qd)) by a Cholesky solve of M (never an "
        "explicit inverse); M includes rotor inertia, n friction."
    )
    fdyn = {
        form: _view(
            None,
            "forward_dynamics" + form,
            fdoc + (" Parameterised form." if form else ""),
            (q, qd, tau) + ((pi,) if form else ()),
            (qdd,),
            precision,
            ret="int",
            returns="0, or -1 if M(q) is not positive definite (qdd unspecified)",
        )
        for form in ("", "_p")
    }
    all_views = views + [fdyn[""], fdyn["_p"]]
    efdyn = []
    if robot.elastic:
        by_name = {s.name: s for s in specs}
        th, thd, tm = by_name["motor_acceleration"].inputs[2:5]
        efdyn = [
            _view(
                None,
                "elastic_dynamics" + form,
                "Forward dynamics of the series-elastic arm "
                "(seed 003 eqs. 3.23-3.25): qdd = M(q)^-1 ((I + A)^T tau_el - n(q, qd)) by a Cholesky "
                "solve of M, and the motors' thetadd."
                + (
                    " Parameterised form (the links' standard parameters; the drives' are the description's)."
                    if form
                    else ""
                ),
                (q, qd, th, thd, tm) + ((pi,) if form else ()),
                (qdd, Arg("thetadd", n, "motor accelerations, link side")),
                precision,
                ret="int",
                returns="0, or -1 if M(q) is not positive definite (qdd unspecified)",
            )
            for form in ("", "_p")
        ]
        all_views += efdyn
    std = robot.standard_parameters()
    beta = base.values(std)
    p = robot.c_name
    ctx: dict[str, Any] = {
        "p": p,
        "P": p.upper(),
        "version": __version__,
        "robot_name": robot.name,
        "source": c_comment_text(robot.source),
        "digest": robot.digest,
        "dof": n,
        "gravity": ", ".join(repr(g) for g in robot.gravity),
        "real": precision,
        "sqrt": "sqrt" if precision == "double" else "sqrtf",
        "n_standard": robot.n_standard,
        "n_base": base.n_base,
        "n_base_inertial": base.n_inertial,
        "joint_parameters": ", ".join(robot.joint_parameters) or "none",
        "convention": robot.convention,
        "standard_names": robot.standard_parameter_names,
        "standard_values": [literal(v, precision) for v in std],
        "base_names": base.names,
        "base_values": [literal(v, precision) for v in beta],
        "functions": all_views,
        "fdyn": fdyn,
        "efdyn": efdyn,
        "elastic": robot.elastic,
        "sources": [f"{p}_dynamics.c", f"{p}_rt.c"],
        "name_length": 1 + max(len(x) for x in robot.standard_parameter_names + base.names),
    }
    env = template_environment()
    emitter = RtEmitter(build_pipeline(robot, rt_options, dyn), p, precision)
    rt_h, rt_c = emitter.render(env, ctx)
    files = {
        f"{p}_rt.h": with_references(rt_h),
        f"{p}_rt.c": rt_c,
        f"{p}_dynamics.h": with_references(env.get_template("dynamics.h.j2").render(ctx)),
        f"{p}_dynamics.c": env.get_template("dynamics.c.j2").render(ctx),
        "Makefile": env.get_template("Makefile.j2").render(ctx),
        "CMakeLists.txt": env.get_template("CMakeLists.txt.j2").render(ctx),
    }
    imu = _imu_view(robot, dyn, emitter.pipe.block("est"), precision)
    host = {
        f"{p}_loopback.h": env.get_template("loopback.h.j2").render(
            dict(
                ctx,
                max_delay=LOOPBACK_MAX_DELAY,
                motion_inputs=motion_inputs(emitter.pipe.inputs),
                imu=imu,
            )
        ),
        f"{p}_loopback.c": env.get_template("loopback.c.j2").render(
            dict(
                ctx,
                has_controller=rt_options.controller != "none",
                sensor=_sensor_view(n, precision),
                motion_inputs=motion_inputs(emitter.pipe.inputs),
                imu=imu,
                contact=static_view(
                    contact_function(dyn),
                    "Hunt-Crossley contact of the tip with a plane (seed 003 eq. 5.19; codegen.symbolic.contact)",
                    precision,
                ),
                floor="floor" if precision == "double" else "floorf",
            )
        ),
    }
    host |= host_glue(env, ctx, [f"{p}_dynamics.h", f"{p}_rt.h", f"{p}_loopback.h"], run=True)
    for name in RUNTIME_FILES:
        files[name] = (resource_dir("runtime") / name).read_text(encoding="utf-8")
    manifest = {
        "generator": "manipgen",
        "version": __version__,
        "robot": p,
        "description": Path(robot.file).name,
        "description_hash": robot.digest,
        "options": {"precision": precision, "rt": rt_options.label, "rt_options": rt_options.as_dict()},
        "options_hash": digest_of(robot.digest.encode(), precision.encode(), rt_options.label.encode()),
        "dof": n,
        "joints": [j.name for j in robot.joints],
        "elastic": robot.elastic,
        "joint_types": [j.type for j in robot.joints],
        "n_standard": robot.n_standard,
        "n_base": base.n_base,
        "base_ranges": {"inertial": [0, base.n_inertial], "joint": [base.n_inertial, base.n_base]},
        "standard_parameter_names": list(robot.standard_parameter_names),
        "standard_parameters": [float(v) for v in std],
        "base_parameter_names": list(base.names),
        "base_parameters": [float(v) for v in beta],
        "base_expressions": list(base.expressions),
        "base_columns": list(base.columns),
        "regrouping": [
            [[int(j), float(base.k[i, j])] for j in range(base.k.shape[1]) if base.k[i, j] != 0]
            for i in range(base.n_base)
        ],
        "functions": [
            {
                "name": v["name"],
                "returns": v["ret"],
                "inputs": [[a.name, a.size] for a in v["inputs"]],
                "outputs": [[a.name, a.size] for a in v["outputs"]],
                "ops": int(v["ops"]) if v["ops"].isdigit() else None,
            }
            for v in all_views
        ],
        "rt": emitter.manifest(),
        "files": sorted(files),
        "host_files": sorted(f"{HOST_FOLDER}/{name}" for name in host),
    }
    files["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    return Generated(robot, base, files, host)
