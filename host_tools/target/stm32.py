"""The STM32F405 board port (issue #48): runtime/target/board_stm32f405.c, its start-up and linker
scripts, built by runtime/target/Makefile's goal ``stm32f405`` into an image for the chip (.elf,
.bin, .hex), run in the loop in QEMU's ``netduinoplus2`` machine (``manipgen target pil --board
stm32f405``), and described by a flash map: bytes per section and memory, and the stack's bound.

    b = build(rt, Path("out/stm32"), hse_hz=25_000_000)     # the images, for a Netduino Plus 2
    doc = flash_map(b, rt)                                    # sections, flash/SRAM/CCM used, stack bound

The flash map is read from the linker's map file (``stm32f405.map``); ``arm-none-eabi-size`` reads
the ELF's section headers instead, and the tests check that the two agree. The stack bound is the
worst path of the start-up code (the reset handler, main and what they call) plus one exception
frame and the worse of the two interrupt handlers (SysTick's control task and USART1's receive,
at one priority: neither preempts the other), plus a second exception frame and the default
handler for a fault taken on top; frames from the compiler's -fstack-usage and the disassembly
(``cortex_m.disassembly_frames``).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen.resources import resource_dir
from host_tools.bindings.rt import Realtime
from host_tools.target import cortex_m as tg

BOARD = "stm32f405"
BOARDS = (BOARD,)
CPU = "cortex-m4f"  # its core, and so its compiler flags
MACHINE = "netduinoplus2"
CORE_HZ = 168e6
# In netduinoplus2, SysTick counts the core clock QEMU gives the SoC (168 MHz, whatever the RCC says)
QEMU_CPU = tg.Cpu(MACHINE, "cortex-m4", tg.CPUS[CPU].flags, CORE_HZ, CORE_HZ)
HSE_HZ = 8_000_000  # ST's Discovery boards; the Netduino Plus 2 has 25 MHz
BAUD = 921_600
# the chip's memories (RM0090): name -> (origin, length)
MEMORIES = {"FLASH": (0x0800_0000, 1024 * 1024), "SRAM": (0x2000_0000, 128 * 1024), "CCM": (0x1000_0000, 64 * 1024)}
# Armv7-M's exception entry with the FPU's context (lazy stacking reserves it): 26 words, and 4 bytes
# when the stack pointer is realigned to 8 bytes
EXCEPTION_FRAME = 26 * 4 + 4
CLOCK_BITS = {1: "HSE not ready within 100 ms", 2: "PLL not locked within 2 ms", 4: "switch to the PLL not seen"}
CCM_QEMU = (8, 0)  # QEMU maps netduinoplus2's CCM from this version on (7.2 rejects stores to it)


def qemu_version() -> tuple[int, int]:
    tg.require("qemu-system-arm")
    text = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", text)
    if m is None:
        raise tg.TargetError(f"qemu-system-arm --version: no version in {text[:200]!r}")
    return int(m.group(1)), int(m.group(2))


def qemu_maps_ccm() -> bool:
    return qemu_version() >= CCM_QEMU


@dataclass(frozen=True)
class Image:
    build: tg.TargetBuild
    hse_hz: int
    ccm: bool  # the state and the stack in the CCM (else in SRAM)
    baud: int

    def path(self, suffix: str) -> Path:
        return self.build.out / f"{BOARD}{suffix}"


def build(
    rt: Realtime,
    out: Path,
    cflags: str = "",
    config: tuple[Path, str] | None = None,
    hse_hz: int = HSE_HZ,
    ccm: bool = True,
    baud: int = BAUD,
) -> Image:
    """The STM32F405 images of ``rt``'s folder in ``out``: the library (with cortex_m.build's layout
    probe), then .elf, .bin, .hex and the linker's .map; ``config``: an exported config's C file and
    name to flash (else the generated default config)."""
    if not (hse_hz % 1_000_000 == 0 and 4_000_000 <= hse_hz <= 26_000_000):
        raise ValueError(f"--hse-hz: a whole number of MHz within 4-26 MHz (the chip's HSE range), got {hse_hz}")
    b = tg.build(rt, CPU, out, cflags, goals=("all",))
    # the board's objects depend on the options below, which make's dates do not see: always rebuilt
    for name in ("board_stm32f405.o", "mg_pil.o", "mg_config.o", f"{BOARD}.elf", f"{BOARD}.bin", f"{BOARD}.hex"):
        (b.out / name).unlink(missing_ok=True)
    options = {"HSE_HZ": str(hse_hz), "CCM": "1" if ccm else "0", "BAUD": str(baud)}
    if cflags:
        options["CFLAGS"] = cflags
    if config is not None:
        options.update(CONFIG_C=str(config[0]), CONFIG_NAME=config[1])
    tg.make(b, BOARD, **options)
    return Image(b, hse_hz, ccm, baud)


_SECTION = re.compile(r"^(\.[\w.]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+load address 0x([0-9a-f]+))?\s*$")


def noload_sections() -> set[str]:
    """The output sections stm32f405_sections.ld declares (NOLOAD): reserved, nothing in flash (the
    linker's map gives them a load address all the same)."""
    script = (resource_dir("runtime") / "target" / "stm32f405_sections.ld").read_text(encoding="utf-8")
    return set(re.findall(r"^\s*(\.[\w.]+)\s*\(NOLOAD\)", script, re.MULTILINE))


def map_sections(map_text: str) -> dict[str, dict[str, Any]]:
    """The linked image's allocated output sections from the linker's map: address, size, and the
    memory each lies in (its run address) and is loaded from (None: reserved, not loaded)."""
    noload = noload_sections()
    body = map_text.split("Linker script and memory map", 1)[-1]
    lines = body.splitlines()
    out: dict[str, dict[str, Any]] = {}
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"\.[\w.]+", line.strip()) and not line.startswith(" "):
            line = line + lines[i + 1]  # a long name wraps its numbers onto the next line
        m = _SECTION.match(line)
        if not m or m.group(1).startswith((".debug", ".comment", ".ARM.attributes")):
            continue
        address, size = int(m.group(2), 16), int(m.group(3), 16)
        load = int(m.group(4), 16) if m.group(4) else address
        if size == 0:
            continue
        out[m.group(1)] = {
            "address": address,
            "load_address": None if m.group(1) in noload else load,
            "size": size,
            "memory": memory_of(address),
            "load_memory": None if m.group(1) in noload else memory_of(load),
        }
    return out


def memory_of(address: int) -> str | None:
    return next((name for name, (o, n) in MEMORIES.items() if o <= address < o + n), None)


def stack_bound(b: tg.TargetBuild) -> dict[str, Any]:
    """The stack's worst case (bytes): start-up path + exception frame + the worse interrupt
    handler's path + a fault's exception frame and handler; each path named."""
    dis = tg._run([tg.CROSS + "objdump", "-d", "--no-show-raw-insn", str(b.out / f"{BOARD}.elf")], "objdump")
    frames, calls, unknown = tg.disassembly_frames(dis)
    own = tg.su_frames(b.out)
    frames.update({f: s for f, s in own.items() if f in frames})
    paths = {root: tg.worst_stack(root, frames, calls, ours=b.robot + "_") for root in _ROOTS}
    handler = max(("SysTick_Handler", "USART1_IRQHandler"), key=lambda r: paths[r][0])
    total = (
        paths["mg_reset_handler"][0]
        + EXCEPTION_FRAME
        + paths[handler][0]
        + EXCEPTION_FRAME
        + paths["mg_default_handler"][0]
    )
    reach: set[str] = set()
    todo = list(_ROOTS)
    while todo:
        f = todo.pop()
        if f not in reach:
            reach.add(f)
            todo += list(calls.get(f, ()))
    return {
        "bound_bytes": total,
        "paths": {root: {"bytes": n, "path": path} for root, (n, path) in paths.items()},
        "exception_frame_bytes": EXCEPTION_FRAME,
        "unknown": sorted(reach & unknown),
    }


_ROOTS = ("mg_reset_handler", "SysTick_Handler", "USART1_IRQHandler", "mg_default_handler")


def flash_map(image: Image) -> dict[str, Any]:
    """Bytes per section and per memory of the linked image, and the stack's bound against the room
    the linker script left it."""
    b = image.build
    sections = map_sections(image.path(".map").read_text(encoding="utf-8"))
    missing = {".isr_vector", ".text", ".state", ".stack"} - set(sections)
    if missing:
        raise tg.TargetError(f"{image.path('.map')}: no {', '.join(sorted(missing))} section: not the port's link")
    used = {name: 0 for name in MEMORIES}
    for name, s in sections.items():
        if name == ".stack":
            continue
        if s["load_memory"] == "FLASH":
            used["FLASH"] += s["size"]
        if s["memory"] != "FLASH":
            used[s["memory"]] += s["size"]
    loaded = [s for s in sections.values() if s["load_memory"] == "FLASH"]
    stack = stack_bound(b)
    room = sections[".stack"]["size"]
    if stack["bound_bytes"] > room:
        raise tg.TargetError(f"the stack's bound, {stack['bound_bytes']} B, exceeds the {room} B the link leaves it")
    return {
        "board": BOARD,
        "robot": b.robot,
        "precision": b.precision,
        "hse_hz": image.hse_hz,
        "baud": image.baud,
        "state_and_stack_in": "CCM" if image.ccm else "SRAM",
        "sections": sections,
        "used_bytes": used,
        # what a programmer writes: from the flash's start to the last loaded byte, gaps included
        "flash_image_bytes": max(s["load_address"] + s["size"] for s in loaded) - MEMORIES["FLASH"][0],
        "size_bytes": {name: n for name, (_, n) in MEMORIES.items()},
        "stack": {**stack, "room_bytes": room, "memory": sections[".stack"]["memory"]},
        "files": {k: str(image.path(k)) for k in (".elf", ".bin", ".hex", ".map")},
    }


def flash_commands(image: Image) -> list[str]:
    """Commands that write the image to a board's flash (not run here): OpenOCD through an ST-LINK,
    and stlink's st-flash."""
    elf, binary = image.path(".elf"), image.path(".bin")
    return [
        f'openocd -f interface/stlink.cfg -f target/stm32f4x.cfg -c "program {elf} verify reset exit"',
        f"st-flash --reset write {binary} 0x08000000",
    ]


def map_table(doc: dict[str, Any]) -> str:
    lines = [
        f"# {doc['robot']} on the STM32F405 ({doc['precision']}): flash map",
        "",
        f"HSE {doc['hse_hz'] / 1e6:g} MHz -> 168 MHz; USART1 at {doc['baud']} baud; the pipeline's state and the "
        f"stack in {doc['state_and_stack_in']}",
        "",
        "| section | address | bytes | in | loaded from |",
        "| --- | --- | --: | --- | --- |",
    ]
    for name, s in doc["sections"].items():
        lines.append(
            f"| {name} | 0x{s['address']:08x} | {s['size']} | {s['memory']} | {s['load_memory'] or '(reserved)'} |"
        )
    lines += ["", "| memory | used (B) | size (B) |", "| --- | --: | --: |"]
    for name, n in doc["used_bytes"].items():
        lines.append(f"| {name} | {n} | {doc['size_bytes'][name]} |")
    gap = doc["flash_image_bytes"] - doc["used_bytes"]["FLASH"]
    lines += [
        "",
        f"The image written to flash: {doc['flash_image_bytes']} B from 0x08000000"
        + (f" ({gap} B of alignment gaps between the loaded sections)." if gap else " (no gap between the sections)."),
    ]
    st = doc["stack"]
    worst = max(("SysTick_Handler", "USART1_IRQHandler"), key=lambda r: st["paths"][r]["bytes"])
    lines += [
        "",
        f"Stack: {st['bound_bytes']} B worst case of the {st['room_bytes']} B left to it in {st['memory']} "
        f"(start-up {st['paths']['mg_reset_handler']['bytes']} B + exception frame {st['exception_frame_bytes']} B "
        f"+ {worst} {st['paths'][worst]['bytes']} B ({' > '.join(st['paths'][worst]['path'])}) + a fault's frame "
        f"and handler)" + (f"; not followed: {', '.join(st['unknown'])}" if st["unknown"] else ""),
    ]
    return "\n".join(lines) + "\n"


def decode_report(words: tuple[int, ...]) -> dict[str, Any]:
    """board_stm32f405.c's report in the final frame: clock status, SYSCLK, HSE, stack used."""
    if len(words) != 4:
        raise tg.TargetError(f"the STM32F405's final frame carries {len(words)} report words, not 4")
    status, sysclk, hse, stack = words
    return {
        "clock": {
            "hse_hz": hse,
            "sysclk_hz_set": sysclk,
            "status": status,
            "late": [text for bit, text in CLOCK_BITS.items() if status & bit],
            "note": "QEMU does not model the RCC: its ready flags read 0, the bounded waits end, the firmware "
            "stays on HSI by its own reckoning while QEMU's SysTick counts 168 MHz"
            if status
            else "HSE, PLL and the switch all reported ready",
        },
        "stack_used_bytes": stack,
    }
