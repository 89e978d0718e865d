"""Data safety (#10 item 5): atomic writes, never over a file manipgen did not write (without
--force), byte-identical rewrites are no-ops, and Ctrl-C leaves no half-written file."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from codegen.emit.files import RECORD, OverwriteError, overwriting, read_record, write_files
from host_tools.cli import main
from tests.tooling import popen_interruptible

OLD = {"a.c": "int a;\n", "b.h": "/* b */\n", "c.txt": "c\n"}
NEW = {"a.c": "int a2;\n", "b.h": "/* b2 */\n", "c.txt": "c\n", "d.json": "{}\n"}


def contents(folder: Path) -> dict[str, str]:
    """Every file manipgen wrote under folder (its host/ too), by path relative to it."""
    return {
        str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != RECORD
    }


def test_write_records_ownership_and_identical_rewrite_is_a_no_op(tmp_path: Path) -> None:
    assert write_files(tmp_path, OLD) == sorted(OLD)
    assert contents(tmp_path) == OLD and set(read_record(tmp_path)) == set(OLD)
    past = time.time() - 3600
    for p in tmp_path.iterdir():
        os.utime(p, (past, past))
    assert write_files(tmp_path, OLD) == []
    assert all(p.stat().st_mtime == past for p in tmp_path.iterdir())  # not even the record
    assert write_files(tmp_path, NEW) == ["a.c", "b.h", "d.json"]
    assert contents(tmp_path) == NEW
    assert (tmp_path / "c.txt").stat().st_mtime == past


def test_foreign_or_edited_files_need_force(tmp_path: Path) -> None:
    (tmp_path / "b.h").write_text("the user's own header\n")
    with pytest.raises(OverwriteError, match=r"would overwrite b\.h, not written by manipgen.*--force"):
        write_files(tmp_path, OLD)
    assert contents(tmp_path) == {"b.h": "the user's own header\n"}  # nothing else was written either
    with overwriting(True):
        write_files(tmp_path, OLD)
    assert contents(tmp_path) == OLD
    (tmp_path / "a.c").write_text("int a; /* edited by hand */\n")
    with pytest.raises(OverwriteError, match=r"a\.c"):
        write_files(tmp_path, NEW)
    assert (tmp_path / "a.c").read_text() == "int a; /* edited by hand */\n"
    (tmp_path / "a.c").write_text(OLD["a.c"])  # edited back to what manipgen wrote: its own again
    write_files(tmp_path, NEW)
    assert contents(tmp_path) == NEW


def test_prune_removes_only_unedited_own_files(tmp_path: Path) -> None:
    write_files(tmp_path, {**OLD, "stale.c": "old\n", "edited.c": "old\n"}, prune=True)
    (tmp_path / "edited.c").write_text("the user changed it\n")
    (tmp_path / "README.md").write_text("the user's notes\n")
    write_files(tmp_path, NEW, prune=True)
    assert contents(tmp_path) == {**NEW, "README.md": "the user's notes\n", "edited.c": "the user changed it\n"}
    assert set(read_record(tmp_path)) == set(NEW)  # the edited file is the user's now


def test_a_crafted_record_cannot_reach_outside_the_folder(tmp_path: Path) -> None:
    """Names with paths in a (copied or crafted) record are ignored: prune deletes nothing outside."""
    outside = tmp_path / "victim.txt"
    outside.write_text("")
    folder = tmp_path / "out"
    folder.mkdir()
    empty = hashlib.sha256(b"").hexdigest()
    (folder / RECORD).write_text(json.dumps({"files": {str(outside): empty, "../victim.txt": empty}}))
    write_files(folder, OLD, prune=True)
    assert outside.exists() and set(read_record(folder)) == set(OLD)
    with pytest.raises(OverwriteError, match="plain file name"):
        write_files(folder, {"../escape.c": "x"})


def test_new_files_follow_the_umask_and_rewrites_keep_the_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_files(tmp_path, OLD)
        assert all((tmp_path / n).stat().st_mode & 0o777 == 0o644 for n in OLD)
        (tmp_path / "a.c").chmod(0o640)
        write_files(tmp_path, NEW)
        assert (tmp_path / "a.c").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_a_folder_or_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "a.c").mkdir()
    with pytest.raises(OverwriteError, match="is a folder"):
        write_files(tmp_path, OLD)
    (tmp_path / "file").write_text("x")
    with pytest.raises(OverwriteError, match="not a folder"):
        write_files(tmp_path / "file", OLD)


@pytest.mark.parametrize("stop_at", range(11))
def test_interrupted_write_leaves_whole_files_that_stay_manipgens(
    stop_at: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at every rename and every temporary-file creation of a folder update: each file is
    its old or its new version, no temporary file is left, and the next run (without --force)
    completes the update."""
    write_files(tmp_path, OLD)
    calls = {"n": 0}
    real_replace, real_mkstemp = os.replace, __import__("tempfile").mkstemp

    def counted(real):
        def fn(*a, **k):
            calls["n"] += 1
            if calls["n"] == stop_at + 1:
                raise KeyboardInterrupt
            return real(*a, **k)

        return fn

    monkeypatch.setattr(os, "replace", counted(real_replace))
    monkeypatch.setattr("tempfile.mkstemp", counted(real_mkstemp))
    try:
        write_files(tmp_path, NEW)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    monkeypatch.undo()
    assert interrupted == (stop_at < calls["n"])
    for name, text in contents(tmp_path).items():
        assert text in (OLD.get(name), NEW.get(name)), (name, text)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    write_files(tmp_path, NEW)
    assert contents(tmp_path) == NEW


def test_cli_refuses_to_overwrite_user_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen"
    out.mkdir()
    (out / "planar2_rt.h").write_text("/* my own planar2_rt.h */\n")
    (out / "notes.txt").write_text("keep me\n")
    assert main(["generate", "planar2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "planar2_rt.h" in err and "--force" in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "planar2_rt.h"]
    assert main(["generate", "planar2", "--out", str(out), "--force"]) == 0
    assert (out / "notes.txt").read_text() == "keep me\n" and "my own" not in (out / "planar2_rt.h").read_text()
    convert = tmp_path / "robot.yaml"
    convert.write_text("mine\n")
    capsys.readouterr()
    assert main(["convert", "planar2", "-o", str(convert)]) == 2
    assert convert.read_text() == "mine\n" and "--force" in capsys.readouterr().err


def test_logs_and_configs_are_owned_outputs(tmp_path: Path) -> None:
    from host_tools.data.logs import Log

    log = Log(
        robot="planar2",
        sample_period=1e-3,
        time=np.arange(3) * 1e-3,
        counts=np.zeros((3, 2), np.int64),
        valid=np.ones((3, 2), bool),
        tau=np.zeros((3, 2)),
        q_des=np.zeros((3, 2)),
        qd_des=np.zeros((3, 2)),
        qdd_des=np.zeros((3, 2)),
    )
    path = tmp_path / "run.npz"
    path.write_bytes(b"someone else's data")
    with pytest.raises(OverwriteError):
        log.save(path)
    assert path.read_bytes() == b"someone else's data"
    path.unlink()
    log.save(path)
    assert Log.load(path).robot == "planar2"
    log.save(path)  # its own file: rewriting is allowed


# `manipgen` (host_tools.console.main, as the console script runs it) in its own process, with an
# audit hook (PEP 578) that stops it at one moment -- the given audit event on a path containing
# the given text, after `skip` such events -- says so on stderr and waits there (reading stdin,
# which the test never writes) until a signal ends the wait: the moment is a state the test waits
# for, not a guess of how long start-up, generation or writing take
PAUSED = "manipgen-test: paused at"
PAUSE_AT = f"""\
import os, sys
from host_tools.console import main

event, text, skip = sys.argv[1], sys.argv[2], int(sys.argv[3])
paused = False

def hook(name, args):
    global skip, paused
    if paused or name != event or not args or text not in str(args[0]):
        return
    if skip:
        skip -= 1
        return
    paused = True
    os.write(2, f"{PAUSED} {{name}} {{args[0]}}\\n".encode())
    os.read(0, 1)

sys.addaudithook(hook)
sys.argv = ["manipgen", *sys.argv[4:]]
sys.exit(main())
"""
# (audit event, text in its argument, how many such events to let pass): importing the numerical
# libraries, reading the description, writing the temporary files, then the renames over a whole
# folder of the other precision (7 of its files differ, and host/planar2_loopback.c): the record
# that accepts both versions, the files, the final record, the same in host/
MOMENTS = [
    ("import", "casadi", 0),
    ("open", "planar2.yaml", 0),
    ("open", ".tmp", 0),
    ("open", ".tmp", 4),
    ("os.rename", ".tmp", 0),
    ("os.rename", ".tmp", 1),
    ("os.rename", ".tmp", 4),
    ("os.rename", ".tmp", 8),
    ("os.rename", ".tmp", 10),
]


def test_ctrl_c_during_generate_leaves_whole_files(tmp_path: Path) -> None:
    """SIGINT to `manipgen generate` at several moments (MOMENTS: each a state the command is
    stopped in until the signal comes) while it replaces a whole folder of the other precision:
    exit code 130 and one line, every file equals one of the two complete generations, and the next
    generation needs no --force."""
    from codegen.emit.generate import generate
    from codegen.model.description import load_robot

    robot = load_robot("planar2")
    gens = [generate(robot, "double"), generate(robot, "float")]
    versions = [dict(g.files, **{f"host/{n}": t for n, t in g.host.items()}) for g in gens]
    out = tmp_path / "gen"
    for k, (event, text, skip) in enumerate(MOMENTS):
        whole, interrupted = ("double", "float")[k % 2], ("float", "double")[k % 2]
        assert main(["generate", "planar2", "--precision", whole, "--out", str(out)]) == 0
        args = ["generate", "planar2", "--precision", interrupted, "--out", str(out)]
        proc = popen_interruptible(
            [sys.executable, "-c", PAUSE_AT, event, text, str(skip), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stderr is not None
        paused = proc.stderr.readline()  # the command is stopped at the moment (or ended: "")
        if paused.startswith(PAUSED):
            proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        proc.wait(timeout=120)  # a bound on a hang: the command has closed stderr, it is ending
        proc.stdin.close()
        assert paused.startswith(PAUSED), f"never reached {event} {text} #{skip + 1}: {paused}{err}"
        assert proc.returncode == 130 and err.strip() == "manipgen: interrupted", (paused, err)
        for name, content in contents(out).items():
            assert any(content == v.get(name) for v in versions), (paused, name)
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], paused
    assert main(["generate", "planar2", "--out", str(out)]) == 0  # no --force needed afterwards
