"""`manipgen study SPEC --store S`: an interrupted (SIGINT, as Ctrl-C sends it to the whole
process group) and resumed study leaves the same store content as an uninterrupted one; the store
is SQLite in WAL mode with one row per item; --report makes the tables; bad specs name file and field."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codegen.errors import DescriptionError
from host_tools.bindings.libm import libm_fingerprint
from host_tools.studies.study import load_study
from tests.tooling import ROOT, cli_in_process, popen_interruptible, require_module

BIN = Path(sys.executable).parent
# 2 set-ups x 3 estimators x 2 model errors x 2 seeds = 24 items of ~0.1-4 s on planar2
SPEC = """\
robots: [planar2]
setups: [10@125, 2@250]
estimators: [findiff, movav, linhg]
model_errors: [0.0, 0.1]
faults: [0.1]
seeds: [0, 1]
"""


def _content(store: Path) -> list[tuple[str, str]]:
    """Every row's key and result (not its time on the worker nor when it finished)."""
    with sqlite3.connect(store) as db:
        return sorted(db.execute("SELECT key, result FROM items"))


def _study(spec: Path, store: Path, *extra: str) -> list[str]:
    return [str(BIN / "manipgen"), "study", str(spec), "--store", str(store), *extra]


def test_interrupted_and_resumed_study_equals_an_uninterrupted_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    whole, parts = tmp_path / "whole.sqlite", tmp_path / "parts.sqlite"
    r = subprocess.run(_study(spec, whole), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    reference = _content(whole)
    assert len(reference) == 24
    with sqlite3.connect(whole) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    # the same study, interrupted as Ctrl-C does (SIGINT to the command and its workers) once the
    # first items are stored
    env = {**os.environ, "COLUMNS": "200"}
    proc = popen_interruptible(
        _study(spec, parts), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, start_new_session=True
    )
    deadline = time.monotonic() + 600  # a bound on a hang, not a guess: the loop waits for the rows
    while time.monotonic() < deadline and proc.poll() is None:
        if parts.exists() and len(_rows(parts)) >= 2:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    kept = _rows(parts)
    assert proc.returncode == 130, err.decode()
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    assert 2 <= len(kept) < 24, len(kept)
    assert set(kept) <= {k for k, _ in reference}  # what was stored is finished items only

    r = subprocess.run(_study(spec, parts), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert f"{24 - len(kept)} items run" in r.stderr
    assert _content(parts) == reference
    r = cli_in_process(capsys, *_study(spec, parts)[1:])  # nothing left: no item, no process
    assert r.returncode == 0 and "0 items run" in r.stderr

    out = tmp_path / "report"
    r = cli_in_process(capsys, *_study(spec, parts, "--report", "--out", str(out))[1:])
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "report.json").read_text())
    assert doc["items"] == doc["total"] == 24 and len(doc["sections"]) == 2  # model errors 0 and 0.1
    ise = doc["sections"][0]["tables"]["ise_velocity"]
    assert set(ise) == {"findiff", "movav", "linhg"}
    # a cell holds the seeds' values as stored, in seed order
    stored = {
        (i["estimator"], i["model_error"], i["seed"], i["rate_hz"]): json.loads(v)["ise_velocity"]
        for i, v in ((json.loads(k), v) for k, v in reference)
    }
    assert ise["linhg"]["10 mdeg, 125 Hz"] == [stored[("linhg", 0.0, s, 125.0)] for s in (0, 1)]
    assert "| linhg |" in r.stdout and list(out.glob("*/fig9_setups.png"))


def _rows(store: Path) -> list[str]:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return [k for (k,) in db.execute("SELECT key FROM items")]
    except sqlite3.OperationalError:  # the table is not created yet
        return []


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("robots: [planar2]\nestimators: [nope]\n", "estimators[0]"),
        ("robots: [no_such_robot]\n", "robots[0]"),
        ("robots: [planar2]\nsetups: [10-125]\n", "setups[0]"),
        ("robots: [planar2]\nseeds: [1.5]\n", "seeds[0]"),
        ("robots: [planar2]\ngenerations: many\n", "generations"),
        ("robots: [planar2]\nrobot: [x]\n", "robot"),
        ("setups: [liu]\n", "robots"),
        ("robots: [planar2]\nfaults: [1.5]\n", "faults[0]"),
        ("robots: [planar2]\nsetups: [10@0]\n", "setups[0]"),
        ("robots: [planar2]\nsetups: [-10@125]\n", "setups[0]"),
        ("robots: [planar2]\ngenerations: 0\n", "generations"),
        ("robots: [planar2]\ngains: tuned\n", "gains"),
        ("robots: [planar2]\nmodel_errors: [-1]\n", "model_errors[0]"),
    ],
)
def test_bad_spec_names_file_and_field(
    tmp_path: Path, text: str, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    with pytest.raises(DescriptionError) as info:
        load_study(spec)
    assert str(spec) in str(info.value) and field in str(info.value)
    r = cli_in_process(capsys, *_study(spec, tmp_path / "s.sqlite")[1:])  # 13 refusals: no interpreter each
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(spec) in r.stderr
    assert not (tmp_path / "s.sqlite").exists()


def test_items_are_keyed_by_settings_and_description(tmp_path: Path) -> None:
    """A changed setting or description makes new items (never reuses rows made otherwise)."""
    spec = tmp_path / "a.yaml"
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff]\n")
    a = load_study(spec).items
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff]\ngenerations: 5\n")
    b = load_study(spec).items
    assert len(a) == len(b) == 1 and a[0].key != b[0].key
    robot = (ROOT / "robots" / "planar2.yaml").read_text()
    (tmp_path / "arm.yaml").write_text(robot)
    spec.write_text("robots: [arm.yaml]\nsetups: [10@125]\nestimators: [findiff]\n")
    c = load_study(spec).items[0]
    (tmp_path / "arm.yaml").write_text(robot.replace("\n", "\n\n", 1))  # same arm, other text
    d = load_study(spec).items[0]
    assert c.description != d.description and c.key != d.key


def test_an_item_that_cannot_be_evaluated_is_stored_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item whose evaluation fails (e.g. every grid variant diverges) is a row with its error,
    so a rerun does not retry it, and the report lists it instead of a value."""
    import host_tools.studies.study as st
    from host_tools.bindings.loopback import SimulationError
    from host_tools.reports.study import report
    from host_tools.studies.cluster import InlineExecutor

    spec = tmp_path / "a.yaml"
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff, movav]\n")
    study = load_study(spec)

    def fails(*args: object, **kwargs: object) -> object:
        raise SimulationError("movav: every grid variant made the closed loop diverge")

    real = st.evaluate
    monkeypatch.setattr(
        st, "evaluate", lambda s, asked, **kw: (fails if [r.name for r in asked] == ["movav"] else real)(s, asked, **kw)
    )
    with st.open_store(tmp_path / "s.sqlite") as db:
        assert st.run_study(study, db, InlineExecutor()) == 2
        assert st.run_study(study, db, InlineExecutor()) == 0  # not retried
        rows = st.stored(db, study)
    results = {r.item.estimator: r.result for r in rows}
    assert rows[0].item.estimator == "findiff" and rows[0].cpu_seconds > 0 and rows[1].cpu_seconds >= 0
    assert results["movav"] == {"error": "SimulationError: movav: every grid variant made the closed loop diverge"}
    assert results["findiff"]["ise_velocity"] > 0
    text, doc = report(rows, len(study.items))
    assert "1 item(s) could not be evaluated" in text and "every grid variant" in text
    assert doc["sections"][0]["tables"]["ise_velocity"]["findiff"]["10 mdeg, 125 Hz"] == [
        results["findiff"]["ise_velocity"]
    ]
    assert doc["sections"][0]["tables"]["ise_velocity"]["movav"]["10 mdeg, 125 Hz"] is None  # no value


def test_a_store_that_is_not_this_versions_study_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--store: a file that is no SQLite database, another SQLite database, a store of another
    version or a folder that does not exist: one line, exit 2, nothing written into the file."""
    spec = tmp_path / "a.yaml"
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff]\n")
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database\n" * 100)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE items (key TEXT PRIMARY KEY, result TEXT)")  # a store from before versions
    for store, says in (
        (junk, "cannot use it as a study store"),
        (other, "not a study store of this manipgen"),
        (old, "not a study store of this manipgen"),
        (tmp_path / "no" / "such" / "dir.sqlite", "cannot use it as a study store"),
    ):
        before = store.read_bytes() if store.exists() else None
        for extra in ([], ["--report"]):
            r = cli_in_process(capsys, *_study(spec, store, *extra)[1:])  # 8 refusals: no interpreter each
            assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
            assert says in r.stderr or (extra and "no such store" in r.stderr), r.stderr
            assert (store.read_bytes() if store.exists() else None) == before
    with sqlite3.connect(other) as db:
        assert [t for (t,) in db.execute("SELECT name FROM sqlite_master")] == ["people"]


def test_a_worker_with_another_manipgen_refuses_the_item(tmp_path: Path) -> None:
    """Items carry the client's code and C-library fingerprints; a worker whose differ refuses to run
    them (its results could differ), and the command says so in one line."""
    import dataclasses

    import host_tools.studies.study as st

    spec = tmp_path / "a.yaml"
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff]\n")
    study = load_study(spec)
    item = study.items[0]
    assert item.code == st.code_fingerprint() and len(item.code) == 16
    other = dataclasses.replace(item, code="0" * 16)
    with pytest.raises(st.WorkerMismatch, match="another manipgen"):
        st.run_task((other,), study.sources[item.description])
    # the same manipgen on a node whose C library computes sin/cos in other last bits (glibc's
    # kernels for a CPU without FMA: host_tools.bindings.libm) refuses too, and says why
    assert item.arithmetic == libm_fingerprint()
    elsewhere = dataclasses.replace(item, arithmetic="0" * 16)
    assert elsewhere.key != item.key  # a store made there does not answer for here
    with pytest.raises(st.WorkerMismatch, match="C library computes sin, cos"):
        st.run_task((elsewhere,), study.sources[item.description])


def test_ctrl_c_on_a_local_cluster_prints_one_line(tmp_path: Path) -> None:
    """SIGINT to the process group (Ctrl-C) while a LocalCluster runs the items: the command closes
    the cluster and says what is stored; no worker prints a traceback. The rerun completes."""
    require_module("distributed", "pip install 'manipgen[cluster]'")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    store = tmp_path / "s.sqlite"
    proc = popen_interruptible(
        _study(spec, store, "--scheduler", "local:2"),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600  # a bound on a hang: the loop waits for the first row
    while time.monotonic() < deadline and proc.poll() is None and len(_rows(store)) < 1:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    text = err.decode()
    assert proc.returncode == 130 and "Traceback" not in text and "interrupted" in text, text
    r = subprocess.run(_study(spec, store, "--scheduler", "local:2"), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and len(_rows(store)) == 24, r.stderr


def test_a_report_says_which_items_were_computed_with_another_c_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The C-library fingerprint is part of an item's key, so a report made where glibc picks other
    kernels (or without the GLIBC_TUNABLES the study ran with) finds none of the study's rows: it
    says how many are there, with which fingerprint, instead of reporting nothing silently."""
    import dataclasses

    from host_tools.studies.study import open_store, write_item

    spec = tmp_path / "a.yaml"
    spec.write_text("robots: [planar2]\nsetups: [10@125]\nestimators: [findiff, movav]\n")
    study = load_study(spec)
    store = tmp_path / "s.sqlite"
    with open_store(store) as db:
        for item in study.items:
            write_item(db, dataclasses.replace(item, arithmetic="f" * 16), {"error": "elsewhere"}, 1.0, 1.0)
    r = cli_in_process(capsys, "study", str(spec), "--store", str(store), "--report", "--out", str(tmp_path / "out"))
    said = " ".join((r.stdout + r.stderr).split())
    assert f"{len(study.items)} of the study's items are in" in said and f"fingerprint {'f' * 16}" in said, said
    assert f"here {libm_fingerprint()}" in said
