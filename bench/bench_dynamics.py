#!/usr/bin/env python3
"""Benchmark the generated C dynamics against Pinocchio on this machine, in one run.

For each robot (default: the 7-DoF ``kuka_iiwa14`` and ``franka_panda``):

1. codegen wall time: ``load_robot`` + ``generate`` + ``write`` (each timed, in this process);
2. the generated C, compiled with gcc (``-O2 -std=c99``; ``--native`` adds ``-O3 -march=native``)
   and called in a C loop: a benchmark ``main`` emitted by this script into a temporary folder
   precomputes ``--states`` random states and calls every generated function ``--calls`` times,
   cycling through the states and feeding one output element per call into an accumulator that
   ends in a ``volatile`` sink; ns per call, best and median of ``--reps`` repetitions;
3. Pinocchio on the same model: preferably a small C++ program against the headers (and the
   ``libpinocchio_default`` library) shipped in the ``pin`` wheel (``cmeel.prefix``), timed the
   same way — no Python in the loop. If that cannot be compiled, the Python bindings are timed and
   their per-call overhead, measured with the very same calls on an empty model (no joints), is
   subtracted; the output says which method was used;
4. a table ``function | manipgen ns | pinocchio ns | ratio | goal | met?`` (goals from issue 2:
   rnea, g, C.qd and the regressor >= 3x faster than Pinocchio, M >= 2x faster than crba), the
   operation counts of manifest.json and the stack of every generated function (gcc
   ``-fstack-usage``, plus the worst path through the callees in the same file from
   ``-fcallgraph-info=su``).

Nothing here asserts on timings: it measures and prints.

Usage::

    .venv/bin/python bench/bench_dynamics.py [--robots kuka_iiwa14 franka_panda] [--calls N]
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
import subprocess
import sys
import sysconfig
import tempfile
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PANDA_URDF_CHAIN = ("panda_link0", "panda_link8")
N_STATES_DEFAULT = 1000

# --------------------------------------------------------------------------------------------
# What is compared with what
# --------------------------------------------------------------------------------------------
# Pinocchio measurements (keys of the C++ / Python benchmarks).
PIN_FUNCTIONS: dict[str, str] = {
    "rnea": "rnea(q, v, a)",
    "crba_local": "crba(q), Convention::LOCAL (upper triangle only)",
    "crba_world": "crba(q), Convention::WORLD (upper triangle only)",
    "coriolis_matrix_qd": "computeCoriolisMatrix(q, v) then C*v",
    "coriolis_matrix": "computeCoriolisMatrix(q, v)",
    "gravity": "computeGeneralizedGravity(q)",
    "regressor": "computeJointTorqueRegressor(q, v, a) (full n x 10n)",
    "aba_local": "aba(q, v, tau), Convention::LOCAL",
    "aba_world": "aba(q, v, tau), Convention::WORLD",
    "nle": "nonLinearEffects(q, v)",
}


@dataclass(frozen=True)
class Row:
    function: str  # generated function (without the robot prefix)
    peers: tuple[str, ...]  # Pinocchio measurements; the fastest one is the reference
    goal: float | None  # required speed-up (pinocchio / manipgen), None = for information
    label: str = ""


ROWS: tuple[Row, ...] = (
    Row("rnea", ("rnea",), 3.0),
    Row("mass_matrix", ("crba_local", "crba_world"), 2.0, "mass_matrix (M)"),
    Row("coriolis", ("coriolis_matrix_qd",), 3.0, "coriolis (C.qd)"),
    Row("gravity", ("gravity",), 3.0, "gravity (g)"),
    Row("regressor", ("regressor",), 3.0, "regressor (Y_b)"),
    Row("rnea_p", ("rnea",), None),
    Row("mass_matrix_p", ("crba_local", "crba_world"), None),
    Row("forward_dynamics", ("aba_local", "aba_world"), None),
    Row("forward_dynamics_p", ("aba_local", "aba_world"), None),
    Row("coriolis_matrix", ("coriolis_matrix",), None),
    Row("nonlinear_effects", ("nle",), None),
)

# --------------------------------------------------------------------------------------------
# Shared C / C++ snippets
# --------------------------------------------------------------------------------------------
# The same generator in both benchmarks, so that both see the same states in the same order:
# for each state k, q[0..n), qd[0..n), qdd[0..n), tau[0..n).
RNG_SNIPPET = r"""
static unsigned long long bench_rng_state = 0x9E3779B97F4A7C15ULL;
static double bench_uniform(double lo, double hi)
{
    bench_rng_state ^= bench_rng_state << 13;
    bench_rng_state ^= bench_rng_state >> 7;
    bench_rng_state ^= bench_rng_state << 17;
    return lo + (hi - lo) * (double)(bench_rng_state >> 11) * (1.0 / 9007199254740992.0);
}
#define BENCH_Q_RANGE 3.141592653589793
#define BENCH_QD_RANGE 2.0
#define BENCH_QDD_RANGE 5.0
#define BENCH_TAU_RANGE 20.0
"""

C_MAIN_TEMPLATE = r"""/* Benchmark main emitted by bench/bench_dynamics.py - not part of the generated code. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "@P@_dynamics.h"

#define DOF @DOF@
#define NSTATES @NSTATES@
#define OUTMAX @OUTMAX@
typedef @P@_real_t real_t;
@RNG@
static real_t Q[NSTATES][DOF], QD[NSTATES][DOF], QDD[NSTATES][DOF], TAU[NSTATES][DOF];
static real_t PI[@NSTD@];
static real_t OUT[OUTMAX];
volatile double bench_sink;

/* in its own translation unit: the loop and call overhead, for reference */
void bench_noop(const real_t *q, const real_t *qd, const real_t *qdd, real_t *out);

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

static void report(const char *name, double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    printf("RESULT %s %.3f %.3f\n", name, t[0],
           (reps % 2) ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]));
}

static void print_value(const char *name, const real_t *v, int n)
{
    int i;
    printf("VALUE %s", name);
    for (i = 0; i < n; ++i) {
        printf(" %.17g", (double)v[i]);
    }
    printf("\n");
}

/* One timed loop: CALL uses the state index k and writes OUT; one element of OUT per call goes
 * into the accumulator, which ends in a volatile sink, so no call can be dropped. */
#define BENCH(NAME, NOUT, CALL)                                                        \
    do {                                                                               \
        long i_;                                                                       \
        int r_, k = 0;                                                                 \
        double acc_ = 0.0;                                                             \
        for (i_ = 0; i_ < warm; ++i_) {                                                \
            acc_ += (double)(CALL);                                                    \
            acc_ += (double)OUT[k % (NOUT)];                                           \
            if (++k == NSTATES) k = 0;                                                 \
        }                                                                              \
        for (r_ = 0; r_ < reps; ++r_) {                                                \
            double t0_ = now_ns(), t1_;                                                \
            for (i_ = 0; i_ < calls; ++i_) {                                           \
                acc_ += (double)(CALL);                                                \
                acc_ += (double)OUT[k % (NOUT)];                                       \
                if (++k == NSTATES) k = 0;                                             \
            }                                                                          \
            t1_ = now_ns();                                                            \
            times[r_] = (t1_ - t0_) / (double)calls;                                   \
        }                                                                              \
        bench_sink += acc_;                                                            \
        report(NAME, times, reps);                                                     \
        fflush(stdout);                                                                \
    } while (0)

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    long warm = calls / 10 + 1;
    double *times;
    int k, j;
    if (calls < 1 || reps < 1) {
        fprintf(stderr, "usage: %s CALLS REPS\n", argv[0]);
        return 2;
    }
    times = (double *)malloc((size_t)reps * sizeof *times);
    if (times == NULL) {
        return 1;
    }
    for (k = 0; k < NSTATES; ++k) {
        for (j = 0; j < DOF; ++j) Q[k][j] = (real_t)bench_uniform(-BENCH_Q_RANGE, BENCH_Q_RANGE);
        for (j = 0; j < DOF; ++j) QD[k][j] = (real_t)bench_uniform(-BENCH_QD_RANGE, BENCH_QD_RANGE);
        for (j = 0; j < DOF; ++j) QDD[k][j] = (real_t)bench_uniform(-BENCH_QDD_RANGE, BENCH_QDD_RANGE);
        for (j = 0; j < DOF; ++j) TAU[k][j] = (real_t)bench_uniform(-BENCH_TAU_RANGE, BENCH_TAU_RANGE);
    }
    memcpy(PI, @P@_standard_parameters, sizeof PI);

    /* values at state 0, for the sanity check against Pinocchio (not timed) */
@VALUES@
    BENCH("noop", 1, (bench_noop(Q[k], QD[k], QDD[k], OUT), 0));
@CALLS@
    free(times);
    return 0;
}
"""

C_NOOP = r"""/* Benchmark helper emitted by bench/bench_dynamics.py: the cost of an empty call. */
#include "@P@_dynamics.h"
void bench_noop(const @P@_real_t *q, const @P@_real_t *qd, const @P@_real_t *qdd, @P@_real_t *out);
void bench_noop(const @P@_real_t *q, const @P@_real_t *qd, const @P@_real_t *qdd, @P@_real_t *out)
{
    out[0] = q[0] + qd[0] + qdd[0];
}
"""

CPP_MAIN = r"""// Pinocchio benchmark emitted by bench/bench_dynamics.py: the same loop as the C benchmark.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/serialization.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace pin = pinocchio;
@RNG@
volatile double bench_sink;

template<class F>
static void bench(const char * name, long calls, int reps, int nstates, F && f)
{
  std::vector<double> t(static_cast<size_t>(reps));
  double acc = 0.0;
  int k = 0;
  for (long i = 0; i < calls / 10 + 1; ++i)
  {
    acc += f(k);
    if (++k == nstates) k = 0;
  }
  for (int r = 0; r < reps; ++r)
  {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i)
    {
      acc += f(k);
      if (++k == nstates) k = 0;
    }
    const auto t1 = std::chrono::steady_clock::now();
    t[static_cast<size_t>(r)] = std::chrono::duration<double, std::nano>(t1 - t0).count() / double(calls);
  }
  bench_sink = bench_sink + acc;
  std::sort(t.begin(), t.end());
  const size_t h = t.size() / 2;
  const double median = (t.size() % 2) ? t[h] : 0.5 * (t[h - 1] + t[h]);
  std::printf("RESULT %s %.3f %.3f\n", name, t[0], median);
  std::fflush(stdout);
}

static void print_value(const char * name, const Eigen::MatrixXd & m)
{
  std::printf("VALUE %s", name);
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      std::printf(" %.17g", m(i, j));
  std::printf("\n");
}

int main(int argc, char ** argv)
{
  if (argc < 5)
  {
    std::fprintf(stderr, "usage: %s MODEL.txt CALLS REPS NSTATES\n", argv[0]);
    return 2;
  }
  pin::Model model;
  model.loadFromText(argv[1]);
  const long calls = std::atol(argv[2]);
  const int reps = std::atoi(argv[3]);
  const int ns = std::atoi(argv[4]);
  if (model.nq != model.nv)
  {
    std::fprintf(stderr, "nq != nv: not supported by this benchmark\n");
    return 2;
  }
  const int n = model.nv;
  pin::Data data(model);
  std::vector<Eigen::VectorXd> Q(ns, Eigen::VectorXd(n)), V(ns, Eigen::VectorXd(n)),
    A(ns, Eigen::VectorXd(n)), T(ns, Eigen::VectorXd(n));
  for (int k = 0; k < ns; ++k)
  {
    for (int j = 0; j < n; ++j) Q[k][j] = bench_uniform(-BENCH_Q_RANGE, BENCH_Q_RANGE);
    for (int j = 0; j < n; ++j) V[k][j] = bench_uniform(-BENCH_QD_RANGE, BENCH_QD_RANGE);
    for (int j = 0; j < n; ++j) A[k][j] = bench_uniform(-BENCH_QDD_RANGE, BENCH_QDD_RANGE);
    for (int j = 0; j < n; ++j) T[k][j] = bench_uniform(-BENCH_TAU_RANGE, BENCH_TAU_RANGE);
  }
  Eigen::VectorXd cv(n);
  const int ncols = static_cast<int>(data.jointTorqueRegressor.cols());

  // values at state 0, for the sanity check (not timed)
  print_value("gravity", pin::computeGeneralizedGravity(model, data, Q[0]));
  pin::crba(model, data, Q[0], pin::Convention::WORLD);
  data.M.triangularView<Eigen::StrictlyLower>() = data.M.transpose().triangularView<Eigen::StrictlyLower>();
  print_value("mass_matrix", data.M);
  pin::computeCoriolisMatrix(model, data, Q[0], V[0]);
  cv.noalias() = data.C * V[0];
  print_value("coriolis", cv);
  print_value("rnea", pin::rnea(model, data, Q[0], V[0], A[0]));
  print_value("forward_dynamics", pin::aba(model, data, Q[0], V[0], T[0], pin::Convention::WORLD));

  bench("rnea", calls, reps, ns, [&](int k) {
    pin::rnea(model, data, Q[k], V[k], A[k]);
    return data.tau[k % n];
  });
  bench("crba_local", calls, reps, ns, [&](int k) {
    pin::crba(model, data, Q[k], pin::Convention::LOCAL);
    return data.M(0, k % n);
  });
  bench("crba_world", calls, reps, ns, [&](int k) {
    pin::crba(model, data, Q[k], pin::Convention::WORLD);
    return data.M(0, k % n);
  });
  bench("coriolis_matrix_qd", calls, reps, ns, [&](int k) {
    pin::computeCoriolisMatrix(model, data, Q[k], V[k]);
    cv.noalias() = data.C * V[k];
    return cv[k % n];
  });
  bench("coriolis_matrix", calls, reps, ns, [&](int k) {
    pin::computeCoriolisMatrix(model, data, Q[k], V[k]);
    return data.C(k % n, 0);
  });
  bench("gravity", calls, reps, ns, [&](int k) {
    pin::computeGeneralizedGravity(model, data, Q[k]);
    return data.g[k % n];
  });
  bench("regressor", calls, reps, ns, [&](int k) {
    pin::computeJointTorqueRegressor(model, data, Q[k], V[k], A[k]);
    return data.jointTorqueRegressor(k % n, k % ncols);
  });
  bench("aba_local", calls, reps, ns, [&](int k) {
    pin::aba(model, data, Q[k], V[k], T[k], pin::Convention::LOCAL);
    return data.ddq[k % n];
  });
  bench("aba_world", calls, reps, ns, [&](int k) {
    pin::aba(model, data, Q[k], V[k], T[k], pin::Convention::WORLD);
    return data.ddq[k % n];
  });
  bench("nle", calls, reps, ns, [&](int k) {
    pin::nonLinearEffects(model, data, Q[k], V[k]);
    return data.nle[k % n];
  });
  return 0;
}
"""

PIN_DEFINES = (
    "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
    "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
    "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
    "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
)


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------
@dataclass
class Timing:
    best: float
    median: float


@dataclass
class Measurements:
    """ns per call by name, values at state 0 by name, and how they were obtained."""

    method: str
    times: dict[str, Timing] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    note: str = ""


def run(cmd: Sequence[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def parse_output(text: str, method: str) -> Measurements:
    out = Measurements(method)
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "RESULT" and len(parts) == 4:
            out.times[parts[1]] = Timing(float(parts[2]), float(parts[3]))
        elif parts[0] == "VALUE" and len(parts) >= 2:
            out.values[parts[1]] = np.array([float(v) for v in parts[2:]])
    return out


def merge_rounds(rounds: Sequence[Measurements]) -> Measurements:
    """Best over all rounds; median of the rounds' medians; values and method of the first."""
    out = Measurements(rounds[0].method, values=rounds[0].values, note=rounds[0].note)
    for name in rounds[0].times:
        ts = [r.times[name] for r in rounds if name in r.times]
        out.times[name] = Timing(min(t.best for t in ts), statistics.median(t.median for t in ts))
    return out


def tool_version(cmd: str) -> str:
    try:
        return run([cmd, "--version"]).splitlines()[0]
    except (OSError, RuntimeError):
        return f"{cmd}: not found"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cache_root(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "manipgen" / "bench"


# --------------------------------------------------------------------------------------------
# Robots: the generated side and the Pinocchio side
# --------------------------------------------------------------------------------------------
@dataclass
class CodegenResult:
    name: str
    prefix: str
    folder: Path
    manifest: dict[str, Any]
    t_load: float
    t_generate: float
    t_write: float
    source: str

    @property
    def total(self) -> float:
        return self.t_load + self.t_generate + self.t_write


def generate_robot(name: str, out_root: Path) -> CodegenResult:
    from codegen.emit.generate import generate
    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from codegen.resources import bundled_robot_path

    t0 = time.perf_counter()
    if name == "franka_panda" and bundled_robot_path(name) is None:
        from host_tools.studies.pinocchio_models import panda_urdf_path

        robot = load_robot(panda_urdf_path(), base_link=PANDA_URDF_CHAIN[0], tip_link=PANDA_URDF_CHAIN[1])
        source = (
            f"example-robot-data panda.urdf, chain {PANDA_URDF_CHAIN[0]} -> {PANDA_URDF_CHAIN[1]} "
            "(robots/franka_panda.yaml not bundled yet)"
        )
    else:
        try:
            robot = load_robot(name)
        except DescriptionError as exc:
            raise SystemExit(f"bench: cannot load robot {name!r}: {exc}") from exc
        source = f"bundled {name}"
    t1 = time.perf_counter()
    gen = generate(robot)
    t2 = time.perf_counter()
    folder = gen.write(out_root / robot.c_name)
    t3 = time.perf_counter()
    manifest = json.loads((folder / "manifest.json").read_text())
    return CodegenResult(name, manifest["robot"], folder, manifest, t1 - t0, t2 - t1, t3 - t2, source)


def pinocchio_model(name: str) -> tuple[Any, str]:
    from codegen.resources import bundled_robot_path
    from host_tools.studies.pinocchio_models import panda_model, pin_model_from_yaml

    if name == "franka_panda":
        return panda_model(), "example-robot-data panda.urdf (fingers locked at 0, merged)"
    path = bundled_robot_path(name)
    if path is None:
        raise SystemExit(f"bench: no Pinocchio model for {name!r}")
    return pin_model_from_yaml(
        path
    ), f"pin_model_from_yaml({path.relative_to(REPO) if path.is_relative_to(REPO) else path})"


# --------------------------------------------------------------------------------------------
# The generated C, compiled and timed
# --------------------------------------------------------------------------------------------
ARG_EXPR = {"q": "Q[k]", "qd": "QD[k]", "qdd": "QDD[k]", "tau": "TAU[k]", "pi": "PI"}


def emit_c_main(gen: CodegenResult, n_states: int) -> str:
    p = gen.prefix
    funcs = gen.manifest["functions"]
    outmax = max(f["outputs"][0][1] for f in funcs)
    calls: list[str] = []
    for f in funcs:
        names = [a[0] for a in f["inputs"]]
        if any(a not in ARG_EXPR for a in names) or len(f["outputs"]) != 1:
            calls.append(f"    /* {f['name']}: inputs {names} not known to the benchmark - skipped */")
            continue
        args = ", ".join([ARG_EXPR[a] for a in names] + ["OUT"])
        call = f"{p}_{f['name']}({args})"
        expr = call if f["returns"] == "int" else f"({call}, 0)"
        calls.append(f'    BENCH("{f["name"]}", {f["outputs"][0][1]}, {expr});')
    values: list[str] = []
    by_name = {f["name"]: f for f in funcs}
    for fname in ("gravity", "mass_matrix", "coriolis", "rnea", "friction", "forward_dynamics"):
        f = by_name.get(fname)
        if f is None:
            continue
        names = [a[0] for a in f["inputs"]]
        if any(a not in ARG_EXPR for a in names):
            continue
        args = ", ".join([ARG_EXPR[a].replace("[k]", "[0]") for a in names] + ["OUT"])
        values.append(f"    (void){p}_{fname}({args});" if f["returns"] == "int" else f"    {p}_{fname}({args});")
        values.append(f'    print_value("{fname}", OUT, {f["outputs"][0][1]});')
    text = C_MAIN_TEMPLATE
    for key, val in {
        "@P@": p,
        "@DOF@": str(gen.manifest["dof"]),
        "@NSTATES@": str(n_states),
        "@OUTMAX@": str(outmax),
        "@NSTD@": str(gen.manifest["n_standard"]),
        "@RNG@": RNG_SNIPPET,
        "@CALLS@": "\n".join(calls),
        "@VALUES@": "\n".join(values),
    }.items():
        text = text.replace(key, val)
    return text


@dataclass
class CBuild:
    label: str
    flags: tuple[str, ...]
    exe: Path
    su_file: Path
    ci_file: Path
    t_compile: float


def build_c(gen: CodegenResult, work: Path, label: str, flags: Sequence[str], n_states: int) -> CBuild:
    cc = os.environ.get("CC", "gcc")
    d = work / f"{gen.prefix}_{label}"
    d.mkdir(parents=True, exist_ok=True)
    p = gen.prefix
    src = gen.folder / f"{p}_dynamics.c"
    (d / "bench_main.c").write_text(emit_c_main(gen, n_states))
    (d / "bench_noop.c").write_text(C_NOOP.replace("@P@", p))
    common = ["-std=c99", *flags, "-I", str(gen.folder)]
    t0 = time.perf_counter()
    run([cc, *common, "-fstack-usage", "-fcallgraph-info=su", "-c", str(src), "-o", str(d / "dyn.o")], cwd=d)
    t1 = time.perf_counter()
    run([cc, *common, "-Wall", "-c", "bench_main.c", "-o", "bench_main.o"], cwd=d)
    run([cc, *common, "-c", "bench_noop.c", "-o", "bench_noop.o"], cwd=d)
    run([cc, *flags, "bench_main.o", "bench_noop.o", "dyn.o", "-o", "bench", "-lm"], cwd=d)
    return CBuild(label, tuple(flags), d / "bench", d / "dyn.su", d / "dyn.ci", t1 - t0)


def run_c(build: CBuild, calls: int, reps: int) -> Measurements:
    out = run([str(build.exe), str(calls), str(reps)])
    return parse_output(out, f"C loop, gcc {' '.join(build.flags)}")


# --------------------------------------------------------------------------------------------
# Pinocchio: C++ against the wheel's headers / library, or Python with overhead subtracted
# --------------------------------------------------------------------------------------------
@dataclass
class PinToolchain:
    include: Path
    lib: Path
    eigen: Path


def find_pin_toolchain() -> tuple[PinToolchain | None, str]:
    import pinocchio

    candidates = [
        Path(p)
        for p in {
            sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["platlib"],
            str(Path(pinocchio.__file__).resolve().parents[3]),
        }
    ]
    prefix = next(
        (c / "cmeel.prefix" for c in candidates if (c / "cmeel.prefix" / "include" / "pinocchio").is_dir()), None
    )
    if prefix is None:
        return None, "the pin wheel ships no C++ headers (cmeel.prefix/include/pinocchio not found)"
    libs = sorted((prefix / "lib").glob("libpinocchio_default.so*"))
    if not libs:
        return None, f"{prefix}/lib has no libpinocchio_default.so"
    # Eigen is header-only and not part of the pin wheel; take the first copy found.
    eigen_candidates = [prefix / "include" / "eigen3"]
    try:
        import casadi

        eigen_candidates.append(Path(casadi.__file__).resolve().parent / "include" / "eigen3")
    except ImportError:
        pass
    eigen_candidates += [Path("/usr/include/eigen3"), Path("/usr/local/include/eigen3")]
    eigen = next((e for e in eigen_candidates if (e / "Eigen" / "Core").is_file()), None)
    if eigen is None:
        return None, (
            "no Eigen headers found (looked in "
            + ", ".join(map(str, eigen_candidates))
            + "; pip install cmeel-eigen or apt-get install libeigen3-dev)"
        )
    return PinToolchain(prefix / "include", prefix / "lib", eigen), ""


def build_pin_cpp(tc: PinToolchain, mode: str, flags: Sequence[str], cache: Path) -> tuple[Path, float, bool]:
    """Compile the C++ benchmark (cached by content); returns (exe, seconds, from cache)."""
    import pinocchio

    cxx = os.environ.get("CXX", "g++")
    source = CPP_MAIN.replace("@RNG@", RNG_SNIPPET)
    cmd = [
        cxx,
        "-std=c++17",
        *flags,
        "-DNDEBUG",
        "-Wno-deprecated-declarations",
        *PIN_DEFINES,
        "-I",
        str(tc.include),
        "-I",
        str(tc.eigen),
    ]
    if mode == "library":
        # algorithms come precompiled from the wheel's libpinocchio_default (its own flags)
        cmd.append("-DPINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION")
    key = hashlib.sha256(
        "\0".join([source, *cmd, tool_version(cxx), pinocchio.__version__, str(tc.lib)]).encode()
    ).hexdigest()[:16]
    d = cache / f"pin_{mode}_{key}"
    exe = d / "pin_bench"
    if exe.is_file():
        return exe, 0.0, True
    d.mkdir(parents=True, exist_ok=True)
    (d / "pin_bench.cpp").write_text(source)
    link = ["-L", str(tc.lib), "-Wl,-rpath," + str(tc.lib)]
    link += (["-lpinocchio_default"] if mode == "library" else []) + ["-lboost_serialization"]
    t0 = time.perf_counter()
    tmp_exe = d / "pin_bench.tmp"
    run([*cmd, "pin_bench.cpp", "-o", str(tmp_exe), *link], cwd=d)
    tmp_exe.rename(exe)
    return exe, time.perf_counter() - t0, False


def run_pin_cpp(exe: Path, model: Any, work: Path, calls: int, reps: int, n_states: int, method: str) -> Measurements:
    model_file = work / f"pin_model_{model.name or 'robot'}.txt"
    model.saveToText(str(model_file))
    out = run([str(exe), str(model_file), str(calls), str(reps), str(n_states)])
    return parse_output(out, method)


def make_states(n: int, n_states: int) -> tuple[np.ndarray, ...]:
    """The states of RNG_SNIPPET, computed in Python (for the Python fallback)."""
    s = 0x9E3779B97F4A7C15
    mask = (1 << 64) - 1

    def uniform(lo: float, hi: float) -> float:
        nonlocal s
        s ^= (s << 13) & mask
        s ^= s >> 7
        s ^= (s << 17) & mask
        return lo + (hi - lo) * float(s >> 11) * (1.0 / 9007199254740992.0)

    arrays = [np.zeros((n_states, n)) for _ in range(4)]
    ranges = (np.pi, 2.0, 5.0, 20.0)
    for k in range(n_states):
        for a, r in zip(arrays, ranges):
            for j in range(n):
                a[k, j] = uniform(-r, r)
    return tuple(arrays)


def measure_pin_python(model: Any, calls: int, reps: int, n_states: int) -> Measurements:
    """Python bindings; per-call overhead = the same call on an empty model (0 joints), subtracted."""
    import pinocchio as pin

    n = model.nv
    Q, V, A, T = make_states(n, n_states)
    data = model.createData()
    empty = pin.Model()
    edata = empty.createData()
    z = np.zeros(0)
    local, world = pin.Convention.LOCAL, pin.Convention.WORLD

    def coriolis_qd(m: Any, d: Any, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return pin.computeCoriolisMatrix(m, d, q, v) @ v

    calls_by_name: dict[str, Callable[[Any, Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray], Any]] = {
        "rnea": lambda m, d, q, v, a, t: pin.rnea(m, d, q, v, a),
        "crba_local": lambda m, d, q, v, a, t: pin.crba(m, d, q, local),
        "crba_world": lambda m, d, q, v, a, t: pin.crba(m, d, q, world),
        "coriolis_matrix_qd": lambda m, d, q, v, a, t: coriolis_qd(m, d, q, v),
        "coriolis_matrix": lambda m, d, q, v, a, t: pin.computeCoriolisMatrix(m, d, q, v),
        "gravity": lambda m, d, q, v, a, t: pin.computeGeneralizedGravity(m, d, q),
        "regressor": lambda m, d, q, v, a, t: pin.computeJointTorqueRegressor(m, d, q, v, a),
        "aba_local": lambda m, d, q, v, a, t: pin.aba(m, d, q, v, t, local),
        "aba_world": lambda m, d, q, v, a, t: pin.aba(m, d, q, v, t, world),
        "nle": lambda m, d, q, v, a, t: pin.nonLinearEffects(m, d, q, v),
    }
    out = Measurements("Python bindings, per-call overhead (same call on an empty model) subtracted")
    rows = [(Q[k], V[k], A[k], T[k]) for k in range(n_states)]
    states = [rows[i % n_states] for i in range(calls)]
    zero_states = [(z, z, z, z)] * calls
    overheads: list[float] = []
    for name, fn in calls_by_name.items():

        def loop(
            m: Any = model, d: Any = data, st: Sequence[tuple[Any, ...]] = states, f: Callable[..., Any] = fn
        ) -> None:
            for q, v, a, t in st:
                f(m, d, q, v, a, t)

        def loop_empty(
            m: Any = empty, d: Any = edata, st: Sequence[tuple[Any, ...]] = zero_states, f: Callable[..., Any] = fn
        ) -> None:
            for q, v, a, t in st:
                f(m, d, q, v, a, t)

        full = sorted(x / calls * 1e9 for x in timeit.repeat(loop, number=1, repeat=reps))
        base = sorted(x / calls * 1e9 for x in timeit.repeat(loop_empty, number=1, repeat=reps))
        overheads.append(statistics.median(base))
        out.times[name] = Timing(full[0] - base[0], statistics.median(full) - statistics.median(base))
    out.note = f"overhead per call {min(overheads):.0f}-{max(overheads):.0f} ns"
    M = np.array(pin.crba(model, data, Q[0], world))
    out.values = {
        "gravity": np.array(pin.computeGeneralizedGravity(model, data, Q[0])),
        "mass_matrix": (np.triu(M) + np.triu(M, 1).T).ravel(),
        "coriolis": coriolis_qd(model, data, Q[0], V[0]),
        "rnea": np.array(pin.rnea(model, data, Q[0], V[0], A[0])),
        "forward_dynamics": np.array(pin.aba(model, data, Q[0], V[0], T[0], world)),
    }
    return out


# --------------------------------------------------------------------------------------------
# Stack usage
# --------------------------------------------------------------------------------------------
def stack_usage(build: CBuild) -> dict[str, tuple[int, str, int | None]]:
    """function -> (own bytes, qualifier, worst path incl. callees in the same file or None)."""
    own: dict[str, tuple[int, str]] = {}
    for line in build.su_file.read_text().splitlines():
        m = re.match(r"^(.*):(\d+):(\d+):(\S+)\s+(\d+)\s+(\S+)", line)
        if m:
            own[m.group(4)] = (int(m.group(5)), m.group(6))
    titles: dict[str, str] = {}  # node title -> function name (label's first line)
    node_bytes: dict[str, int] = {}
    edges: dict[str, list[str]] = {}
    if build.ci_file.is_file():
        for line in build.ci_file.read_text().splitlines():
            m = re.match(r'^node: \{ title: "([^"]+)" label: "([^"\\]+)(.*?)"', line)
            if m:
                titles[m.group(1)] = m.group(2)
                b = re.search(r"(\d+) bytes", m.group(3))
                if b:
                    node_bytes[m.group(1)] = int(b.group(1))
                continue
            m = re.match(r'^edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', line)
            if m:
                edges.setdefault(m.group(1), []).append(m.group(2))

    def worst(title: str, seen: frozenset[str]) -> int:
        if title in seen:
            raise ValueError("recursion")
        below = [worst(t, seen | {title}) for t in edges.get(title, []) if t in node_bytes]
        return node_bytes.get(title, 0) + max(below, default=0)

    out: dict[str, tuple[int, str, int | None]] = {}
    by_name = {v: k for k, v in titles.items()}
    for name, (nbytes, qual) in own.items():
        title = by_name.get(name)
        total: int | None = None
        if title is not None:
            try:
                total = worst(title, frozenset())
            except ValueError:
                total = None
        out[name] = (nbytes, qual, total)
    return out


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
def fmt_ns(t: Timing | None) -> str:
    return "—" if t is None else f"{t.best:8.1f} ({t.median:.1f})"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)) + " |"

    print(line(headers))
    print("|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|")
    for r in rows:
        print(line(r))


def pin_best(peers: Sequence[str], pin_runs: Sequence[Measurements]) -> tuple[Timing | None, str]:
    best: tuple[Timing | None, str] = (None, "")
    for m in pin_runs:
        for key in peers:
            t = m.times.get(key)
            if t is not None and (best[0] is None or t.best < best[0].best):
                best = (t, f"{key}/{m.method.split(',')[0]}")
    return best


def sanity(ours: Measurements, peer: Measurements, dof: int) -> list[str]:
    """Relative differences at state 0 (both sides see the same states)."""
    lines: list[str] = []
    fr = ours.values.get("friction")
    for name in ("gravity", "mass_matrix", "coriolis", "rnea", "forward_dynamics"):
        a, b = ours.values.get(name), peer.values.get(name)
        if a is None or b is None or a.shape != b.shape:
            continue
        note = ""
        if name == "rnea" and fr is not None:
            a = a - fr
            note = " (ours minus friction(qd); Pinocchio has no friction)"
        if name == "forward_dynamics" and fr is not None and np.any(fr != 0):
            lines.append("  forward_dynamics: not compared (ours subtracts joint friction, aba does not)")
            continue
        rel = float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(b)), 1e-300)
        lines.append(f"  {name}: |ours - pinocchio| / |pinocchio| = {rel:.2e}{note}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--robots",
        nargs="+",
        default=["kuka_iiwa14", "franka_panda"],
        help="bundled robot names (franka_panda falls back to the example-robot-data URDF)",
    )
    ap.add_argument("--calls", type=int, default=100_000, help="calls per timed repetition (default 100000)")
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions; best and median reported (default 7)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternating rounds of (ours, Pinocchio); best over all, median of the round medians (default 3)",
    )
    ap.add_argument("--states", type=int, default=N_STATES_DEFAULT, help="random states cycled through (default 1000)")
    ap.add_argument(
        "--native",
        action="store_true",
        help="also build and time with -O3 -march=native (ours and Pinocchio from headers)",
    )
    ap.add_argument(
        "--pin-method",
        choices=("auto", "cpp", "python"),
        default="auto",
        help="auto: C++ against the pin wheel if it compiles, else Python with overhead subtracted",
    )
    ap.add_argument(
        "--pin-build",
        choices=("both", "headers", "library"),
        default="both",
        help="C++ peer: algorithms compiled from the headers with our flags, the wheel's "
        "libpinocchio_default, or both (the faster is the reference)",
    )
    ap.add_argument(
        "--pin-python", action="store_true", help="also time the Python bindings (overhead subtracted), for information"
    )
    ap.add_argument(
        "--cache-dir",
        default=None,
        help="where compiled Pinocchio benchmarks are cached (default $XDG_CACHE_HOME/manipgen/bench)",
    )
    ap.add_argument("--keep", default=None, help="keep generated code and benchmark programs in this folder")
    ap.add_argument("--json", default=None, help="also write all measurements to this JSON file")
    args = ap.parse_args(argv)
    if min(args.calls, args.reps, args.states, args.rounds) < 1:
        ap.error("--calls, --reps, --rounds and --states must be positive")

    t_imp = time.perf_counter()
    import casadi
    import pinocchio as pin

    import codegen.emit.generate  # noqa: F401  (import cost kept out of the codegen timings)

    t_imp = time.perf_counter() - t_imp

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="manipgen_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    cache = cache_root(args.cache_dir)
    configs: list[tuple[str, tuple[str, ...]]] = [("O2", ("-O2",))]
    if args.native:
        configs.append(("O3-native", ("-O3", "-march=native")))

    print("manipgen dynamics benchmark")
    print(f"  machine: {cpu_model()}, {os.cpu_count()} cpus; {platform.platform()}")
    print(f"  {tool_version(os.environ.get('CC', 'gcc'))}; {tool_version(os.environ.get('CXX', 'g++'))}")
    print(
        f"  manipgen {codegen.__version__}, casadi {getattr(casadi, '__version__', '?')}, pinocchio {pin.__version__}, "
        f"numpy {np.__version__}, python {platform.python_version()}"
    )
    print(
        f"  {args.calls} calls x {args.reps} repetitions x {args.rounds} alternating rounds per function, "
        f"{args.states} random states cycled (q in ±pi, qd ±2, qdd ±5, tau ±20); "
        "ns per call = best (median)"
    )
    print(f"  imports (casadi, pinocchio, codegen): {t_imp:.2f} s, not counted in codegen time")
    print(
        "  load average before the run: "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + " (other jobs on the machine disturb the timings)"
    )
    print(f"  work folder: {work}")

    # --- Pinocchio toolchain ------------------------------------------------------------------
    pin_exes: dict[str, list[tuple[str, Path]]] = {label: [] for label, _ in configs}
    pin_note: list[str] = []
    use_python = args.pin_method == "python"
    if args.pin_method in ("auto", "cpp"):
        tc, why = find_pin_toolchain()
        if tc is None:
            pin_note.append(f"C++ route unavailable: {why}")
        else:
            pin_note.append(f"C++ route: headers {tc.include}, library {tc.lib}, Eigen {tc.eigen}")
            modes = ("headers", "library") if args.pin_build == "both" else (args.pin_build,)
            for label, flags in configs:
                for mode in modes:
                    if mode == "library" and label != "O2":
                        continue  # the library's algorithms keep the wheel's flags; no -march mixing
                    try:
                        print(
                            f"  Pinocchio C++ benchmark ({mode}, {' '.join(flags)}): compiling unless cached "
                            "(2-3 min on 2 cores) ...",
                            flush=True,
                        )
                        exe, secs, cached = build_pin_cpp(tc, mode, flags, cache)
                        pin_note.append(
                            f"  {mode} {' '.join(flags)}: {'cached' if cached else f'compiled in {secs:.0f} s'} ({exe})"
                        )
                        pin_exes[label].append((mode, exe))
                    except RuntimeError as exc:
                        pin_note.append(f"  {mode} {' '.join(flags)}: compile FAILED: {str(exc).splitlines()[-1]}")
        if not any(pin_exes.values()):
            if args.pin_method == "cpp":
                print("\n".join(pin_note))
                raise SystemExit("bench: --pin-method cpp, but the C++ benchmark could not be built")
            use_python = True
            pin_note.append("falling back to the Python bindings with per-call overhead subtracted")

    results: dict[str, Any] = {"robots": {}}
    for name in args.robots:
        print()
        print("=" * 100)
        gen = generate_robot(name, work / "generated")
        model, model_src = pinocchio_model(name)
        dof = int(gen.manifest["dof"])
        print(f"{name}  (generated prefix {gen.prefix}_, {dof} DoF; {gen.source})")
        if dof != 7:
            print(f"  note: {dof} DoF - the goals of issue 2 are stated for the 7-DoF robots")
        print(f"  Pinocchio model: {model_src}; nv = {model.nv}")
        print(
            f"  codegen wall time: {gen.total:.2f} s  (load_robot {gen.t_load:.2f} s, generate "
            f"{gen.t_generate:.2f} s, write {gen.t_write:.2f} s)   goal <= 20 s: "
            f"{'met' if gen.total <= 20 else 'NOT met'}"
        )
        if model.nv != dof:
            print(f"  Pinocchio model has nv = {model.nv} != {dof}: skipping the comparison")
            continue
        robot_json: dict[str, Any] = {
            "codegen_s": {"load": gen.t_load, "generate": gen.t_generate, "write": gen.t_write, "total": gen.total},
            "configs": {},
        }
        py_meas: Measurements | None = None
        if use_python or args.pin_python:
            print("  timing Pinocchio's Python bindings ...", flush=True)
            py_meas = measure_pin_python(model, min(args.calls, 20_000), args.reps, args.states)

        builds: list[CBuild] = []
        for label, flags in configs:
            build = build_c(gen, work, label, flags, args.states)
            builds.append(build)
            # Rounds alternate between the two sides, so that a disturbance that comes and goes
            # (another job on the machine) is less likely to hit only one of them.
            ours_rounds: list[Measurements] = []
            pin_rounds: dict[str, list[Measurements]] = {mode: [] for mode, _ in pin_exes[label]}
            for _ in range(args.rounds):
                ours_rounds.append(run_c(build, args.calls, args.reps))
                for mode, exe in pin_exes[label]:
                    method = f"{mode}, C++ loop, g++ {' '.join(flags)} -DNDEBUG" + (
                        " (algorithms from the wheel's libpinocchio_default)"
                        if mode == "library"
                        else " (algorithms compiled from the wheel's headers)"
                    )
                    pin_rounds[mode].append(run_pin_cpp(exe, model, work, args.calls, args.reps, args.states, method))
            ours = merge_rounds(ours_rounds)
            pin_runs: list[Measurements] = [merge_rounds(r) for r in pin_rounds.values()]
            if not pin_runs and py_meas is not None:
                pin_runs.append(py_meas)

            print()
            print(
                f"--- {name}, build {label}: manipgen = {ours.method}; generated .c compiled in "
                f"{build.t_compile:.1f} s; empty call + loop costs {ours.times['noop'].best:.1f} ns (not subtracted)"
            )
            for m in pin_runs:
                print(f"    pinocchio = {m.method}" + (f"; {m.note}" if m.note else ""))
            table: list[list[str]] = []
            listed = set()
            for row in ROWS:
                t_ours = ours.times.get(row.function)
                if t_ours is None:
                    continue
                listed.add(row.function)
                t_pin, which = pin_best(row.peers, pin_runs)
                ratio = t_pin.best / t_ours.best if t_pin is not None and t_ours.best > 0 else None
                goal = f">= {row.goal:g}x" if row.goal else "(info)"
                met = "—" if row.goal is None or ratio is None else ("yes" if ratio >= row.goal else "NO")
                table.append(
                    [
                        row.label or row.function,
                        fmt_ns(t_ours),
                        fmt_ns(t_pin),
                        which or "—",
                        f"{ratio:.2f}x" if ratio is not None else "—",
                        goal,
                        met,
                    ]
                )
            for fname, t in ours.times.items():
                if fname not in listed and fname != "noop":
                    table.append([fname, fmt_ns(t), "—", "—", "—", "(no peer)", "—"])
            print_table(
                ["function", "manipgen ns", "pinocchio ns", "pinocchio variant", "ratio pin/ours", "goal", "met?"],
                table,
                "lrrlrll",
            )
            if py_meas is not None and pin_runs and pin_runs[0] is not py_meas:
                print(f"  Pinocchio via Python ({py_meas.method}; {py_meas.note}):")
                print("    " + ", ".join(f"{k} {v.best:.0f}" for k, v in py_meas.times.items()) + " ns")
            if pin_runs:
                print("  sanity at state 0 (same states on both sides):")
                print("\n".join(sanity(ours, pin_runs[0], dof)))
            robot_json["configs"][label] = {
                "manipgen": {k: vars(v) for k, v in ours.times.items()},
                "pinocchio": {m.method: {k: vars(v) for k, v in m.times.items()} for m in pin_runs},
            }

        # --- op counts and stack (O2 build) -------------------------------------------------
        su = stack_usage(builds[0])
        print()
        print(
            f"--- {name}: operation counts (manifest.json) and stack (gcc {' '.join(builds[0].flags)} "
            "-fstack-usage; 'worst path' adds the callees in the same file, libm not included)"
        )
        ops_rows: list[list[str]] = []
        for f in gen.manifest["functions"]:
            cname = f"{gen.prefix}_{f['name']}"
            own, qual, total = su.get(cname, (-1, "?", None))
            ops_rows.append(
                [
                    f["name"],
                    str(f["ops"]) if f["ops"] is not None else "(calls others)",
                    str(own) if own >= 0 else "?",
                    qual,
                    str(total) if total is not None else "?",
                ]
            )
        for fname, (own, qual, total) in su.items():
            if not fname.startswith(gen.prefix + "_"):
                ops_rows.append([fname + " (internal)", "—", str(own), qual, str(total) if total is not None else "?"])
        print_table(["function", "ops", "stack bytes", "kind", "worst path bytes"], ops_rows, "lrrlr")
        robot_json["ops"] = {f["name"]: f["ops"] for f in gen.manifest["functions"]}
        robot_json["stack"] = {k: {"own": v[0], "kind": v[1], "worst": v[2]} for k, v in su.items()}
        results["robots"][name] = robot_json

    print()
    print("Pinocchio peer: " + ("\n  ".join(pin_note) if pin_note else "Python bindings only"))
    print(
        "Notes: ours are the constant-parameter forms unless suffixed _p (parameter vector as an argument; "
        "Pinocchio always reads its parameters from the model). Our rnea and forward_dynamics include the "
        "robot's joint friction (and rotor inertia) terms; Pinocchio's regressor is the full n x 10n one, "
        "ours the base regressor; Pinocchio's crba fills the upper triangle only, ours the full M."
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"measurements written to {args.json}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
