"""#10 item 2: hypothesis drives the generated rt_step through cffi in an AddressSanitizer +
UndefinedBehaviorSanitizer build (tests/codegen/emit/fuzz_rt_step.py, in a subprocess that preloads the ASan
runtime; any sanitizer report aborts it). Pipelines: the iiwa's default in double, the elastic
biorob4 in float (motor channel, state feedback), and the LWA-4P with the model-adaptive observer
(Cholesky solves) and PID in double."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from host_tools.bindings.build import sanitizer_preload
from tests.tooling import ROOT, require_tool

EXAMPLES = 60
PIPELINES = [
    ("kuka_iiwa14", "double", []),
    ("biorob4", "float", []),
    ("schunk_lwa4p", "double", ["--estimator", "kalman", "--observer", "adaptive", "--controller", "pid"]),
]


@pytest.mark.parametrize("robot, precision, options", PIPELINES, ids=[f"{r}-{p}" for r, p, _ in PIPELINES])
def test_rt_step_survives_fuzzing_under_asan_and_ubsan(robot: str, precision: str, options: list[str]) -> None:
    require_tool("gcc")
    nm = require_tool("nm")
    try:
        preload = sanitizer_preload()
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    env = {
        **os.environ,
        "LD_PRELOAD": preload,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.codegen.emit.fuzz_rt_step",
            robot,
            precision,
            *options,
            "--examples",
            str(EXAMPLES),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    print(doc)
    assert doc["examples"] == EXAMPLES
    # the fuzz reached both fault kinds and the recovery comparison
    assert doc["fault_input"] > 0 and doc["fault_result"] > 0 and doc["recovered_like_fresh"] > 0
    # the module really is instrumented by both sanitizers
    undefined = subprocess.run(
        [nm, "-D", "--undefined-only", doc["module"]], capture_output=True, text=True, check=True
    ).stdout
    assert "__asan_report_" in undefined and "__ubsan_handle_" in undefined
