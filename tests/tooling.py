"""What the tests share: where the checkout is (``ROOT``, ``TESTS``: no test counts its own depth);
tests that need an external tool skip on a user's machine but fail in CI (CI=true); child
processes that take Ctrl-C as at a terminal, wherever the suite runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the checkout: codegen/, host_tools/, robots/, tests/
TESTS = ROOT / "tests"  # tests/data, tests/corpus, tests/peers/data live here


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} not found on PATH"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI must install it: see .ci/run)")
        pytest.skip(message)
    return path


def require_module(name: str, install: str) -> None:
    """Skip (fail in CI) when the Python module ``name`` is not importable; ``install`` says how."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        message = f"Python module {name} not installed ({install})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}: CI installs the test extra")
        pytest.skip(message)


def popen_interruptible(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **kwargs)`` whose child takes SIGINT as one started at a terminal:
    default disposition (Python then turns it into KeyboardInterrupt), even where this test run
    ignores SIGINT. A non-interactive shell starts a background job (``bash dev.sh test &``) with
    SIGINT ignored; fork and exec keep an ignored signal ignored, and so does Python at start-up
    (``restore_signals`` restores SIGPIPE and SIGXFSZ only). A *caught* signal is reset to its
    default at exec: SIGINT is caught here, by Python's own handler, while the child starts."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return subprocess.Popen(args, **kwargs)  # caught or default: the child starts with the default
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(args, **kwargs)
    finally:
        signal.signal(signal.SIGINT, previous)


def cli_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``manipgen ARGS`` in this process: host_tools.cli.main (what the ``manipgen`` command and
    ``python -m host_tools.cli`` call), its exit code (argparse's own errors exit by SystemExit) and
    what it printed (capsys). For the tests of a command's refusals: the same code and output as a
    subprocess without a fresh interpreter's start-up, about 2.5 CPU-s of imports a call (issue 42).
    An exception escaping main fails the test here, where a subprocess would print a traceback."""
    from host_tools.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def paper_inputs(record: Any, data: Path, progress: Callable[[str], None] = lambda _: None) -> Any:
    """A reproduced paper's Inputs as `manipgen reproduce` makes them: its descriptions loaded once,
    fan-out inline (``record``: a host_tools.studies.reproduce.records.Paper)."""
    from host_tools.bindings.source import RobotSource
    from host_tools.studies.cluster import InlineExecutor
    from host_tools.studies.reproduce.records import Inputs

    return Inputs(data, InlineExecutor(), progress, {name: RobotSource.of(name) for name in record.robots})
