"""The suite's xdist groups hold (tests/conftest.py): under ``bash dev.sh test``'s
``-n 2 --dist loadgroup`` the tests of one ``xdist_group`` run in one worker, which builds their
module fixture once. With pytest 9.2 and pytest-xdist 3.8 alone they did not: the PyBullet
scenarios (about 130 and 60 s each) were built twice, silently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.tooling import ROOT

_MODULE = """
import os

import pytest

GROUP = pytest.mark.xdist_group("expensive")


@pytest.fixture(scope="module")
def built(request):
    with open(os.environ["BUILT_LOG"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    return os.getpid()


def record(request, built):
    with open(os.environ["RAN_LOG"], "a") as fh:
        fh.write(f"{request.node.nodeid} {os.getpid()} {built}\\n")


@GROUP
def test_a(request, built):
    record(request, built)


def test_free_1():
    pass


@GROUP
def test_b(request, built):
    record(request, built)


def test_free_2():
    pass


@pytest.mark.parametrize("k", [pytest.param(i, marks=GROUP) for i in range(4)])
def test_c(request, built, k):
    record(request, built)
"""


_UNMARKED = """
import os

import pytest


@pytest.fixture(scope="module")
def shared():
    with open(os.environ["BUILT_LOG"], "a") as fh:
        fh.write(f"unmarked {os.getpid()}\\n")


@pytest.mark.parametrize("k", range(6))
def test_d(shared, k):
    pass


@pytest.mark.parametrize("k", range(6))
def test_free(k):
    pass
"""


def test_a_groups_tests_run_in_one_worker_that_builds_its_fixture_once(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_grouped.py").write_text(_MODULE)
    (tmp_path / "test_unmarked.py").write_text(_UNMARKED)  # a module fixture, no group named
    for i in range(4):  # other work for the second worker
        (tmp_path / f"test_other_{i}.py").write_text(f"def test_other_{i}():\n    pass\n")
    built, ran = tmp_path / "built.log", tmp_path / "ran.log"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "BUILT_LOG": str(built), "RAN_LOG": str(ran)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = [line.split() for line in ran.read_text().splitlines()]
    assert len(rows) == 6
    # the scheduler reads a test's group from its node id's suffix: each grouped test carries it
    assert all(nodeid.endswith("@expensive") for nodeid, _, _ in rows), rows
    assert len({pid for _, pid, _ in rows}) == 1, rows  # one worker
    builds = built.read_text().splitlines()
    assert len([b for b in builds if not b.startswith("unmarked")]) == 1  # one build
    assert len([b for b in builds if b.startswith("unmarked")]) == 1  # the unmarked module's, once too
