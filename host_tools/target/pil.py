"""`manipgen target pil`: processor-in-the-loop (issue #26). The generated step runs on a Cortex-M in
QEMU from its SysTick interrupt, as on a board (runtime/target/board_qemu.c, the reference port of
board_template.c); the plant is the host's loopback (the same C as ``simulate``'s), which sends each
sample's inputs over the board's UART and applies the torques it sends back.

    doc = pil(load_robot("kuka_iiwa14"), "cortex-m7", "double", Path("out/pil"))

The scenario is the demo's collision run (``host_tools.studies.scenarios.collision``): its thresholds
are designed on the host and flashed as an exported config (``manipgen export-config``'s C, linked
into the image). The same run on the host loopback is the reference: the trajectories, the first
flagged sample and the torques are compared.

Time: QEMU counts instructions (``-icount shift=N,sleep=off``) and the board stops SysTick while it
waits for the plant, so guest time only passes in the firmware's own work. The host sets SysTick's
reload to one sample period at the board's clock (``Cpu.board_hz``, one instruction per cycle):
a step misses its deadline when it takes longer than that from its interrupt to its torque frame.
"""

from __future__ import annotations

import binascii
import os
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.loopback import Run, simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory
from host_tools.target import cortex_m as tg
from host_tools.target import stm32

SYNC = b"\xa5\x5a"
HEAD = struct.Struct("<BBHI")  # type, 0, payload length, sample counter
# the previous sample's ticks (to its frame sent, to rt_step's end); missed, corrupted, lost so far
COUNTS = struct.Struct("<IIIII")
FLAGS = struct.Struct("<BBBB")  # collision, fault, ready, 0
CONFIG_NAME = "mg_pil_config"  # the exported config's C name (and file stem) in the image
# one libm on both sides: the host's plant and reference and the board's step use manipgen_linalg.h's
# portable sin, cos, exp and tanh (glibc's and newlib's differ in the last bit)
PORTABLE = "-DMANIPGEN_PORTABLE_MATH"
ANSWER_SECONDS = 30.0  # wall time the host waits for one frame before it calls the link dead


def frame(kind: str, counter: int, payload: bytes) -> bytes:
    """One frame of board_qemu.c's protocol; the CRC is CRC-16/CCITT-FALSE (binascii.crc_hqx)."""
    head = HEAD.pack(ord(kind), 0, len(payload), counter)
    return SYNC + head + payload + struct.pack("<H", binascii.crc_hqx(head + payload, 0xFFFF))


@dataclass
class Frame:
    kind: str
    counter: int
    payload: bytes
    intact: bool  # the CRC matched


class SerialLink:
    """The host's end of the board's UART (a connected socket): frames in and out."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, size: int, deadline: float) -> None:
        while len(self.buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise tg.TargetError(
                    f"the board sent no frame within {ANSWER_SECONDS:g} s (a lost frame, or a hung guest?)"
                )
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                raise tg.TargetError("the board closed the serial line (QEMU exited)")
            self.buffer += chunk

    def receive(self) -> Frame:
        deadline = time.monotonic() + ANSWER_SECONDS
        while True:
            self._fill(2, deadline)
            at = self.buffer.find(SYNC)
            if at < 0:
                del self.buffer[:-1]
                continue
            del self.buffer[:at]
            self._fill(2 + HEAD.size, deadline)
            kind, _, length, counter = HEAD.unpack_from(self.buffer, 2)
            self._fill(2 + HEAD.size + length + 2, deadline)
            body = bytes(self.buffer[2 : 2 + HEAD.size + length])
            (crc,) = struct.unpack_from("<H", self.buffer, 2 + HEAD.size + length)
            del self.buffer[: 2 + HEAD.size + length + 2]
            return Frame(chr(kind), counter, body[HEAD.size :], binascii.crc_hqx(body, 0xFFFF) == crc)


@dataclass
class PilLink:
    """``simulate``'s step: each sample's input to the board, its torques back."""

    link: SerialLink
    rt: Realtime
    corrupt: frozenset[int] = frozenset()  # samples whose input frame gets one byte flipped
    ticks: list[tuple[int, int]] = field(default_factory=list)  # per sample: interrupt -> frame sent, -> step done
    host_corrupted: int = 0  # output frames that arrived damaged
    host_lost: int = 0  # output frames whose counter skipped
    sample: int = 0
    last: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the torques of the last good frame
    progress: Callable[[int], None] | None = None  # called with the samples exchanged so far

    def __call__(self, c_in: Any, c_out: Any) -> None:
        k = self.sample
        self.sample += 1
        if self.progress is not None:
            self.progress(k)
        data = frame("I", k, bytes(self.rt.ffi.buffer(c_in)))
        if k in self.corrupt:  # one payload byte flipped on the wire: the CRC must catch it
            at = 2 + HEAD.size + 1
            data = data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]
        self.link.send(data)
        got = self.link.receive()
        n = len(c_out.tau_cmd)
        real = self.rt.ffi.sizeof(c_out.tau_cmd) // n
        if self.last.size == 0:
            self.last = np.zeros(n)
        if not got.intact or got.kind != "O" or len(got.payload) != COUNTS.size + FLAGS.size + n * real:
            self.host_corrupted += 1  # the drives hold the last torques (the out of the last sample)
            c_out.tau_cmd = [float(v) for v in self.last]
            return
        if got.counter != k:
            self.host_lost += abs(got.counter - k)
        counts = COUNTS.unpack_from(got.payload)
        if k > 0:
            self.ticks.append((counts[0], counts[1]))
        collision, fault, ready, _ = FLAGS.unpack_from(got.payload, COUNTS.size)
        tau = np.frombuffer(got.payload[COUNTS.size + FLAGS.size :], "<f8" if real == 8 else "<f4")
        c_out.tau_cmd = [float(v) for v in tau]
        c_out.collision, c_out.fault, c_out.ready = collision, fault, ready
        self.last = tau.astype(float)


def reload_ticks(cpu: tg.Cpu, period: float) -> int:
    """SysTick's reload for one sample period at the board's clock: period * board_hz instructions,
    times the SysTick ticks QEMU advances per instruction under -icount shift=ICOUNT_SHIFT."""
    ticks = round(period * cpu.board_hz * tick_per_instruction(cpu))
    if not 1 < ticks <= 1 << 24:
        raise tg.TargetError(f"a {period:g} s period is {ticks} SysTick ticks here: beyond its 24-bit reload")
    return ticks


def tick_per_instruction(cpu: tg.Cpu) -> float:
    return cpu.systick_hz * 2.0**tg.ICOUNT_SHIFT * 1e-9


def export_config(rt: Realtime, out: Path) -> tuple[Path, str]:
    """rt's current config as C in ``out`` (``manipgen export-config``'s files, rewritten only when
    they change): (the .c file, the config's name)."""
    out.mkdir(parents=True, exist_ok=True)
    files = rt.config_sources(CONFIG_NAME, CONFIG_NAME, "manipgen target pil: the demo's designed config")
    for name, text in files.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return out.resolve() / f"{CONFIG_NAME}.c", CONFIG_NAME


def build_pil(rt: Realtime, cpu: str, out: Path) -> tg.TargetBuild:
    """The library (with cortex_m.build's layout probe) and the PIL image, rt's current config
    exported into it as a const (flash)."""
    b = tg.build(rt, cpu, out, PORTABLE)
    config_c, name = export_config(rt, b.out)
    tg.make(b, "pil", CFLAGS=PORTABLE, CONFIG_C=str(config_c), CONFIG_NAME=name)
    return b


@dataclass(frozen=True)
class PilImage:
    """A PIL firmware and how QEMU runs it: its machine, and whether it exits after the final frame
    (the MPS2 images through semihosting; the STM32F405's, which a board runs too, idles)."""

    elf: Path
    cpu: tg.Cpu
    exits: bool = True


def _qemu(image: PilImage, sock_path: Path) -> list[str]:
    cpu = image.cpu
    return [
        "qemu-system-arm",
        "-M",
        cpu.machine,
        "-cpu",
        cpu.qemu_cpu,
        "-display",
        "none",
        "-monitor",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        f"shift={tg.ICOUNT_SHIFT},sleep=off",
        "-chardev",
        f"socket,id=mg,path={sock_path}",
        "-serial",
        "chardev:mg",
        "-kernel",
        str(image.elf),
    ]


def run_pil(
    image: PilImage,
    rt: Realtime,
    trajectory: Trajectory,
    tau_ext: np.ndarray,
    corrupt: frozenset[int] = frozenset(),
    progress: Callable[[int], None] | None = None,
) -> tuple[Run, PilLink, tuple[int, ...], float]:
    """The closed loop with the step on the board: (the run, the link's record, the board's final
    counts (the last sample's ticks to its frame and to its step's end, missed, corrupted, lost,
    steps, then the port's report words), wall seconds); ``progress(samples exchanged)`` before each sample."""
    tg.require("qemu-system-arm")
    cpu = image.cpu
    with tempfile.TemporaryDirectory(prefix="mgpil") as tmp:  # a short path: sockets allow ~100 bytes
        sock_path = Path(tmp) / "uart0"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(sock_path))
        server.listen(1)
        server.settimeout(60)
        t0 = time.perf_counter()
        qemu = subprocess.Popen(
            _qemu(image, sock_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ)
        )
        try:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                raise tg.TargetError("QEMU did not connect to the serial socket within 60 s") from None
            link = SerialLink(conn)
            hello = link.receive()  # the board is ready: a UART drops what comes before it is enabled
            if not hello.intact or hello.kind != "H":
                raise tg.TargetError(f"the board's first frame is {hello.kind!r}, not its hello ('H')")
            link.send(frame("S", 0, struct.pack("<I", reload_ticks(cpu, rt.sample_period))))
            pil_link = PilLink(link, rt, corrupt, progress=progress)
            run = simulate(rt, trajectory, tau_ext=tau_ext, step=pil_link)
            link.send(frame("E", pil_link.sample, b""))
            final = link.receive()
            if not final.intact or final.kind != "F" or len(final.payload) < 24 or len(final.payload) % 4:
                raise tg.TargetError("the board's final frame did not arrive intact")
            counts = struct.unpack(f"<{len(final.payload) // 4}I", final.payload)
            pil_link.ticks.append((counts[0], counts[1]))
            if not image.exits:  # the board idles after its final frame, as on a bench
                qemu.terminate()
            code = qemu.wait(timeout=60)
            if image.exits and code != 0:
                said = qemu.stderr.read().decode(errors="replace")[-500:] if qemu.stderr else ""
                raise tg.TargetError(f"QEMU exited with {code}: {said}")
        finally:
            if qemu.poll() is None:
                qemu.kill()
                qemu.wait()
            server.close()
    return run, pil_link, counts, time.perf_counter() - t0


def scenario(robot: Robot, rt: Realtime, seconds: float = 8.0) -> tuple[Trajectory, np.ndarray, Run, float]:
    """The demo's collision scenario designed on rt (thresholds, stop reaction: rt's config is set),
    ``seconds`` long with the push at half time (the demo's: 8 s), its motion and push fitted to the
    description's limits as the demo's (scenarios.fit_to_limits, fit_push): (trajectory, external
    torque, the host loopback's run, the push's onset in s)."""
    from host_tools.studies.scenarios import fit_push, fit_to_limits

    if not seconds >= 1.0:
        raise ValueError(f"--seconds: at least 1 s (the push comes at half time and lasts 0.3 s), got {seconds:g}")
    tau_max = np.asarray(rt.config["ctl.tau_max"], float) if "ctl.tau_max" in rt.config.keys() else None
    fit = fit_to_limits(robot, rt.sample_period, seconds, tau_max)  # the drives rt's controller clamps at
    result, _, _, _ = fit_push(robot, rt, fit, seconds)
    log = result.hit.log
    traj = Trajectory("demo", np.asarray(log.time, float), log.q_des, log.qd_des, log.qdd_des)
    return traj, np.asarray(log.extra["tau_ext_true"], float), result.hit, result.onset_s


def pil(
    robot: Robot,
    cpu: str,
    precision: str,
    out: Path,
    options: dict[str, str | None] | None = None,
    corrupt: frozenset[int] = frozenset(),
    seconds: float = 8.0,
    board_name: str | None = None,
    stage: Callable[[str], None] = lambda _: None,
    samples: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The JSON document of `manipgen target pil` (``corrupt``: samples whose input frame gets a
    byte flipped on the wire; ``seconds``: the scenario's length; ``stage(text)``: each stage;
    ``samples(exchanged, total)``: the samples through the board so far; ``board_name``: a board port
    (stm32f405) instead of QEMU's MPS2 board of ``cpu``)."""
    if cpu not in tg.CPUS:
        raise tg.TargetError(f"--cpu must be one of {', '.join(tg.CPUS)}, got {cpu!r}")
    if board_name is not None and (board_name not in stm32.BOARDS or cpu != stm32.CPU):
        raise tg.TargetError(f"--board: one of {', '.join(stm32.BOARDS)} (a {stm32.CPU}), got {board_name!r} on {cpu}")
    rt = load_rt(robot, precision=precision, portable_math=True, **(options or {}))  # type: ignore[arg-type]
    if "tau_cmd" not in (rt.output_dtype.names or ()):
        raise ValueError(f"{rt.label}: no controller (out.tau_cmd): processor-in-the-loop needs a closed loop")
    stage("the demo's collision run on the host (design, loopback)")
    traj, tau_ext, host, onset = scenario(robot, rt, seconds)
    if any(not 0 <= k < len(traj.time) for k in corrupt):
        raise ValueError(f"--corrupt: sample numbers 0..{len(traj.time) - 1}")
    stage("building the PIL firmware")
    extra: dict[str, Any] = {}
    if board_name is None:
        image = PilImage(build_pil(rt, cpu, out).out / "pil.elf", tg.CPUS[cpu])
    else:
        ccm = stm32.qemu_maps_ccm()
        built = stm32.build(rt, out, PORTABLE, config=export_config(rt, out), ccm=ccm)
        image = PilImage(built.path(".elf"), stm32.QEMU_CPU, exits=False)
        extra = {
            "board": board_name,
            "machine": stm32.MACHINE,
            "state_and_stack_in": "CCM" if ccm else "SRAM (this QEMU maps no CCM: before 8.0)",
            "image": str(built.path(".elf")),
        }
    stage("samples through the board (QEMU)")
    exchanged = None if samples is None else (lambda k: samples(k, len(traj.time)))
    run, link, final, seconds = run_pil(image, rt, traj, tau_ext, corrupt, exchanged)
    if board_name is not None:
        extra.update(stm32.decode_report(final[6:]))
        extra["stack_bound_bytes"] = stm32.flash_map(built)["stack"]["bound_bytes"]  # static: >= the used
    board = image.cpu
    per = tick_per_instruction(board)
    ticks = np.asarray(link.ticks, float)
    isr, step = ticks[:, 0] / per, ticks[:, 1] / per  # instructions: to the frame sent, to the step's end
    budget = board.board_hz * rt.sample_period
    q_host, q_pil = host.log.extra["q_true"], run.log.extra["q_true"]
    flagged_host = np.flatnonzero(host.out["collision"])
    flagged_pil = np.flatnonzero(run.out["collision"])
    first_host = int(flagged_host[0]) if flagged_host.size else None
    first_pil = int(flagged_pil[0]) if flagged_pil.size else None
    missed_by_ticks = int(np.sum(ticks[:, 0] > reload_ticks(board, rt.sample_period)))
    return {
        "robot": rt.name,
        "cpu": cpu,
        "precision": precision,
        "pipeline": rt.label,
        "samples": int(len(traj.time)),
        "push_onset_s": onset,
        "max_q_difference": float(np.max(np.abs(q_pil - q_host))),
        "max_tau_difference": float(np.max(np.abs(run.out["tau_cmd"] - host.out["tau_cmd"]))),
        "collision_sample_host": first_host,
        "collision_sample_target": first_pil,
        "same_collision_sample": first_host is not None and first_host == first_pil,
        "missed_deadlines": int(final[2]),
        "missed_deadlines_by_ticks": missed_by_ticks,
        "frames_corrupted": int(final[3]) + link.host_corrupted,
        "frames_lost": int(final[4]) + link.host_lost,
        "steps_on_board": int(final[5]),
        "cpu_load": {
            "board_hz": board.board_hz,
            "period_s": rt.sample_period,
            "instructions_per_sample_max": float(isr.max()),
            "instructions_per_sample_mean": float(isr.mean()),
            "instructions_step_max": float(step.max()),
            "share_max": float(isr.max() / budget),
            "share_mean": float(isr.mean() / budget),
            "measured": "SysTick ticks under -icount / ticks per instruction: a sample from its interrupt "
            "to its torque frame sent (read, rt_step, frame with CRC); the step alone from the interrupt "
            "to rt_step's return",
        },
        "flags": {"cpu": board.flags, "icount": f"shift={tg.ICOUNT_SHIFT},sleep=off", "config": CONFIG_NAME},
        "qemu_seconds": seconds,
        **extra,
    }


def table(doc: dict[str, Any]) -> str:
    load = doc["cpu_load"]
    return (
        f"# {doc['robot']} on {doc['cpu']} ({doc['precision']}, {doc['pipeline']}): processor in the loop, "
        f"{doc['samples']} samples\n\n"
        f"- trajectory vs the host loopback: max |q difference| {doc['max_q_difference']:.3g} rad, "
        f"torques {doc['max_tau_difference']:.3g}\n"
        f"- collision flagged at sample {doc['collision_sample_target']} (host {doc['collision_sample_host']}; "
        f"push at {doc['push_onset_s']:g} s)\n"
        f"- deadlines missed: {doc['missed_deadlines']}; frames corrupted {doc['frames_corrupted']}, "
        f"lost {doc['frames_lost']}\n"
        f"- CPU load: {load['instructions_per_sample_max']:.0f} instructions worst from the interrupt to the "
        f"torque frame ({100 * load['share_max']:.1f} % of {load['period_s'] * 1e3:g} ms at "
        f"{load['board_hz'] / 1e6:g} MHz, one instruction per cycle), {load['instructions_per_sample_mean']:.0f} "
        f"mean; the step alone {load['instructions_step_max']:.0f} worst\n"
    )
