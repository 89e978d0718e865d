"""The generated-C contract: strict C99 on gcc and clang, no heap, no mutable globals, no VLAs, no
recursion, float builds free of double math (host and Cortex-M4F), deterministic output."""

from __future__ import annotations

import hashlib
import itertools
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from codegen.emit.generate import generate
from codegen.model.description import load_robot
from tests.tooling import ROOT, require_tool

BUNDLED = ["kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2", "biorob4"]
STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wvla", "-Werror"]
HEAP = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "alloca"}
DOUBLE_MATH = {
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
    "sincos",
    "fmin",
    "fmax",
    "floor",
}


# the float iiwa's tests in one xdist worker (dev.sh's --dist loadgroup), which generates it once
ON_FLOAT_IIWA = pytest.mark.xdist_group("generated-c-float-iiwa")


@pytest.fixture(scope="module")
def float_iiwa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("float") / "kuka_iiwa14"
    generate(load_robot("kuka_iiwa14"), "float").write(out)
    return out


# Objects this process compiled cleanly, by everything the compiler reads (compiler, flags, the source
# and the folder's headers it includes, recursively): the variants' <robot>_dynamics.c does not
# depend on the pipeline, so the same bytes are compiled once per precision and compiler (about 3 s
# each for the iiwa), not once per variant. Flags with side outputs (-fstack-usage, ...) always compile.
_CLEAN: dict[str, bytes] = {}
SIDE_OUTPUTS = ("-fstack-usage", "-fcallgraph-info")
INCLUDE = re.compile(rb'^#include "([^"]+)"', re.MULTILINE)


def _reads(src: Path, dirs: Sequence[Path]) -> bytes:
    """The source's bytes and those of the headers from ``dirs`` it includes, recursively."""
    seen: dict[str, bytes] = {}
    todo = [src.read_bytes()]
    while todo:
        for name in INCLUDE.findall(todo.pop()):
            found = next((d / name.decode() for d in dirs if (d / name.decode()).is_file()), None)
            if found is not None and name.decode() not in seen:
                seen[name.decode()] = found.read_bytes()
                todo.append(seen[name.decode()])
    return src.read_bytes() + b"".join(k.encode() + b"\0" + v for k, v in sorted(seen.items()))


def compile_folder(cc: str, folder: Path, out: Path, extra: Sequence[str] = ()) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    objs = []
    includes = [f"-I{folder}", f"-I{folder / 'host'}"]
    memo = not any(f.startswith(SIDE_OUTPUTS) for f in extra)
    for src in [*sorted(folder.glob("*.c")), *sorted(folder.glob("host/*.c"))]:  # firmware, then host-only
        obj = out / (src.stem + ".o")
        what = "\0".join([shutil.which(cc) or cc, *STRICT, *extra, src.name]).encode()
        key = hashlib.sha256(what + _reads(src, (src.parent, folder, folder / "host"))).hexdigest()
        if memo and key in _CLEAN:
            obj.write_bytes(_CLEAN[key])
            objs.append(obj)
            continue
        cmd = [cc, *STRICT, *extra, *includes, "-c", str(src), "-o", str(obj)]
        r = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        assert r.returncode == 0, f"{cc} {src.name}:\n{r.stderr}"
        _CLEAN[key] = obj.read_bytes()
        objs.append(obj)
    return objs


def symbols(nm: str, obj: Path, undefined: bool) -> dict[str, str]:
    r = subprocess.run(
        [nm, "-u" if undefined else "--defined-only", str(obj)], capture_output=True, text=True, check=True
    )
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts:
            out[parts[-1]] = parts[-2] if len(parts) >= 2 else "U"
    return out


@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("name", BUNDLED)
def test_strict_c99_no_heap_no_mutable_globals(cc: str, name: str, tmp_path: Path) -> None:
    require_tool(cc)
    nm = require_tool("nm")
    objs = compile_folder(cc, ROOT / "generated" / name, tmp_path)
    ours = set().union(*(symbols(nm, obj, undefined=False) for obj in objs))  # defined in the folder
    for obj in objs:
        undefined = set(symbols(nm, obj, undefined=True))
        assert not undefined & HEAP, f"{obj.name} uses the heap: {undefined & HEAP}"
        # memset/memcpy: the compiler's block stores (required even of freestanding C libraries)
        assert undefined <= DOUBLE_MATH | ours | {"memset", "memcpy", "_GLOBAL_OFFSET_TABLE_"}, undefined
        defined = symbols(nm, obj, undefined=False)
        mutable = {s: t for s, t in defined.items() if t in "DdBbCGgSs"}
        assert not mutable, f"{obj.name} has mutable globals: {mutable}"


def test_stack_is_static_and_there_is_no_recursion(tmp_path: Path) -> None:
    """-fstack-usage: every function's frame has a compile-time bound (no VLA, no alloca); the call graph
    (-fcallgraph-info) has no cycle."""
    require_tool("gcc")
    compile_folder("gcc", ROOT / "generated" / "kuka_iiwa14", tmp_path, ["-fstack-usage", "-fcallgraph-info"])
    su = (tmp_path / "kuka_iiwa14_dynamics.su").read_text().splitlines()
    su += (tmp_path / "kuka_iiwa14_rt.su").read_text().splitlines()
    assert len(su) >= 20  # the .su files were read (static inline helpers add no entries)
    step = [line for line in su if "kuka_iiwa14_rt_step" in line]
    print("stack of kuka_iiwa14_rt_step:", step)
    assert step
    for line in su:
        fn, size, kind = line.split("\t")
        # "dynamic,bounded": x86-64 gcc adjusting the stack around calls with stack arguments, the
        # bound given; a VLA or alloca would read "dynamic" (unbounded)
        assert kind.strip() in ("static", "dynamic,bounded"), line
        assert int(size) < 16384, f"{fn} uses {size} bytes of stack"
    ci = (tmp_path / "kuka_iiwa14_dynamics.ci").read_text() + (tmp_path / "kuka_iiwa14_rt.ci").read_text()
    edges: dict[str, set[str]] = {}
    for src, dst in re.findall(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', ci):
        edges.setdefault(src, set()).add(dst)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert edges, "no call graph read"
    assert not [f for f in edges if reaches(f, f, {f})]


@ON_FLOAT_IIWA
def test_float_build_has_no_double_math(float_iiwa: Path, tmp_path: Path) -> None:
    for cc in ("gcc", "clang"):
        require_tool(cc)
        used: set[str] = set()
        for obj in compile_folder(cc, float_iiwa, tmp_path / cc, ["-Wdouble-promotion"]):
            undefined = set(symbols(require_tool("nm"), obj, undefined=True))
            assert not undefined & DOUBLE_MATH, f"{cc}: double math in the float build: {undefined}"
            used |= undefined
        assert {"sinf", "cosf"} & used or "sincosf" in used


@ON_FLOAT_IIWA
def test_float_build_on_cortex_m4f_has_no_double_arithmetic(float_iiwa: Path, tmp_path: Path) -> None:
    cc = require_tool("arm-none-eabi-gcc")
    nm = require_tool("arm-none-eabi-nm")
    flags = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-Wdouble-promotion"]
    for obj in compile_folder(cc, float_iiwa, tmp_path, flags):
        undefined = set(symbols(nm, obj, undefined=True))
        soft_double = {s for s in undefined if s.startswith("__aeabi_d") or s == "__aeabi_f2d"}
        assert not soft_double, f"double arithmetic on the M4F: {soft_double}"
        assert not undefined & (DOUBLE_MATH | HEAP), undefined


def test_generation_is_deterministic_and_committed_code_is_fresh(tmp_path: Path) -> None:
    robot = load_robot("planar2")
    a, b = generate(robot), generate(load_robot("planar2"))
    assert a.files == b.files and a.host == b.host
    for name in BUNDLED:
        assert generate(load_robot(name)).differences(ROOT / "generated" / name) == [], (
            "run `make generated` and commit"
        )


def test_generated_folder_builds_alone_with_make_and_cmake(tmp_path: Path) -> None:
    make = require_tool("make")
    folder = tmp_path / "planar2"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    subprocess.run([make, "-s", "-C", str(folder)], check=True, capture_output=True)
    assert (folder / "libplanar2.a").is_file()
    cmake = require_tool("cmake")
    build = tmp_path / "cmake-build"
    subprocess.run(
        [cmake, "-S", str(ROOT / "generated" / "planar2"), "-B", str(build)], check=True, capture_output=True
    )
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    assert list(build.glob("libplanar2.a"))


def assert_strict_and_heap_free(folder: Path, precision: str, tmp_path: Path) -> None:
    """Strict C99 on gcc and clang; no heap; in float, no double math."""
    extra = ["-Wdouble-promotion"] if precision == "float" else []
    for cc in ("gcc", "clang"):
        require_tool(cc)
        for obj in compile_folder(cc, folder, tmp_path / cc, extra):
            undefined = set(symbols(require_tool("nm"), obj, undefined=True))
            assert not undefined & HEAP, undefined
            if precision == "float":
                assert not undefined & DOUBLE_MATH, undefined


@pytest.mark.parametrize(
    "observer", ["adaptive", "adaptive_measured", "adaptive_momentum_measured", "direct", "direct_measured"]
)
@pytest.mark.parametrize("precision", ["double", "float"])
def test_regressor_observer_pipelines_are_strict_and_heap_free(observer: str, precision: str, tmp_path: Path) -> None:
    """The model-adaptive observer (Cholesky solves, regressor workspace) and the direct residual
    under the same contract."""
    from codegen.blocks.options import RtOptions, parse_estimator

    folder = tmp_path / "gen"
    generate(
        load_robot("kuka_iiwa14"),
        precision,  # type: ignore[arg-type]
        RtOptions(estimator=parse_estimator("kalman"), observer=observer),
    ).write(folder)
    assert_strict_and_heap_free(folder, precision, tmp_path)


@pytest.mark.parametrize("precision", ["double", "float"])
def test_elastic_arm_is_strict_and_heap_free_in_both_precisions(precision: str, tmp_path: Path) -> None:
    """biorob4 (series-elastic drives: the tau_el observer, the motor-side estimator, the
    state-feedback controller, the elastic loopback) under the same contract."""
    folder = tmp_path / "gen"
    generate(load_robot("biorob4"), precision).write(folder)  # type: ignore[arg-type]
    assert_strict_and_heap_free(folder, precision, tmp_path)


def test_headers_cite_the_reference_list() -> None:
    """Issue #26, #43: the generated headers cite papers by their authors from one list
    (codegen.emit.references, mirrored by docs/references.md) and carry the entries they cite, and
    only those; no file-number citation ("seed 3"), section sign, reST markup or Python name (a
    module, RtConfig) is left in them."""
    from codegen.emit.references import REFERENCES

    doc = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| ([^|]+?) \| (.+?) \|", doc, flags=re.M)[2:])  # after the head and rule
    assert set(rows) == {key for key, _ in REFERENCES}
    for key, ref in REFERENCES:  # the same work: its title, as quoted in both
        assert re.search(r'"([^"]+)"', ref).group(1)[:40] in rows[key], key  # type: ignore[union-attr]
    headers = sorted((ROOT / "generated").glob("*/*_rt.h")) + sorted((ROOT / "generated").glob("*/*_dynamics.h"))
    for header in (h for h in headers if not h.name.startswith("manipgen_")):
        text = header.read_text(encoding="utf-8")
        assert not re.search(r"seed ?\d|§|``|\[S\d\]", text), header
        # the prose names C and the command line, not the Python that wrote it
        assert not re.search(r"codegen\.|host_tools|RtConfig|\.set_\w+\(", text), header
        head, _, rest = text.partition(" * References:\n")
        entries = list(itertools.takewhile(lambda line: line.startswith(" *   "), rest.splitlines()))
        listed = {line[5:].split(": ", 1)[0] for line in entries}
        prose = head + "\n".join(rest.splitlines()[len(entries) :])
        # cited: the authors (a possessive drops the year), checked here without the generator's matcher
        cited = {key for key, _ in REFERENCES if re.search(re.escape(key.split(" (")[0]) + r"(?!\w)", prose)}
        assert cited and cited == listed, (header, cited, listed)


# C99 5.2.4.1 and MISRA C:2012 rule 5.1: an implementation may look at only the first 31 characters
# of an external name, so two names that agree there are one name to its linker.
SIGNIFICANT = 31
LONG_NAME = "a_robot_description_name_32_char"  # the longest name a description keeps (c_identifier)


def clashes(names: set[str]) -> list[tuple[str, str]]:
    by_head: dict[str, str] = {}
    out = []
    for n in sorted(names):
        head = n[:SIGNIFICANT]
        if head in by_head:
            out.append((by_head[head], n))
        by_head.setdefault(head, n)
    return out


def external_names(folder: Path, tmp_path: Path, extra_sources: Sequence[Path] = ()) -> set[str]:
    """Every external name a folder's C defines (firmware and host files, plus ``extra_sources``)."""
    nm = require_tool("nm")
    objs = compile_folder("gcc", folder, tmp_path)
    for src in extra_sources:
        obj = tmp_path / (src.stem + ".o")
        subprocess.run(["gcc", *STRICT, f"-I{folder}", "-c", str(src), "-o", str(obj)], check=True)
        objs.append(obj)
    return {s for obj in objs for s, t in symbols(nm, obj, undefined=False).items() if t.isupper()}


def test_a_clash_in_the_first_31_characters_is_found() -> None:
    """The check itself: names differing only after 31 characters clash, earlier ones do not."""
    head = "x" * 30
    assert clashes({head + "ab", head + "ac", "y"}) == [(head + "ab", head + "ac")]
    assert clashes({head[:29] + "ab", head[:29] + "ac"}) == []


@pytest.mark.parametrize("precision", ["double", "float"])
@pytest.mark.parametrize("name", BUNDLED)
def test_external_names_are_distinct_in_31_characters(name: str, precision: str, tmp_path: Path) -> None:
    folder = ROOT / "generated" / name
    if precision == "float":
        folder = tmp_path / "gen"
        generate(load_robot(name), "float").write(folder)
    names = external_names(folder, tmp_path / "obj", [ROOT / "runtime" / "manipgen_sos_filter.c"])
    assert f"{name}_rt_step" in names and f"{name}_mass_matrix" in names  # the check saw the library
    assert not clashes(names), clashes(names)


@pytest.mark.parametrize("precision", ["double", "float"])
def test_a_32_character_robot_name_keeps_external_names_distinct(precision: str, tmp_path: Path) -> None:
    """The longest name a description allows, on the elastic arm (the most generated functions), with
    its output-error and excitation C: the prefix is cut to 12 characters with a hash."""
    from codegen.emit.excitation import excitation_files
    from codegen.emit.oesim import oesim_files
    from codegen.model.robot import C_PREFIX_MAX, c_prefix

    text = (ROOT / "robots" / "biorob4.yaml").read_text()
    assert "\nname: biorob4\n" in text
    (tmp_path / "long.yaml").write_text(text.replace("\nname: biorob4\n", f"\nname: {LONG_NAME}\n"))
    robot = load_robot(tmp_path / "long.yaml")
    assert robot.name == LONG_NAME and len(LONG_NAME) == 32
    p = robot.c_name
    assert len(p) <= C_PREFIX_MAX and p.startswith("a_robot_")
    assert c_prefix(LONG_NAME[:-1] + "x") != p  # same first characters, another prefix
    folder = tmp_path / "gen"
    generate(robot, precision).write(folder)  # type: ignore[arg-type]
    n = robot.dof
    exc = excitation_files(p, robot.name, np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n), 0.1, 0.001, precision)  # type: ignore[arg-type]
    for file, body in exc.items():
        (folder / file).write_text(body)
    names = external_names(folder, tmp_path / "obj")
    expected = {f"{p}_rt_step", f"{p}_elastic_dynamics_p", f"{p}_excitation"}
    if precision == "double":  # the output-error model (host-side, double): the dynamics with its own host files
        oe = tmp_path / "oe"
        (oe / "host").mkdir(parents=True)
        for file in (f"{p}_dynamics.c", f"{p}_dynamics.h", "manipgen_linalg.h"):
            shutil.copy(folder / file, oe / file)
        for file, body in oesim_files(robot).items():
            (oe / "host" / file).write_text(body)
        names |= external_names(oe, tmp_path / "oe_obj")
        expected.add(f"{p}_oe_simulate")
    assert expected <= names, expected - names
    assert not clashes(names), clashes(names)
