"""Render a robot's generated C folder: templates/ (structure) + cprint bodies (arithmetic), as the
composition of its parts: the dynamics (codegen.emit.dynamics, built once per robot), the pipeline
(codegen.emit.pipeline), the loopback (codegen.emit.loopback), the host glue and the manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codegen.blocks.options import RtOptions, realtime_defaults
from codegen.blocks.pipeline import build_pipeline
from codegen.emit.cprint import Precision
from codegen.emit.dynamics import dynamics_part
from codegen.emit.files import RECORD, digest, record_text, write_files
from codegen.emit.host import HOST_FOLDER, host_glue
from codegen.emit.loopback import loopback_files
from codegen.emit.manifest import manifest_text
from codegen.emit.pipeline import RtEmitter, pipeline_files
from codegen.emit.templates import template_environment
from codegen.errors import DescriptionError
from codegen.model.robot import Robot
from codegen.resources import resource_dir
from codegen.symbolic.params import BaseParameters

RUNTIME_FILES = ("manipgen_linalg.h", "manipgen_rt.h")  # runtime/ headers of the firmware folder
HOST_RUNTIME_FILES = ("manipgen_loopback.h",)  # and of its host/ (the loopback's generic parts)


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
    part = dynamics_part(robot, precision)
    ctx = dict(part.ctx)
    p = robot.c_name
    env = template_environment()
    emitter = RtEmitter(build_pipeline(robot, rt_options, part.dyn), p, precision)
    files = {
        **pipeline_files(emitter, env, ctx),
        **part.files,
        "Makefile": env.get_template("Makefile.j2").render(ctx),
        "CMakeLists.txt": env.get_template("CMakeLists.txt.j2").render(ctx),
    }
    has_controller = rt_options.controller != "none"
    host = loopback_files(env, ctx, part.dyn, emitter.pipe.block("obs"), emitter.pipe.block("est"), has_controller)
    host |= host_glue(env, ctx, [f"{p}_dynamics.h", f"{p}_rt.h", f"{p}_loopback.h"], run=True)
    for name in RUNTIME_FILES:
        files[name] = (resource_dir("runtime") / name).read_text(encoding="utf-8")
    for name in HOST_RUNTIME_FILES:
        host[name] = (resource_dir("runtime") / name).read_text(encoding="utf-8")
    files["manifest.json"] = manifest_text(
        robot, part.base, precision, rt_options, part.functions, emitter.manifest(), list(files), list(host)
    )
    return Generated(robot, part.base, files, host)
