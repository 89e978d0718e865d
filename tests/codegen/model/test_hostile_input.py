"""Hostile and malformed robot descriptions (#10 item 1): the corpus in tests/corpus/.

Every corpus file breaks the valid robot of tests/corpus/ok/ in one way and says what it expects in
its first comment: ``expect: FIELD | FRAGMENT``. Through the command line, each must give exit code 2
and exactly one line on stderr that names the file, the field and says what is wrong -- no
traceback, nothing on stdout, no output folder. Large inputs (huge files, deep nesting, alias and
entity bombs, a thousand joints) are built here rather than committed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from host_tools.cli import main
from tests.tooling import TESTS, require_tool

CORPUS = TESTS / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".urdf"))
BASE_URDF = CORPUS / "ok" / "corpus_arm.urdf"
# what generated objects may call: C99 <math.h> (both precisions) and nothing else
LIBM = {
    f + s
    for f in (
        "sin",
        "cos",
        "tan",
        "sqrt",
        "tanh",
        "exp",
        "log",
        "pow",
        "fabs",
        "atan2",
        "floor",
        "fmin",
        "fmax",
        "sincos",
    )
    for s in ("", "f")
} | {"memset", "memcpy"}  # gcc: fused sin+cos, block copies


def expectation(path: Path) -> tuple[str, str]:
    m = re.search(rb"expect: ([^|\n]*)\|([^\n]*?)\s*(?:-->)?\n", path.read_bytes())
    assert m, f"{path.name} has no '# expect: FIELD | FRAGMENT' comment"
    return m.group(1).decode().strip(), m.group(2).decode().strip()


def arguments(path: Path, out: Path) -> list[str]:
    if path.name.startswith("overlay_"):
        return ["generate", str(BASE_URDF), "--overlay", str(path), "--out", str(out)]
    return ["generate", str(path), "--out", str(out)]


def refused(capsys: pytest.CaptureFixture[str], args: list[str], out: Path) -> str:
    """Run the CLI; assert exit code 2, one stderr line, nothing written; return the line."""
    rc = main(args)
    captured = capsys.readouterr()
    assert rc == 2, (rc, captured.err)
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("manipgen: error: "), captured.err
    assert len(lines[0]) < 400, f"message too long ({len(lines[0])} characters)"
    assert not out.exists()
    return lines[0]


def test_the_corpus_base_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The mutations are the only faults: the unmutated robots generate (and the overlay cases'
    base with an empty overlay)."""
    for name in ("corpus_arm.yaml", "corpus_arm.urdf"):
        assert main(["info", str(CORPUS / "ok" / name)]) == 0
    empty = tmp_path / "empty_overlay.yaml"
    empty.write_text("joints: {j1: {FV: 0.0}}\n")
    assert main(["info", str(BASE_URDF), "--overlay", str(empty)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_corpus_file_is_refused_with_one_clear_message(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    field, fragment = expectation(path)
    line = refused(capsys, arguments(path, tmp_path / "out"), tmp_path / "out")
    assert str(path) in line, line
    assert field in line and fragment in line, (field, fragment, line)


WARN_CASES = sorted((CORPUS / "warn").iterdir())


@pytest.mark.parametrize("path", WARN_CASES, ids=lambda p: p.name)
def test_doubtful_description_loads_with_one_warning_line(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What may be right (a limit beyond a turn, a slow sample period, an inertia no rigid body has,
    joints locked by the chosen chain) loads, exit code 0, with one line naming file, field and cause."""
    m = re.search(r"warn: ([^|\n]*)\|([^\n]*?)\s*(?:-->)?\n", path.read_text())
    assert m, f"{path.name} has no 'warn: FIELD | FRAGMENT' comment"
    field, fragment = m.group(1).strip(), m.group(2).strip()
    args = ["info", str(path)] + (["--tip-link", "l2"] if path.suffix == ".urdf" else [])
    assert main(args) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("manipgen: warning: "), lines
    assert str(path) in lines[0] and field in lines[0] and fragment in lines[0], lines[0]


def test_a_file_that_is_not_a_log_says_what_was_expected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A description passed where a log goes: the expected format, not numpy's pickle advice."""
    rc = main(["thresholds", "planar2", str(CORPUS / "ok" / "corpus_arm.yaml"), "--json"])
    err = capsys.readouterr().err
    assert rc != 0 and "NPZ log format" in err and "pickle" not in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("name", ["run.bag", "run.db3", "run.mcap", "folder", "empty_folder"])
def test_a_corrupt_ros_bag_is_one_clear_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Garbage under a bag's name (a ROS 2 folder: a metadata.yaml that is not one) -> one line naming
    the file, exit code 2, whichever tool reads it."""
    path = tmp_path / name
    junk = b"\x00\xffnot a bag\n" * 64
    if name == "folder":
        path.mkdir()
        (path / "metadata.yaml").write_bytes(b"rosbag2_bagfile_information: [1, 2\n")
    elif name == "empty_folder":  # what a ROS 2 bag looks like, without its metadata
        path.mkdir()
    else:
        path.write_bytes(junk)
    out = tmp_path / "out.npz"
    for args in (
        ["import-log", str(path), "--robot", "planar2", "--out", str(out)],
        ["thresholds", "planar2", str(path), "--json"],
    ):
        rc = main(args)
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("manipgen: error: "), err
        assert str(path) in lines[0] and "Traceback" not in err, err
        assert ("ROS 2 bag (no metadata.yaml" if name == "empty_folder" else "ROS bag") in lines[0], err
    assert not out.exists()


def test_yaml_tags_never_construct_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A python/object tag that would run a command (unsafe loaders) is refused and never runs."""
    marker = tmp_path / "pwned"
    text = (
        (CORPUS / "ok" / "corpus_arm.yaml")
        .read_text()
        .replace("mass: 1.0", f'mass: !!python/object/apply:os.system ["touch {marker}"]', 1)
    )
    path = tmp_path / "tagged.yaml"
    path.write_text(text)
    line = refused(capsys, ["info", str(path)], tmp_path / "out")
    assert "joints[0].link.mass" in line and "tag" in line
    assert not marker.exists()


def test_urdf_external_entity_is_never_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    path = tmp_path / "xxe.urdf"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY s SYSTEM "file://{secret}">]>\n'
        '<robot name="x"><link name="&s;"/></robot>\n'
    )
    line = refused(capsys, ["info", str(path)], tmp_path / "out")
    assert "entity" in line and "TOP-SECRET" not in line


def huge_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Inputs too big to commit: (path, expected fragment)."""
    base = (CORPUS / "ok" / "corpus_arm.yaml").read_text()
    out: dict[str, tuple[Path, str]] = {}
    big = tmp / "huge.yaml"
    with big.open("w") as f:  # a valid head and 40 MB of comment: refused before it is parsed
        f.write(base)
        f.truncate(40 * 2**20)
    out["huge_yaml"] = (big, "MiB")
    big_urdf = tmp / "huge.urdf"
    with big_urdf.open("w") as f:
        f.write(BASE_URDF.read_text())
        f.truncate(40 * 2**20)
    out["huge_urdf"] = (big_urdf, "MiB")
    deep = tmp / "deep.yaml"
    deep.write_text("name: deep\njoints: " + "[" * 100_000 + "]" * 100_000 + "\n")
    out["deeply_nested_yaml"] = (deep, "nest")
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        bomb.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    alias = tmp / "alias_bomb.yaml"
    alias.write_text("\n".join(bomb) + "\nname: bomb\njoints: *l\n")
    out["yaml_alias_bomb"] = (alias, "aliases")
    joint = base.split("joints:\n", 1)[1].split("  - name: j2", 1)[0]
    many = tmp / "many_joints.yaml"
    many.write_text(
        base.split("joints:\n", 1)[0]
        + "joints:\n"
        + "".join(joint.replace("name: j1", f"name: j{i}") for i in range(1000))
    )
    out["thousand_joints"] = (many, "joints")
    deep_xml = tmp / "deep.urdf"
    deep_xml.write_text('<?xml version="1.0"?>\n<robot name="x">' + "<a>" * 100_000 + "</a>" * 100_000 + "</robot>\n")
    out["deeply_nested_urdf"] = (deep_xml, "URDF")
    device = tmp / "zero.yaml"  # stat() says 0 bytes; reading would never end
    device.symlink_to("/dev/zero")
    out["device_file"] = (device, "not a regular file")
    fifo = tmp / "fifo.urdf"
    os.mkfifo(fifo)
    out["fifo"] = (fifo, "not a regular file")
    return out


def test_huge_and_explosive_inputs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, (path, fragment) in huge_inputs(tmp_path).items():
        line = refused(capsys, ["generate", str(path), "--out", str(tmp_path / "out")], tmp_path / "out")
        assert str(path) in line and fragment in line, (name, line)


def test_console_entry_point_has_no_traceback(tmp_path: Path) -> None:
    """The installed `manipgen` in a fresh interpreter: exit code 2, one line, for a few cases."""
    exe = Path(sys.executable).with_name("manipgen")
    for name in ("python_object_tag.yaml", "entity_expansion.urdf", "non_utf8.yaml"):
        res = subprocess.run(
            [str(exe), "info", str(CORPUS / name)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONWARNINGS": "error"},
        )
        assert res.returncode == 2 and res.stdout == "", (name, res)
        assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize("name", ["hostile_names.yaml", "hostile_names.urdf"])
def test_hostile_names_become_safe_c(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Names with comment terminators, directives, quotes, newlines, splices, trigraphs and
    non-ASCII generate C that compiles strictly on gcc and clang, is pure ASCII, exports only
    symbols under the robot's prefix, and carries none of the injected code past the preprocessor."""
    from tests.codegen.emit.test_generated_c import compile_folder, symbols

    out = tmp_path / "gen"
    assert main(["generate", str(CORPUS / "ok" / name), "--out", str(out)]) == 0
    capsys.readouterr()
    prefix = json.loads((out / "manifest.json").read_text())["robot"]
    assert re.fullmatch(r"[a-z][a-z0-9_]{0,31}", prefix), prefix
    committed = CORPUS.parent.parent / "generated" / "planar2"
    ours = {c for f in committed.rglob("*") if f.is_file() for c in f.read_text() if ord(c) > 127}
    for f in (f for f in out.rglob("*") if f.is_file()):  # the only non-ASCII is our own documentation's
        assert {c for c in f.read_text() if ord(c) > 127} <= ours, f.name
    nm = require_tool("nm")
    for cc in ("gcc", "clang"):
        require_tool(cc)
        for obj in compile_folder(cc, out, tmp_path / cc):
            exported = [s for s, kind in symbols(nm, obj, undefined=False).items() if kind.isupper()]
            assert exported and all(s.startswith(prefix + "_") for s in exported), exported
            called = {s for s in symbols(nm, obj, undefined=True) if not s.startswith(prefix + "_")}
            assert called <= LIBM, (obj.name, called - LIBM)
    for src in [*out.glob("*.c"), *out.glob("host/*.c")]:
        pre = subprocess.run(
            ["gcc", "-std=c99", "-E", "-P", f"-I{out}", f"-I{out / 'host'}", str(src)],
            capture_output=True,
            text=True,
            check=True,
            cwd=out,
        ).stdout
        assert not re.search(r"\b(injected_marker|injected_macro|system|main|FOO)\b", pre), src.name
