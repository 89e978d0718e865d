"""Where templates, runtime C and bundled robots live: the repository tree (checkout, editable
install) or the package data ``manipgen_resources.*`` of a regular ``pip install .``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

MARKERS = {"templates": "dynamics.c.j2", "runtime": "manipgen_linalg.h", "robots": "planar2.yaml"}


def resource_dir(kind: str) -> Path:
    """``kind`` is templates, runtime or robots."""
    repo = Path(__file__).resolve().parent.parent / kind
    if (repo / MARKERS[kind]).is_file():
        return repo
    spec = importlib.util.find_spec(f"manipgen_resources.{kind}")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"manipgen installation is missing its {kind}/ data")
    return Path(list(spec.submodule_search_locations)[0])


def bundled_robots() -> list[str]:
    return sorted(p.stem for p in resource_dir("robots").glob("*.yaml"))


def bundled_robot_path(name: str) -> Path | None:
    p = resource_dir("robots") / f"{name}.yaml"
    return p if p.is_file() else None
