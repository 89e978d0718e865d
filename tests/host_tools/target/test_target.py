"""The generated real-time step on Cortex-M in QEMU (issue #8): the same outputs as the host build,
footprint and timing, the files a board project copies."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegen.emit.cprint import Precision
from codegen.model.description import load_robot
from host_tools.bindings.rt import Realtime, fill_inputs, load_rt
from host_tools.studies.scenarios import CollisionResult, collision
from host_tools.target import cortex_m as tg
from tests.tooling import ROOT, require_tool

HEAP = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "alloca", "_sbrk", "_sbrk_r", "_malloc_r"}


def tools() -> None:
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-objdump", "arm-none-eabi-nm", "make", "qemu-system-arm"):
        require_tool(tool)


@pytest.fixture(scope="module")
def scenario() -> tuple[CollisionResult, Any]:
    """The demo's closed loop on the host (kuka_iiwa14: Kalman, momentum observer with thresholds
    from a contact-free run, computed torque, stop reaction) with a 30 N push at t = 4 s."""
    rt = load_rt("kuka_iiwa14")
    return collision(load_robot("kuka_iiwa14"), rt=rt), rt


def run_on_target(
    scenario: tuple[CollisionResult, Any], cpu: str, precision: Precision, out: Path
) -> tuple[dict[str, Any], tg.TargetBuild, tg.TargetRun]:
    result, rt_double = scenario
    rt = load_rt("kuka_iiwa14", precision=precision)
    for key in rt_double.config.keys():  # the thresholds and reaction of the recorded run
        rt.config[key] = rt_double.config[key]
    inputs = rt.inputs(len(result.hit.log))
    fill_inputs(inputs, result.hit.log.inputs())
    b = tg.build(rt, cpu, out)
    run = tg.run_firmware(b, rt, rt.config_bytes(), inputs)
    return tg.report(b, rt, inputs, run), b, run


def same_layout_but_the_pointer(target_bytes: int, host: Realtime, p: str) -> bool:
    """rt_t on the 32-bit target is the host's but for its config pointer: 4 bytes there, 8 on a
    64-bit host, so the target's struct is as long or up to 2 x 4 bytes shorter (the pointer, and
    the padding that rounds the struct up to the host's 8-byte pointer alignment)."""
    shorter = host.ffi.sizeof(f"{p}_rt_t") - target_bytes
    return 0 <= shorter <= 2 * (host.ffi.sizeof("void *") - 4) and shorter % 4 == 0


@pytest.mark.parametrize(
    "cpu,precision,tolerance",
    [("cortex-m7", "double", 1e-12), ("cortex-m4f", "float", 1e-5), ("cortex-m33", "float", 1e-5)],
)
def test_qemu_runs_the_step_like_the_host(
    scenario: tuple[CollisionResult, Any], cpu: str, precision: Precision, tolerance: float, tmp_path: Path
) -> None:
    tools()
    doc, b, run = run_on_target(scenario, cpu, precision, tmp_path / "build")
    print(tg.table(doc))
    assert doc["samples"] >= 5000
    assert doc["max_rel_error"] <= tolerance
    # the recorded run has its collision: flagged on the same sample, after the push began
    assert doc["collision_sample_host"] is not None and doc["same_collision_sample"] is True
    assert doc["collision_sample_host"] >= int(4.0 / 1e-3)
    # -ffp-contract=off and IEEE arithmetic on both sides: everything that does not go through libm
    # (newlib's sin/cos differ from glibc's in the last bits) is equal bit for bit
    assert {
        "q",
        "faults",
        "ready",
        "q_hat",
        "qd_hat",
        "qdd_hat",
        "q_d",
        "qd_d",
        "qdd_d",
        "collision",
        "link",
        "above",
    } <= set(doc["bit_exact_outputs"])
    for key in (
        "max_rel_error",
        "flash_bytes",
        "ram_bytes",
        "stack_bytes",
        "instructions_per_step",
        "same_collision_sample",
    ):
        assert key in doc
    # the static bound covers what the step really touched; both well above a trivial frame
    assert doc["stack_bytes"] >= doc["stack_measured_bytes"] > 256
    assert doc["stack_unknown"] == []
    assert doc["flash_bytes"] > 4096 and doc["ram_bytes"] >= doc["ram"]["state (rt_t)"] > 0
    assert doc["ram"]["data"] == 0 and doc["ram"]["bss"] == 0  # no mutable globals
    # SysTick under -icount shift=8: 256 ns per instruction at the board's clock (25 MHz: 6.4 ticks)
    assert abs(run.ticks_per_instruction - 2.0**tg.ICOUNT_SHIFT * 1e-9 * tg.CPUS[cpu].systick_hz) < 0.01
    assert 1000 < doc["instructions_mean"] <= doc["instructions_per_step"]
    assert same_layout_but_the_pointer(
        doc["state_bytes_target"], load_rt("kuka_iiwa14", precision=precision), "kuka_iiwa14"
    )


def test_library_objects_have_no_heap_and_no_mutable_globals(
    scenario: tuple[CollisionResult, Any], tmp_path: Path
) -> None:
    """rdimon's startup links malloc into the firmware, so the proof is on the library's objects."""
    tools()
    rt = load_rt("kuka_iiwa14", precision="float")
    b = tg.build(rt, "cortex-m4f", tmp_path)
    for obj in (b.out / "kuka_iiwa14_dynamics.o", b.out / "kuka_iiwa14_rt.o"):
        undefined = subprocess.run(
            ["arm-none-eabi-nm", "-u", str(obj)], capture_output=True, text=True, check=True
        ).stdout.split()
        assert undefined and not set(undefined) & HEAP, undefined
        assert not {"sin", "cos", "sqrt"} & set(undefined)  # float build: float math only
        defined = subprocess.run(
            ["arm-none-eabi-nm", "--defined-only", str(obj)], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        mutable = [line for line in defined if line.split()[1] in "DdBbCGgSs"]
        assert not mutable, mutable


def test_the_layout_probe_fails_when_an_offset_differs(tmp_path: Path) -> None:
    tools()
    rt = load_rt("planar2")
    probe = tg.layout_probe(rt)
    flags = [
        *tg.CPUS["cortex-m7"].flags.split(),
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Wpedantic",
        "-Werror",
        f"-I{rt.folder}",
        "-c",
        "-o",
        str(tmp_path / "p.o"),
    ]
    good = tmp_path / "good.c"
    good.write_text(probe)
    assert subprocess.run(["arm-none-eabi-gcc", *flags, str(good)], capture_output=True).returncode == 0
    lines = probe.splitlines()
    i = next(k for k, line in enumerate(lines) if "offsetof(planar2_rt_input_t, tau)" in line)
    offset = int(lines[i].split("tau) == ")[1].split("u")[0])
    lines[i] = lines[i].replace(f"tau) == {offset}u", f"tau) == {offset + 4}u")
    bad = tmp_path / "bad.c"
    bad.write_text("\n".join(lines))
    r = subprocess.run(["arm-none-eabi-gcc", *flags, str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "mg_layout" in r.stderr


def test_stack_analysis_of_a_known_disassembly(tmp_path: Path) -> None:
    dis = """
00000010 <leaf>:
  10:\tpush\t{r4, r5, lr}
  12:\tvpush\t{d8-d9}
  16:\tsub\tsp, #16
  18:\tpop\t{r4, r5, pc}

00000020 <mid>:
  20:\tpush\t{r4, lr}
  22:\tsub.w\tsp, sp, #1000\t@ 0x3e8
  26:\tbl\t10 <leaf>
  2a:\tbne.n\t26 <mid+0x6>
  2c:\tbeq.w\t64 <deep+0x4>
  30:\tb.w\t40 <tail>

00000040 <tail>:
  40:\tpush\t{r3, lr}
  42:\tblx\tr3
  44:\tpop\t{r3, pc}
  46:\tnop
  48:\tmovs\tr0, r0

00000050 <root>:
  50:\tpush\t{r4, r5, r6, r7, lr}
  52:\tbl\t20 <mid>
  56:\tbl\t10 <leaf>
  5a:\tpop\t{r4, r5, r6, r7, pc}

00000060 <entry>:
  60:\tstr.w\tlr, [sp, #-4]!
  62:\tsub\tsp, #12

00000064 <deep>:
  64:\tpush\t{r4, r5, r6, lr}
  66:\tsub\tsp, #2000
  68:\tbx\tlr
"""
    frames, calls, unknown = tg.disassembly_frames(dis)
    assert frames == {"leaf": 12 + 16 + 16, "mid": 8 + 1000, "tail": 8, "root": 20, "entry": 4 + 12, "deep": 16 + 2000}
    assert calls == {
        "leaf": set(),
        "mid": {"leaf", "tail", "deep"},
        "tail": set(),
        "root": {"mid", "leaf"},
        "entry": {"deep"},
        "deep": set(),
    }  # entry falls through into deep; tail's padding (nop, 0x0000 as movs r0, r0) does not into root
    assert unknown == {"tail"}  # an indirect call
    assert tg.worst_stack("root", frames, calls) == (20 + 1008 + 2016, ["root", "mid", "deep"])
    # toolchain entry points that branch into each other: one node, frames summed
    assert tg.worst_stack("r", {"r": 4, "a": 8, "b": 16, "c": 32}, {"r": {"a"}, "a": {"b"}, "b": {"a", "c"}}) == (
        4 + 8 + 16 + 32,
        ["r", "a+b", "c"],
    )
    with pytest.raises(tg.TargetError, match="recursion"):  # in the generated code: an error
        tg.worst_stack("bot_a", {"bot_a": 8, "bot_b": 8}, {"bot_a": {"bot_b"}, "bot_b": {"bot_a"}}, ours="bot_")
    (tmp_path / "x.su").write_text("x.c:1:6:ok\t16\tstatic\nx.c:9:6:vla\t32\tdynamic,bounded\n")
    with pytest.raises(tg.TargetError, match="vla.*dynamic"):
        tg.su_frames(tmp_path)


def test_library_sections_from_a_linker_map() -> None:
    text = """Discarded input sections
 .text.unused   0x00000000      0x400 /b/libbot.a(bot_rt.o)

Linker script and memory map

 .text          0x00000000       0x40 /b/startup.o
 .text.bot_rt_step
                0x00000040      0x120 /b/libbot.a(bot_rt.o)
 .text.bot_rnea
                0x00000160       0x80 /b/libbot.a(bot_dynamics.o)
 .rodata.bot_rt_default_config
                0x000001e0       0x20 /b/libbot.a(bot_rt.o)
 .text.cos      0x00000200       0x90 /usr/lib/libm.a(lib_a-s_cos.o)
 .bss.other     0x00000300        0x8 /b/mg_firmware.o
"""
    assert tg.library_sections(text, "bot") == {"text": 0x120 + 0x80, "rodata": 0x20, "data": 0, "bss": 0}


def test_cmake_toolchain_file_cross_builds_a_generated_folder(tmp_path: Path) -> None:
    require_tool("cmake")
    require_tool("arm-none-eabi-gcc")
    toolchain = ROOT / "runtime" / "target" / "arm-none-eabi.cmake"
    for cmd in (
        [
            "cmake",
            "-S",
            str(ROOT / "generated" / "planar2"),
            "-B",
            str(tmp_path),
            f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",
            "-DMANIPGEN_CPU=cortex-m4f",
        ],
        ["cmake", "--build", str(tmp_path)],
    ):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    attributes = subprocess.run(
        ["arm-none-eabi-readelf", "-A", str(tmp_path / "libplanar2.a")], capture_output=True, text=True
    ).stdout
    assert "Tag_CPU_arch: v7E-M" in attributes and "Tag_FP_arch: VFPv4-D16" in attributes  # M4F's FPU
    bad = subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT / "generated" / "planar2"),
            "-B",
            str(tmp_path / "bad"),
            f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",
            "-DMANIPGEN_CPU=cortex-m3",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "MANIPGEN_CPU must be" in bad.stderr


def test_cli_target_run_json_and_errors(tmp_path: Path) -> None:
    tools()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "target",
            "run",
            "planar2",
            "--cpu",
            "cortex-m7",
            "--json",
            "--out",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["robot"] == "planar2" and doc["cpu"] == "cortex-m7" and doc["precision"] == "double"
    assert doc["max_rel_error"] <= 1e-12 and doc["same_collision_sample"] is True
    # off a terminal, QEMU's samples are counted in plain lines (the JSON above is stdout alone); the
    # last count always: every sample of the run written
    counted = re.search(r"samples through planar2_rt_step in QEMU .*: (\d+)/\1\b", r.stderr)
    assert "\r" not in r.stderr and counted, r.stderr
    # a single-precision FPU builds float unless told otherwise (double there is soft-float)
    for cpu in ("cortex-m4f", "cortex-m33"):
        built = subprocess.run(
            [sys.executable, "-m", "host_tools.cli", "target", "build", "planar2", "--cpu", cpu],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=900,
        )
        assert built.returncode == 0 and f"for {cpu} (float)" in built.stderr, built.stderr
    assert (tmp_path / "t" / "target.json").exists() and (tmp_path / "t" / "libplanar2.a").exists()
    # a log of another robot: one clear error naming the file
    from host_tools.studies.scenarios import collision as make_collision

    log = tmp_path / "iiwa.npz"
    make_collision(load_robot("kuka_iiwa14"), duration=1.0, onset=0.5).hit.log.save(log)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "target",
            "run",
            "planar2",
            "--cpu",
            "cortex-m7",
            "--input",
            str(log),
            "--out",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert r.returncode == 2 and str(log) in r.stderr and "kuka_iiwa14" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "host_tools.cli", "target", "run", "planar2", "--cpu", "cortex-m3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 2 and "cortex-m3" in r.stderr and "Traceback" not in r.stderr


def test_a_build_folder_reused_for_another_pipeline_is_rebuilt(tmp_path: Path) -> None:
    """make compares dates only: the second pipeline's sources may be older than the first's objects.
    The build starts clean when the generated folder (or the Makefile) changed."""
    tools()
    first = load_rt("planar2", observer="momentum")
    tg.build(first, "cortex-m7", tmp_path / "build")
    copy = tmp_path / "planar2"  # a copy: the shared cache's dates stay as they are
    shutil.copytree(load_rt("planar2", observer="direct", estimator="kalman").folder, copy)
    for source in copy.iterdir():  # older than the first build's objects, as it may well be
        os.utime(source, (946684800, 946684800))
    other = Realtime(copy)
    b = tg.build(other, "cortex-m7", tmp_path / "build")
    defined = subprocess.run(
        ["arm-none-eabi-nm", "--defined-only", str(b.out / "planar2_rt.o")], capture_output=True, text=True, check=True
    ).stdout
    assert other.ffi.sizeof("planar2_rt_t") != first.ffi.sizeof("planar2_rt_t")
    result = collision(
        load_robot("planar2"), duration=2.0, onset=1.0, rt=load_rt("planar2", observer="direct", estimator="kalman")
    )
    inputs = other.inputs(len(result.hit.log))
    fill_inputs(inputs, result.hit.log.inputs())
    run = tg.run_firmware(b, other, other.config_bytes(), inputs)
    assert same_layout_but_the_pointer(run.state_bytes, other, "planar2") and "planar2_rt_step" in defined
    assert tg.report(b, other, inputs, run)["max_rel_error"] <= 1e-12


def test_the_target_makefile_reads_the_robot_from_the_folder(tmp_path: Path) -> None:
    """runtime/target/Makefile takes the robot's C prefix from the generated folder's files, so a folder
    named anything builds without ROBOT=; a folder that is not manipgen's is one clear make error."""
    require_tool("arm-none-eabi-gcc")
    folder = tmp_path / "my_arm_build"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    makefile = str(ROOT / "runtime" / "target" / "Makefile")
    args = ["make", "-s", "-f", makefile, "CPU=cortex-m4f", "PRECISION=double"]
    r = subprocess.run([*args, f"GEN={folder}", f"OUT={tmp_path / 'out'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "libplanar2.a").is_file()
    r = subprocess.run([*args, f"GEN={tmp_path}", f"OUT={tmp_path / 'out2'}"], capture_output=True, text=True)
    assert r.returncode != 0 and "no <robot>_dynamics.h" in r.stderr, r.stderr
