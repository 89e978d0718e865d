"""The docs' generated tables: blocks in docs/*.md between markers,

    <!-- reproduce liu quick simulated: begin -->
    (the table's title and the Markdown table)
    <!-- reproduce liu quick simulated: end -->

that `manipgen reproduce PAPER --write-docs` rewrites from a run and ``drift`` (`--check-docs`, and
the test of the quick tier) compares with a fresh one, number by number: the prose around them is
written by hand, the tables cannot drift from the code.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from host_tools.reports.reproduce import all_tables, markdown_table, number, part, render
from host_tools.studies.reproduce.records import Num, Reproduction, Table, Text

MARKER = re.compile(r"<!-- reproduce (\S+ (?:quick|full) \S+): (begin|end) -->\n?")
NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Block:
    path: Path
    name: str  # "<paper> <tier> <table key>"
    start: int  # the content's offsets in the file's text
    end: int
    content: str


def find_blocks(folder: Path) -> dict[str, Block]:
    """Every block in ``folder``'s *.md, by name. Raises ValueError for a marker without its pair or a
    block that appears twice."""
    blocks: dict[str, Block] = {}
    for path in sorted(folder.glob("*.md")):
        doc = path.read_text(encoding="utf-8")
        opened: dict[str, int] = {}
        for m in MARKER.finditer(doc):
            name, edge = m.group(1), m.group(2)
            if edge == "begin":
                opened[name] = m.end()
                continue
            if name not in opened:
                raise ValueError(f"{path}: '{name}: end' without its begin")
            if name in blocks:
                raise ValueError(f"{path}: block {name!r} appears twice (also in {blocks[name].path})")
            start = opened.pop(name)
            blocks[name] = Block(path, name, start, m.start(), doc[start : m.start()])
        if opened:
            raise ValueError(f"{path}: '{next(iter(opened))}: begin' without its end")
    return blocks


def fresh_tables(reps: Sequence[Reproduction]) -> dict[str, Table]:
    """The runs' tables (their claims included) by block name."""
    return {f"{rep.key} {t.tier} {t.key}": t for rep in reps for t in all_tables(rep)}


def _write(path: Path, text: str) -> None:
    """Atomically: a reader sees the old file or the new one, never half of it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def write_docs(folder: Path, reps: Sequence[Reproduction]) -> tuple[list[str], list[str]]:
    """Rewrite the blocks of the runs' tables; returns (the blocks rewritten, as ``file: name``; the
    tables that have no block in ``folder``)."""
    blocks, tables = find_blocks(folder), fresh_tables(reps)
    by_file: dict[Path, list[Block]] = {}
    for name in tables:
        if name in blocks:
            by_file.setdefault(blocks[name].path, []).append(blocks[name])
    written = []
    for path, found in by_file.items():
        doc = path.read_text(encoding="utf-8")
        for b in sorted(found, key=lambda b: -b.start):  # from the end: the offsets before stay valid
            doc = doc[: b.start] + markdown_table(tables[b.name]) + "\n" + doc[b.end :]
            written.append(f"{path.name}: {b.name}")
        _write(path, doc)
    return sorted(written), [name for name in tables if name not in blocks]


# A printed value p with d significant digits is a fresh value v rounded to p's last digit, of unit
# u = 10^(exponent - decimals) (0.00776: 1e-5; 3.7e-5: 1e-6; 1268: 1): |v - p| <= u/2 at the
# rounding (a tie may go either way, so the bound is inclusive). A fresh value matches when it is
# within that half unit: it would print the same digits, or at a tie the neighbour. The 1e-9
# relative slack covers p and u not being exact in binary and a value that differs from another
# machine's in its last bits (1e-16 relative) at a tie; a changed default moves a figure by far more
# than that and by more than half a unit of its last digit unless the change is invisible at the
# digits printed. A printed 0 is an exact zero (``number`` prints anything else with its digits).
def close(printed: str, value: float) -> bool:
    mantissa, _, exponent = printed.lower().partition("e")
    p = float(printed)
    if p == 0:
        return value == 0
    unit = 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return abs(value - p) <= 0.5 * unit + 1e-9 * abs(p)


def cell_problem(printed: str, fresh: Text) -> str | None:
    """Why a printed cell is not the fresh one (its words differ, or a number is off), or None."""
    pattern, values = "", []
    for p in fresh:
        if isinstance(p, Num) and p.value is not None and math.isfinite(p.value):
            pattern += NUMBER
            values.append(None if p.measured else p.value)
        else:
            pattern += re.escape(part(p))
    m = re.fullmatch(pattern, printed)
    if m is None:
        return f"docs {printed!r}, fresh {render(fresh)!r}"
    for s, v in zip(m.groups(), values):
        if v is not None and not close(s, v):
            return f"docs {s}, fresh {number(v, 6)} (more than half a unit of the printed last digit off)"
    return None


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in CELL_SEPARATOR.split(inner)]


def compare(block: Block, table: Table) -> list[str]:
    """The differences between a block and a fresh table: title, columns, rows, then cell by cell."""
    where = f"{block.path.name}, block {block.name!r}"
    lines = block.content.strip("\n").splitlines()
    rows = [_cells(line) for line in lines if line.startswith("|")]
    title = " ".join(line for line in lines if line.strip() and not line.startswith("|"))
    problems = []
    if title != table.title:
        problems.append(f"{where}: title: docs {title!r}, fresh {table.title!r}")
    if not rows or tuple(rows[0]) != table.columns:
        return [*problems, f"{where}: columns: docs {rows[0] if rows else []}, fresh {list(table.columns)}"]
    printed = {r[0]: r[1:] for r in rows[2:]}
    labels = [label for label, _ in table.rows]
    if list(printed) != labels:
        return [*problems, f"{where}: rows: docs {list(printed)}, fresh {labels}"]
    for label, cells in table.rows:
        for column, text_, fresh in zip(table.columns[1:], printed[label], cells):
            problem = cell_problem(text_, fresh)
            if problem:
                problems.append(f"{where}: row {label}, column {column!r}: {problem}")
    return problems


def drift(folder: Path, reps: Sequence[Reproduction]) -> list[str]:
    """Every difference between ``folder``'s blocks of the runs' papers and tiers and the runs' tables:
    a table without its block, a block no table of the runs fills, and each value that moved."""
    blocks, tables = find_blocks(folder), fresh_tables(reps)
    problems = [f"{name}: no block in {folder}/*.md" for name in tables if name not in blocks]
    runs = {f"{rep.key} {tier}" for rep in reps for tier in ("quick", rep.tier)}
    for name, block in blocks.items():
        if name in tables:
            problems += compare(block, tables[name])
        elif name.rsplit(" ", 1)[0] in runs:
            problems.append(f"{block.path.name}, block {name!r}: no such table in this run")
    return problems
