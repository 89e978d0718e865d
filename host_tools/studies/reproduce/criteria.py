"""The criteria papers' claims are judged by: a ranking (who is lowest, who is worst, who is among
the best k), a spread or ratio within a bound, an order of magnitude. Each returns the verdict and
the numbers it was decided on; ``values`` map a name to a cost (lower is better; None or a
non-finite value: the run diverged, ranked last)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from host_tools.studies.reproduce.records import Num, Text, Verdict, text

Values = Mapping[str, float | None]


def cost(value: float | None) -> float:
    """A value as a cost: a diverged run (None, non-finite) is infinite."""
    return math.inf if value is None or not math.isfinite(value) else value


def ranked(values: Values) -> list[str]:
    """The names from the lowest value up; diverged runs last (stable: ties keep their order)."""
    return sorted(values, key=lambda name: cost(values[name]))


def listing(values: Values, names: Sequence[str] | None = None) -> Text:
    """``FinDiff 0.0485, MovAv 0.0157, ...`` (the given names, else all, in their order)."""
    parts: list[str | Num] = []
    for k, name in enumerate(names if names is not None else list(values)):
        parts += [", " if k else "", f"{name} ", Num(values[name])]
    return text(*parts)


def in_order(values: Values) -> Text:
    """The names and values from the lowest up, joined by ``<``."""
    parts: list[str | Num] = []
    for k, name in enumerate(ranked(values)):
        parts += [" < " if k else "", f"{name} ", Num(values[name])]
    return text(*parts)


def _rank(values: Values, name: str) -> Text:
    """``nlHG 0.00776 (rank 1 of 7)``: rank 1 is the lowest."""
    order = ranked(values)
    return text(f"{name} ", Num(values[name]), f" (rank {order.index(name) + 1} of {len(order)})")


def worst(values: Values, name: str) -> Verdict:
    """``name`` has the largest value of all."""
    order = ranked(values)
    other = order[-2:-1] if order[-1] == name else order[-1:]
    return Verdict(
        order[-1] == name,
        text(_rank(values, name), "; next: " if other != order[-1:] else "; largest: ", listing(values, other)),
    )


def lowest(values: Values, name: str) -> Verdict:
    """``name`` has the smallest value of all."""
    order = ranked(values)
    other = order[1:2] if order[0] == name else order[:1]
    return Verdict(
        order[0] == name,
        text(_rank(values, name), "; next: " if other != order[:1] else "; lowest: ", listing(values, other)),
    )


def among_lowest(values: Values, names: Sequence[str], k: int) -> Verdict:
    """Every one of ``names`` among the ``k`` lowest."""
    order = ranked(values)
    ranks = ", ".join(f"{n} {order.index(n) + 1}" for n in names)
    return Verdict(all(order.index(n) < k for n in names), text(f"ranks of {len(order)}: {ranks}; ", in_order(values)))


def spread(values: Values, bound: float) -> Verdict:
    """The largest value at most ``bound`` times the smallest."""
    order = ranked(values)
    low, high = values[order[0]], values[order[-1]]
    if low is None or high is None or not math.isfinite(high) or low <= 0:
        return Verdict(False, text(f"{order[-1]} diverged"))
    ratio = high / low
    return Verdict(
        ratio <= bound,
        text(Num(low), f" ({order[0]}) to ", Num(high), f" ({order[-1]}): ", Num(ratio), "×"),
    )


def within_factor(ours: Values, paper: Mapping[str, float], factor: float) -> Verdict:
    """Each of ours within ``factor`` of the paper's, either way (an order of magnitude: 10); the
    ratios ours / paper."""
    ratios = {n: None if cost(ours[n]) == math.inf else cost(ours[n]) / p for n, p in paper.items()}
    inside = [n for n, q in ratios.items() if q is not None and 1 / factor <= q <= factor]
    return Verdict(len(inside) == len(ratios), text("ours / the paper's: ", listing(ratios)))


def every(verdicts: Mapping[str, Verdict]) -> Verdict:
    """Several verdicts (by where they were judged) as one: holds when each does; ours, each's joined."""
    holds = all(v.holds for v in verdicts.values())
    return Verdict(
        holds, text(*(text("; " if k else "", f"{w}: ", v.ours) for k, (w, v) in enumerate(verdicts.items())))
    )
