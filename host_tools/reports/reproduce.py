"""Reports of `manipgen reproduce` (host_tools.studies.reproduce): each paper's tables and judged
claims as Markdown and as a JSON document. The numbers are printed here, once: ours with their
significant digits, the paper's as the paper prints them (``number``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from host_tools.studies.reproduce.records import TIERS, Num, Pending, Reproduction, Table, Text, Tier, Verdict, text

NOT_YET = "not yet reproduced by this command"
NONE = "—"  # no number
DIVERGED = "diverged"


def number(value: float, digits: int | None) -> str:
    """``value`` with ``digits`` significant digits, trailing zeros kept (0.00290) and an integer part
    never rounded away (1268, not 1.27e+03); 3.7e-5 for small ones; exactly 0 as 0. ``digits`` None:
    the shortest form that gives the value back (the paper's 2.737)."""
    if value == 0:
        return "0"
    if digits is None:
        return f"{value:g}"
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    mantissa, e, exponent = f"{value:#.{digits}g}".partition("e")
    return mantissa.rstrip(".") + (f"e{int(exponent)}" if e else "")


def part(p: str | Num) -> str:
    if isinstance(p, str):
        return p
    if p.value is None:
        return NONE
    return number(p.value, p.digits) if math.isfinite(p.value) else DIVERGED


def render(t: Text) -> str:
    return "".join(part(p) for p in t)


def verdict_word(v: Verdict) -> str:
    return {True: "holds", False: "does not hold", None: "not checked"}[v.holds]


def claims_table(rep: Reproduction, tier: Tier) -> Table | None:
    """The claims of one tier, judged (None when the run has none of that tier)."""
    rows = tuple(
        (
            j.claim.key,
            (
                text(j.claim.statement),
                j.claim.paper,
                text(j.claim.where),
                text(j.claim.criterion),
                j.verdict.ours,
                text(verdict_word(j.verdict)),
            ),
        )
        for j in rep.claims
        if j.claim.tier == tier
    )
    if not rows:
        return None
    columns = ("claim", f"{rep.citation} say", "the paper's values", "ours: where", "criterion", "ours", "verdict")
    title = f"{rep.citation}'s claims judged on ours (ranks: 1 is the lowest)."
    return Table("claims", tier, title, columns, rows)


def all_tables(rep: Reproduction) -> list[Table]:
    """The run's tables, then its claims, tier by tier."""
    claims = [claims_table(rep, tier) for tier in TIERS]
    return [*rep.tables, *(c for c in claims if c is not None)]


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown_table(table: Table) -> str:
    """The table's title, a blank line and the Markdown table (a column of numbers right-aligned)."""
    numeric = [
        all(cells[k][:1] and isinstance(cells[k][0], Num) for _, cells in table.rows)
        for k in range(len(table.columns) - 1)
    ]
    align = ["---", *("--:" if n else "---" for n in numeric)]
    lines = [
        table.title,
        "",
        "| " + " | ".join(_cell(c) for c in table.columns) + " |",
        "| " + " | ".join(align) + " |",
    ]
    lines += ["| " + " | ".join(_cell(s) for s in (label, *map(render, cells))) + " |" for label, cells in table.rows]
    return "\n".join(lines)


def summary(rep: Reproduction) -> str:
    counts = {
        w: sum(verdict_word(j.verdict) == w for j in rep.claims) for w in ("holds", "does not hold", "not checked")
    }
    return f"{rep.citation}, {len(rep.claims)} claims: " + ", ".join(f"{w} {n}" for w, n in counts.items() if n)


def markdown(reps: Sequence[Reproduction], pending: Sequence[Pending] = ()) -> str:
    """Every run's tables and claims, its notes, and the papers not yet covered."""
    out = []
    for rep in reps:
        out.append(f"## {rep.citation}: {rep.subject} ({rep.tier} tier, {rep.seconds:.0f} s)\n")
        out += [f"Note: {n}\n" for n in rep.notes]
        out += [markdown_table(t) + "\n" for t in all_tables(rep)]
        out.append(summary(rep) + "\n")
    if pending:
        out.append("".join(f"{p.citation} ({p.key}): {NOT_YET}\n" for p in pending))
    return "\n".join(out)


def _json_table(table: Table) -> dict[str, Any]:
    def cell(t: Text) -> dict[str, Any]:
        values = [p.value if p.value is None or math.isfinite(p.value) else None for p in t if isinstance(p, Num)]
        return {"text": render(t), "values": values}

    return {
        "key": table.key,
        "title": table.title,
        "columns": list(table.columns),
        "rows": {label: dict(zip(table.columns[1:], map(cell, cells))) for label, cells in table.rows},
    }


def document(reps: Sequence[Reproduction], pending: Sequence[Pending] = ()) -> dict[str, Any]:
    """The JSON document: per paper its tables (cells: text and raw values), claims and verdicts."""
    return {
        "papers": {
            rep.key: {
                "citation": rep.citation,
                "subject": rep.subject,
                "tier": rep.tier,
                "seconds": rep.seconds,
                "notes": list(rep.notes),
                "tables": [_json_table(t) for t in rep.tables],
                "claims": [
                    {
                        "claim": j.claim.key,
                        "statement": j.claim.statement,
                        "paper": render(j.claim.paper),
                        "where": j.claim.where,
                        "criterion": j.claim.criterion,
                        "ours": render(j.verdict.ours),
                        "verdict": verdict_word(j.verdict),
                    }
                    for j in rep.claims
                ],
            }
            for rep in reps
        },
        "not_yet_reproduced": {p.key: p.citation for p in pending},
    }
