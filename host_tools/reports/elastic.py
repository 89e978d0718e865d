"""`manipgen elastic`'s reports: the two-stage identification's JSON and Markdown, the collision
scenario's figure, JSON and summary (Kirchhoff 2011)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.emit.files import write_file
from host_tools.reports import plots


def write_identification(doc: dict[str, Any], markdown: str, out: Path) -> None:
    write_file(out / "elastic_identification.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_file(out / "elastic_identification.md", markdown)


def write_collision(doc: dict[str, Any], joint: int, out: Path) -> None:
    """The figure (like Kirchhoff (2011) Fig. 5.5) and the JSON document without the traces."""
    plots.elastic_collision(doc, joint, out / "elastic_collision.png")
    write_file(out / "elastic_collision.json", json.dumps(_without_traces(doc), indent=1) + "\n")


def _without_traces(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "traces"}


def collision_summary(doc: dict[str, Any], threshold: float) -> str:
    """The collision scenario in a few lines (the JSON document: --json)."""
    rows = [
        f"obstacle-free motion: max |r| {max(doc['free_max_abs_r']):.3g} N m against the threshold {threshold:g} "
        f"N m, false alarm: {'yes' if doc['free_false_alarm'] else 'no'}"
    ]
    for name in ("no_reaction", "reaction"):
        r = doc[name]
        found = "not detected" if r["delay_ms"] is None else f"detected after {r['delay_ms']:.1f} ms, link {r['link']}"
        rows.append(
            f"{name.replace('_', ' ')}: contact at sample {r['contact_sample']}, {found}; peak contact torque "
            f"{r['max_contact_torque']:.3g} N m; in contact at the end: {'yes' if r['in_contact_at_end'] else 'no'}"
        )
    return "\n".join(rows)
