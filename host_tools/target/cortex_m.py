"""`manipgen target`: the generated real-time step on a Cortex-M (issue #8), in QEMU.

    b = build(rt, "cortex-m7", Path("out/target/iiwa-m7"))     # static library + test firmware
    run = run_firmware(b, rt.config_bytes(), inputs)            # every sample through rt_step in QEMU
    doc = report(b, rt, inputs, run)                            # = host (cffi) outputs? footprint, timing

The library and the firmware are built by ``runtime/target/Makefile`` (the file users copy), so what
is measured is what a board gets. Before anything runs, a probe compiled by the cross compiler
checks that every field of the config, input and output structs sits at the offset the host's build
gives it: the host then writes and reads the target's structs byte for byte.

Figures: flash = .text + .rodata of the library's objects in the linked image (from the linker map,
after --gc-sections: what the step really pulls in), RAM = their .data + .bss (0: the generated C has
no mutable globals) + one pipeline instance (state, an input and an output; the config is the caller's);
stack = the worst path of <robot>_rt_step's call tree, from the compiler's -fstack-usage for our
functions and the disassembly (push, vpush, sub sp) for the toolchain's (libm, libgcc), over the
calls the disassembly shows (anything it cannot follow is listed as unknown), checked against the
deepest stack the step touched in QEMU (the firmware paints 16 KiB below it every
sample); instructions = SysTick ticks under QEMU's -icount, divided by the ticks of a calibration
loop of known length (exact to a fraction of an instruction).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from codegen.resources import resource_dir
from host_tools.bindings.build import content_hash
from host_tools.bindings.rt import Realtime, fill_inputs


@dataclass(frozen=True)
class Cpu:
    machine: str  # QEMU board
    qemu_cpu: str
    flags: str  # the compiler's architecture flags (as in runtime/target/Makefile)
    board_hz: float  # a board's core clock (Hz), e.g. STM32F4, STM32H7, STM32U5: time per step at 1 IPC
    systick_hz: float = 25e6  # the QEMU board's SysTick clock (AN386, AN500: 25 MHz; AN505: 20 MHz)


CPUS = {
    "cortex-m4f": Cpu("mps2-an386", "cortex-m4", "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16", 168e6),
    "cortex-m7": Cpu("mps2-an500", "cortex-m7", "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16", 400e6),
    "cortex-m33": Cpu(
        "mps2-an505", "cortex-m33", "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16", 160e6, 20e6
    ),
}
# the real type a CPU's FPU computes in hardware: a CLI's default precision for it
NATIVE_PRECISION = {"cortex-m4f": "float", "cortex-m7": "double", "cortex-m33": "float"}
CROSS = "arm-none-eabi-"
ICOUNT_SHIFT = 8  # 256 ns of virtual time per instruction: 6.4 SysTick ticks at 25 MHz, 5.12 at 20 MHz
MAGIC = 0x3154474D  # "MGT1", as in mg_firmware.c
INSTALL = "apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm make"


class TargetError(RuntimeError):
    """A missing tool, a failed cross build or a firmware run that did not complete."""


def require(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            raise TargetError(f"{tool} not found on PATH (Debian: {INSTALL})")


@dataclass(frozen=True)
class TargetBuild:
    robot: str
    cpu: str
    precision: str
    folder: Path  # the generated folder
    out: Path  # the build folder

    @property
    def lib(self) -> Path:
        return self.out / f"lib{self.robot}.a"

    @property
    def elf(self) -> Path:
        return self.out / "firmware.elf"

    @property
    def map(self) -> Path:
        return self.out / "firmware.map"


def _run(cmd: list[str], what: str, cwd: Path | None = None, timeout: float = 900) -> str:
    # the Makefile's own flags only: a CFLAGS in the environment would change what is measured
    env = {k: v for k, v in os.environ.items() if k not in ("CFLAGS", "CPPFLAGS", "MAKEFLAGS")}
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise TargetError(f"{what}: no result after {timeout:g} s") from None
    if done.returncode != 0:
        raise TargetError(f"{what} failed:\n{(done.stdout + done.stderr).strip()[-3000:]}")
    return done.stdout


def build(
    rt: Realtime, cpu: str, out: Path, cflags: str = "", goals: tuple[str, ...] = ("all", "firmware")
) -> TargetBuild:
    """Cross-compile ``rt``'s generated folder (its precision) for ``cpu``: the Makefile's ``goals``
    (library + QEMU test firmware); ``cflags``: the Makefile's CFLAGS (e.g. -DMANIPGEN_PORTABLE_MATH)."""
    if cpu not in CPUS:
        raise TargetError(f"--cpu must be one of {', '.join(CPUS)}, got {cpu!r}")
    require(CROSS + "gcc", "make")
    precision = str(rt.manifest["options"]["precision"])
    b = TargetBuild(rt.name, cpu, precision, rt.folder.resolve(), out.resolve())
    b.out.mkdir(parents=True, exist_ok=True)
    makefile = resource_dir("runtime") / "target" / "Makefile"
    # make compares dates only: another pipeline (or a changed Makefile) in the same folder starts clean
    stamp = b.out / "mg_build.stamp"
    key = f"{content_hash(b.folder, makefile.read_text(encoding='utf-8'))} {cpu} {precision} {cflags}\n"
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != key:
        for old in [
            *b.out.glob("*.o"),
            *b.out.glob("*.a"),
            *b.out.glob("*.su"),
            *b.out.glob("*.ci"),
            *b.out.glob("*.elf"),
        ]:
            old.unlink(missing_ok=True)
    make(b, *goals, **({"CFLAGS": cflags} if cflags else {}))
    stamp.write_text(key, encoding="utf-8")
    probe = b.out / "mg_layout_probe.c"
    probe.write_text(layout_probe(rt), encoding="utf-8")
    try:
        _run(
            [
                CROSS + "gcc",
                *CPUS[cpu].flags.split(),
                "-std=c99",
                "-Wall",
                "-Wextra",
                "-Wpedantic",
                "-Werror",
                f"-I{b.folder}",
                "-c",
                str(probe),
                "-o",
                str(b.out / "mg_layout_probe.o"),
            ],
            "layout probe",
        )
    except TargetError as exc:
        raise TargetError(
            f"the {cpu} compiler lays out the pipeline's structs differently from the host: "
            f"values cannot be exchanged byte for byte\n{exc}"
        ) from None
    return b


def make(b: TargetBuild, *goals: str, **variables: str) -> None:
    """runtime/target/Makefile's ``goals`` for build ``b`` (its folder, CPU, precision)."""
    _run(
        [
            "make",
            "-s",
            "-f",
            str(resource_dir("runtime") / "target" / "Makefile"),
            f"GEN={b.folder}",
            f"ROBOT={b.robot}",
            f"CPU={b.cpu}",
            f"PRECISION={b.precision}",
            f"OUT={b.out}",
            f"CROSS={CROSS}",
            *(f"{k}={v}" for k, v in variables.items()),
            *goals,
        ],
        f"cross build of {b.robot} for {b.cpu} ({b.precision}): {' '.join(goals)}",
    )


def _fields(ffi: Any, ctype: Any, prefix: str = "") -> list[tuple[str, int, int]]:
    """(member designator, offset, size) of every leaf member of a struct, nested ones flattened."""
    out = []
    for name, f in (ffi.typeof(ctype) if isinstance(ctype, str) else ctype).fields:
        path = f"{prefix}{name}"
        if f.type.kind == "struct":
            out += [(p, f.offset + o, s) for p, o, s in _fields(ffi, f.type, path + ".")]
        else:
            out.append((path, f.offset, ffi.sizeof(f.type)))
    return out


def layout_probe(rt: Realtime) -> str:
    """C that compiles only if the target's structs match the host's, field by field (C99: a
    negative array size instead of _Static_assert)."""
    p = rt.name
    lines = [
        "/* generated by manipgen target build: the host's struct layout, checked by the target's compiler */",
        "#include <stddef.h>",
        f'#include "{p}_rt.h"',
        "#define MG_CHECK(n, c) typedef char mg_layout_##n[(c) ? 1 : -1]",
    ]
    n = 0
    # what host and target exchange; not rt_t, whose config pointer is the platform's size
    for kind in ("config", "input", "output"):
        t = f"{p}_rt_{kind}_t"
        lines.append(f"MG_CHECK({n}, sizeof({t}) == {rt.ffi.sizeof(t)}u);")
        n += 1
        for path, offset, size in _fields(rt.ffi, t):
            lines.append(f"MG_CHECK({n}, offsetof({t}, {path}) == {offset}u && sizeof((({t} *)0)->{path}) == {size}u);")
            n += 1
    return "\n".join(lines) + "\n"


@dataclass
class TargetRun:
    outputs: dict[str, np.ndarray]  # per output field, (K, ...)
    ticks: np.ndarray  # SysTick ticks of each rt_step (K,)
    stack: np.ndarray  # bytes below the caller's stack pointer each step touched (K,)
    ticks_per_instruction: float
    overhead_ticks: float  # of an empty measurement
    state_bytes: int  # sizeof the pipeline state on the target
    seconds: float

    @property
    def instructions(self) -> np.ndarray:
        return (self.ticks - self.overhead_ticks) / self.ticks_per_instruction


POLL_SECONDS = 0.5  # how often a running QEMU's output is looked at for progress


def _run_polled(
    cmd: list[str], cwd: Path, timeout: float, poll: Callable[[], None]
) -> subprocess.CompletedProcess[bytes]:
    """subprocess.run(cmd, capture_output=True, timeout=timeout), calling ``poll()`` every POLL_SECONDS
    while it runs and once when it has ended (communicate keeps what the process wrote across its
    timeouts)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.perf_counter() + timeout
    while True:
        try:
            out, err = proc.communicate(timeout=POLL_SECONDS)
            poll()
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            if time.perf_counter() > deadline:
                proc.kill()
                proc.communicate()
                raise
            poll()


def run_firmware(
    b: TargetBuild,
    rt: Realtime,
    config: bytes,
    inputs: np.ndarray,
    timeout: float = 600,
    progress: Callable[[int, int], None] | None = None,
) -> TargetRun:
    """Run the inputs (a structured array of ``rt.input_dtype``) through the firmware in QEMU;
    ``progress(samples done, samples)`` while it runs (from the records it has written so far)."""
    require("qemu-system-arm")
    cpu = CPUS[b.cpu]
    p = rt.name
    sizes = [rt.ffi.sizeof(f"{p}_rt_{k}_t") for k in ("config", "input", "output")]
    if len(config) != sizes[0]:
        raise TargetError(f"config: {len(config)} bytes, the pipeline's config has {sizes[0]}")
    work = b.out / "run"
    work.mkdir(exist_ok=True)
    data = np.ascontiguousarray(inputs, dtype=rt.input_dtype)
    (work / "mg_in.bin").write_bytes(struct.pack("<5I", MAGIC, len(data), *sizes) + config + data.tobytes())
    (work / "mg_out.bin").unlink(missing_ok=True)
    cmd = [
        "qemu-system-arm",
        "-M",
        cpu.machine,
        "-cpu",
        cpu.qemu_cpu,
        "-nographic",
        "-monitor",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        f"shift={ICOUNT_SHIFT}",
        "-kernel",
        str(b.elf),
    ]
    record = np.dtype([("out", rt.output_dtype), ("ticks", "<u4"), ("stack", "<u4")])
    written = work / "mg_out.bin"

    def poll() -> None:
        if progress is not None and written.exists():
            progress(max(written.stat().st_size - 32, 0) // record.itemsize, len(data))

    t0 = time.perf_counter()
    try:
        done = _run_polled(cmd, work, timeout, poll)
    except subprocess.TimeoutExpired:
        raise TargetError(f"QEMU ({b.cpu}) did not finish within {timeout:g} s (a hung guest?)") from None
    seconds = time.perf_counter() - t0
    meaning = {
        2: "the firmware could not read mg_in.bin or write mg_out.bin",
        3: "the firmware's struct sizes differ from the host's",
    }
    if done.returncode != 0:
        raise TargetError(
            f"QEMU exited with {done.returncode}: "
            f"{meaning.get(done.returncode, (done.stderr or done.stdout).decode(errors='replace')[-500:])}"
        )
    raw = (work / "mg_out.bin").read_bytes() if (work / "mg_out.bin").exists() else b""
    if len(raw) < 32:
        raise TargetError(f"{work / 'mg_out.bin'}: {len(raw)} bytes, not even the firmware's header")
    info = np.frombuffer(raw[:32], "<u4")
    body = raw[32:]
    if info[0] != MAGIC or len(body) != len(data) * record.itemsize:
        raise TargetError(
            f"mg_out.bin: expected {len(data)} records of {record.itemsize} bytes after the header, "
            f"got {len(body)} bytes"
        )
    recs = np.frombuffer(body, record)
    return TargetRun(
        {k: recs["out"][k].copy() for k in rt.output_dtype.names or ()},
        recs["ticks"].astype(float),
        recs["stack"].astype(float),
        (float(info[3]) - float(info[2])) / 4000.0,
        float(info[4]),
        int(info[1]),
        seconds,
    )


def compare(host: dict[str, np.ndarray], target: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """Per output: the largest |host - target| relative to that output's range over the run (all its
    components; 1 if constant) -- issue #8's measure -- and, stricter, relative to the range of the
    same component (joint); and whether the two are bit for bit equal."""
    out = {}
    for name, h in host.items():
        a = np.asarray(h, float).reshape(len(h), -1)
        b = np.asarray(target[name], float).reshape(len(h), -1)
        err = np.abs(a - b).max(axis=0) if a.size else np.zeros(1)
        span = np.ptp(a, axis=0) if a.size else np.zeros(1)
        whole = float(np.ptp(a)) if a.size else 0.0
        out[name] = {
            "max_abs_error": float(err.max()),
            "max_rel_error": float(err.max()) / (whole if whole > 0 else 1.0),
            "max_rel_error_component": float((err / np.where(span > 0, span, 1.0)).max()),
            "bit_exact": bool(np.array_equal(np.asarray(h), np.asarray(target[name]))),
        }
    return out


# -- footprint ----------------------------------------------------------------------------------------

_MAP_ENTRY = re.compile(r"^ (\.(?:text|rodata|data|bss)\S*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")


def library_sections(map_text: str, robot: str) -> dict[str, int]:
    """Bytes of .text, .rodata, .data and .bss that the library's objects put in the linked image."""
    body = map_text.split("Linker script and memory map", 1)[-1]  # not the discarded sections
    lines = body.splitlines()
    joined, i = [], 0
    while i < len(lines):  # a long name wraps its numbers
        if re.fullmatch(r" \.\S+", lines[i]) and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("0x"):
            joined.append(lines[i] + lines[i + 1])
            i += 2
        else:
            joined.append(lines[i])
            i += 1
    sizes = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
    ours = re.compile(rf"lib{re.escape(robot)}\.a\({re.escape(robot)}_(dynamics|rt)\.o\)$")
    for line in joined:
        m = _MAP_ENTRY.match(line)
        if m and ours.search(m.group(4).strip()):
            kind = m.group(1).split(".")[1]
            sizes[kind] += int(m.group(3), 16)
    return sizes


_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
# bl, b and conditional b (also into another function's middle: <name+0x..>), cbz/cbnz
_CALL = re.compile(
    r"^(?:bl|b(?:eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?|cbn?z)(?:\.w|\.n)?\s+"
    r"(?:r\d+,\s*)?[0-9a-f]+ <([^>+]+)(?:\+0x[0-9a-f]+)?>"
)
# the end of a function's straight-line code: what follows is not reached by falling through
_LEAVES = re.compile(
    r"^(?:(?:b|b\.w|b\.n)\s|bx\s|pop(?:\.w)?\s+\{[^}]*\bpc\}|ldm(?:ia)?(?:\.w)?\s+sp!,\s*\{[^}]*\bpc\}|"
    r"ldr(?:\.w)?\s+pc,\s*\[sp\],)"
)
_REGS = re.compile(r"\{([^}]*)\}")


def _count_regs(text: str) -> tuple[int, int]:
    """(core registers, bytes of FPU registers) of a register list like {r4, r5, lr} or {d8-d15}."""
    core, fpu = 0, 0
    regs = _REGS.search(text)
    for item in regs.group(1).split(",") if regs else []:
        item = item.strip()
        span = 1
        if "-" in item:
            lo, hi = item.split("-")
            span = int(hi[1:]) - int(lo[1:]) + 1
        if item.startswith("d"):
            fpu += 8 * span
        elif item.startswith("s") and item[1:2].isdigit():
            fpu += 4 * span
        else:
            core += span
    return core, fpu


def disassembly_frames(objdump: str) -> tuple[dict[str, int], dict[str, set[str]], set[str]]:
    """Per function of a disassembly: an upper bound of its own stack (every push, vpush, stmdb sp!,
    str ..., [sp, #-n]! and sub sp, #n in its body, summed), its callees (bl; tail calls and
    conditional branches to another function, also into its middle; falling through into the next
    function) and the functions whose stack or callees are not known (an indirect call or jump, the
    stack pointer moved by a register)."""
    frames: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    unknown: set[str] = set()
    order: list[str] = []
    last: dict[str, str] = {}
    name = ""
    for line in objdump.splitlines():
        m = _FUNC.match(line)
        if m:
            name = m.group(2)
            frames[name], calls[name] = 0, set()
            order.append(name)
            continue
        if not name or ":\t" not in line:
            continue
        ins = line.split(":\t", 1)[1].strip()
        # literal pools and alignment padding; the halfword 0x0000 decodes as movs r0, r0, which a
        # compiler does not emit as code (it pads with nop)
        if not ins or ins.startswith((".word", ".short", ".byte", "nop")) or ins == "movs\tr0, r0":
            continue
        last[name] = ins
        op = ins.split(None, 1)[0]
        if op in ("push", "push.w") or (
            op in ("stmdb", "stmdb.w", "stmfd") and ins.split(None, 1)[1].startswith("sp!")
        ):
            core, fpu = _count_regs(ins)
            frames[name] += 4 * core + fpu
        elif op.startswith("vpush") or (op.startswith("vstmdb") and "sp!" in ins):
            frames[name] += _count_regs(ins)[1]
        elif re.match(r"str[a-z]*(\.w)?\s+\w+,\s*\[sp,\s*#-(\d+)\]!", ins):
            frames[name] += int(re.search(r"#-(\d+)\]!", ins).group(1))  # type: ignore[union-attr]
        elif re.match(r"subw?(\.w)?\s+sp,", ins):
            imm = re.search(r"#(\d+)", ins)
            if imm:
                frames[name] += int(imm.group(1))
            else:
                unknown.add(name)
        elif re.match(r"(?:add|mov)(?:\.w)?\s+sp,\s*(?:sp,\s*)?r", ins) and not ins.startswith("mov\tsp, r7"):
            unknown.add(name)  # sp from a register (other than the frame pointer)
        if op in ("blx", "bx") and "<" not in ins and not ins.endswith("lr"):
            unknown.add(name)  # an indirect call or jump
        if re.match(r"(?:ldr|mov)(?:\.w)?\s+pc,", ins) and "[sp]" not in ins:
            unknown.add(name)
        c = _CALL.match(ins)
        if c and c.group(1) != name:
            calls[name].add(c.group(1))
    for here, after in zip(order, order[1:]):
        if here in last and not _LEAVES.match(last[here]):
            calls[here].add(after)  # falls through into the next function
    return frames, calls, unknown


def su_frames(out: Path) -> dict[str, int]:
    """The compiler's -fstack-usage of every function of the library (each must be static)."""
    frames = {}
    for su in out.glob("*.su"):
        for line in su.read_text(encoding="utf-8").splitlines():
            where, size, kind = line.split("\t")
            if kind.strip() != "static":
                raise TargetError(
                    f"{su.name}: {where}: stack usage is {kind.strip()} (a VLA or alloca?): no static bound"
                )
            frames[where.rsplit(":", 1)[-1]] = int(size)
    return frames


def worst_stack(root: str, frames: dict[str, int], calls: dict[str, set[str]], ours: str = "") -> tuple[int, list[str]]:
    """The deepest path (bytes, functions) of root's call tree. Functions that reach each other form
    one node whose frame is the sum of theirs: libgcc's soft-float entry points branch into each
    other's code, which is shared code, not recursion. A cycle through a function whose name starts
    with ``ours`` (the generated code) is recursion: an error."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    group: dict[str, int] = {}
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components (iterative)
        work = [(v, iter(sorted(calls.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(calls.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group[w] = len(groups)
                    members.append(w)
                    if w == node:
                        break
                groups.append(sorted(members))

    connect(root)
    for members in groups:
        cyclic = len(members) > 1 or members[0] in calls.get(members[0], ())
        if cyclic and ours and any(m.startswith(ours) for m in members):
            raise TargetError(f"recursion through {', '.join(members)}: no static stack bound")
    memo: dict[int, tuple[int, list[str]]] = {}

    def visit(g: int) -> tuple[int, list[str]]:
        if g not in memo:
            best: tuple[int, list[str]] = (0, [])
            for h in sorted({group[c] for m in groups[g] for c in calls.get(m, ()) if group[c] != g}):
                best = max(best, visit(h), key=lambda x: x[0])
            memo[g] = (sum(frames.get(m, 0) for m in groups[g]) + best[0], ["+".join(groups[g])] + best[1])
        return memo[g]

    return visit(group[root])


def footprint(b: TargetBuild, rt: Realtime) -> dict[str, Any]:
    require(CROSS + "objdump")
    sections = library_sections(b.map.read_text(encoding="utf-8"), b.robot)
    dis = _run([CROSS + "objdump", "-d", "--no-show-raw-insn", str(b.elf)], "objdump")
    frames, calls, unknown = disassembly_frames(dis)
    own = su_frames(b.out)
    frames.update({f: s for f, s in own.items() if f in frames})  # the compiler's figure where it has one
    root = f"{b.robot}_rt_step"
    if root not in frames:
        raise TargetError(f"{root} is not in the firmware image")
    stack, path = worst_stack(root, frames, calls, ours=b.robot + "_")
    reach: set[str] = set()
    todo = [root]
    while todo:
        f = todo.pop()
        if f not in reach:
            reach.add(f)
            todo += list(calls.get(f, ()))
    p = rt.name
    instance = {k: rt.ffi.sizeof(f"{p}_rt_{k}") for k in ("t", "input_t", "output_t")}
    return {
        "flash_bytes": sections["text"] + sections["rodata"] + sections["data"],
        "flash": {"text": sections["text"], "rodata": sections["rodata"], "data_init": sections["data"]},
        "ram_bytes": sections["data"] + sections["bss"] + sum(instance.values()),
        "ram": {
            "data": sections["data"],
            "bss": sections["bss"],
            "state (rt_t)": instance["t"],
            "input": instance["input_t"],
            "output": instance["output_t"],
        },
        "stack_bytes": stack,
        "stack_path": path,
        "stack_unknown": sorted(reach & unknown),
        "toolchain_functions": sorted(f for f in reach if not f.startswith(b.robot + "_")),
    }


def report(b: TargetBuild, rt: Realtime, inputs: np.ndarray, run: TargetRun) -> dict[str, Any]:
    """The JSON document of `manipgen target run`: host vs target, footprint, timing."""
    rt.reset()
    host = rt.run_inputs(inputs)
    cmp = compare(host, run.outputs)
    fired_host = np.flatnonzero(np.asarray(host["collision"]) != 0) if "collision" in host else np.array([])
    fired_target = np.flatnonzero(np.asarray(run.outputs["collision"]) != 0) if "collision" in host else np.array([])

    def first(a: np.ndarray) -> int | None:
        return int(a[0]) if a.size else None

    instr = run.instructions
    doc: dict[str, Any] = {
        "robot": b.robot,
        "cpu": b.cpu,
        "precision": b.precision,
        "pipeline": rt.label,
        "samples": int(len(inputs)),
        "max_rel_error": max(c["max_rel_error"] for c in cmp.values()),
        "max_rel_error_component": max(c["max_rel_error_component"] for c in cmp.values()),
        "bit_exact_outputs": [k for k, c in cmp.items() if c["bit_exact"]],
        "outputs": cmp,
        "collision_sample_host": first(fired_host),
        "collision_sample_target": first(fired_target),
        # None when the host never flags: nothing to compare (not "the same")
        "detection_on": bool(np.any(np.asarray(rt.config["det.threshold"]) > 0))
        if "det.threshold" in rt.config.keys()
        else False,
        "same_collision_sample": (None if first(fired_host) is None else first(fired_host) == first(fired_target)),
        **footprint(b, rt),
        "stack_measured_bytes": int(run.stack.max()),
        "instructions_per_step": int(np.ceil(instr.max())),  # the worst step, the first included
        "instructions_mean": float(instr.mean()),
        "instructions_first_step": float(run.instructions[0]),
        "state_bytes_target": run.state_bytes,
        "qemu_seconds": run.seconds,
        "flags": {"cpu": CPUS[b.cpu].flags, "icount_shift": ICOUNT_SHIFT},
    }
    return doc


def table(doc: dict[str, Any]) -> str:
    worst = max(doc["outputs"].items(), key=lambda kv: kv[1]["max_rel_error"])
    lines = [
        f"# {doc['robot']} on {doc['cpu']} ({doc['precision']}, {doc['pipeline']}): {doc['samples']} samples in QEMU",
        "",
        f"- target = host (cffi, same precision): max error {doc['max_rel_error']:.3g} of the output's range "
        f"(worst: {worst[0]}); bit for bit: {', '.join(doc['bit_exact_outputs']) or 'none'}",
        "- collision flag: "
        + (
            f"host sample {doc['collision_sample_host']}, target sample {doc['collision_sample_target']}"
            if doc["collision_sample_host"] is not None or doc["collision_sample_target"] is not None
            else "raised on neither"
            + (
                " (detection is off: det.threshold is 0 in this config; thresholds come from "
                "`manipgen thresholds`, passed with --config)"
                if not doc.get("detection_on", True)
                else ""
            )
        ),
        f"- flash {doc['flash_bytes']} B (text {doc['flash']['text']}, rodata {doc['flash']['rodata']}), "
        f"RAM {doc['ram_bytes']} B (of which the state {doc['ram']['state (rt_t)']} B)",
        f"- stack {doc['stack_bytes']} B worst case ({' > '.join(doc['stack_path'])}); "
        f"{doc['stack_measured_bytes']} B touched in QEMU",
        f"- instructions per step: {doc['instructions_per_step']} worst, {doc['instructions_mean']:.0f} mean "
        f"(first step {doc['instructions_first_step']:.0f})",
    ]
    return "\n".join(lines) + "\n"


def default_out(robot: str, cpu: str, precision: str) -> Path:
    return Path("out") / "target" / f"{robot}-{cpu}-{precision}"


def recorded_inputs(
    robot: Robot, rt: Realtime, host: Realtime, log_path: Path | None, config_path: Path | None, out: Path
) -> tuple[np.ndarray, str]:
    """What to replay on the target: a log (format of host_tools.data.logs) with an optional config JSON,
    or, without a log, the demo's closed-loop run with a collision on ``robot``, recorded now on
    the host loopback of ``host`` (the same pipeline in double; thresholds from a contact-free run,
    stop reaction; saved to ``out`` as collision_log.npz and collision_config.json). Sets ``rt``'s
    config; returns the inputs and where they came from."""
    from host_tools.data.logs import Log, check_chain
    from host_tools.studies.scenarios import collision

    if log_path is None:
        if config_path is not None:
            raise ValueError("--config needs --input (the recorded run is made with its own config)")
        result = collision(robot, rt=host)
        for key in host.config.keys():
            rt.config[key] = host.config[key]
        out.mkdir(parents=True, exist_ok=True)
        log = result.hit.log
        log.save(out / "collision_log.npz")
        rt.config.save(out / "collision_config.json")
        source = (
            f"the demo's collision run on the host loopback ({len(log)} samples, push at "
            f"{result.onset_s:g} s; saved as {out / 'collision_log.npz'})"
        )
    else:
        log = Log.load(log_path)
        check_chain(log, robot, str(log_path))  # another robot, or another chain of the same name: refused
        if abs(log.sample_period - rt.sample_period) > 1e-9 * rt.sample_period:
            raise ValueError(
                f"{log_path}: sample_period: {log.sample_period:g} s, the pipeline runs every {rt.sample_period:g} s"
            )
        if config_path is not None:
            rt.config.load(config_path)
        source = str(log_path)
    inputs = rt.inputs(len(log))
    fill_inputs(inputs, log.inputs())
    return inputs, source
