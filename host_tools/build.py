"""Compile a generated folder into an importable cffi module (API mode), cached by content hash.

The cdef is made from the folder's manifest.json, so the host binds exactly what was generated.
Cache: $MANIPGEN_CACHE or ~/.cache/manipgen. Concurrent builds (pytest -n) are serialised by a lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import cffi

CFLAGS = ("-std=c99", "-O2")
# AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow too), aborting at the first
# report: the fuzz tests' build. The process must preload the ASan runtime (sanitizer_preload()).
SANITIZE = (
    "-fsanitize=address,undefined,float-cast-overflow",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
)
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


def cdef(manifest: dict[str, Any]) -> str:
    p = manifest["robot"]
    real = "float" if manifest["options"]["precision"] == "float" else "double"
    lines = [f"typedef {real} {p}_real_t;"]
    for f in manifest["functions"]:
        args = [f"const {p}_real_t *{n}" for n, _ in f["inputs"]]
        args += [f"{p}_real_t *{n}" for n, _ in f["outputs"]]
        lines.append(f"{f['returns']} {p}_{f['name']}({', '.join(args)});")
    if "rt" in manifest:
        lines.append(manifest["rt"]["cdef"])
        lines.append(RUN_DECL.format(p=p))
    if "oesim" in manifest:
        lines.append(manifest["oesim"]["cdef"])
    return "\n".join(lines)


# Host-only glue (not part of the generated firmware folder): the vectorised run loop in C.
RUN_DECL = "void {p}_rt_run({p}_rt_t *rt, const {p}_rt_input_t *in, {p}_rt_output_t *out, long n);"
RUN_DEF = """
void {p}_rt_run({p}_rt_t *rt, const {p}_rt_input_t *in, {p}_rt_output_t *out, long n)
{{
    long k;
    for (k = 0; k < n; ++k) {{
        {p}_rt_step(rt, &in[k], &out[k]);
    }}
}}
"""


def host_source(manifest: dict[str, Any]) -> str:
    p = manifest["robot"]
    text = f'#include "{p}_dynamics.h"\n'
    if "rt" in manifest:
        text += f'#include "{p}_rt.h"\n#include "{p}_loopback.h"\n' + RUN_DEF.format(p=p)
    if "oesim" in manifest:
        text += f'#include "{p}_oesim.h"\n'
    return text


def content_hash(folder: Path, extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for path in sorted(folder.iterdir()):
        if path.suffix in (".c", ".h") or path.name == "manifest.json":
            h.update(path.name.encode())
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


def build(folder: str | Path, sanitize: bool = False) -> tuple[ModuleType, dict[str, Any]]:
    """Compile (or reuse) the cffi module of a generated folder; returns (module, manifest).
    ``sanitize``: with ASan + UBSan (SANITIZE; importable only under sanitizer_preload())."""
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    defs = cdef(manifest)
    flags = list(CFLAGS) + (list(SANITIZE) if sanitize else [])
    digest = content_hash(folder, defs + host_source(manifest) + " ".join(flags) + sys.version)[:16]
    name = f"_manipgen_{manifest['robot']}{'_asan' if sanitize else ''}_{digest}"
    out = cache_root() / "modules" / digest
    with locked(cache_root() / "locks" / f"{digest}.lock"):
        found = sorted(out.glob(f"{name}*.so")) if out.exists() else []
        if not found:
            ffi = cffi.FFI()
            ffi.cdef(defs)
            sources = [str(p) for p in sorted(folder.glob("*.c"))]
            ffi.set_source(
                name,
                host_source(manifest),
                sources=sources,
                include_dirs=[str(folder)],
                extra_compile_args=flags,
                extra_link_args=list(SANITIZE) if sanitize else [],
                libraries=["m"],
            )
            out.mkdir(parents=True, exist_ok=True)
            with _COMPILING:
                built = Path(ffi.compile(tmpdir=str(out), verbose=False))
            found = [built]
        return _import(name, found[0]), manifest


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
