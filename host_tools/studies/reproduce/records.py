"""What a paper's reproduction is made of: texts with numbers in them, tables (ours beside the
paper's, point by point), claims with their criterion and verdict, and the paper's record (how to
compute it, its tables, its claims, its two tiers)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from host_tools.bindings.source import RobotSource

Tier = Literal["quick", "full"]
TIERS: tuple[Tier, ...] = ("quick", "full")

R = TypeVar("R")


def included(item: Tier, tier: Tier) -> bool:
    """Whether a table or claim of tier ``item`` is part of a run of ``tier`` (full holds quick)."""
    return item == "quick" or tier == "full"


@dataclass(frozen=True)
class Num:
    """A number in a text: ours, printed with ``digits`` significant digits, or the paper's
    (``digits`` None: printed as the paper prints it). None: no number (—); a non-finite value: a
    run that diverged."""

    value: float | None
    digits: int | None = 3
    # a time measured on the machine that ran it: the docs print it, but their drift check only
    # checks that a number stands there (load and the CPU move it; no change of the code is visible in it)
    measured: bool = False


Part = str | Num
Text = tuple[Part, ...]


def text(*parts: Part | Text) -> Text:
    """A text from strings, numbers and texts (flattened)."""
    out: list[Part] = []
    for p in parts:
        out.extend(p if isinstance(p, tuple) else (p,))
    return tuple(out)


@dataclass(frozen=True)
class Table:
    """One table of a reproduction; ``key`` names its block in the docs
    (``<!-- reproduce <paper> <tier> <key>: begin -->``)."""

    key: str
    tier: Tier
    title: str  # what it shows and where the paper's columns come from
    columns: tuple[str, ...]  # the first heads the rows' labels
    rows: tuple[tuple[str, tuple[Text, ...]], ...]


@dataclass(frozen=True)
class Verdict:
    """A claim judged on our results: holds, does not hold, or None: not checked (``ours`` says why)."""

    holds: bool | None
    ours: Text


@dataclass(frozen=True)
class Claim(Generic[R]):
    """A claim of the paper, the paper's value(s) it rests on (typed from the paper, with the table or
    figure they come from), what is compared, and how our results are judged."""

    key: str
    tier: Tier
    where: str  # the results of ours it is judged on
    statement: str  # the paper's words, with the section, table or figure
    paper: Text  # the paper's values
    criterion: str  # what is compared (the ranking, a ratio, an order of magnitude) and the bound
    judge: Callable[[R], Verdict]


D = TypeVar("D")
# a claim as a paper's module types it: key, the paper's words, the paper's values, criterion, judge
Claimed = tuple[str, str, Text, str, Callable[[D], Verdict]]


def tiered_claims(
    claimed: tuple[Claimed[D], ...],
    where: Callable[[Tier], str],
    results_of: Callable[[R, Tier], D],
    full_only: tuple[str, ...] = (),
) -> tuple[Claim[R], ...]:
    """Each claim judged on both tiers' results (the full tier's keys prefixed ``full.``): its judge
    reads ``results_of(results, tier)``; the claims of ``full_only`` on the full tier alone."""

    def at(tier: Tier, judge: Callable[[D], Verdict]) -> Callable[[R], Verdict]:
        return lambda r: judge(results_of(r, tier))

    return tuple(
        Claim(("" if tier == "quick" else "full.") + key, tier, where(tier), statement, values, criterion, at(tier, j))
        for tier in TIERS
        for key, statement, values, criterion, j in claimed
        if tier == "full" or key not in full_only
    )


@dataclass(frozen=True)
class Judged:
    claim: Claim[Any]
    verdict: Verdict


@dataclass(frozen=True)
class Inputs:
    """What a paper's computation is handed: where the papers' data packages are (each paper reads
    its own sub-folder), the executor its fan-out goes through, a progress callback (one line of
    text: what is being computed), and the descriptions its record names (``Paper.robots``), loaded
    once by the caller: bundled name -> the description as read."""

    data: Path
    executor: Executor
    progress: Callable[[str], None]
    robots: Mapping[str, RobotSource]


@dataclass(frozen=True)
class Paper(Generic[R]):
    """A reproduced paper: ``compute`` runs its studies for a tier (quick: no tuning; full: all),
    ``tables`` and ``notes`` (what could not be run and why) read the results, ``claims`` judge them;
    ``robots`` the bundled descriptions it runs on, which the caller loads into Inputs."""

    key: str  # the command's PAPER: first author, and the year where the paper states it
    citation: str  # as docs/references.md cites it
    subject: str
    compute: Callable[[Tier, Inputs], R]
    tables: Callable[[R, Tier], tuple[Table, ...]]
    claims: tuple[Claim[R], ...]
    notes: Callable[[R], tuple[str, ...]]
    robots: tuple[str, ...]  # the bundled descriptions it runs on (Inputs.robots)


@dataclass(frozen=True)
class Pending:
    """A paper docs/references.md reproduces elsewhere that this command does not cover yet."""

    key: str
    citation: str


@dataclass(frozen=True)
class Reproduction:
    key: str
    citation: str
    subject: str
    tier: Tier
    tables: tuple[Table, ...]
    claims: tuple[Judged, ...]
    notes: tuple[str, ...]
    seconds: float
