"""`pip install .` (not only the editable install the suite runs from) ships every package and every
template, runtime file and bundled robot: the wheel built from this checkout holds each of them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.tooling import ROOT

RESOURCES = {"templates": "manipgen_resources/templates", "runtime": "manipgen_resources/runtime"}


def test_the_wheel_holds_every_module_template_and_runtime_file(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (wheel,) = tmp_path.glob("manipgen-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for top in ("codegen", "host_tools") for p in (ROOT / top).rglob("*.py")}
    assert modules - names == set()
    for folder, packaged in RESOURCES.items():
        files = {
            f"{packaged}/{p.relative_to(ROOT / folder)}"
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and p.suffix in (".j2", ".h", ".c", ".ld", ".cmake", "") and "__pycache__" not in p.parts
        }
        assert files and files - names == set(), (folder, sorted(files - names))
    robots = {f"manipgen_resources/robots/{p.name}" for p in (ROOT / "robots").glob("*.yaml")}
    assert robots and robots - names == set()
