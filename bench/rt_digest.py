#!/usr/bin/env python3
"""Digest of the generated real-time step's outputs and state over a run with a collision: run it in
two checkouts to show that a change of the step's C leaves every bit as it was.

For each pipeline (default: the iiwa's momentum observer alone, with computed torque, the
model-adaptive observer in momentum form with computed torque, and planar2's momentum observer with
PID) and each reaction (none, stop, reflex), a C program steps ``<robot>_rt_step`` ``--steps`` times
(5,000) on a smooth periodic motion turned into encoder counts (the bench's motion, ``bench_rt.py``),
with ``tau`` = the model's inverse dynamics along it, one joint's sample lost every 97 steps, a
threshold of 5 N m (m: N) on every joint (a standstill part ks = 1 N m on the first), the latch
reset at steps 1,000 and 1,999 (the start's transient latches it first) and an external push of
50 N m on the middle joint from step 2,000 on, so a collision latches again and the reaction runs.
The program hashes (FNV-1a, 64 bits) the output struct and the state, field by field as the manifest
lists the blocks' state (then ``first``, ``config_fault``, ``steps``), after every step, and prints
the two digests with the step of the last detection and the isolated link. ``--except kind.field
...`` leaves state fields out (a field one checkout adds: e.g. a value derived from the config), so
that the digests of two struct layouts compare. The step is compiled with the bench's flags
(``-O2``) and the host build's (``host_tools.bindings.build``); both digests are printed.

Usage::

    PYTHONPATH=<checkout> .venv/bin/python <checkout>/bench/rt_digest.py > digest.txt

and ``diff`` the files of two checkouts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PIPELINES = (
    ("kuka_iiwa14", "momentum", "none"),
    ("kuka_iiwa14", "momentum", "computed_torque"),
    ("kuka_iiwa14", "adaptive_momentum", "computed_torque"),
    ("planar2", "momentum", "pid"),
)


def flag_sets() -> tuple[tuple[str, ...], ...]:
    """The bench's flags for the step, and the host build's (host_tools.bindings.build: its CFLAGS,
    HOST_ISA, then STEP_FLAGS)."""
    from host_tools.bindings.build import CFLAGS, HOST_ISA, STEP_FLAGS

    return (("-O2",), (*CFLAGS, *HOST_ISA, *STEP_FLAGS))


C_MAIN = r"""/* emitted by bench/rt_digest.py */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "@P@_rt.h"

#define DOF @DOF@
#define NSAMP 1000
typedef @P@_real_t real_t;

static @P@_rt_config_t CFG;
static @P@_rt_t RT;
static @P@_rt_output_t OUT;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t k;
    for (k = 0; k < n; ++k) {
        h ^= b[k];
        h *= 1099511628211ull;
    }
    return h;
}

int main(int argc, char **argv)
{
    const long steps = atol(argv[1]);
    const int reaction = atoi(argv[2]);
    const double ts = (double)@PU@_RT_SAMPLE_PERIOD, w = 2.0 * 3.141592653589793 / (NSAMP * ts);
    uint64_t h_out = 1469598103934665603ull, h_state = 1469598103934665603ull;
    long k, hit = -1;
    unsigned latched = 0u;
    int i;
    static @P@_rt_input_t in;
    CFG = @P@_rt_default_config;
    for (i = 0; i < DOF; ++i) CFG.det.threshold[i] = 5.0;
    CFG.det.ks[0] = 1.0;  /* the standstill part runs on the first joint */
    CFG.det.reaction = (uint8_t)reaction;
    @P@_rt_init(&RT, &CFG);
    for (k = 0; k < steps; ++k) {
        real_t q[DOF], qd[DOF], qdd[DOF], tau[DOF];
        double t = (double)(k % NSAMP) * ts;
        memset(&in, 0, sizeof in);
        for (i = 0; i < DOF; ++i) {
            double a = 0.1 + 0.01 * i, c = 0.25 * (double)(i % 3) - 0.25, phi = 0.7 * i;
            double rpc = 2.0 * 3.141592653589793 / (double)CFG.enc.cpr[i];
            double cnt;
            q[i] = (real_t)(c + a * sin(w * t + phi));
            qd[i] = (real_t)(a * w * cos(w * t + phi));
            qdd[i] = (real_t)(-a * w * w * sin(w * t + phi));
            cnt = ((double)q[i] - (double)CFG.enc.offset[i]) * (double)CFG.enc.gear[i]
                  * (double)CFG.enc.direction[i] / rpc;
            in.counts[i] = (uint32_t)(uint64_t)(int64_t)llround(cnt);
            in.valid[i] = (k % 97 == 13 && i == (int)(k % DOF)) ? 0u : 1u;
            in.q_des[i] = q[i];
            in.qd_des[i] = qd[i];
            in.qdd_des[i] = qdd[i];
        }
        in.reset = (k == 1000 || k == 1999) ? 1u : 0u;
        @P@_rnea(q, qd, qdd, tau);
        if (k >= 2000) tau[DOF / 2] += (real_t)50.0;
        memcpy(in.tau, tau, sizeof in.tau);
        @P@_rt_step(&RT, &in, &OUT);
        if (OUT.collision != 0u && latched == 0u) hit = k;
        latched = OUT.collision;
        h_out = fnv(h_out, &OUT, sizeof OUT);
@STATE@
        h_state = fnv(h_state, &RT.first, sizeof RT.first);
        h_state = fnv(h_state, &RT.config_fault, sizeof RT.config_fault);
        h_state = fnv(h_state, &RT.steps, sizeof RT.steps);
    }
    printf("outputs %016llx state %016llx last detection at step %ld link %d\n", (unsigned long long)h_out,
           (unsigned long long)h_state, hit, (int)OUT.link);
    return 0;
}
"""


def digest_lines(
    robot_name: str, observer: str, controller: str, steps: int, work: Path, skip: frozenset[str]
) -> list[str]:
    from codegen.blocks.options import RtOptions
    from codegen.emit.generate import generate
    from codegen.model.description import load_robot

    robot = load_robot(robot_name)
    opts = RtOptions(observer=observer, controller=controller)
    folder = generate(robot, "double", opts).write(work / f"{robot_name}_{observer}_{controller}")
    manifest = json.loads((folder / "manifest.json").read_text())
    p, dof = manifest["robot"], int(manifest["dof"])
    fields = [
        f"RT.{b['kind']}.{name}"
        for b in manifest["rt"]["blocks"]
        for name, _, _ in b["state"]
        if f"{b['kind']}.{name}" not in skip
    ]
    state = "\n".join(f"        h_state = fnv(h_state, &{f}, sizeof {f});" for f in fields)
    main = C_MAIN.replace("@STATE@", state).replace("@PU@", p.upper()).replace("@P@", p).replace("@DOF@", str(dof))
    (folder / "digest_main.c").write_text(main)
    cc = shutil.which("gcc") or "gcc"
    inc = ["-std=c99", "-I", str(folder)]
    dyn = folder / "dynamics.o"
    subprocess.run([cc, *inc, "-O2", "-c", str(folder / f"{p}_dynamics.c"), "-o", str(dyn)], check=True)
    main_o = folder / "digest_main.o"
    subprocess.run([cc, *inc, "-O2", "-c", str(folder / "digest_main.c"), "-o", str(main_o)], check=True)
    lines = []
    for flags in flag_sets():
        rt_o, exe = folder / "rt.o", folder / "digest"
        subprocess.run([cc, *inc, *flags, "-c", str(folder / f"{p}_rt.c"), "-o", str(rt_o)], check=True)
        subprocess.run([cc, str(main_o), str(rt_o), str(dyn), "-o", str(exe), "-lm"], check=True)
        for reaction, name in enumerate(("none", "stop", "reflex")):
            out = subprocess.run([str(exe), str(steps), str(reaction)], check=True, capture_output=True, text=True)
            lines.append(
                f"{robot_name} {observer} + {controller} {' '.join(flags)} reaction {name}: {out.stdout.strip()}"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5000, help="steps per run (default 5000)")
    ap.add_argument("--except", dest="skip", nargs="*", default=[], help="state fields left out (kind.field)")
    ap.add_argument(
        "--pipelines",
        nargs="*",
        metavar="ROBOT:OBSERVER:CONTROLLER",
        help="the pipelines to digest (default: the four above)",
    )
    args = ap.parse_args(argv)
    pipelines = [tuple(x.split(":")) for x in args.pipelines] if args.pipelines else PIPELINES
    if any(len(x) != 3 for x in pipelines):
        ap.error("--pipelines: each as ROBOT:OBSERVER:CONTROLLER, e.g. planar2:momentum:pid")
    with tempfile.TemporaryDirectory(prefix="manipgen_rt_digest_") as tmp:
        for robot_name, observer, controller in pipelines:
            print(
                "\n".join(digest_lines(robot_name, observer, controller, args.steps, Path(tmp), frozenset(args.skip))),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
