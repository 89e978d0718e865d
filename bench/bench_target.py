#!/usr/bin/env python3
"""Footprint and timing of the generated real-time step on Cortex-M (QEMU), in one run.

For each robot (default: kuka_iiwa14 and franka_panda) and each CPU x precision (cortex-m4f,
cortex-m33 and cortex-m7, float and double), the demo's closed-loop collision run (Kalman, momentum observer with
thresholds, computed torque, a 30 N push at 4 s; 8 s at 1 kHz) is recorded on the host, then
`host_tools.target.cortex_m` cross-builds the pipeline with runtime/target/Makefile, runs every sample
through `rt_step` in QEMU and compares with the host build of the same precision. Printed per
combination: flash (library .text + .rodata in the linked image), RAM (library .data + .bss + one
pipeline instance), stack (static worst case of rt_step's call tree, and the deepest QEMU saw),
instructions per step (worst and mean, from SysTick under -icount), the largest host-vs-target
difference relative to each output's range, and the ratio of the worst step to issue 8's goal
(25 000 instructions: 1 kHz with margin at 168 MHz on an M4F, 400 MHz on an M7) and to Birjandi & Haddadin's
compute figure (415 µs per 1 ms step on an i7), counting one instruction per cycle at the CPU's
clock. No other implementation runs on the target: the host build of the same precision is the
reference for the outputs, and bench_rt.py compares the step with a textbook observer on the host.

    .venv/bin/python bench/bench_target.py [--robots kuka_iiwa14] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen.emit.cprint import Precision  # noqa: E402
from codegen.model.description import load_robot  # noqa: E402
from host_tools.bindings.rt import fill_inputs, load_rt  # noqa: E402
from host_tools.studies.scenarios import collision  # noqa: E402
from host_tools.target import cortex_m as tg  # noqa: E402

GOAL = 25_000
CLOCK = {cpu: c.board_hz for cpu, c in tg.CPUS.items()}  # e.g. STM32F4, STM32H7, STM32U5
COMBOS: tuple[tuple[str, Precision], ...] = (
    ("cortex-m4f", "float"),
    ("cortex-m33", "float"),
    ("cortex-m7", "double"),
    ("cortex-m7", "float"),
    ("cortex-m4f", "double"),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=["kuka_iiwa14", "franka_panda"])
    ap.add_argument("--json", help="also write every report to this file")
    args = ap.parse_args()
    rows, docs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for robot in args.robots:
            rt_double = load_rt(robot)
            scenario = collision(load_robot(robot), rt=rt_double)
            for cpu, precision in COMBOS:
                rt = load_rt(robot, precision=precision)
                for key in rt_double.config.keys():
                    rt.config[key] = rt_double.config[key]
                inputs = rt.inputs(len(scenario.hit.log))
                fill_inputs(inputs, scenario.hit.log.inputs())
                b = tg.build(rt, cpu, Path(tmp) / f"{robot}-{cpu}-{precision}")
                doc = tg.report(b, rt, inputs, tg.run_firmware(b, rt, rt.config_bytes(), inputs))
                docs.append(doc)
                us = doc["instructions_per_step"] / CLOCK[cpu] * 1e6
                rows.append(
                    (
                        robot,
                        cpu,
                        precision,
                        doc["flash_bytes"],
                        doc["ram_bytes"],
                        doc["stack_bytes"],
                        doc["stack_measured_bytes"],
                        doc["instructions_per_step"],
                        doc["instructions_mean"],
                        doc["instructions_per_step"] / GOAL,
                        us,
                        415.0 / us,
                        doc["max_rel_error"],
                        doc["max_rel_error_component"],
                        doc["same_collision_sample"],
                        doc["stack_bytes"] / 4096,
                    )
                )
                print(f"{robot} {cpu} {precision}: done ({doc['qemu_seconds']:.1f} s in QEMU)", file=sys.stderr)
    print(
        "| robot | cpu | precision | flash (B) | RAM (B) | stack static / QEMU (B) | static stack / 4 KiB "
        "| instructions worst / mean | worst / 25 000 | µs at clock (1 IPC) | Birjandi & Haddadin's 415 µs / ours "
        "| max error / output range | / joint range | same flag sample |"
    )
    print("| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} / {r[6]} | {r[15]:.2f} | {r[7]} / {r[8]:.0f} "
            f"| {r[9]:.2f} | {r[10]:.1f} | {r[11]:.2g}x | {r[12]:.1e} | {r[13]:.1e} | {r[14]} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(docs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
