"""`manipgen reproduce brunot2019`: the docs' generated tables (docs/identification.md) against a fresh run
of Brunot et al. (2019)'s quick tier -- the four methods on a 12 s synthetic closed loop, run once for the
module -- and a moved value named by its block, row and column."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from host_tools.reports.docs_blocks import drift, find_blocks
from host_tools.studies.reproduce import brunot, brunot_runs, papers
from host_tools.studies.reproduce.records import Reproduction
from tests.tooling import ROOT, paper_inputs

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def results() -> brunot_runs.BrunotResults:
    return brunot_runs.compute("quick", paper_inputs(brunot.PAPER, ROOT))


def quick(r: brunot_runs.BrunotResults) -> Reproduction:
    return papers.judged(brunot.PAPER, "quick", r, 0.0)


def test_the_docs_tables_are_a_fresh_quick_run(results: brunot_runs.BrunotResults) -> None:
    """Every block of docs/ that `manipgen reproduce brunot2019 --quick --write-docs` writes, value by
    value, and every table has one."""
    problems = drift(DOCS, [quick(results)])
    assert not problems, "\n".join(problems) + "\n(rewrite them: manipgen reproduce brunot2019 --quick --write-docs)"
    assert {b for b in find_blocks(DOCS) if b.startswith("brunot2019 quick ")} == {
        "brunot2019 quick jacobian",
        "brunot2019 quick errors",
        "brunot2019 quick claims",
    }


def test_a_moved_value_is_named_by_block_row_and_column(results: brunot_runs.BrunotResults) -> None:
    """CLOE's smallest singular value 1 % higher (a change the 3-digit table shows): the comparison names
    the Jacobian block, the row and the column, and the claim that quotes it."""
    doc = copy.deepcopy(results.doc("quick"))
    doc["methods"]["cloe"]["mu_min"] *= 1.01
    problems = drift(DOCS, [quick(replace(results, runs={"quick": doc}))])
    jacobian = "identification.md, block 'brunot2019 quick jacobian': row CLOE, column 'μ_min'"
    assert any(p.startswith(jacobian) for p in problems), problems
    claim = "identification.md, block 'brunot2019 quick claims': row cloe-insensitive, column 'ours'"
    assert any(p.startswith(claim) for p in problems), problems


def test_every_quick_claim_is_judged(results: brunot_runs.BrunotResults) -> None:
    rep = quick(results)
    assert [j.claim.key for j in rep.claims] == [c.key for c in brunot.CLAIMS if c.tier == "quick"]
    assert all(j.verdict.holds is not None for j in rep.claims)


def test_the_full_tier_reads_its_results(results: brunot_runs.BrunotResults) -> None:
    """The full tier's tables and claims (its 34.5 s run takes minutes: the quick run stands in), the
    timed claim among them."""
    doc = results.doc("quick")
    rep = papers.judged(brunot.PAPER, "full", replace(results, runs={"quick": doc, "full": doc}), 0.0)
    assert [t.tier for t in rep.tables] == ["quick"] * 2 + ["full"] * 2
    verdicts = {j.claim.key: j.verdict.holds for j in rep.claims}
    assert len(verdicts) == len(brunot.CLAIMS) and None not in verdicts.values()
    quick_keys = {k for k in verdicts if not k.startswith("full.")}
    assert {k.removeprefix("full.") for k in verdicts} - quick_keys == {"didim-faster"}  # timed: full only
    assert all(verdicts["full." + k] == verdicts[k] for k in quick_keys)
