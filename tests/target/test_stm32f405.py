"""The STM32F405 board port (issue #48 item 1): runtime/target/board_stm32f405.c in QEMU's netduinoplus2
machine, in the loop against the host loopback; its images, flash map and stack bound; the clock
tree and the fault pin as the firmware writes them to the chip's registers; MISRA C like the other
ports. QEMU 7.2 leaves the RCC, GPIO, PWR and flash interface unimplemented: with ``-d unimp`` it logs
every access to them, which is how the register writes are read here."""

from __future__ import annotations

import json
import re
import shutil
import socket
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from codegen.model.description import load_robot
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.cli import main
from host_tools.target import cortex_m as tg
from host_tools.target import pil, stm32
from tests.codegen.emit.test_static_analysis import MISRA, cppcheck_findings, undeviated
from tests.tooling import ROOT, require_tool

SECONDS = 2.0  # the demo's collision run shortened: 2001 samples, the push at 1 s


def tools() -> None:
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-size", "make", "qemu-system-arm"):
        require_tool(tool)


def test_the_stm32f405_in_the_loop_follows_the_host_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The iiwa's step from the STM32F405's SysTick, its frames over USART1: with the portable math on
    both sides the board returns the host's torques bit for bit, so the trajectories agree exactly
    (1e-9 rad is the issue's goal; a last-bit difference in one torque grows through the encoders'
    quantisation to ~1e-5 rad: no near miss passes) and the collision is flagged on the host's sample.
    The stack the board used (painted at reset) stays within the static bound of the flash map."""
    tools()
    argv = ["target", "pil", "kuka_iiwa14", "--board", "stm32f405", "--seconds", str(SECONDS)]
    assert main([*argv, "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["board"], doc["machine"], doc["cpu"], doc["precision"]) == (
        "stm32f405",
        "netduinoplus2",
        "cortex-m4f",
        "float",
    )
    assert doc["samples"] == doc["steps_on_board"] == round(SECONDS * 1000) + 1
    assert doc["max_q_difference"] <= 1e-9, doc["max_q_difference"]
    assert doc["max_tau_difference"] == 0.0
    assert doc["same_collision_sample"] is True
    onset = round(doc["push_onset_s"] * 1000)
    assert onset < doc["collision_sample_target"] < onset + 300  # flagged during the push
    assert doc["missed_deadlines"] == doc["missed_deadlines_by_ticks"] == 0
    assert doc["frames_corrupted"] == doc["frames_lost"] == 0
    load = doc["cpu_load"]
    assert load["board_hz"] == 168e6
    assert 1000 < load["instructions_step_max"] < load["instructions_per_sample_max"]
    assert 0 < load["share_max"] < 1
    assert 0 < doc["stack_used_bytes"] <= doc["stack_bound_bytes"]
    assert doc["clock"]["hse_hz"] == stm32.HSE_HZ
    # what the board reckons it runs on follows from what reported ready: without a locked PLL it
    # stays on HSI. QEMU 7.2 models no RCC, so there both waits end at their bounds (status 3)
    clock = doc["clock"]
    assert clock["sysclk_hz_set"] == (16_000_000 if clock["status"] & 2 else 168_000_000)
    assert len(clock["late"]) == bin(clock["status"]).count("1")
    assert doc["state_and_stack_in"].startswith("CCM" if stm32.qemu_maps_ccm() else "SRAM")


def test_a_corrupted_frame_on_the_stm32f405_is_counted_and_the_board_runs_on(tmp_path: Path) -> None:
    """One payload byte flipped on the wire at sample 300: the board's CRC check counts it, the sample
    still runs (encoders marked lost), the loop completes."""
    tools()
    doc = pil.pil(
        load_robot("planar2"),
        stm32.CPU,
        "float",
        tmp_path,
        corrupt=frozenset({300}),
        seconds=1.0,
        board_name="stm32f405",
    )
    assert doc["frames_corrupted"] == 1 and doc["frames_lost"] == 0
    assert doc["steps_on_board"] == doc["samples"]
    assert doc["max_q_difference"] > 0  # the lost sample changed the run: it was not silently used
    assert doc["missed_deadlines"] == 0


def test_the_build_writes_the_images_a_flash_map_that_size_agrees_with_and_the_flash_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`target build --board stm32f405` with a tuned config and a 25 MHz crystal: .elf, .bin, .hex and
    the flash map. The map (read from the linker's map file) gives each section the size that
    arm-none-eabi-size reads from the ELF's section headers; the .hex holds exactly the flash bytes
    the map counts and the .bin the map's image span, from 0x08000000; the state and the stack are
    in the CCM; the flashed config is the tuned one; the flash commands are printed, not run."""
    tools()
    rt = load_rt("planar2", precision="float")
    rt.config["ctl.kp"] = np.asarray(rt.config["ctl.kp"]) * 1.5
    rt.config.save(tmp_path / "tuned.json")
    out = tmp_path / "build"
    argv = ["target", "build", "planar2", "--board", "stm32f405", "--hse-hz", "25000000", "--out", str(out)]
    assert main([*argv, "--config", str(tmp_path / "tuned.json")]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "flash_map.json").read_text())
    elf = out / "stm32f405.elf"
    assert all((out / f"stm32f405{s}").stat().st_size > 0 for s in (".elf", ".bin", ".hex", ".map"))
    size = subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    by_size = {
        m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(r"^(\.\S+)\s+(\d+)\s+(\d+)", size, re.M)
    }
    for name, s in doc["sections"].items():
        assert by_size[name] == (s["size"], s["address"]), name
    allocated = {n for n, (length, address) in by_size.items() if address != 0 and length > 0}
    assert allocated == set(doc["sections"])  # no section of the image left out of the map
    berkeley = subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True, check=True).stdout
    text, data, _bss = (int(v) for v in berkeley.splitlines()[1].split()[:3])
    assert text + data == doc["used_bytes"]["FLASH"]
    # the .bin spans the flash from its start, the gap before .data's 8-byte aligned copy included
    assert (out / "stm32f405.bin").stat().st_size == doc["flash_image_bytes"] < doc["used_bytes"]["FLASH"] + 8
    assert hex_bytes(out / "stm32f405.hex") == (0x0800_0000, doc["used_bytes"]["FLASH"])
    gap = doc["flash_image_bytes"] - doc["used_bytes"]["FLASH"]  # the printed map names the gap only if there is one
    assert (f"({gap} B of alignment gaps" if gap else "(no gap between the sections)") in printed
    assert doc["state_and_stack_in"] == "CCM" and doc["sections"][".state"]["memory"] == "CCM"
    assert doc["sections"][".stack"]["memory"] == "CCM" and doc["sections"][".bss"]["memory"] == "SRAM"
    stack = doc["stack"]
    assert stack["paths"]["SysTick_Handler"]["path"][:2] == ["SysTick_Handler", "planar2_rt_step"]
    assert stack["bound_bytes"] <= stack["room_bytes"] and stack["unknown"] == []
    assert doc["hse_hz"] == 25_000_000
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^080[0-9a-f]{5} [RT] mg_flashed_config$", symbols, re.M)  # the tuned config, in flash
    assert "planar2_rt_default_config" not in symbols  # and not the generated one
    assert f"st-flash --reset write {out.resolve() / 'stm32f405.bin'} 0x08000000" in printed
    assert "openocd -f interface/stlink.cfg -f target/stm32f4x.cfg" in printed


def hex_bytes(path: Path) -> tuple[int, int]:
    """(the lowest address, the data bytes) of an Intel HEX file, its records checksummed."""
    base, low, total = 0, None, 0
    for line in path.read_text().split():
        raw = bytes.fromhex(line[1:])
        assert sum(raw) % 256 == 0, line
        n, offset, kind = raw[0], int.from_bytes(raw[1:3], "big"), raw[3]
        if kind == 4:
            base = int.from_bytes(raw[4:6], "big") << 16
        elif kind == 0:
            low = base + offset if low is None else min(low, base + offset)
            total += n
    assert low is not None
    return low, total


@pytest.fixture(scope="module")
def planar2_float() -> Realtime:
    return load_rt("planar2", precision="float")


def boot(elf: Path, log: Path, inputs: tuple[bytes, ...] = ()) -> list[pil.Frame]:
    """Runs the image in netduinoplus2 with QEMU's log of unimplemented-device accesses in ``log``:
    waits for the board's hello, sends the start frame and ``inputs`` (one input frame each), then
    the end frame; returns the board's frames after the hello."""
    with tempfile.TemporaryDirectory(prefix="mgstm") as tmp:
        sock = Path(tmp) / "usart1"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(sock))
        server.listen(1)
        server.settimeout(60)
        command = pil._qemu(pil.PilImage(elf, stm32.QEMU_CPU, exits=False), sock)
        qemu = subprocess.Popen([*command, "-d", "unimp", "-D", str(log)], stdout=subprocess.DEVNULL)
        try:
            link = pil.SerialLink(server.accept()[0])
            assert link.receive().kind == "H"
            link.send(pil.frame("S", 0, struct.pack("<I", pil.reload_ticks(stm32.QEMU_CPU, 1e-3))))
            got = []
            for k, payload in enumerate(inputs):
                link.send(pil.frame("I", k, payload))
                got.append(link.receive())
            link.send(pil.frame("E", len(inputs), b""))
            got.append(link.receive())
        finally:
            qemu.kill()
            qemu.wait()
            server.close()
    return got


def writes(log: Path, device: str, offset: int) -> list[int]:
    """The values the firmware wrote to one register of an unimplemented device, in order."""
    pattern = rf"^{device}: unimplemented device write \(size 4, offset 0x{offset:03x}, value 0x([0-9a-f]+)\)$"
    return [int(v, 16) for v in re.findall(pattern, log.read_text(), re.M)]


@pytest.mark.parametrize("hse_hz", [8_000_000, 25_000_000])
def test_the_pll_is_set_for_168_mhz_from_the_crystal_and_from_hsi_when_it_does_not_start(
    hse_hz: int, planar2_float: Realtime, tmp_path: Path
) -> None:
    """RCC_PLLCFGR as written (RM0090: M bits 0-5, N bits 6-14, P = 2 (PLLP + 1) at bits 16-17,
    source bit 22, Q bits 24-27): first from the crystal, then, since QEMU never sets HSERDY, from
    HSI (16 MHz). Each gives 168 MHz from a VCO input of 1-2 MHz and a VCO within 100-432 MHz, and
    48 MHz for USB. The firmware then stops waiting for HSE at its bound instead of hanging."""
    tools()
    image = stm32.build(planar2_float, tmp_path, hse_hz=hse_hz, ccm=stm32.qemu_maps_ccm())
    boot(image.path(".elf"), tmp_path / "qemu.log")
    configs = writes(tmp_path / "qemu.log", "RCC", 0x004)
    assert len(configs) == 2, configs
    for value, source_hz, from_hse in zip(configs, (hse_hz, 16_000_000), (True, False), strict=True):
        m, n, p = value & 0x3F, (value >> 6) & 0x1FF, 2 * (((value >> 16) & 3) + 1)
        q = (value >> 24) & 0xF
        assert bool(value & (1 << 22)) == from_hse
        assert 1e6 <= source_hz / m <= 2e6 and 100e6 <= source_hz / m * n <= 432e6
        assert source_hz / m * n / p == 168e6 and source_hz / m * n / q == 48e6


def test_the_fault_hook_drives_its_pin_high(planar2_float: Realtime, tmp_path: Path) -> None:
    """The fault pin (PD14 by default) is driven low at start (BSRR's reset half) and high when a step
    faults: sample 1's desired position is beyond the input limit (MG_FAULT_INPUT), sample 0's is
    not."""
    tools()
    image = stm32.build(planar2_float, tmp_path, ccm=stm32.qemu_maps_ccm())
    inputs = planar2_float.inputs(2)
    inputs["q_des"][1] = 1e7
    frames = boot(image.path(".elf"), tmp_path / "qemu.log", tuple(x.tobytes() for x in inputs))
    faults = [struct.unpack_from("<BBBB", f.payload, pil.COUNTS.size)[1] for f in frames[:2]]
    assert faults == [0, 1] and frames[2].kind == "F"
    assert writes(tmp_path / "qemu.log", "GPIOD", 0x018) == [1 << 30, 1 << 14]


def test_the_build_options_are_checked_where_they_are_compiled(planar2_float: Realtime, tmp_path: Path) -> None:
    """A crystal of no whole MHz, a baud rate beyond USART1 and one it cannot make within 1 % stop the
    compile with the option named; the CLI refuses the crystal before building."""
    tools()
    image = stm32.build(planar2_float, tmp_path / "ok")
    cases = (
        ("HSE_HZ=8500000", "MG_HSE_HZ: a whole number of MHz"),
        ("BAUD=6000000", "MG_BAUD: above 5.25 Mbaud"),  # 84 MHz / 6 Mbaud: divider 14 < 16
        ("BAUD=5000000", "MG_BAUD: USART1 at 84 MHz cannot make it within 1 %"),  # divider 17: 4.94 Mbaud, -1.2 %
    )
    for option, message in cases:
        (image.build.out / "board_stm32f405.o").unlink(missing_ok=True)
        with pytest.raises(tg.TargetError, match=message):
            tg.make(image.build, "stm32f405", **dict([option.split("=")]))
    with pytest.raises(ValueError, match="--hse-hz"):
        stm32.build(planar2_float, tmp_path / "bad", hse_hz=8_500_000)


def test_the_stm32f405_port_follows_misra(tmp_path: Path) -> None:
    """Every file of the port (board, start-up, the PIL link and their headers) for a bundled robot,
    with the Makefile's defines, finds nothing beyond docs/misra.md's deviations (on a copy of
    runtime/target/: the addon's .dump files land beside the sources)."""
    folder = shutil.copytree(ROOT / "runtime" / "target", tmp_path / "target")
    sources = [folder / f for f in ("board_stm32f405.c", "startup_stm32f405.c", "mg_pil.c")]
    defines = ("MG_ROBOT=kuka_iiwa14", "MG_ROBOT_UPPER=KUKA_IIWA14", 'MG_RT_HEADER="kuka_iiwa14_rt.h"')
    found = cppcheck_findings(sources, (ROOT / "generated" / "kuka_iiwa14",), tuple(f"-D{d}" for d in defines))
    assert {f"{MISRA}11.4", f"{MISRA}8.11"} <= {f.rule for f in found}  # the registers, the linker's symbols
    port = {
        "board_stm32f405.c",
        "startup_stm32f405.c",
        "mg_pil.c",
        "mg_pil.h",
        "mg_frame.h",
        "mg_handlers.h",
        "mg_port.h",
    }
    assert not undeviated([f for f in found if f.name in port or f.name == "cppcheck"]), found
