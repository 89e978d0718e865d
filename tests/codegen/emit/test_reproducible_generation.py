"""Generated files are the same on any machine (codegen.model.exact): generation run under two different
numerical back-ends, in subprocesses, gives byte-identical files that equal the committed
generated/ folders.

The back-ends stand in for another CPU: the first is this machine as it is; the second forces
OpenBLAS's oldest kernel (Katmai/Prescott: no FMA, other blocking and summation order), numpy's
baseline SIMD (no AVX2/AVX-512 loops for sin, cos, sums) and glibc's non-FMA libm variants, and
one BLAS thread instead of two. Before codegen.model.exact, the two disagreed in the last digits of the
Kalman gains, the standard and base parameters and the FIR taps of every bundled robot.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from host_tools.studies.pinocchio_models import ur_urdf_path
from tests.tooling import ROOT

BUNDLED = ("kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2", "ur5", "biorob4")
PEERS = ROOT / "tests" / "peers" / "data"


def _backends() -> list[dict[str, str]]:
    """This machine as it is (any OPENBLAS_CORETYPE the machine sets for itself is kept: some CPUs
    need one), and a second back-end on OpenBLAS's generic SSE kernel (safe on any x86; ignored
    elsewhere), numpy's baseline SIMD and glibc without FMA, on one BLAS thread."""
    native = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    generic = "Nehalem" if os.environ.get("OPENBLAS_CORETYPE", "").lower() == "prescott" else "Prescott"
    old_cpu = dict(
        os.environ,
        OPENBLAS_CORETYPE=generic,
        OPENBLAS_NUM_THREADS="1",
        NPY_DISABLE_CPU_FEATURES="X86_V4 X86_V3 AVX512_ICL AVX512_SPR",
        GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F",
    )
    return [native, old_cpu]


# Generated under each back-end: the bundled robots as committed, the iiwa in float (literals
# rounded to float), two descriptions that are not bundled (the peers' mixed MDH and DH arms) and
# the UR10 URDF of example-robot-data (rpy origins, inertias rotated into the joint frames).
SCRIPT = r"""
import hashlib, json, sys
from codegen.model.description import load_robot
from codegen.emit.generate import generate
from codegen.model.export import robot_to_urdf, robot_to_yaml
specs = json.loads(sys.argv[1])
out = {}
from codegen.blocks.options import RtOptions, parse_estimator
for key, (source, precision, tip, est, obs, ctl) in specs.items():
    rt = RtOptions(parse_estimator(est), obs, ctl) if est else None
    robot = load_robot(source, tip_link=tip)
    gen = generate(robot, precision=precision, rt=rt)
    files = dict(gen.files, **{"host/" + name: text for name, text in gen.host.items()})
    if not est:   # the exports (manipgen convert, identify's identified YAML/URDF) of each description
        files = dict(files, export_yaml=robot_to_yaml(robot), export_urdf=robot_to_urdf(robot))
    out[key] = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(files.items())}
print(json.dumps(out))
"""


Spec = tuple[str, str, str | None, str, str, str]  # source, precision, tip link, estimator, observer, controller


def _specs() -> dict[str, Spec]:
    specs: dict[str, Spec] = {name: (name, "double", None, "", "", "") for name in BUNDLED}
    specs["kuka_iiwa14_float"] = ("kuka_iiwa14", "float", None, "", "", "")
    specs["mixed_mdh"] = (str(PEERS / "mixed_mdh.yaml"), "double", None, "", "", "")
    specs["mixed_dh"] = (str(PEERS / "mixed_dh.yaml"), "double", None, "", "", "")
    specs["ur10_urdf"] = (str(ur_urdf_path("ur10")), "double", "tool0", "", "", "")
    # every block whose coefficients are designed at generation time, and the PID's default gains
    for est in ("ewlr:n=12,lam=0.9", "lsf:n=6,p=2", "tse:n=4", "bde:n=3", "linhg", "nlhg", "slimod"):
        specs[f"planar2_{est}"] = ("planar2", "double", None, est, "momentum", "computed_torque")
    specs["kuka_iiwa14_adaptive_pid"] = ("kuka_iiwa14", "double", None, "kalman", "adaptive", "pid")
    return specs


def _run(env: dict[str, str]) -> dict[str, dict[str, str]]:
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(_specs())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result: dict[str, dict[str, str]] = json.loads(res.stdout)
    return result


def test_generation_is_byte_identical_under_two_numerical_backends() -> None:
    with ThreadPoolExecutor(2) as pool:
        native, old_cpu = pool.map(_run, _backends())
    assert set(native) == set(_specs())
    differing = {key: sorted(n for n in native[key] if native[key][n] != old_cpu[key].get(n)) for key in native}
    assert not any(differing.values()), f"files that depend on the numerical back-end: {differing}"
    # and the bundled robots equal the committed generated/ (whichever back-end: they agree)
    for name in BUNDLED:
        fresh = {n: h for n, h in native[name].items() if not n.startswith("export_")}
        folder = ROOT / "generated" / name
        committed = {n: (folder / n).read_bytes() for n in fresh if (folder / n).is_file()}
        assert {n: hashlib.sha256(b).hexdigest() for n, b in committed.items()} == fresh, name
