"""The papers `manipgen reproduce` knows, by key: the first author, and the year where the paper
states it, as docs/references.md cites them. Light to import (the command's parser lists them); a
reproduced paper's module is imported when it runs.

Adding a paper: a module with its runs and tables, and one with its claims (the paper's values typed
there once) ending in its ``Paper`` record ``PAPER``; then its module's name here.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from host_tools.studies.reproduce.records import Inputs, Judged, Paper, Pending, Reproduction, Tier, included

# key -> (citation, the module of host_tools.studies.reproduce that reproduces it, or None: not yet)
PAPERS: dict[str, tuple[str, str | None]] = {
    "liu": ("Liu et al.", "liu"),
    "birjandi": ("Birjandi & Haddadin", "birjandi"),
    "brunot2019": ("Brunot et al. (2019)", "brunot"),
    "kirchhoff2011": ("Kirchhoff (2011)", "kirchhoff"),
    "xu2020": ("Xu et al. (2020)", "xu"),
}
ALL = "all"


def resolve(key: str) -> list[str]:
    """The keys a PAPER argument names: a key, a first author alone when that names one paper (``xu``
    for xu2020), or ``all``. Raises KeyError with the one line to print."""
    if key == ALL:
        return list(PAPERS)
    if key in PAPERS:
        return [key]
    matches = [k for k in PAPERS if k.rstrip("0123456789") == key]
    if len(matches) == 1:
        return matches
    raise KeyError(f"unknown paper {key!r}: one of {', '.join(PAPERS)}, or {ALL}")


def paper(key: str) -> Paper[Any] | Pending:
    citation, module = PAPERS[key]
    if module is None:
        return Pending(key, citation)
    record: Paper[Any] = importlib.import_module(f"host_tools.studies.reproduce.{module}").PAPER
    return record


def reproduce(record: Paper[Any], tier: Tier, inputs: Inputs) -> Reproduction:
    """Run a paper's tier: its tables, and every claim of the tier judged."""
    start = time.perf_counter()
    results = record.compute(tier, inputs)
    return judged(record, tier, results, time.perf_counter() - start)


def judged(record: Paper[Any], tier: Tier, results: Any, seconds: float) -> Reproduction:
    """A paper's tables and claims of ``tier`` from its computed ``results``."""
    claims = tuple(Judged(c, c.judge(results)) for c in record.claims if included(c.tier, tier))
    tables = record.tables(results, tier)
    return Reproduction(
        record.key, record.citation, record.subject, tier, tables, claims, record.notes(results), seconds
    )
