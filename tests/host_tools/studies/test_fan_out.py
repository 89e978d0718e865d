"""Every command that fans out takes --scheduler and prints the same JSON with it as without (all
but timing fields): excite's and identify's multi-starts, output error's simulations, collide's
observers, thresholds --tune's candidates. With local:2 the items run in other processes, so they
pickle (no cffi object, the description's text) and their workers build their own C. The run
without --scheduler (its items inline, one after the other) is the command in this process
(cli_in_process: no interpreter and imports of its own); the one with it is a `manipgen` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tooling import ROOT, cli_in_process, require_module

BIN = Path(sys.executable).parent
DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", ROOT.parent / "shared" / "data"))
RUN = DATA / "lwa4p" / "4ms_FinDiff_run1.mat"


def _without_timing(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _without_timing(v) for k, v in doc.items() if "seconds" not in k}
    if isinstance(doc, list):
        return [_without_timing(v) for v in doc]
    return doc


def _same_with_scheduler(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict[str, Any]:
    require_module("distributed", "pip install 'manipgen[cluster]'")
    inline = cli_in_process(capsys, *args, "--json")
    assert inline.returncode == 0, inline.stderr
    cmd = [str(BIN / "manipgen"), *args, "--json", "--scheduler", "local:2"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = _without_timing(json.loads(inline.stdout))
    assert doc == _without_timing(json.loads(r.stdout))
    return doc


def test_excite_starts(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _same_with_scheduler(capsys, ["excite", "planar2", "--starts", "3", "--max-iter", "15"])
    assert len(doc["starts"]) == 3


def test_identify_physical_starts(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _same_with_scheduler(capsys, ["identify", "planar2", "--synthetic"])
    assert doc["physical"] and doc["physical_starts"]


def test_output_error_simulations(capsys: pytest.CaptureFixture[str]) -> None:
    """Finite differences (a simulation per parameter) and exact sensitivities (column groups)."""
    for how in ("fd", "exact"):
        doc = _same_with_scheduler(
            capsys,
            ["identify", "planar2", "--synthetic", "--method", "clie", "--sensitivities", how, "--max-iter", "3"],
        )
        assert doc["iterations"] >= 1


def test_collide_observers(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _same_with_scheduler(capsys, ["collide", "planar2", "--observers", "momentum", "adaptive_measured"])
    assert set(doc["observers"]) == {"momentum", "adaptive_measured"}


def test_thresholds_tuning_candidates(capsys: pytest.CaptureFixture[str]) -> None:
    if not RUN.is_file():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{RUN}: the shared data CI provides is missing")
        pytest.skip(f"{RUN} not found (set MANIPGEN_SHARED_DATA)")
    args = ["thresholds", "schunk_lwa4p", str(RUN), "--estimator", "kalman", "--observer", "adaptive", "--tune"]
    doc = _same_with_scheduler(capsys, args)
    assert len(doc["tuned"]["candidates"]) > 3
