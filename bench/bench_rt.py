#!/usr/bin/env python3
"""Benchmark the generated real-time step ``<robot>_rt_step`` on this machine, in one run.

For each robot (default: the 7-DoF ``kuka_iiwa14`` and ``franka_panda``) and each pipeline
(estimator + observer + controller, run-time or constant parameters):

1. the pipeline is generated (``generate(robot, "double", RtOptions(...)).write``) into a temporary
   folder. ``<robot>_dynamics.c`` does not depend on the real-time options: the script checks that
   its content is the same for every pipeline and compiles it once per robot (``gcc -std=c99 -O2``);
   ``<robot>_rt.c`` is compiled per pipeline (same flags, plus ``-fstack-usage``);
2. a benchmark ``main`` emitted by this script feeds ``rt_step`` a plausible, changing input: a
   smooth periodic joint motion (one period = ``NSAMP`` = 1000 samples of 1 ms, amplitudes 0.1-0.16
   rad, so |qd| <= 1 rad/s) turned into encoder counts with the pipeline's own encoder configuration
   (65536 counts per revolution where the description gives no encoder), ``valid`` = 1, ``tau`` = the model's
   inverse dynamics ``<robot>_rnea`` along the motion (so the residual stays near zero), and the
   same motion as the desired trajectory. Collision thresholds are set to 1e9 (no latch). The
   inputs are precomputed, cycled through, and one element of a few outputs per step goes into an
   accumulator that ends in a ``volatile`` sink; the generated code is a separate object linked
   without LTO. ns per step: median (best) of ``--reps`` repetitions, over ``--rounds`` rounds
   that alternate between all pipelines of a robot;
3. instructions per step: the same program under ``valgrind --tool=callgrind``, once with 0 steps
   and once with ``--cg-steps`` steps; the difference of the total ``Ir`` over the step count;
4. stack: ``rt_step``'s own frame and its worst path through its callees (gcc ``-fstack-usage``,
   ``-fcallgraph-info=su``; the callees in ``<robot>_rt.c``, plus the deepest ``<robot>_dynamics.c``
   function the step calls, e.g. ``forward_dynamics_p`` for the model-based estimators; libm not
   included), and the largest frame of a static function that gcc kept out of line;
5. a peer, timed in the same program: the momentum observer written the textbook way with the
   generated dynamics functions (``mass_matrix`` then p = M qd, ``coriolis_matrix`` then C^T qd,
   ``gravity``, ``friction``, and the observer update), compared with the observer part of our step
   (kalman + momentum + thresholds minus kalman alone).

Nothing here asserts on timings: it measures and prints.

Usage::

    .venv/bin/python bench/bench_rt.py [--quick] [--robots kuka_iiwa14 franka_panda]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Shared helpers of the dynamics benchmark (running commands, tables, stack usage).
from bench_dynamics import CBuild, cpu_model, print_table, run, stack_usage, tool_version  # noqa: E402

from codegen.blocks import registry  # noqa: E402

ESTIMATORS = tuple(registry.estimators())  # every registered one
QUICK_ESTIMATORS = ("findiff", "kalman")
NSAMP = 1000  # samples in one period of the input motion (cycled)
GOAL_NS = 1000.0  # goal for kalman + momentum + thresholds on a 7-DoF arm
GOAL_INSTR = 10_000.0
GOAL_INSTR_47 = 2_500.0  # issue #47: the same pipeline on the host, run-time parameters
C_FLAGS = ("-std=c99", "-O2")  # --flags generic: any x86-64 (and what the goals of #7 and #47 were set on)


@dataclass(frozen=True)
class Flags:
    """How the benchmark compiles: ``common`` every unit, ``step`` the step's ``<robot>_rt.c`` after them."""

    name: str
    common: tuple[str, ...]
    step: tuple[str, ...] = ()


def flags(name: str) -> Flags:
    """``generic``: C_FLAGS for baseline x86-64; ``host``: what manipgen's own host build compiles
    (host_tools.bindings.build: CFLAGS and, on an AVX2 machine, -mavx2; STEP_FLAGS for the step),
    i.e. the step every simulation, test and study on this machine runs."""
    if name == "generic":
        return Flags(name, C_FLAGS)
    from host_tools.bindings.build import CFLAGS, HOST_ISA, STEP_FLAGS

    return Flags(name, (*CFLAGS, *HOST_ISA), STEP_FLAGS)


@dataclass(frozen=True)
class Pipeline:
    key: str
    estimator: str
    observer: str = "momentum"
    controller: str = "none"
    constant_params: bool = False

    @property
    def label(self) -> str:
        return f"{self.estimator} + {self.observer} + {self.controller}" + (
            " (const params)" if self.constant_params else ""
        )


# Pipelines the summary lines refer to.
MAIN = Pipeline("kalman", "kalman")  # the goal's pipeline
MAIN_CONST = Pipeline("kalman_const", "kalman", constant_params=True)
EST_ONLY = Pipeline("kalman_noobs", "kalman", observer="none")
EST_ONLY_CONST = Pipeline("kalman_noobs_const", "kalman", observer="none", constant_params=True)
ADAPTIVE = Pipeline("kalman_adaptive", "kalman", observer="adaptive")  # Birjandi & Haddadin's observer (issue #7)
ADAPTIVE_GOAL_NS = 5000.0  # issue #7: <= 5 us per model-adaptive step on a 7-DoF arm
BIRJANDI_US = 415.0  # Birjandi & Haddadin §V: 415 us per 1 ms step (Simulink on an i7)


def pipelines(quick: bool) -> list[Pipeline]:
    out = [Pipeline(e, e) if e != "kalman" else MAIN for e in (QUICK_ESTIMATORS if quick else ESTIMATORS)]
    if not quick:
        out += [
            Pipeline("kalman_ct", "kalman", controller="computed_torque"),
            Pipeline("kalman_pid", "kalman", controller="pid"),
        ]
    out += [MAIN_CONST, EST_ONLY, EST_ONLY_CONST, ADAPTIVE]
    return out


# --------------------------------------------------------------------------------------------
# The C benchmark program
# --------------------------------------------------------------------------------------------
C_MAIN_TEMPLATE = r"""/* Benchmark main emitted by bench/bench_rt.py - not part of the generated code. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "@P@_rt.h"

#define DOF @DOF@
#define NSAMP @NSAMP@
#define HAS_DET @HAS_DET@
#define TS ((double)@PU@_RT_SAMPLE_PERIOD)
#define PEER_KO 25.0
typedef @P@_real_t real_t;

static @P@_rt_input_t IN[NSAMP];
static real_t QS[NSAMP][DOF], QDS[NSAMP][DOF], TAUS[NSAMP][DOF];
static @P@_rt_config_t CFG;
static @P@_rt_t RT;
static @P@_rt_output_t OUT;
static real_t PI[@NSTD@];
volatile double bench_sink;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A smooth motion with period NSAMP samples: q_i = c_i + a_i sin(w t + phi_i). */
static void setup(void)
{
    const double w = 2.0 * 3.141592653589793 / (NSAMP * TS);
    int k, i;
    real_t qdd[DOF];
    CFG = @P@_rt_default_config;
#if HAS_DET
    for (i = 0; i < DOF; ++i) CFG.det.threshold[i] = 1e9;  /* no collision latches during the run */
#endif
    memcpy(PI, @P@_standard_parameters, sizeof PI);
    memset(IN, 0, sizeof IN);
    for (k = 0; k < NSAMP; ++k) {
        double t = k * TS;
        for (i = 0; i < DOF; ++i) {
            double a = 0.1 + 0.01 * i, c = 0.25 * (double)(i % 3) - 0.25, phi = 0.7 * i;
            double rpc = 2.0 * 3.141592653589793 / (double)CFG.enc.cpr[i];
            double cnt;
            QS[k][i] = (real_t)(c + a * sin(w * t + phi));
            QDS[k][i] = (real_t)(a * w * cos(w * t + phi));
            qdd[i] = (real_t)(-a * w * w * sin(w * t + phi));
            cnt = ((double)QS[k][i] - (double)CFG.enc.offset[i]) * (double)CFG.enc.gear[i]
                  * (double)CFG.enc.direction[i] / rpc;
            IN[k].counts[i] = (uint32_t)(uint64_t)(int64_t)llround(cnt);
            IN[k].valid[i] = 1u;
            IN[k].q_des[i] = QS[k][i];
            IN[k].qd_des[i] = QDS[k][i];
            IN[k].qdd_des[i] = qdd[i];
        }
        @P@_rnea(QS[k], QDS[k], qdd, TAUS[k]);   /* the torque the motion needs (friction included) */
        memcpy(IN[k].tau, TAUS[k], sizeof IN[k].tau);
    }
}

/* One real-time step; returns a few output elements for the accumulator. */
static double rt_one(int k)
{
    @P@_rt_step(&RT, &IN[k], &OUT);
    return (double)OUT.qd_hat[k % DOF]@ACC@;
}

/* The peer: the momentum observer written by hand with the generated dynamics functions. */
static real_t PEER_P0[DOF], PEER_I[DOF], PEER_R[DOF];
static int peer_first = 1;
#define PEER_BODY(MASS, CORIOLIS, GRAVITY, FRICTION)                                    \
    real_t M[DOF * DOF], C[DOF * DOF], g[DOF], f[DOF], p[DOF], ctq[DOF];                \
    const real_t *q = QS[k], *qd = QDS[k];                                              \
    int i, j;                                                                           \
    MASS;                                                                               \
    for (i = 0; i < DOF; ++i) {                                                         \
        real_t s = 0;                                                                   \
        for (j = 0; j < DOF; ++j) s += M[i * DOF + j] * qd[j];                          \
        p[i] = s;                                                                       \
    }                                                                                   \
    CORIOLIS;                                                                           \
    for (i = 0; i < DOF; ++i) {                                                         \
        real_t s = 0;                                                                   \
        for (j = 0; j < DOF; ++j) s += C[j * DOF + i] * qd[j];                          \
        ctq[i] = s;                                                                     \
    }                                                                                   \
    GRAVITY;                                                                            \
    FRICTION;                                                                           \
    if (peer_first) {                                                                   \
        memcpy(PEER_P0, p, sizeof p);                                                   \
        memset(PEER_I, 0, sizeof PEER_I);                                               \
        memset(PEER_R, 0, sizeof PEER_R);                                               \
        peer_first = 0;                                                                 \
    } else {                                                                            \
        for (i = 0; i < DOF; ++i) {                                                     \
            real_t beta = g[i] - ctq[i] + f[i];                                         \
            PEER_I[i] += (real_t)TS * (TAUS[k][i] - beta + PEER_R[i]);                  \
            PEER_R[i] = (real_t)PEER_KO * (p[i] - PEER_P0[i] - PEER_I[i]);              \
        }                                                                               \
    }                                                                                   \
    return (double)PEER_R[k % DOF];

static double peer_one(int k)
{
    PEER_BODY(@P@_mass_matrix(q, M), @P@_coriolis_matrix(q, qd, C), @P@_gravity(q, g),
              @P@_friction(qd, f))
}

static double peer_p_one(int k)
{
    PEER_BODY(@P@_mass_matrix_p(q, PI, M), @P@_coriolis_matrix_p(q, qd, PI, C),
              @P@_gravity_p(q, PI, g), @P@_friction_p(qd, PI, f))
}

int main(int argc, char **argv)
{
    /* usage: bench time|count rt|peer|peer_p STEPS [REPS] */
    const int timed = argc > 1 && strcmp(argv[1], "time") == 0;
    const char *what = argc > 2 ? argv[2] : "rt";
    long steps = argc > 3 ? atol(argv[3]) : 100000;
    int reps = argc > 4 ? atoi(argv[4]) : 7;
    double (*one)(int) = strcmp(what, "peer") == 0 ? peer_one
                       : strcmp(what, "peer_p") == 0 ? peer_p_one : rt_one;
    double acc = 0.0, *times;
    long i;
    int r, k = 0;
    if (argc < 4 || steps < 0 || reps < 1) {
        fprintf(stderr, "usage: %s time|count rt|peer|peer_p STEPS [REPS]\n", argv[0]);
        return 2;
    }
    setup();
    @P@_rt_init(&RT, &CFG);
    if (!timed) {   /* for callgrind: setup + STEPS steps, nothing else */
        for (i = 0; i < steps; ++i) {
            acc += one(k);
            if (++k == NSAMP) k = 0;
        }
        bench_sink += acc;
        return 0;
    }
    times = (double *)malloc((size_t)reps * sizeof *times);
    if (times == NULL) return 1;
    for (i = 0; i < steps / 10 + NSAMP; ++i) {   /* warm-up, and past the first samples */
        acc += one(k);
        if (++k == NSAMP) k = 0;
    }
    for (r = 0; r < reps; ++r) {
        double t0 = now_ns();
        for (i = 0; i < steps; ++i) {
            acc += one(k);
            if (++k == NSAMP) k = 0;
        }
        times[r] = (now_ns() - t0) / (double)steps;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    printf("RESULT %s %.3f %.3f\n", what, times[0],
           (reps % 2) ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]));
    if (strcmp(what, "rt") == 0) {   /* sanity over one more period (not timed) */
        double qd_err = 0.0, r_max = 0.0;
        int n;
        for (n = 0; n < NSAMP; ++n) {
            acc += one(k);
            for (r = 0; r < DOF; ++r) {
                qd_err = fmax(qd_err, fabs((double)OUT.qd_hat[r] - (double)QDS[k][r]));
@RCHECK@
            }
            if (++k == NSAMP) k = 0;
        }
        printf("CHECK %.6g %.6g %d\n", qd_err, r_max, @COLLISION@);
    }
    bench_sink += acc;
    free(times);
    return 0;
}
"""


def emit_main(prefix: str, dof: int, n_std: int, rt: dict[str, Any]) -> str:
    outs = {name for name, kind, shape in rt["outputs"] if kind == "real" and shape == [dof]}
    acc = "".join(
        f" + (double)OUT.{name}[(k + {j}) % DOF]" for j, name in enumerate(("r", "tau_cmd"), 1) if name in outs
    )
    has_det = any(b["kind"] == "det" for b in rt["blocks"])
    rcheck = "                r_max = fmax(r_max, fabs((double)OUT.r[r]));" if "r" in outs else ""
    collision = "(int)OUT.collision" if any(o[0] == "collision" for o in rt["outputs"]) else "-1"
    text = C_MAIN_TEMPLATE
    for key, val in {
        "@PU@": prefix.upper(),
        "@P@": prefix,
        "@DOF@": str(dof),
        "@NSAMP@": str(NSAMP),
        "@HAS_DET@": "1" if has_det else "0",
        "@NSTD@": str(n_std),
        "@ACC@": acc,
        "@RCHECK@": rcheck,
        "@COLLISION@": collision,
    }.items():
        text = text.replace(key, val)
    return text


# --------------------------------------------------------------------------------------------
# Generation, builds, measurements
# --------------------------------------------------------------------------------------------
@dataclass
class Built:
    pipe: Pipeline
    folder: Path
    exe: Path
    rt_hash: str
    ops: int
    stack_step: tuple[int, int | None]  # rt_step own, worst path (dynamics callees included)
    stack_static: tuple[str, int] | None  # largest out-of-line static function
    dyn_calls: list[str]  # <p>_dynamics.c functions the step calls
    t_generate: float
    same_as: str | None = None  # key of an identical pipeline (measured once)
    ns: list[tuple[float, float]] = field(default_factory=list)  # (best, median) per round
    instr: float | None = None
    check: tuple[float, float, int] | None = None


def file_hash(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class DynObj:
    obj: Path
    stack: dict[str, tuple[int, str, int | None]]  # stack_usage() of the dynamics object


def build_pipeline(
    robot: Any,
    pipe: Pipeline,
    work: Path,
    dyn_objs: dict[str, DynObj],
    seen: dict[str, str],
    notes: list[str],
    cflags: Flags,
) -> Built:
    from codegen.blocks.options import RtOptions, parse_estimator
    from codegen.emit.generate import generate

    cc = os.environ.get("CC", "gcc")
    t0 = time.perf_counter()
    opts = RtOptions(
        estimator=parse_estimator(pipe.estimator),
        observer=pipe.observer,
        controller=pipe.controller,
        constant_params=pipe.constant_params,
    )
    folder = generate(robot, "double", opts).write(work / robot.c_name / pipe.key)
    t_gen = time.perf_counter() - t0
    manifest = json.loads((folder / "manifest.json").read_text())
    p, dof, rt = manifest["robot"], int(manifest["dof"]), manifest["rt"]
    rt_src = folder / f"{p}_rt.c"
    # identical code up to comments (the header names the options): measured once
    rt_hash = hashlib.sha256(
        "".join(re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S) for f in (rt_src, folder / f"{p}_rt.h")).encode()
    ).hexdigest()

    # <p>_dynamics.c does not depend on the rt options: compile it once per distinct content.
    dyn_key = file_hash(folder / f"{p}_dynamics.c", folder / f"{p}_dynamics.h")
    if dyn_key not in dyn_objs:
        obj = work / robot.c_name / f"dynamics_{dyn_key[:12]}.o"
        t1 = time.perf_counter()
        run(
            [
                cc,
                *cflags.common,
                "-I",
                str(folder),
                "-fstack-usage",
                "-fcallgraph-info=su",
                "-c",
                str(folder / f"{p}_dynamics.c"),
                "-o",
                str(obj),
            ]
        )
        if dyn_objs:
            notes.append(f"{p}: {pipe.label}: {p}_dynamics.c/.h differ from the first pipeline's (compiled again)")
        notes.append(
            f"{p}: {p}_dynamics.c compiled in {time.perf_counter() - t1:.1f} s "
            f"(sha256 {dyn_key[:12]}), reused by every pipeline with the same content"
        )
        dyn_objs[dyn_key] = DynObj(
            obj,
            stack_usage(CBuild(cflags.name, cflags.common, obj, obj.with_suffix(".su"), obj.with_suffix(".ci"), 0.0)),
        )
    dyn = dyn_objs[dyn_key]
    b = work / robot.c_name / f"build_{pipe.key}"
    b.mkdir(parents=True, exist_ok=True)
    (b / "bench_main.c").write_text(emit_main(p, dof, int(manifest["n_standard"]), rt))
    inc = ["-I", str(folder)]
    step = (*cflags.common, *cflags.step)
    run([cc, *step, *inc, "-fstack-usage", "-fcallgraph-info=su", "-c", str(rt_src), "-o", "rt.o"], cwd=b)
    run([cc, *cflags.common, *inc, "-Wall", "-c", "bench_main.c", "-o", "bench_main.o"], cwd=b)
    run([cc, *cflags.common, "bench_main.o", "rt.o", str(dyn.obj), "-o", "bench", "-lm"], cwd=b)

    su = stack_usage(CBuild(cflags.name, step, b / "bench", b / "rt.su", b / "rt.ci", 0.0))
    own, _, worst = su.get(f"{p}_rt_step", (-1, "?", None))
    # Calls into <p>_dynamics.c (model-based estimators): not in rt.ops, and their stack adds to
    # the step's worst path (-fcallgraph-info only follows callees in the same file).
    rt_text = rt_src.read_text()
    dyn_calls = [f["name"] for f in manifest["functions"] if re.search(rf"\b{p}_{f['name']}\(", rt_text)]
    if dyn_calls and worst is not None:
        callee = [dyn.stack.get(f"{p}_{f}", (0, "", None)) for f in dyn_calls]
        worst += max(c[2] if c[2] is not None else c[0] for c in callee)
    public = {f"{p}_rt_step", f"{p}_rt_init", f"{p}_rt_configure"}
    statics = [(n, v[0]) for n, v in su.items() if n not in public]
    built = Built(
        pipe,
        folder,
        b / "bench",
        rt_hash,
        sum(int(v) for v in rt["ops"].values()),
        (own, worst),
        max(statics, key=lambda x: x[1]) if statics else None,
        dyn_calls,
        t_gen,
    )
    if rt_hash in seen:
        built.same_as = seen[rt_hash]
    else:
        seen[rt_hash] = pipe.key
    return built


def time_exe(
    exe: Path, what: str, steps: int, reps: int
) -> tuple[tuple[float, float], tuple[float, float, int] | None]:
    out = run([str(exe), "time", what, str(steps), str(reps)])
    res, check = None, None
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["RESULT"]:
            res = (float(parts[2]), float(parts[3]))
        elif parts[:1] == ["CHECK"]:
            check = (float(parts[1]), float(parts[2]), int(parts[3]))
    if res is None:
        raise RuntimeError(f"{exe}: no RESULT line in\n{out}")
    return res, check


def callgrind_ir(valgrind: str, exe: Path, what: str, steps: int, tmp: Path) -> int:
    out_file = tmp / f"callgrind.{exe.parent.name}.{what}.{steps}.out"
    run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out_file}", str(exe), "count", what, str(steps)])
    total = None
    for line in out_file.read_text().splitlines():
        m = re.match(r"^(summary|totals):\s+(\d+)", line)
        if m:
            total = int(m.group(2))
            if m.group(1) == "summary":
                break
    if total is None:
        raise RuntimeError(f"no summary/totals line in {out_file}")
    return total


def instructions_per_step(valgrind: str | None, exe: Path, what: str, steps: int, tmp: Path) -> float | None:
    if valgrind is None:
        return None
    return (callgrind_ir(valgrind, exe, what, steps, tmp) - callgrind_ir(valgrind, exe, what, 0, tmp)) / steps


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
def median_ns(b: Built) -> float:
    return statistics.median(m for _, m in b.ns)


def best_ns(b: Built) -> float:
    return min(x for x, _ in b.ns)


def fmt_ratio(peer: float | None, ours: float | None) -> str:
    if peer is None or ours is None or ours <= 0:
        return "—"
    return f"{peer / ours:.2f}x"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--robots", nargs="+", default=["kuka_iiwa14", "franka_panda"], help="bundled robot names")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"estimators {', '.join(QUICK_ESTIMATORS)} only, no controllers, fewer steps (< 1 min)",
    )
    ap.add_argument("--steps", type=int, default=None, help="steps per timed repetition (default 50000; quick 20000)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions per round (default 7; quick 5)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds alternating over all pipelines of a robot; median of the round medians (default 3; quick 1)",
    )
    ap.add_argument(
        "--cg-steps", type=int, default=None, help="steps under callgrind, minus a 0-step run (default 2000; quick 500)"
    )
    ap.add_argument(
        "--flags",
        choices=("generic", "host"),
        default="generic",
        help="generic: gcc -std=c99 -O2 for baseline x86-64 (default); host: the flags of manipgen's own host "
        "build on this machine (-O2 -ffp-contract=off, -mavx2 where the CPU has it, the step at -O3)",
    )
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--keep", default=None, help="keep generated code and benchmark programs in this folder")
    ap.add_argument("--json", default=None, help="also write all measurements to this JSON file")
    args = ap.parse_args(argv)
    steps = args.steps or (20_000 if args.quick else 50_000)
    reps = args.reps or (5 if args.quick else 7)
    rounds = args.rounds or (1 if args.quick else 3)
    cg_steps = args.cg_steps or (500 if args.quick else 2000)
    if min(steps, reps, rounds, cg_steps) < 1:
        ap.error("--steps, --reps, --rounds and --cg-steps must be positive")

    t_start = time.perf_counter()
    import casadi

    import codegen
    import codegen.emit.generate  # noqa: F401
    from codegen.model.description import load_robot

    valgrind = None if args.no_callgrind else (shutil.which("valgrind") or None)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="manipgen_bench_rt_"))
    work.mkdir(parents=True, exist_ok=True)
    pipes = pipelines(args.quick)
    cflags = flags(args.flags)

    print("manipgen real-time step benchmark" + (" (--quick)" if args.quick else ""))
    print(f"  machine: {cpu_model()}, {os.cpu_count()} cpus; {platform.platform()}")
    print(
        f"  {tool_version(os.environ.get('CC', 'gcc'))}; flags ({cflags.name}) {' '.join(cflags.common)}"
        + (f", the step also {' '.join(cflags.step)}" if cflags.step else "")
        + "; "
        + (
            tool_version(valgrind)
            if valgrind
            else "valgrind: not found (instruction counts skipped)"
            if not args.no_callgrind
            else "callgrind skipped (--no-callgrind)"
        )
    )
    print(
        f"  manipgen {codegen.__version__}, casadi {getattr(casadi, '__version__', '?')}, "
        f"python {platform.python_version()}"
    )
    print(
        f"  {steps} steps x {reps} repetitions x {rounds} rounds per pipeline; ns/step = median (best); "
        f"input: a smooth periodic motion of {NSAMP} samples, tau = rnea along it, thresholds 1e9"
    )
    if valgrind:
        print(f"  instructions/step: callgrind Ir of ({cg_steps} steps - 0 steps) / {cg_steps}")
    print(
        "  load average before the run: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + " (other jobs on the machine disturb the timings)"
    )
    print(f"  work folder: {work}", flush=True)

    notes: list[str] = []
    results: dict[str, Any] = {"robots": {}}
    table: list[list[str]] = []
    sanity_rows: list[list[str]] = []
    goal_lines: list[str] = []
    adaptive_lines: list[str] = []
    peer_lines: list[str] = []
    for name in args.robots:
        robot = load_robot(name)
        dyn_objs: dict[str, DynObj] = {}
        seen: dict[str, str] = {}
        t0 = time.perf_counter()
        builds: list[Built] = []
        for pipe in pipes:
            builds.append(build_pipeline(robot, pipe, work, dyn_objs, seen, notes, cflags))
        by_key = {b.pipe.key: b for b in builds}
        t_build = time.perf_counter() - t0
        prefix = robot.c_name
        dyn_ok = len(dyn_objs) == 1
        print(
            f"  {name}: {len(builds)} pipelines generated and compiled in {t_build:.1f} s "
            f"(generation {sum(b.t_generate for b in builds):.1f} s); {prefix}_dynamics.c "
            + ("identical in all of them (one object)" if dyn_ok else f"in {len(dyn_objs)} variants"),
            flush=True,
        )
        measured = [b for b in builds if b.same_as is None]
        peer_exe = by_key[MAIN.key].exe
        peer_ns: dict[str, list[tuple[float, float]]] = {"peer": [], "peer_p": []}
        for _ in range(rounds):
            for b in measured:
                res, check = time_exe(b.exe, "rt", steps, reps)
                b.ns.append(res)
                b.check = check
            for what in peer_ns:
                peer_ns[what].append(time_exe(peer_exe, what, steps, reps)[0])
        peer_instr: dict[str, float | None] = {}
        with tempfile.TemporaryDirectory(prefix="manipgen_cg_") as tmp:
            for b in measured:
                b.instr = instructions_per_step(valgrind, b.exe, "rt", cg_steps, Path(tmp))
            for what in peer_ns:
                peer_instr[what] = instructions_per_step(valgrind, peer_exe, what, cg_steps, Path(tmp))
        for b in builds:
            if b.same_as is not None:
                src = by_key[b.same_as]
                b.ns, b.instr, b.check = src.ns, src.instr, src.check
                notes.append(
                    f"{prefix}: {b.pipe.label}: same {prefix}_rt.c/.h as {src.pipe.label} "
                    "up to comments (measured once)"
                )
            if b.dyn_calls:
                notes.append(
                    f"{prefix}: {b.pipe.label}: each step calls "
                    + ", ".join(f"{prefix}_{f}" for f in b.dyn_calls)
                    + f" of {prefix}_dynamics.c (not in the ops column; its stack is in the worst path)"
                )

        for b in builds:
            own, worst = b.stack_step
            stack = f"{own}" + (f" ({worst})" if worst is not None and worst != own else "")
            static = (
                f"{b.stack_static[0].removeprefix(prefix + '_rt_')}: {b.stack_static[1]}"
                if b.stack_static
                else "all inlined"
            )
            ops = str(b.ops) + "".join(f" + {f}" for f in b.dyn_calls)
            table.append(
                [
                    name,
                    b.pipe.label,
                    ops,
                    f"{median_ns(b):.0f} ({best_ns(b):.0f})",
                    f"{b.instr:,.0f}" if b.instr is not None else "—",
                    stack,
                    static,
                ]
            )
            if b.check is not None:
                qd_err, r_max, coll = b.check
                sanity_rows.append(
                    [
                        name,
                        b.pipe.label,
                        f"{qd_err:.3g}",
                        f"{r_max:.3g}" if b.pipe.observer == "momentum" else "—",
                        str(coll) if coll >= 0 else "—",
                    ]
                )

        # --- goal -----------------------------------------------------------------------------
        m = by_key[MAIN.key]
        ok_ns, ok_in = median_ns(m) <= GOAL_NS, m.instr is None or m.instr <= GOAL_INSTR
        goal_lines.append(
            f"  {name} ({m.pipe.label}, run-time parameters): {median_ns(m):.0f} ns, "
            + (f"{m.instr:,.0f} instructions" if m.instr is not None else "instructions not measured")
            + f" -> {'PASS' if ok_ns and ok_in else 'MISS'}"
            + (
                f"; #47 (<= {GOAL_INSTR_47:,.0f}): {'PASS' if m.instr <= GOAL_INSTR_47 else 'MISS'}"
                if m.instr is not None
                else ""
            )
            + (
                f"   [constant parameters: {median_ns(by_key[MAIN_CONST.key]):.0f} ns"
                + (
                    f", {by_key[MAIN_CONST.key].instr:,.0f} instructions"
                    if by_key[MAIN_CONST.key].instr is not None
                    else ""
                )
                + "]"
            )
        )

        # --- observer vs the textbook peer ----------------------------------------------------
        pn = {w: statistics.median(x for _, x in v) for w, v in peer_ns.items()}
        for ours_key, base_key, peer_key, what in (
            (MAIN.key, EST_ONLY.key, "peer_p", "run-time parameters (_p forms)"),
            (MAIN_CONST.key, EST_ONLY_CONST.key, "peer", "constant parameters"),
        ):
            ours, base = by_key[ours_key], by_key[base_key]
            obs_ns = median_ns(ours) - median_ns(base)
            obs_in = ours.instr - base.instr if ours.instr is not None and base.instr is not None else None
            pi = peer_instr.get(peer_key)
            peer_lines.append(
                f"  {name}, {what}: ours {obs_ns:.0f} ns"
                + (f" / {obs_in:,.0f} instr" if obs_in is not None else "")
                + f"  vs peer {pn[peer_key]:.0f} ns"
                + (f" / {pi:,.0f} instr" if pi is not None else "")
                + f"  -> peer/ours {fmt_ratio(pn[peer_key], obs_ns)} time"
                + (f", {fmt_ratio(pi, obs_in)} instructions" if pi is not None and obs_in is not None else "")
            )

        # --- the model-adaptive observer ---------------------------------------------------------
        a, est_only = by_key[ADAPTIVE.key], by_key[EST_ONLY.key]
        a_ns = median_ns(a) - median_ns(est_only)
        nb = len(json.loads((a.folder / "manifest.json").read_text())["base_parameter_names"])
        adaptive_lines.append(
            f"  {name} ({nb} base parameters): {a_ns:.0f} ns (observer + thresholds; whole step {median_ns(a):.0f} ns)"
            + (
                f", {a.instr - est_only.instr:,.0f} instructions"
                if a.instr is not None and est_only.instr is not None
                else ""
            )
            + f" -> {'PASS' if a_ns <= ADAPTIVE_GOAL_NS else 'MISS'} (goal {ADAPTIVE_GOAL_NS / 1000:g} us); "
            f"Birjandi & Haddadin / ours: {fmt_ratio(BIRJANDI_US * 1000, a_ns)}"
        )

        results["robots"][name] = {
            "pipelines": {
                b.pipe.key: {
                    "label": b.pipe.label,
                    "ops": b.ops,
                    "ns_best_median": b.ns,
                    "instructions": b.instr,
                    "stack_rt_step": b.stack_step,
                    "stack_largest_static": b.stack_static,
                    "check": b.check,
                    "same_as": b.same_as,
                }
                for b in builds
            },
            "peer_ns_best_median": peer_ns,
            "peer_instructions": peer_instr,
        }

    print()
    print_table(
        [
            "robot",
            "pipeline",
            "ops",
            "ns/step",
            "instructions/step",
            "stack bytes rt_step (worst path)",
            "largest out-of-line static fn stack",
        ],
        table,
        "llrrrrl",
    )
    print()
    print(
        "Goal: Kalman + momentum + thresholds on a 7-DoF arm: <= 1 us and <= 10 000 instructions per step; "
        "issue #47: <= 2 500 instructions"
    )
    print("\n".join(goal_lines))
    print()
    print(
        "Momentum observer via momentum recursions (our rt step obs part) vs M + Christoffel C + g "
        "(the textbook way, same program):"
    )
    print("  ours = (kalman + momentum + thresholds) - (kalman alone): observer and collision thresholds;")
    print(
        "  peer = <p>_mass_matrix + p = M qd, <p>_coriolis_matrix + C^T qd, <p>_gravity, <p>_friction and "
        "the observer update, on the exact motion (no estimator)"
    )
    print("\n".join(peer_lines))
    print()
    print(
        "Model-adaptive collision observer (Birjandi & Haddadin eqs. 9-21; ours = (kalman + adaptive + thresholds) - "
        "(kalman alone)), Birjandi & Haddadin: 415 us per step:"
    )
    print("\n".join(adaptive_lines))
    print()
    print("Sanity over one period after the timing (max over joints and samples):")
    print_table(["robot", "pipeline", "max |qd_hat - qd| rad/s", "max |r| N m", "collision"], sanity_rows, "llrrr")
    if notes:
        print()
        print("Notes:")
        print("\n".join(f"  {n}" for n in notes))
    print()
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"measurements written to {args.json}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
