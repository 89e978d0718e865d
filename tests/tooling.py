"""Tests that need an external tool skip on a user's machine but fail in CI (CI=true)."""

from __future__ import annotations

import os
import shutil

import pytest


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
