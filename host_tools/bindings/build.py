"""Compile a generated folder into an importable cffi module (API mode), cached by content hash.

The cdef is the folder's own headers (host/<robot>_host.h, preprocessed), so the host binds exactly
what was generated and the C interface is written once, in the templates.
Cache: $MANIPGEN_CACHE or ~/.cache/manipgen. Concurrent builds (pytest -n) are serialised by a lock.

A robot's dynamics (``<robot>_dynamics.c``: most of a folder's C, and the same for every pipeline
variant of the robot) is compiled once into an object of its own, cached by its own content hash
(``dynamics_object``); each pipeline's module links against it instead of compiling it again.
The folder's other sources are compiled the same way (``unit_object``, side by side on the cores),
and cffi compiles only its wrapper, at ``WRAPPER_FLAGS``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import cffi

from codegen.emit.host import HOST_FOLDER
from codegen.resources import resource_dir
from host_tools import cpu_flags

# -fno-var-tracking-assignments: the debug information Python's distutils asks for (-g) on a
# generated step of thousands of lines makes gcc print a note ("variable tracking size limit
# exceeded") that reads like trouble to a user; the code is the same without it.
# -ffp-contract=off: a * b + c stays two roundings, as on the target (runtime/target/Makefile), also
# on hosts with a fused multiply-add
# -g0: none of that debug information at all (gcc's code is the same without it: the disassembly of
# a generated pipeline's three sources compared); it cost 15 % of every compile (an iiwa's
# <robot>_dynamics.c 5.0 -> 4.2 CPU-s, rt.c 1.2 -> 1.05). SANITIZE asks for -g again: its reports name lines.
CFLAGS = ("-std=c99", "-O2", "-ffp-contract=off", "-fno-var-tracking-assignments", "-g0")
# AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow too), aborting at the first
# report: the fuzz tests' build. The process must preload the ASan runtime (sanitizer_preload()).
SANITIZE = (
    "-fsanitize=address,undefined,float-cast-overflow",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
)
# cffi's wrapper (_manipgen_*.c: 3,500 lines for an iiwa pipeline) converts Python objects to C
# arguments and results back, and does no arithmetic on them: at -O0 (after CFLAGS, so it wins) its
# compile costs 0.5 CPU-s instead of 1.1 per pipeline, and every generated function is compiled as before
WRAPPER_FLAGS = ("-O0",)
# a pipeline's step, <robot>_rt.c (straight-line generated code, 3,000 lines for an iiwa pipeline, a
# new one for every variant), at its own -O. The same bits at any -O: x86-64's SSE2 (and AVX2:
# HOST_ISA) arithmetic with -ffp-contract=off is IEEE's (no -ffast-math), and gcc vectorises no
# floating-point sum whose order that would change (no -fassociative-math);
# tests/target/test_linux.py checks it, the -O2 program against this build bit for bit, and
# tests/host_tools/bindings/test_step_flags.py the plain -O2 host build. History: -O1 (0.6 CPU-s
# instead of 1.0 to compile an iiwa momentum pipeline, 4.1 instead of 6.0 adaptive_momentum), then
# -O1 -ftree-vectorize (mg_rls_gain's covariance update, 57 iiwa parameters, 42 -> 19-23 us a
# sample that adapts); now -O3 with AVX2 (HOST_ISA), where the step is what collide's runs cost:
# the iiwa model-adaptive observers' step 14.4 -> 8.9 us a sample (replayed; 25.3 -> 18.8 in the
# closed loop), compile +0.5-1.0 CPU-s per model-adaptive pipeline (iiwa adaptive 3.7 -> 4.2,
# adaptive_momentum 2.0 -> 3.0), outputs bitwise equal (iiwa adaptive, adaptive_momentum,
# adaptive_measured, momentum: 20 s closed loops, every output; collide's JSON; issue 46 item 3)
STEP_FLAGS = ("-O3",)


def _host_isa() -> tuple[str, ...]:
    """-mavx2 on an x86-64 host whose processor has AVX2 (its /proc/cpuinfo flags), else nothing: the
    host build's every unit (one instruction set: the loopback's SSE code between AVX steps ran at
    half speed, 50 instead of 19 us a sample). The same bits as SSE2: each lane's arithmetic is
    IEEE's, -ffp-contract=off keeps a * b + c two roundings (no FMA), and no sum is reordered (no
    -fassociative-math); test_step_flags compares it with the plain -O2 build. The module's and the
    objects' keys name it, so a cache shared with a host without AVX2 builds that host its own."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    return ("-mavx2",) if "avx2" in cpu_flags() else ()


HOST_ISA = _host_isa()
_COMPILING = threading.Lock()  # cffi's compile changes the process's working directory: one at a time


def cache_root() -> Path:
    root = Path(os.environ.get("MANIPGEN_CACHE", Path.home() / ".cache" / "manipgen"))
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def host_header(folder: Path, manifest: dict[str, Any]) -> Path:
    return folder / HOST_FOLDER / f"{manifest['robot']}_host.h"


_INTEGER_MACRO = re.compile(r"#define ([A-Z][A-Z0-9_]*) (-?[0-9]+)$")


def cdef(folder: Path, manifest: dict[str, Any]) -> str:
    """The cffi declarations: the folder's ``host/<robot>_host.h`` (which includes every header the
    host binds) through the C preprocessor, with the robot's integer macros kept (``<ROBOT>_DOF``).
    System headers are replaced by empty stand-ins: cffi knows the standard types itself."""
    prefix = manifest["robot"].upper() + "_"
    header = host_header(folder, manifest)
    text = "\n".join(p.read_text(encoding="utf-8") for p in [*folder.glob("*.h"), *header.parent.glob("*.h")])
    with tempfile.TemporaryDirectory() as stubs:
        for name in sorted(set(re.findall(r"#include <([\w./]+)>", text))):
            (Path(stubs) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(stubs) / name).write_text("")
        cc = os.environ.get("CC", "cc")
        cmd = [
            cc,
            "-E",
            "-P",
            "-dD",
            "-nostdinc",
            "-I",
            stubs,
            "-I",
            str(folder),
            "-I",
            str(header.parent),
            str(header),
        ]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        except FileNotFoundError:
            raise RuntimeError(f"no C compiler {cc!r}: the host build needs one (set CC)") from None
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"{header}: the C preprocessor failed: {exc.stderr.strip()}") from None
    lines = []
    for line in out.splitlines():
        if line.startswith("#"):
            m = _INTEGER_MACRO.match(line)
            if m and m.group(1).startswith(prefix):
                lines.append(line)
        elif line.strip():
            lines.append(line)
    return "\n".join(lines)


def host_source(folder: Path, manifest: dict[str, Any]) -> str:
    return f'#include "{host_header(folder, manifest).name}"\n'


def content_hash(folder: Path, extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for path in sorted([*folder.iterdir(), *(folder / HOST_FOLDER).glob("*")]):
        if path.suffix in (".c", ".h") or path.name == "manifest.json":
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _import(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _cached(name: str, digest: str, declare: Callable[[cffi.FFI], None]) -> ModuleType:
    """The cffi module ``name`` from the cache's folder ``digest``, compiled first (under the
    cache's lock) if it is not there; ``declare`` gives a fresh FFI its cdef and source."""
    out = cache_root() / "modules" / digest
    with locked(cache_root() / "locks" / f"{digest}.lock"):
        found = sorted(out.glob(f"{name}*.so")) if out.exists() else []
        if not found:
            ffi = cffi.FFI()
            declare(ffi)
            out.mkdir(parents=True, exist_ok=True)
            with _COMPILING:
                found = [Path(ffi.compile(tmpdir=str(out), verbose=False))]
        return _import(name, found[0])


def _compiler() -> list[str]:
    """The command setuptools compiles an extension's sources with (``$CC`` or Python's own CC, its
    CFLAGS and CCSHARED): an object made here is compiled exactly as cffi would have compiled it."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    flags = [sysconfig.get_config_var(v) or "" for v in ("CFLAGS", "CCSHARED")]
    return shlex.split(cc) + [f for text in flags for f in shlex.split(text)]


_LOCAL_INCLUDE = re.compile(r'^#include "([\w.]+)"', re.M)


def _local_includes(source: Path, dirs: list[Path]) -> list[Path]:
    """The headers that ``source`` includes with quotes, directly or through them, in order, each
    found as the compiler finds it: beside its includer first, then in ``dirs`` (the -I folders)."""
    found: list[Path] = []
    todo = [source]
    while todo:
        includer = todo.pop()
        for name in _LOCAL_INCLUDE.findall(includer.read_text(encoding="utf-8")):
            path = next((d / name for d in [includer.parent, *dirs] if (d / name).is_file()), None)
            if path is not None and path not in found:
                found.append(path)
                todo.append(path)
    return found


def dynamics_object(source: Path, flags: list[str]) -> Path:
    """``source`` (a folder's ``<robot>_dynamics.c``) compiled with ``flags``, once per content
    (``unit_object``): the pipeline variants of one robot share it."""
    return unit_object(source, flags, [source.parent])


def unit_object(source: Path, flags: list[str], dirs: list[Path]) -> Path:
    """``source`` compiled with ``flags`` and ``-I dirs`` into the cache's ``objects/``, once per
    content: the key is the source, the headers it includes (directly or through them, as found in
    ``dirs``), the compiler command and the flags."""
    command = [*_compiler(), *flags]
    h = hashlib.sha256("\0".join(command).encode())
    for path in [source, *_local_includes(source, dirs)]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    out = cache_root() / "objects" / f"{source.stem}_{h.hexdigest()[:16]}.o"
    with locked(cache_root() / "locks" / f"{out.stem}.lock"):
        if not out.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            partial = out.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
            includes = [arg for d in dirs for arg in ("-I", str(d))]
            cmd = [*command, *includes, "-c", str(source), "-o", str(partial)]
            try:
                subprocess.run(cmd, capture_output=True, text=True, check=True)
            except FileNotFoundError:
                raise RuntimeError(f"no C compiler {command[0]!r}: the host build needs one (set CC)") from None
            except subprocess.CalledProcessError as exc:
                raise RuntimeError(f"{source}: the C compiler failed: {exc.stderr.strip()}") from None
            partial.replace(out)  # whole or absent: a process stopped mid-compile leaves only .part
    return out


def _unit_flags(source: Path, flags: list[str]) -> list[str]:
    """The flags ``source`` of a generated folder is compiled with: ``flags``, then STEP_FLAGS for the step."""
    return [*flags, *STEP_FLAGS] if source.name.endswith("_rt.c") else flags


def build(folder: str | Path, sanitize: bool = False, portable_math: bool = False) -> tuple[ModuleType, dict[str, Any]]:
    """Compile (or reuse) the cffi module of a generated folder; returns (module, manifest).
    ``sanitize``: with ASan + UBSan (SANITIZE; importable only under sanitizer_preload()), all but
    ``<robot>_dynamics.c``, the model's host functions (regressor, forward dynamics, ...), which the
    step never calls (it has its own model; its object references nothing of them): that object is
    the plain build's, shared (an iiwa's sanitized dynamics cost 5.4 CPU-s for code no fuzz runs);
    ``portable_math``: with manipgen_linalg.h's portable sin, cos, exp and tanh (the same bits as a
    target built so: ``manipgen target pil``)."""
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    plain = [*CFLAGS, *HOST_ISA] + (["-DMANIPGEN_PORTABLE_MATH"] if portable_math else [])
    flags = plain + (list(SANITIZE) if sanitize else [])
    digest = content_hash(
        folder, " ".join([*flags, *STEP_FLAGS, *WRAPPER_FLAGS]) + (" plain-dynamics" if sanitize else "") + sys.version
    )[:16]
    name = f"_manipgen_{manifest['robot']}{'_asan' if sanitize else ''}{'_pm' if portable_math else ''}_{digest}"

    def declare(ffi: cffi.FFI) -> None:
        ffi.cdef(cdef(folder, manifest))
        # the firmware's sources and the host's own (host/: loopback, glue), each an object of the
        # cache (the dynamics shared by a robot's pipelines), compiled side by side
        dirs = [folder, folder / HOST_FOLDER]
        sources = [*sorted(folder.glob("*.c")), *sorted((folder / HOST_FOLDER).glob("*.c"))]
        with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
            objects = list(
                pool.map(
                    lambda p: unit_object(p, _unit_flags(p, plain if p.name.endswith("_dynamics.c") else flags), dirs),
                    sources,
                )
            )
        ffi.set_source(
            name,
            host_source(folder, manifest),
            extra_objects=[str(p) for p in objects],
            include_dirs=[str(d) for d in dirs],
            extra_compile_args=[*flags, *WRAPPER_FLAGS],
            extra_link_args=list(SANITIZE) if sanitize else [],
            libraries=["m"],
        )

    return _cached(name, digest, declare), manifest


def build_runtime(
    filename: str, declarations: str, prelude: str = "", epilogue: str = "", needs: tuple[str, ...] = ()
) -> ModuleType:
    """Compile (or reuse) one of runtime/'s host helpers, ``filename``, whose functions
    ``declarations`` declares (a cdef); returns its cffi module (``.ffi``, ``.lib``). Cached like
    ``build``. A header of runtime/ needs what its includer defines first (``prelude``: MG_REAL, ...),
    the runtime headers it builds on (``needs``, in order, after the prelude) and, for its callbacks, C
    that calls it (``epilogue``)."""
    runtime = resource_dir("runtime")
    source = prelude + "".join((runtime / name).read_text() for name in (*needs, filename)) + epilogue
    digest = hashlib.sha256("\0".join([source, declarations, " ".join(CFLAGS), sys.version]).encode()).hexdigest()[:16]
    name = f"_manipgen_{Path(filename).stem}_{digest}"

    def declare(ffi: cffi.FFI) -> None:
        ffi.cdef(declarations)
        ffi.set_source(name, source, extra_compile_args=list(CFLAGS))

    return _cached(name, digest, declare)


def sanitizer_preload(cc: str = "gcc") -> str:
    """The ASan runtime to put in LD_PRELOAD of a process that loads a ``build(sanitize=True)`` module
    (ASan must come first in the library order; Python itself is not instrumented)."""
    import subprocess

    path = subprocess.run(
        [cc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(path).is_file():
        raise RuntimeError(f"{cc} has no AddressSanitizer runtime (libasan.so)")
    return str(Path(path).resolve())
