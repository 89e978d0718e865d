"""`manipgen reproduce kirchhoff2011`: the docs' generated tables (docs/elastic.md) against a fresh run of
Kirchhoff (2011)'s quick tier -- the two stages on the stored designs, run once for the module (about 15 s
of CPU) -- and a moved value named by its block, row and column."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from host_tools.reports.docs_blocks import drift, find_blocks
from host_tools.studies.reproduce import kirchhoff, kirchhoff_runs, papers
from host_tools.studies.reproduce.records import Reproduction
from tests.tooling import ROOT, paper_inputs

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def results() -> kirchhoff_runs.KirchhoffResults:
    return kirchhoff_runs.compute("quick", paper_inputs(kirchhoff.PAPER, ROOT))


def quick(r: kirchhoff_runs.KirchhoffResults) -> Reproduction:
    return papers.judged(kirchhoff.PAPER, "quick", r, 0.0)


def test_the_docs_tables_are_a_fresh_quick_run(results: kirchhoff_runs.KirchhoffResults) -> None:
    """Every block of docs/ that `manipgen reproduce kirchhoff2011 --quick --write-docs` writes, value by
    value, and every table has one."""
    problems = drift(DOCS, [quick(results)])
    assert not problems, "\n".join(problems) + "\n(rewrite them: manipgen reproduce kirchhoff2011 --quick --write-docs)"
    assert {b for b in find_blocks(DOCS) if b.startswith("kirchhoff2011 quick ")} == {
        "kirchhoff2011 quick figures",
        "kirchhoff2011 quick actuator",
        "kirchhoff2011 quick validation",
        "kirchhoff2011 quick collision",
        "kirchhoff2011 quick claims",
    }


def test_a_moved_value_is_named_by_block_row_and_column(results: kirchhoff_runs.KirchhoffResults) -> None:
    """Joint 3's identified stiffness 0.1 % off (a change the 4-digit table shows): the comparison names
    the actuator block, the row and the column, and the claim that quotes the k_e errors."""
    doc = copy.deepcopy(results.quick)
    k_e3 = next(a for a in doc["actuator"] if a["name"] == "k_e3")
    k_e3["estimated"] *= 1.001
    k_e3["relative_error"] = abs(k_e3["estimated"] - k_e3["exact"]) / k_e3["exact"]
    problems = drift(DOCS, [quick(replace(results, quick=doc))])
    assert any(
        p.startswith("elastic.md, block 'kirchhoff2011 quick actuator': row k_e3, column 'estimated'") for p in problems
    ), problems
    assert any(
        p.startswith("elastic.md, block 'kirchhoff2011 quick claims': row actuator-stage, column 'ours'")
        for p in problems
    ), problems


def test_every_quick_claim_is_judged(results: kirchhoff_runs.KirchhoffResults) -> None:
    rep = quick(results)
    assert [j.claim.key for j in rep.claims] == [c.key for c in kirchhoff.CLAIMS if c.tier == "quick"]
    assert all(j.verdict.holds is not None for j in rep.claims)


def test_the_full_tier_reads_its_results(results: kirchhoff_runs.KirchhoffResults) -> None:
    """The full tier's tables and claims (its fresh designs take minutes: the quick run stands in)."""
    rep = papers.judged(kirchhoff.PAPER, "full", replace(results, full=results.quick), 0.0)
    assert [t.tier for t in rep.tables] == ["quick"] * 4 + ["full"] * 3
    verdicts = {j.claim.key: j.verdict.holds for j in rep.claims}
    assert len(verdicts) == len(kirchhoff.CLAIMS) and None not in verdicts.values()
    collision = {c.key for c in kirchhoff.COLLISION_CLAIMS}  # the same runs in both tiers: judged once
    assert collision <= set(verdicts) and not any("full." + k in verdicts for k in collision)
    assert all(
        verdicts["full." + k] == v for k, v in verdicts.items() if not k.startswith("full.") and k not in collision
    )


def test_the_collision_test_is_judged_and_a_moved_figure_named(results: kirchhoff_runs.KirchhoffResults) -> None:
    """Kirchhoff (2011) Fig. 5.5 in the quick tier: each of its claims judged; with the reflex's residual
    above the threshold 3 s after the detection (three times the thesis' "approximately one second")
    the claim fails, and the comparison names the collision block's row and the claim."""
    assert results.collision is not None
    rep = quick(results)
    assert {j.claim.key for j in rep.claims if j.claim.key.startswith("collision.")} == {
        c.key for c in kirchhoff.COLLISION_CLAIMS
    }
    doc = copy.deepcopy(results.collision)
    doc["reaction"]["above_threshold_s"] = 3.0
    moved = quick(replace(results, collision=doc))
    assert {j.claim.key: j.verdict.holds for j in moved.claims}["collision.reaction"] is False
    problems = drift(DOCS, [moved])
    row = "row some |r| above the threshold until (s after the detection), column 'with the reflex (eq. 5.1)'"
    assert any(p.startswith(f"elastic.md, block 'kirchhoff2011 quick collision': {row}") for p in problems), problems
    assert any(
        p.startswith("elastic.md, block 'kirchhoff2011 quick claims': row collision.reaction,") for p in problems
    )
