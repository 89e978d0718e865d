"""`manipgen verify`'s report (host_tools.studies.verify.Report) as text: one line per check."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host_tools.studies.verify import Report


def text(report: Report) -> str:
    """The folder, the reference, each check (ok or FAIL, figure, bound; a failure's first five
    details), the notes and the verdict."""
    lines = [f"{report.robot}: {report.folder}", f"reference: {report.reference}"]
    width = max(len(c.name) for c in report.checks)
    for c in report.checks:
        lines.append(f"  {'ok  ' if c.ok else 'FAIL'} {c.name:<{width}} {c.figure:10.3g}  ({c.relation} {c.bound:.3g})")
        if c.detail and not c.ok:
            parts = c.detail.split("; ")
            lines.append(
                f"       {'; '.join(parts[:5])}" + (f"; ... {len(parts) - 5} more (--json)" if len(parts) > 5 else "")
            )
    lines += [f"  note: {note}" for note in report.notes]
    lines.append("PASS" if report.ok else "FAIL")
    return "\n".join(lines)
