"""The generated-folder cache's key (host_tools.bindings.compiled.generator_fingerprint): codegen's
Python is hashed once per process, as the process imported it; the templates and runtime files,
which every generation reads from disk, are hashed at every call. A long-lived worker that outlives
an edit of codegen/ must not file the C its old code generates under the edited code's key (it did:
a pytest worker's stale estimator landed in the cache under the new key)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codegen.resources import resource_dir
from host_tools.bindings import compiled


def test_python_is_hashed_once_and_templates_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = compiled.generator_fingerprint()
    assert compiled.generator_fingerprint() == before  # nothing changed
    python = compiled._python_fingerprint()
    # the templates as a copy this test may edit
    copy = {name: tmp_path / name for name in ("templates", "runtime")}
    for name, target in copy.items():
        shutil.copytree(resource_dir(name), target)
    monkeypatch.setattr(compiled, "resource_dir", lambda name: copy[name])
    assert compiled.generator_fingerprint() == before  # the same files, elsewhere
    edited = copy["templates"] / "rt.c.j2"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert compiled.generator_fingerprint() != before  # a template edit is seen at once
    # codegen's Python is not re-read: the cached hash is what this process runs
    assert compiled._python_fingerprint() is python
    assert compiled._python_fingerprint.cache_info().hits >= 1


def test_hashing_first_keeps_the_registrys_order() -> None:
    """Hashing imports every codegen module; the blocks must still register in the registry's own
        order, as in a process that never hashed (the registry's BUILTIN order, after what importing the
    bindings imports): a fresh interpreter hashes first, another does not hash at all."""
    import json
    import subprocess
    import sys

    code = (
        "import json\n"
        "from host_tools.bindings import compiled\n"
        "compiled.generator_fingerprint()\n"
        "from codegen.blocks import registry\n"
        "print(json.dumps([list(registry.observers()), list(registry.estimators()), list(registry.controllers())]))\n"
    )
    hashed_first = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    plain = (
        "import json\n"
        "from host_tools.bindings import compiled\n"
        "from codegen.blocks import registry\n"
        "print(json.dumps([list(registry.observers()), list(registry.estimators()), list(registry.controllers())]))\n"
    )
    assert hashed_first == json.loads(
        subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, check=True).stdout
    )
    assert hashed_first[0].index("momentum") < hashed_first[0].index("adaptive")  # what the walk had swapped
