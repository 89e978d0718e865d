"""Studies on a Dask cluster (host_tools.studies.cluster): the same tuned gains and JSON with the
process pool, a LocalCluster and a scheduler started separately with two workers whose build caches
are empty and differ; a worker killed mid-study; --scheduler's errors."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from host_tools.bindings.source import RobotSource
from host_tools.studies.cluster import SchedulerError, check_scheduler, open_executor, reach_scheduler
from host_tools.studies.evaluate import EstimatorRequest, Setup, evaluate
from tests.tooling import cli_in_process, require_module

# a tuned evaluation small enough for a test: the GA (3 generations of 60) and the grid search
SETUP = Setup(RobotSource.of("planar2"), rate_hz=125.0, tune=True, generations=3)
ESTIMATORS = (EstimatorRequest("linhg"), EstimatorRequest("movav"))
BIN = Path(sys.executable).parent


def _without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "seconds"}


def _evaluate(executor: Executor) -> dict[str, Any]:
    return _without_timing(evaluate(SETUP, ESTIMATORS, executor=executor).doc)


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """The result with the local process pool (the default executor)."""
    with ProcessPoolExecutor(max_workers=2) as pool:
        return _evaluate(pool)


@dataclass
class External:
    address: str
    workers: list[subprocess.Popen[bytes]]
    caches: list[Path]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def external(tmp_path: Path) -> Iterator[External]:
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, as a user starts them on
    several machines; each worker with its own, empty build cache ($MANIPGEN_CACHE)."""
    require_module("distributed", "pip install 'manipgen[cluster]'")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    files = [open(logs / name, "wb") for name in ("scheduler.log", "worker0.log", "worker1.log")]  # noqa: SIM115
    procs = [
        subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
            stdout=files[0],
            stderr=subprocess.STDOUT,
        )
    ]
    caches = [tmp_path / f"cache{i}" for i in range(2)]
    workers = []
    for i, cache in enumerate(caches):
        cache.mkdir()
        env = {**os.environ, "MANIPGEN_CACHE": str(cache)}
        cmd = [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"]
        cmd += ["--local-directory", str(tmp_path / f"dask{i}"), "--name", f"w{i}"]
        workers.append(subprocess.Popen(cmd, env=env, stdout=files[1 + i], stderr=subprocess.STDOUT))
    procs += workers
    try:
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield External(address, workers, caches)
    finally:
        # the workers first, while their scheduler still answers their goodbye (a worker whose
        # scheduler is gone retries it until the bound below), then the scheduler
        for group in (workers, procs[:1]):
            for p in group:
                p.terminate()
            for p in group:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for f in files:
            f.close()


def _built(cache: Path) -> list[Path]:
    """The compiled modules in a build cache."""
    return sorted((cache / "modules").glob("*/_manipgen_*.so")) if (cache / "modules").is_dir() else []


def test_same_result_with_pool_local_cluster_and_external_scheduler(
    reference: dict[str, Any], external: External
) -> None:
    """Tuned gains, tables and JSON (all but timing) equal across the three executors; the external
    workers generated and compiled the pipelines into their own empty caches."""
    assert reference["estimators"]["linhg"]["gains"]["evaluations"] == 60 + 2 * 54  # the GA ran
    with open_executor("local:2") as ex:
        assert _evaluate(ex) == reference
    with open_executor(external.address) as ex:
        assert _evaluate(ex) == reference
    for cache in external.caches:  # each worker built from the description's text it was sent
        assert _built(cache), f"{cache}: the worker built nothing"
        assert list((cache / "descriptions").glob("*/planar2.yaml"))


def test_a_killed_worker_does_not_change_the_result(reference: dict[str, Any], external: External) -> None:
    """A worker killed (SIGKILL) while it runs items: Dask resubmits them to the other worker, and
    the study completes with the same result (the items are pure)."""
    victim = external.workers[0]
    got: dict[str, Any] = {}

    def study() -> None:
        with open_executor(external.address) as ex:
            got.update(_evaluate(ex))

    thread = threading.Thread(target=study)
    thread.start()
    deadline = time.monotonic() + 300
    while not _built(external.caches[0]) and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)  # the victim has compiled its pipeline: it is running its first item
    assert thread.is_alive(), "the study ended before the worker could be killed (no mid-study kill)"
    victim.send_signal(signal.SIGKILL)
    thread.join(timeout=600)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert got == reference


def test_scheduler_option_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("local:0", "localhost", "8786", "local:two"):
        with pytest.raises(SchedulerError, match="--scheduler"):
            check_scheduler(bad)
    check_scheduler(None)
    require_module("distributed", "pip install 'manipgen[cluster]'")
    with pytest.raises(SchedulerError, match="no Dask scheduler answered"):
        reach_scheduler(f"tcp://127.0.0.1:{_free_port()}", timeout="2s")  # nothing listens there
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if Dask were not installed
    with pytest.raises(SchedulerError, match=r"pip install 'manipgen\[cluster\]'"):
        check_scheduler("local:2")


def test_evaluate_cli_with_and_without_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    """`manipgen evaluate ... --tune --json --scheduler local:2` prints what the same command
    without it prints (but the time); a bad --scheduler is one line, exit 2."""
    require_module("distributed", "pip install 'manipgen[cluster]'")
    cmd = [str(BIN / "manipgen"), "evaluate", "planar2", "--tune", "--generations", "2", "--estimators", "linhg"]
    cmd += ["--json"]
    docs = []
    for extra in ([], ["--scheduler", "local:2"]):
        r = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        docs.append(_without_timing(json.loads(r.stdout)))
    assert docs[0] == docs[1]
    r = cli_in_process(capsys, *cmd[1:], "--scheduler", "cluster7")  # a refusal: no interpreter of its own
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "--scheduler 'cluster7'" in r.stderr
