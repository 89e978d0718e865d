"""The project's habits, checked with the suite: ruff (lint and format) and mypy report nothing on
the project's Python, and the packages keep their layers (import-linter's contracts); all configured
in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.tooling import ROOT

PYTHON_TREES = ("codegen", "host_tools", "tests", "bench", "robots")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_lint_and_format_report_nothing() -> None:
    lint = _run("ruff", "check", *PYTHON_TREES)
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
    fmt = _run("ruff", "format", "--check", *PYTHON_TREES)
    assert fmt.returncode == 0, fmt.stdout[-4000:] + fmt.stderr[-2000:]


def test_mypy_reports_nothing() -> None:
    res = _run("mypy")  # files and options: pyproject.toml [tool.mypy]
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_the_layers_import_only_downwards() -> None:
    """model -> symbolic -> blocks -> emit; data -> bindings -> identification -> studies -> target
    -> cli; codegen never imports host_tools (docs/design.md)."""
    res = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0 and "0 broken" in res.stdout, res.stdout[-4000:] + res.stderr[-2000:]


MAX_FUNCTION_LINES = 100  # a function longer than a screenful and a half is split (issue 42)


def test_no_function_is_longer_than_a_hundred_lines() -> None:
    """Every function and method in codegen/ and host_tools/, decorators excluded, from its ``def``
    to its last line."""
    import ast

    long = [
        f"{path.relative_to(ROOT)}::{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for top in ("codegen", "host_tools")
        for path in sorted((ROOT / top).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, long
