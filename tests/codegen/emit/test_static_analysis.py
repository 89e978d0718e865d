"""Static analysis of every kind of C manipgen generates (issue #10 item 3): cppcheck with its
warning, style, performance and portability checks, and clang-tidy with the check set below,
find nothing -- the committed generated/ folders, the pipelines they do not show (float, the
adaptive and direct observers, the model-based estimators, PID, constant parameters, an elastic
arm in float), the excitation C and the output-error simulator. cppcheck has no suppressions;
clang-tidy has one, justified in place (templates/loopback.c.j2). The precision is chosen at
generation, not by a macro of the C, so the float variants are the float build.

MISRA C:2012 (issue #26): cppcheck's misra addon, in the same cppcheck pass, on the firmware files
of the same folders and on runtime/manipgen_sos_filter.c finds nothing beyond the deviations
docs/misra.md lists (rule and files), which this test reads."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegen.blocks.options import RtOptions, parse_estimator
from codegen.emit.generate import generate
from codegen.model.description import load_robot
from codegen.model.robot import FRICTION_TERMS, with_friction_terms
from tests.tooling import ROOT, require_tool

COMMITTED = sorted(p.name for p in (ROOT / "generated").iterdir() if p.is_dir())
CPPCHECK = ("--enable=warning,style,performance,portability", "--inline-suppr")
# The generated C has two builds: the C library's sin, cos, exp, tanh (the default) and
# MANIPGEN_PORTABLE_MATH (manipgen_linalg.h's own, what `manipgen target pil` builds). cppcheck
# analyses every configuration it finds, so each file twice, though the two differ only in what the
# MG_SIN ... macros name. The portable build is analysed in one committed folder, PORTABLE_MATH_IN
# (both builds, all of the header's portable functions: the header is the same in every folder), the
# rest in the default build alone: half the CPU (franka_panda_dynamics.c: 26 s instead of 55 s) and,
# after docs/misra.md's deviations, the same findings (measured on the committed folders: the default
# build alone adds rule 2.5 on the portable macros it leaves unused, deviated for manipgen_linalg.h).
# Likewise manipgen_rt.h's MG_COUNT_32 default (#ifdef UINTPTR_MAX: the 32-bit targets' conversion
# of a count through int32_t): cppcheck analyses each <robot>_rt.c with and without UINTPTR_MAX, though
# the two differ only in mg_count_real's body, in a header the same in every folder. Both are analysed
# in PORTABLE_MATH_IN, the rest without UINTPTR_MAX alone: iiwa-adaptive's rt.c and host/ 14 s of CPU
# instead of 25 s, and the same findings (measured on the committed folders but planar2 and on every
# variant: the same findings with and without -UUINTPTR_MAX).
PORTABLE_MATH_IN = "planar2"
DEFAULT_MATH_ONLY = ("-UMANIPGEN_PORTABLE_MATH", "-UUINTPTR_MAX")
# clang-tidy: the analyzer (null dereferences, uninitialised reads, division by zero, dead stores),
# the compiler's own warnings under CFLAGS below, and the bug-prone, CERT, misc,
# performance, portability and readability families. Left out, as noise for generated numeric C:
# - bugprone-easily-swappable-parameters: the kernels take many same-typed arrays (q, qd, qdd, ...)
#   by design, in an API every robot shares;
# - readability-magic-numbers: the literals are the model's constants and the unrolled code's
#   indices, computed by the generator;
# - readability-identifier-length: generated temporaries (w12, a8) and the math's names (q, i, k);
# - readability-isolate-declaration: grouped declarations (real_t f, d;) are plain C and no hazard;
# - readability-function-size, readability-function-cognitive-complexity: unrolled symbolic
#   kernels and the RT step are long by construction; their source is the generator;
# - readability-uppercase-literal-suffix: 1u and 0.5f are unambiguous; the ambiguous lowercase l
#   stays checked by cert-dcl16-c.
CLANG_TIDY_CHECKS = ",".join(
    [
        "-*",
        "clang-diagnostic-*",
        "clang-analyzer-*",
        "bugprone-*",
        "cert-*",
        "misc-*",
        "performance-*",
        "portability-*",
        "readability-*",
        "-bugprone-easily-swappable-parameters",
        "-readability-magic-numbers",
        "-readability-identifier-length",
        "-readability-isolate-declaration",
        "-readability-function-size",
        "-readability-function-cognitive-complexity",
        "-readability-uppercase-literal-suffix",
    ]
)
CLANG_TIDY = ["--quiet", "--warnings-as-errors=*", "--header-filter=.*", f"--checks={CLANG_TIDY_CHECKS}"]
# the generated Makefile's warnings, and no silent double arithmetic in the float build
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wdouble-promotion", "-Wfloat-conversion"]
VARIANTS = {
    "biorob4-float": (
        "biorob4",
        "float",
        RtOptions(estimator=parse_estimator("ewlr:n=10,lam=0.8"), controller="state_feedback"),
    ),
    # the model-adaptive observer on seven joints, in double: its dynamics is the committed folder's
    # (left to that test), and the adaptive observer in float is planar2-imu-float's
    "iiwa-adaptive": (
        "kuka_iiwa14",
        "double",
        RtOptions(estimator=parse_estimator("kalman"), observer="adaptive"),
    ),
    "iiwa-direct-measured": (
        "kuka_iiwa14",
        "double",
        RtOptions(estimator=parse_estimator("kalman"), observer="direct_measured"),
    ),
    # the imu estimator and the loopback's simulated IMUs (planar2: the iiwa's seven IMUs make a step
    # the analyzers take minutes over, with the same code shape)
    "planar2-imu-float": ("planar2", "float", RtOptions(estimator=parse_estimator("imu"), observer="adaptive")),
    "planar2-imu-tip": ("planar2", "double", RtOptions(estimator=parse_estimator("imu:tip=1"))),
    # the adaptive observer's momentum form and a loopback with the measured velocity only
    "planar2-momentum-form-float": (
        "planar2",
        "float",
        RtOptions(estimator=parse_estimator("kalman"), observer="adaptive_momentum_measured"),
    ),
    # the momentum form's covariance refresh spread over a window (the sliced update's C: adaptive_momentum's;
    # the dense update's C is the measured form's above)
    "planar2-momentum-sliced-float": (
        "planar2",
        "float",
        RtOptions(estimator=parse_estimator("kalman"), observer="adaptive_momentum"),
    ),
    # the friction block (codegen.blocks.friction) with every term on every joint (no bundled robot
    # declares terms; the momentum observer adds them), in float: the M4F's precision
    "planar2-friction-terms-float": (
        "planar2",
        "float",
        RtOptions(estimator=parse_estimator("kalman"), observer="momentum"),
    ),
    "lwa4p-slimod": ("schunk_lwa4p", "double", RtOptions(estimator=parse_estimator("slimod"))),
    "lwa4p-nlhg-pid": ("schunk_lwa4p", "double", RtOptions(estimator=parse_estimator("nlhg"), controller="pid")),
    "planar2-lsf-constant": (
        "planar2",
        "double",
        RtOptions(estimator=parse_estimator("lsf:n=6,p=2"), constant_params=True),
    ),
}


def c_sources(folder: Path, skip_committed: bool) -> list[Path]:
    """The .c files of folder and its host/; with ``skip_committed`` those the committed generated/
    holds with the same headers (committed_twin) left out."""
    sources = sorted(folder.glob("*.c")) + sorted(folder.glob("host/*.c"))
    assert sources, folder
    return [s for s in sources if not committed_twin(s)] if skip_committed else sources


def cppcheck_and_misra(
    folder: Path, skip_committed: bool = False, misra: bool = True, portable_math: bool = False
) -> None:
    """One cppcheck pass over each .c of folder and host/ (and the headers they include): its
    warning, style, performance and portability checks find nothing, and its MISRA addon finds
    nothing on the firmware files (the .c and headers of folder itself, not host/) beyond the
    deviations docs/misra.md lists. One pass, not two: cppcheck's value flow over a generated step
    is most of the time (about 80 s of CPU for the IMU estimator's), and the addon reads the same
    analysis. With ``skip_committed``, a .c the committed generated/ holds with the same headers is
    left to that folder's test (a variant's dynamics: most of the C, and of the analysis' time).
    The addon writes .dump files beside the sources: run it on a copy of anything committed.
    ``misra`` False: host-only C (no firmware files), cppcheck's own checks alone.
    ``portable_math``: the MANIPGEN_PORTABLE_MATH build as well as the default, and the MG_COUNT_32
    default with UINTPTR_MAX as well as without (PORTABLE_MATH_IN)."""
    sources = c_sources(folder, skip_committed)
    if not sources:
        return
    options = CPPCHECK if portable_math else (*CPPCHECK, *DEFAULT_MATH_ONLY)
    found = cppcheck_findings(sources, (folder, folder / "host"), options, misra)
    other = [f for f in found if not f.rule.startswith(MISRA)]
    assert not other, f"cppcheck on {folder}:\n" + "\n".join(map(str, other))
    firmware = [f for f in found if f.rule.startswith(MISRA) and f.path.parent == folder]
    left = undeviated(firmware)
    assert not left, f"MISRA findings not in docs/misra.md: {left}"


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    rule: str  # cppcheck's id: misra-c2012-<rule> for the addon's

    @property
    def name(self) -> str:
        return self.path.name


MISRA = "misra-c2012-"


def cppcheck_findings(
    sources: list[Path], include: tuple[Path, ...], options: tuple[str, ...], misra: bool = True
) -> list[Finding]:
    """cppcheck (with the MISRA addon) and ``options`` on the sources: every finding, and any other
    message cppcheck gives as a finding of rule "cppcheck"."""
    tool = require_tool("cppcheck")
    addon = ["--addon=misra"] if misra else []
    cmd = [tool, *addon, "--std=c99", "--quiet", "--template={file}:{line}:{id}", *options]
    done = subprocess.run([*cmd, *(f"-I{i}" for i in include), *map(str, sources)], capture_output=True, text=True)
    found = []
    for line in (done.stdout + done.stderr).splitlines():
        m = re.fullmatch(r"(.+):(\d+):(\S+)", line.strip())
        if m:
            found.append(Finding(Path(m.group(1)).resolve(), int(m.group(2)), m.group(3)))
        elif line.strip():
            found.append(Finding(Path("cppcheck"), 0, line.strip()))
    return found


def committed_twin(source: Path) -> bool:
    """Whether generated/<robot>/ holds source and every header of its folder it includes, byte
    for byte (a variant's dynamics, say): then the committed folder's test covers it."""
    top = source.parent.parent if source.parent.name == "host" else source.parent
    rel = source.relative_to(top)
    committed = next((d for d in (ROOT / "generated").iterdir() if (d / rel).is_file()), None)
    if committed is None:
        return False
    todo, seen = [rel.name], set()
    while todo:
        name = todo.pop()
        mine = next((d / name for d in (top, top / "host") if (d / name).is_file()), None)
        if name in seen or mine is None:
            continue
        seen.add(name)
        twin = committed / mine.relative_to(top)
        if not twin.is_file() or twin.read_bytes() != mine.read_bytes():
            return False
        todo += re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', mine.read_text(), re.MULTILINE)
    return True


def clang_tidy(folder: Path, skip_committed: bool = True) -> None:
    """clang-tidy on each .c of folder and the folder's headers it includes. A .c the committed
    generated/ holds with the same headers is left to that folder's test: clang-tidy costs
    seconds a file (about 80 s of CPU for this module), the suite is near its budget."""
    tool = require_tool("clang-tidy")
    sources = c_sources(folder, skip_committed)
    if not sources:
        return
    r = subprocess.run(
        [tool, *CLANG_TIDY, *map(str, sources), "--", *CFLAGS, f"-I{folder}", f"-I{folder / 'host'}"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "warning:" not in r.stdout and "error:" not in r.stdout, (
        f"clang-tidy on {folder}:\n{r.stdout}\n{r.stderr}"
    )


# both analysers of a variant, or of the excitation C, in one xdist worker (dev.sh's --dist
# loadgroup): it generates the folder once (spread over two workers, each generated it)
GROUPED_VARIANTS = [pytest.param(v, marks=pytest.mark.xdist_group(f"static-analysis-{v}")) for v in sorted(VARIANTS)]
ON_EXCITATION = pytest.mark.xdist_group("static-analysis-excitation")


@pytest.fixture(scope="module")
def variant_folder(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The folder of a variant, generated once per worker for both analysers."""
    made: dict[str, Path] = {}

    def folder(variant: str) -> Path:
        if variant not in made:
            robot, precision, options = VARIANTS[variant]
            out = tmp_path_factory.mktemp(variant) / robot
            description = load_robot(robot)
            if "friction-terms" in variant:
                description = with_friction_terms(description, [FRICTION_TERMS] * description.dof)
            generate(description, precision, options).write(out)  # type: ignore[arg-type]
            made[variant] = out
        return made[variant]

    return folder


@pytest.fixture(scope="module")
def excitation_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from codegen.emit.excitation import excitation_files
    from host_tools.identification.excitation import random_excitation

    robot = load_robot("ur5")
    exc = random_excitation(robot, 1)
    out = tmp_path_factory.mktemp("excitation")
    for name, text in excitation_files(
        robot.c_name, robot.name, exc.a, exc.b, exc.q0, exc.base_frequency, robot.sample_period
    ).items():
        (out / name).write_text(text)
    return out


def oesim() -> Path:
    from host_tools.identification.closed_loop import oesim_folder

    return oesim_folder(load_robot("ur5"))


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_folders_are_clean(name: str, tmp_path: Path) -> None:
    """cppcheck and MISRA, on a copy: the addon's .dump files beside the sources would be files
    not generated to the freshness test (test_generated_c) running at the same time."""
    cppcheck_and_misra(
        shutil.copytree(ROOT / "generated" / name, tmp_path / name), portable_math=name == PORTABLE_MATH_IN
    )


@pytest.mark.parametrize("variant", GROUPED_VARIANTS)
def test_other_pipelines_are_clean(variant: str, variant_folder: Callable[[str], Path]) -> None:
    cppcheck_and_misra(variant_folder(variant), skip_committed=True)


@ON_EXCITATION
def test_excitation_and_output_error_c_are_clean(excitation_folder: Path) -> None:
    cppcheck_and_misra(excitation_folder, misra=False)
    cppcheck_and_misra(oesim(), misra=False)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_folders_pass_clang_tidy(name: str) -> None:
    clang_tidy(ROOT / "generated" / name, skip_committed=False)


@pytest.mark.parametrize("variant", GROUPED_VARIANTS)
def test_other_pipelines_pass_clang_tidy(variant: str, variant_folder: Callable[[str], Path]) -> None:
    clang_tidy(variant_folder(variant))


@ON_EXCITATION
def test_excitation_and_output_error_c_pass_clang_tidy(excitation_folder: Path) -> None:
    clang_tidy(excitation_folder)
    clang_tidy(oesim())


@pytest.mark.parametrize("plant", ["source", "header"])
def test_clang_tidy_finds_a_planted_finding(plant: str, tmp_path: Path) -> None:
    """The check can fail, and a header planted in a copy of a committed folder is not taken for
    the committed one: an uninitialised read in a new .c; an int product as a pointer offset in a
    header (the loopback's, so that only its .c is checked again)."""
    folder = tmp_path / "planar2"
    shutil.copytree(ROOT / "generated" / "planar2", folder)
    if plant == "source":
        (folder / "planted.c").write_text(
            "int planted(int flag);\nint planted(int flag) { int v; if (flag) { v = 1; } return v; }\n"
        )
        expected = r"planted\.c:.*clang-analyzer"
    else:
        header = folder / "host" / "planar2_loopback.h"
        header.write_text(
            header.read_text().replace(
                "#endif", "static inline double planted(const double *b, int i, int m) { return b[i * m]; }\n#endif"
            )
        )
        expected = r"planar2_loopback\.h:.*bugprone-implicit-widening-of-multiplication-result"
    with pytest.raises(AssertionError, match=expected):
        clang_tidy(folder)


def misra_deviations() -> dict[str, list[str]]:
    """docs/misra.md's table: rule -> the file patterns where it is deviated."""
    out: dict[str, list[str]] = {}
    for line in (ROOT / "docs" / "misra.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"\d+\.\d+", cells[0]):
            out[cells[0]] = re.findall(r"`([^`]+)`", cells[2])
    return out


def undeviated(found: list[Finding]) -> list[Finding]:
    deviations = misra_deviations()
    return [
        f for f in found if not any(fnmatch.fnmatch(f.name, p) for p in deviations.get(f.rule.removeprefix(MISRA), []))
    ]


def test_runtime_host_helper_follows_misra(tmp_path: Path) -> None:
    source = shutil.copy(ROOT / "runtime" / "manipgen_sos_filter.c", tmp_path)  # the .dump beside it, not in runtime/
    assert undeviated(cppcheck_findings([Path(source)], (), ())) == []


def test_the_board_port_template_follows_misra(tmp_path: Path) -> None:
    """runtime/target/board_template.c (what a port copies) for a bundled robot, with the Makefile's
    defines (on a copy of runtime/target/: the addon's .dump files land beside the source)."""
    template = shutil.copytree(ROOT / "runtime" / "target", tmp_path / "target") / "board_template.c"
    defines = ("MG_ROBOT=kuka_iiwa14", "MG_ROBOT_UPPER=KUKA_IIWA14", 'MG_RT_HEADER="kuka_iiwa14_rt.h"')
    found = cppcheck_findings([template], (ROOT / "generated" / "kuka_iiwa14",), tuple(f"-D{d}" for d in defines))
    assert f"{MISRA}11.4" in {f.rule for f in found}  # the register accesses: the check saw the code
    assert not undeviated([f for f in found if f.name in ("board_template.c", "mg_port.h")]), found


def test_the_misra_check_finds_a_planted_finding(tmp_path: Path) -> None:
    """Two declarators in one declaration (rule 12.3, not deviated) and an unused macro (2.5,
    deviated for the generated headers only, not for this file)."""
    source = tmp_path / "planted.c"
    source.write_text(
        "#define MG_UNUSED 1\nint mg_planted(int x);\nint mg_planted(int x)\n{\n    int a, b;\n"
        "    a = x;\n    b = a;\n    return b;\n}\n"
    )
    left = undeviated(cppcheck_findings([source], (), ()))
    assert {f.rule.removeprefix(MISRA) for f in left} >= {"12.3", "2.5"}, left
    assert set(misra_deviations()) == {"2.5", "5.6", "8.7", "8.11", "9.3", "11.4", "15.5", "19.2", "20.10"}


# where a configuration's own code is: the header, a line inside it, what the header needs defined
CONFIGURATIONS = {
    "portable-math": ("manipgen_linalg.h", "#ifdef MANIPGEN_PORTABLE_MATH\n", "#define MG_SQRT sqrt\n"),
    "count-32": ("manipgen_rt.h", "#define MG_COUNT_32 1\n", "#define MG_FABS fabs\n"),
}


@pytest.mark.parametrize("configuration", sorted(CONFIGURATIONS))
def test_every_configuration_is_analysed_where_asked(configuration: str, tmp_path: Path) -> None:
    """An out-of-bounds read planted in manipgen_linalg.h's MANIPGEN_PORTABLE_MATH section, or in
    manipgen_rt.h's MG_COUNT_32 default for 32-bit targets (#ifdef UINTPTR_MAX): the default
    configuration alone (every folder but PORTABLE_MATH_IN) does not see it, the analysis of all
    (PORTABLE_MATH_IN's) fails on it."""
    name, anchor, needs = CONFIGURATIONS[configuration]
    (tmp_path / "host").mkdir()
    header = (ROOT / "generated" / PORTABLE_MATH_IN / name).read_text()
    planted = "static inline int mg_planted(void)\n{\n    int a[2] = {0, 1};\n    return a[2];\n}\n"
    assert header.count(anchor) == 1
    (tmp_path / "host" / name).write_text(header.replace(anchor, anchor + planted))
    (tmp_path / "host" / "planted_host.c").write_text(
        f'#include <math.h>\n#define MG_REAL double\n{needs}#include "{name}"\n'
    )
    cppcheck_and_misra(tmp_path, misra=False)
    with pytest.raises(
        AssertionError, match=rf"(?s)cppcheck on .*{re.escape(name)}'\), line=\d+, rule='arrayIndexOutOfBounds'"
    ):
        cppcheck_and_misra(tmp_path, misra=False, portable_math=True)


def test_cppcheck_and_misra_find_planted_findings(tmp_path: Path) -> None:
    """One pass, both checks: two declarators in one declaration (MISRA rule 12.3) fails in a
    firmware file and not in host/ (MISRA is the firmware's rule set); an out-of-bounds read fails
    as cppcheck's own finding."""
    (tmp_path / "host").mkdir()
    two_declarators = (
        "int mg_planted(int x);\nint mg_planted(int x)\n{\n    int a, b;\n    a = x;\n    b = a;\n    return b;\n}\n"
    )
    (tmp_path / "host" / "planted_host.c").write_text(two_declarators)
    cppcheck_and_misra(tmp_path)
    (tmp_path / "planted.c").write_text(two_declarators)
    with pytest.raises(AssertionError, match=r"MISRA findings not in docs/misra\.md.*12\.3"):
        cppcheck_and_misra(tmp_path)
    (tmp_path / "planted.c").write_text(
        "int mg_planted(void);\nint mg_planted(void)\n{\n    int a[2] = {0, 1};\n    return a[2];\n}\n"
    )
    with pytest.raises(AssertionError, match=r"(?s)cppcheck on .*arrayIndexOutOfBounds"):
        cppcheck_and_misra(tmp_path)
