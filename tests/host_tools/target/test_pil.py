"""Processor in the loop (issue #26 item 4): the step from SysTick in QEMU, the host's plant over the
board's UART, against the host loopback; the port template compiles for every CPU."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from codegen.model.description import load_robot
from host_tools.cli import main
from host_tools.target import cortex_m as tg
from host_tools.target import pil
from tests.tooling import ROOT, require_tool

SECONDS = 3.0  # the demo's collision run shortened (push at 1.5 s): 3001 samples per CPU


def tools() -> None:
    for tool in ("arm-none-eabi-gcc", "make", "qemu-system-arm"):
        require_tool(tool)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """One build folder (--out) per CPU and precision in this module: the tests that build the same
    image (the cortex-m33 float loop and the corrupted frame) compile its library -- the iiwa's
    dynamics and step, 9 CPU-s of arm-none-eabi-gcc -- once. What differs between them, the exported
    config and the objects that include it, make rebuilds (export_config rewrites it when it changes;
    cortex_m.build's stamp starts clean on another folder, Makefile or flags). The tests of one folder
    share an xdist group (on_build), so they run in the worker holding it."""
    root = tmp_path_factory.mktemp("pil-builds")

    def folder(cpu: str, precision: str) -> Path:
        path = root / f"{cpu}-{precision}"
        path.mkdir(exist_ok=True)
        return path

    return folder


def on_build(cpu: str, precision: str) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"pil-build-{cpu}-{precision}")


@pytest.mark.parametrize(
    "cpu,precision",
    [
        pytest.param(c, p, marks=on_build(c, p))
        for c, p in (("cortex-m7", "double"), ("cortex-m4f", "float"), ("cortex-m33", "float"))
    ],
)
def test_the_board_in_the_loop_follows_the_host_loopback(
    cpu: str, precision: str, build_dir: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Both sides compute with manipgen_linalg.h's portable sin, cos, exp and tanh, so the step on the
    board returns the host's torques bit for bit and the trajectories agree exactly; 1e-9 rad is the
    issue's goal (a last-bit difference in one torque is amplified by the encoders' quantisation to
    ~1e-5 rad: the test cannot pass by a near miss)."""
    tools()
    tmp_path = build_dir(cpu, precision)
    for report in ("pil.json", "pil.md"):  # written by this run, not left by another test's
        (tmp_path / report).unlink(missing_ok=True)
    argv = ["target", "pil", "kuka_iiwa14", "--cpu", cpu, "--seconds", str(SECONDS), "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["precision"] == precision  # the CPU's own precision by default
    assert doc["samples"] == doc["steps_on_board"] == round(SECONDS * 1000) + 1
    assert doc["max_q_difference"] <= 1e-9, doc["max_q_difference"]
    assert doc["max_tau_difference"] == 0.0
    assert doc["same_collision_sample"] is True
    onset = round(doc["push_onset_s"] * 1000)
    assert onset < doc["collision_sample_target"] < onset + 300  # flagged during the push
    assert doc["missed_deadlines"] == doc["missed_deadlines_by_ticks"] == 0
    assert doc["frames_corrupted"] == doc["frames_lost"] == 0
    load = doc["cpu_load"]
    assert 1000 < load["instructions_step_max"] < load["instructions_per_sample_max"]
    assert 0 < load["share_max"] < 1
    assert (tmp_path / "pil.json").exists() and (tmp_path / "pil.md").exists()
    assert "const kuka_iiwa14_rt_config_t mg_pil_config" in (tmp_path / "mg_pil_config.c").read_text()


@on_build("cortex-m33", "float")
def test_a_corrupted_input_frame_is_counted_and_the_board_runs_on(build_dir: Callable[[str, str], Path]) -> None:
    """One payload byte flipped on the wire at sample 500: the board's CRC check counts it, the
    sample still runs (encoders marked lost), the loop completes."""
    tools()
    counted: list[tuple[int, int]] = []
    stages: list[str] = []
    doc = pil.pil(
        load_robot("kuka_iiwa14"),
        "cortex-m33",
        "float",
        build_dir("cortex-m33", "float"),
        corrupt=frozenset({500}),
        seconds=2.0,
        stage=stages.append,
        samples=lambda k, n: counted.append((k, n)),
    )
    # the progress: each stage named, then every sample exchanged counted against the run's length
    assert stages[-1] == "samples through the board (QEMU)" and len(stages) == 3
    assert counted == [(k, doc["samples"]) for k in range(doc["samples"])]
    assert doc["frames_corrupted"] == 1 and doc["frames_lost"] == 0
    assert doc["steps_on_board"] == doc["samples"]
    assert doc["max_q_difference"] > 0  # the lost sample changed the run: it was not silently used
    assert doc["missed_deadlines"] == 0


def test_the_host_end_resynchronises_and_checks_every_frame() -> None:
    """Bytes before a frame are skipped; a frame with a flipped byte arrives as not intact."""
    a, b = socket.socketpair()
    try:
        good, bad = pil.frame("O", 7, b"\x01\x02\x03"), bytearray(pil.frame("O", 8, b"\x04\x05"))
        bad[-3] ^= 0x01
        a.sendall(b"\x00\xa5\x13" + good + bytes(bad))
        link = pil.SerialLink(b)
        first, second = link.receive(), link.receive()
        assert (first.kind, first.counter, first.payload, first.intact) == ("O", 7, b"\x01\x02\x03", True)
        assert (second.counter, second.intact) == (8, False)
    finally:
        a.close()
        b.close()


def test_the_reload_is_one_period_at_the_board_clock() -> None:
    """1 ms at 400 MHz (M7) is 400 000 instructions; under -icount shift=8 each advances 256 ns of
    virtual time, 6.4 ticks of the board's 25 MHz SysTick: 2 560 000 ticks (within 24 bits)."""
    assert pil.reload_ticks(tg.CPUS["cortex-m7"], 1e-3) == 2_560_000
    assert pil.reload_ticks(tg.CPUS["cortex-m33"], 1e-3) == round(160e3 * 20e6 * 256e-9)
    with pytest.raises(tg.TargetError, match="24-bit"):
        pil.reload_ticks(tg.CPUS["cortex-m7"], 1e-2)


@pytest.mark.parametrize("cpu", sorted(tg.CPUS))
def test_the_port_template_compiles_for_every_cpu(cpu: str, tmp_path: Path) -> None:
    """runtime/target/board_template.c with its hooks empty, strict (-Wall -Wextra -Wpedantic -Werror),
    for the committed double folder and, with a flashed (exported) config, for the CPU's precision."""
    require_tool("arm-none-eabi-gcc")
    require_tool("make")
    from host_tools.bindings.rt import load_rt

    rt = load_rt("kuka_iiwa14", precision=tg.NATIVE_PRECISION[cpu])  # type: ignore[arg-type]
    for name, text in rt.config_sources("my_arm_config", "my_arm_config", "test").items():
        (tmp_path / name).write_text(text)
    b = tg.TargetBuild("kuka_iiwa14", cpu, tg.NATIVE_PRECISION[cpu], rt.folder.resolve(), tmp_path / "native")
    tg.make(b, "template", CONFIG_C=str(tmp_path / "my_arm_config.c"), CONFIG_NAME="my_arm_config")
    assert (b.out / "board_template.o").stat().st_size > 0
    committed = tg.TargetBuild("kuka_iiwa14", cpu, "double", ROOT / "generated" / "kuka_iiwa14", tmp_path / "double")
    tg.make(committed, "template")
    assert (committed.out / "board_template.o").stat().st_size > 0
