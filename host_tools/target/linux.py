"""`manipgen target linux` (issue #48): the generated step in a real-time Linux process,
``<robot>_rt_linux`` (runtime/linux/rt_linux.c), paced by clock_nanosleep at the pipeline's rate, which
exchanges one UDP datagram each way per sample with the plant: here the host loopback (``simulate``'s
C, through cffi) on 127.0.0.1, as the external-control interface of a commercial arm exchanges them
with its controller.

    doc = linux(load_robot("kuka_iiwa14"), Path("out/linux"), seconds=10)

The scenario is processor-in-the-loop's (the demo's collision run, ``pil.scenario``), its config
exported into the program. The datagrams are PIL's frames (``pil.frame``), one per datagram.

Two references: the host loopback's own run (the issue's measure: the same q and the same collision
sample when no datagram was lost), and the host loopback with the samples the program ran on held
inputs held the same way (``HeldReplay``): that one must match bit for bit whatever the load, so a
late datagram on a busy machine does not hide a wrong step.
"""

from __future__ import annotations

import binascii
import gc
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegen.model.robot import Robot
from codegen.resources import resource_dir
from host_tools.bindings.build import cache_root, locked
from host_tools.bindings.loopback import Run, simulate
from host_tools.bindings.rt import Realtime, load_rt
from host_tools.data.trajectories import Trajectory
from host_tools.target.cortex_m import TargetError
from host_tools.target.pil import ANSWER_SECONDS, CONFIG_NAME, HEAD, SYNC, Frame, frame, scenario

# the program's flags: ISO C99 (POSIX through _POSIX_C_SOURCE in the file), no fused multiply-add (as
# the host's cffi build: host_tools.bindings.build.CFLAGS), every warning an error
CFLAGS = ("-std=c99", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror")
HELLO = struct.Struct("<IIBBBB")  # sizeof input, period (ns), SCHED_FIFO, memory locked, 0, 0
# an output's counts: wake-up latency (ns), wake-up to rt_step's return (ns), missed, corrupted, held
COUNTS = struct.Struct("<IIIII")
FLAGS = struct.Struct("<BBBB")  # collision, fault, ready, held
FINAL = struct.Struct("<IIIIIIIIBBBB")  # samples, missed, held, late, corrupted, max latency, max busy, skipped; flags
PERCENTILES = (50.0, 99.0, 99.9)
# the plant's SCHED_FIFO priority where permitted, below the program's (rt_linux.c's default 80): the
# program preempts the plant, not the other way round
PLANT_PRIORITY = 70


def parse(datagram: bytes) -> Frame | None:
    """One datagram as a PIL frame (None: not a frame of ours)."""
    if len(datagram) < 2 + HEAD.size + 2 or datagram[:2] != SYNC:
        return None
    kind, _, length, counter = HEAD.unpack_from(datagram, 2)
    if len(datagram) != 2 + HEAD.size + length + 2:
        return None
    body = datagram[2 : 2 + HEAD.size + length]
    (crc,) = struct.unpack_from("<H", datagram, 2 + HEAD.size + length)
    return Frame(chr(kind), counter, body[HEAD.size :], binascii.crc_hqx(body, 0xFFFF) == crc)


def _compile(cmd: list[str], what: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CFLAGS", "CPPFLAGS")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise TargetError(f"compiling {what} failed:\n{(done.stdout + done.stderr).strip()[-3000:]}")


def _object(cc: str, source: Path, flags: list[str], headers: list[Path]) -> tuple[Path, list[str]]:
    """``source`` compiled with the program's flags into the cache's ``objects/``, once per content
    (the command, the source, the headers): the dynamics of a robot is compiled once, whatever the
    config or the build folder."""
    digest = hashlib.sha256("\0".join([cc, *CFLAGS, *flags]).encode())
    for path in [source, *headers]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    obj = cache_root() / "objects" / f"{source.stem}_linux_{digest.hexdigest()[:16]}.o"
    partial = obj.with_suffix(f".{os.getpid()}.part")
    cmd = [cc, *CFLAGS, *flags, "-c", str(source), "-o", str(obj)]
    with locked(cache_root() / "locks" / f"{obj.stem}.lock"):
        if not obj.is_file():
            _compile([*cmd[:-1], str(partial)], source.name)
            partial.replace(obj)  # whole or absent
    return obj, cmd


def build_linux(rt: Realtime, out: Path, cc: str = "cc") -> tuple[Path, list[str]]:
    """``<robot>_rt_linux`` in ``out``, rt's current config exported into it as a const (``_object``: a
    new config recompiles two small files, not the dynamics).
    Returns (the program, the command that compiled the program's own file)."""
    if shutil.which(cc) is None:
        raise TargetError(f"no C compiler {cc!r} on PATH")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    files = rt.config_sources(CONFIG_NAME, CONFIG_NAME, "manipgen target linux: the demo's designed config")
    for name, text in files.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    folder, name = rt.folder.resolve(), rt.name
    port = resource_dir("runtime") / "target"  # mg_port.h
    headers = sorted(folder.glob("*.h")) + [port / "mg_port.h", out / f"{CONFIG_NAME}.h"]
    includes = [f"-I{folder}", f"-I{port}", f"-I{out}"]
    program = [
        f"-DMG_ROBOT={name}",
        f"-DMG_ROBOT_UPPER={name.upper()}",
        f'-DMG_RT_HEADER="{name}_rt.h"',
        f"-DMG_CONFIG={CONFIG_NAME}",
        f'-DMG_CONFIG_HEADER="{CONFIG_NAME}.h"',
    ]
    main, cmd = _object(
        cc, resource_dir("runtime") / "linux" / "rt_linux.c", includes + program, [*headers, port / "mg_frame.h"]
    )
    config = _object(cc, out / f"{CONFIG_NAME}.c", includes, headers)[0]
    # the generated folder's own files see only the folder: one object whatever the build folder
    generated = [
        _object(cc, folder / f"{name}_{part}.c", [f"-I{folder}"], headers[:-2])[0] for part in ("rt", "dynamics")
    ]
    objects = [main, config, *generated]
    exe = out / f"{name}_rt_linux"
    _compile([cc, *(str(o) for o in objects), "-o", str(exe), "-lm"], exe.name)
    return exe, cmd


@dataclass
class UdpPlant:
    """``simulate``'s step: sample k's input to the program as a datagram (none for the samples in
    ``drop``: a datagram lost on purpose), its output back."""

    sock: socket.socket
    rt: Realtime
    drop: frozenset[int] = frozenset()
    sample: int = 0
    latency_ns: list[int] = field(default_factory=list)  # per sample from 1: the wake-up's latency
    step_ns: list[int] = field(default_factory=list)  # per sample: wake-up to rt_step's return
    held: list[int] = field(default_factory=list)  # samples the program ran on held inputs
    ignored: int = 0  # datagrams that were not the output awaited (a repeated hello, a damaged one)
    fifo: bool = False  # the plant ran under SCHED_FIFO

    def receive(self, want: str, counter: int | None = None) -> Frame:
        deadline = time.monotonic() + ANSWER_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                break
            got = parse(data)
            if got is not None and got.intact and got.kind == want and counter in (None, got.counter):
                return got
            self.ignored += 1
        raise TargetError(f"the program sent no {want!r} datagram within {ANSWER_SECONDS:g} s (has it stopped?)")

    def __call__(self, c_in: Any, c_out: Any) -> None:
        k = self.sample
        self.sample += 1
        if k not in self.drop:
            self.sock.send(frame("I", k, bytes(self.rt.ffi.buffer(c_in))))
        got = self.receive("O", k)
        n = len(c_out.tau_cmd)
        real = self.rt.ffi.sizeof(c_out.tau_cmd) // n
        if len(got.payload) != COUNTS.size + FLAGS.size + n * real:
            raise TargetError(f"sample {k}: an output of {len(got.payload)} bytes (the program is another pipeline?)")
        latency, step, *_ = COUNTS.unpack_from(got.payload)
        if k > 0:
            self.latency_ns.append(latency)
        self.step_ns.append(step)
        collision, fault, ready, held = FLAGS.unpack_from(got.payload, COUNTS.size)
        if held:
            self.held.append(k)
        tau = np.frombuffer(got.payload[COUNTS.size + FLAGS.size :], "<f8" if real == 8 else "<f4")
        c_out.tau_cmd = [float(v) for v in tau]
        c_out.collision, c_out.fault, c_out.ready = collision, fault, ready


@dataclass
class HeldReplay:
    """``simulate``'s step on this processor, with the program's handling of a missing datagram: a
    sample in ``held`` runs on the last input received, every encoder marked lost (rt_linux.c's
    hold())."""

    rt: Realtime
    held: frozenset[int]
    sample: int = 0
    last: bytes = b""

    def __call__(self, c_in: Any, c_out: Any) -> None:
        ffi, k = self.rt.ffi, self.sample
        self.sample += 1
        given = ffi.new(f"{self.rt.name}_rt_input_t *")
        if k in self.held:
            ffi.buffer(given)[:] = self.last
            given.valid = [0] * len(given.valid)
            if "motor_valid" in (self.rt.input_dtype.names or ()):
                given.motor_valid = [0] * len(given.motor_valid)
        else:
            ffi.buffer(given)[:] = bytes(ffi.buffer(c_in))
        self.last = bytes(ffi.buffer(given))
        self.rt._step(self.rt._rt, given, c_out)


@contextmanager
def plant_priority(priority: int) -> Iterator[bool]:
    """This thread (the plant's) under SCHED_FIFO at ``priority`` (0: unchanged) while in the block,
    where permitted (yields whether it is); the policy it had afterwards. A robot's controller is a
    real-time task too: under load, a plant at the default policy answers late and the program runs
    samples on held inputs (counted; the run then departs from the host loopback's)."""
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    fifo = False
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            fifo = True
        except PermissionError:
            pass
    try:
        yield fifo
    finally:
        if fifo:
            os.sched_setscheduler(0, before[0], before[1])


def run_linux(
    exe: Path,
    rt: Realtime,
    trajectory: Trajectory,
    tau_ext: np.ndarray,
    drop: frozenset[int] = frozenset(),
    priority: int = PLANT_PRIORITY,
) -> tuple[Run, UdpPlant, tuple[int, ...], list[str], float]:
    """The closed loop with the step in the program: (the run, the plant's record, the program's final
    counts (FINAL), what it said on stderr, wall seconds); the plant at SCHED_FIFO ``priority`` where
    permitted (``plant_priority``; UdpPlant.fifo says)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    t0 = time.perf_counter()
    prog = subprocess.Popen([str(exe), "127.0.0.1", str(sock.getsockname()[1])], stderr=subprocess.PIPE)
    try:
        plant = UdpPlant(sock, rt, drop)
        data = parse_hello(plant, rt)
        sock.connect(data)
        sock.send(frame("S", 0, struct.pack("<I", len(trajectory.time))))
        with plant_priority(priority) as plant.fifo:
            gc.disable()  # no collection pause in the plant's samples
            try:
                run = simulate(rt, trajectory, tau_ext=tau_ext, step=plant)
            finally:
                gc.enable()
        final = FINAL.unpack(plant.receive("F").payload)
        code = prog.wait(timeout=ANSWER_SECONDS)
        said = prog.stderr.read().decode(errors="replace") if prog.stderr else ""
        if code != 0:
            raise TargetError(f"{exe.name} exited with {code}: {said.strip()}")
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()
        if prog.stderr:
            prog.stderr.close()
        sock.close()
    return run, plant, final, [line for line in said.splitlines() if line], time.perf_counter() - t0


def parse_hello(plant: UdpPlant, rt: Realtime) -> tuple[str, int]:
    """The program's hello checked against rt (input struct size, period); its address."""
    deadline = time.monotonic() + ANSWER_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        plant.sock.settimeout(left)
        try:
            data, address = plant.sock.recvfrom(65536)
        except TimeoutError:
            break
        got = parse(data)
        if got is None or not got.intact or got.kind != "H":
            continue
        size, period_ns, *_ = HELLO.unpack(got.payload)
        if size != rt.ffi.sizeof(f"{rt.name}_rt_input_t") or period_ns != round(rt.sample_period * 1e9):
            raise TargetError(f"the program's input struct ({size} B) or period ({period_ns} ns) is not {rt.label}'s")
        return address
    raise TargetError(f"the program did not say hello within {ANSWER_SECONDS:g} s")


def compare(host: Run, target: Run) -> dict[str, Any]:
    """The trajectories' largest |q difference|, the torques', the first flagged samples."""
    first = [np.flatnonzero(r.out["collision"]) for r in (host, target)]
    at = [int(f[0]) if f.size else None for f in first]
    return {
        "max_q_difference": float(np.max(np.abs(target.log.extra["q_true"] - host.log.extra["q_true"]))),
        "max_tau_difference": float(np.max(np.abs(target.out["tau_cmd"] - host.out["tau_cmd"]))),
        "collision_sample_host": at[0],
        "collision_sample_target": at[1],
        "same_collision_sample": at[0] is not None and at[0] == at[1],
    }


def linux(
    robot: Robot,
    out: Path,
    options: dict[str, str | None] | None = None,
    drop: frozenset[int] = frozenset(),
    seconds: float = 8.0,
    cc: str = "cc",
    plant: int = PLANT_PRIORITY,
) -> dict[str, Any]:
    """The JSON document of `manipgen target linux` (``drop``: samples whose input datagram the plant
    does not send; ``seconds``: the scenario's length, the push at half time; ``plant``: the plant's
    SCHED_FIFO priority where permitted, 0 for the default policy)."""
    rt = load_rt(robot, precision="double", **(options or {}))  # type: ignore[arg-type]
    if "tau_cmd" not in (rt.output_dtype.names or ()):
        raise ValueError(f"{rt.label}: no controller (out.tau_cmd): the real-time loop needs a closed loop")
    traj, tau_ext, host, onset = scenario(robot, rt, seconds)
    if any(not 0 < k < len(traj.time) for k in drop):
        raise ValueError(f"--drop: sample numbers 1..{len(traj.time) - 1} (sample 0's input starts the loop)")
    exe, cmd = build_linux(rt, out, cc)
    run, udp, final, said, wall = run_linux(exe, rt, traj, tau_ext, drop, plant)
    same_losses = simulate(rt, traj, tau_ext=tau_ext, step=HeldReplay(rt, frozenset(udp.held)))
    latency = np.asarray(udp.latency_ns, float) / 1e3
    first = udp.held[0] if udp.held else None
    end = len(traj.time) - 1 if first is None else first
    q_run, q_host = run.log.extra["q_true"], host.log.extra["q_true"]
    steps, missed, held, late, corrupted, max_latency, max_busy, skipped, fifo, locked, _, _ = final
    return {
        "robot": rt.name,
        "pipeline": rt.label,
        "precision": "double",
        "samples": int(len(traj.time)),
        "steps": steps,
        "period_s": rt.sample_period,
        "push_onset_s": onset,
        **compare(host, run),
        # sample h held changes the torques of h, so q up to h is the host loopback's whatever the load
        "first_held_sample": first,
        "max_q_difference_to_first_held": float(np.max(np.abs(q_run[: end + 1] - q_host[: end + 1]))),
        "same_losses": compare(same_losses, run),
        "missed_deadlines": missed,
        "periods_skipped": skipped,
        "datagrams_lost": held,
        "datagrams_late": late,
        "datagrams_corrupted": corrupted,
        "dropped_on_purpose": sorted(drop),
        "held_samples": udp.held[:100],
        "latency_us": {
            **{f"p{p:g}".replace(".", "_"): float(np.percentile(latency, p, method="higher")) for p in PERCENTILES},
            "max": max_latency / 1e3,
        },
        "step_us": {"mean": float(np.mean(udp.step_ns)) / 1e3, "max": float(np.max(udp.step_ns)) / 1e3},
        "busy_us_max": max_busy / 1e3,
        "realtime": {
            "sched_fifo": bool(fifo),
            "memory_locked": bool(locked),
            "said": said,
            "plant_sched_fifo": udp.fifo,
        },
        "load_average_1min": os.getloadavg()[0],
        "build": " ".join(cmd),
        "wall_seconds": wall,
    }


def table(doc: dict[str, Any]) -> str:
    lat, same = doc["latency_us"], doc["same_losses"]
    rt = doc["realtime"]
    policy = ("SCHED_FIFO" if rt["sched_fifo"] else "the default policy") + (
        ", memory locked" if rt["memory_locked"] else ", memory not locked"
    )
    return (
        f"# {doc['robot']} ({doc['precision']}, {doc['pipeline']}): real-time Linux loop over UDP, "
        f"{doc['steps']} of {doc['samples']} samples at {1 / doc['period_s']:g} Hz ({policy})\n\n"
        f"- wake-up latency: p50 {lat['p50']:.1f} us, p99 {lat['p99']:.1f} us, p99.9 {lat['p99_9']:.1f} us, "
        f"max {lat['max']:.1f} us; the step {doc['step_us']['mean']:.1f} us mean, {doc['step_us']['max']:.1f} max\n"
        f"- deadlines missed: {doc['missed_deadlines']} ({doc['periods_skipped']} periods skipped); datagrams lost or "
        f"late {doc['datagrams_lost']} "
        f"(late {doc['datagrams_late']}, dropped on purpose {len(doc['dropped_on_purpose'])}), corrupted "
        f"{doc['datagrams_corrupted']}\n"
        f"- against the host loopback: max |q difference| {doc['max_q_difference']:.3g} rad, collision at sample "
        f"{doc['collision_sample_target']} (host {doc['collision_sample_host']}; push at {doc['push_onset_s']:g} s)\n"
        f"- up to the first sample held ({doc['first_held_sample']}): max |q difference| "
        f"{doc['max_q_difference_to_first_held']:.3g} rad\n"
        f"- against the host loopback with the same samples held: max |q difference| "
        f"{same['max_q_difference']:.3g} rad, same collision sample: {same['same_collision_sample']}\n"
        f"- load average (1 min) {doc['load_average_1min']:.2f}\n"
    )
