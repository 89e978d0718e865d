"""`manipgen reproduce xu2020`: the docs' generated tables (docs/identification.md) against a fresh run of
Xu et al. (2020)'s quick tier -- the round trip on the stored excitation, run once for the module -- and a
moved value named by its block, row and column."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from host_tools.reports.docs_blocks import drift, find_blocks
from host_tools.studies.reproduce import papers, xu, xu_runs
from host_tools.studies.reproduce.records import Reproduction
from host_tools.studies.reproduce.xu_paper import TABLE8
from tests.tooling import ROOT, paper_inputs

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def results() -> xu_runs.XuResults:
    return xu_runs.compute("quick", paper_inputs(xu.PAPER, ROOT))


def quick(r: xu_runs.XuResults) -> Reproduction:
    return papers.judged(xu.PAPER, "quick", r, 0.0)


def test_the_docs_tables_are_a_fresh_quick_run(results: xu_runs.XuResults) -> None:
    """Every block of docs/ that `manipgen reproduce xu2020 --quick --write-docs` writes, value by value,
    and every table has one."""
    problems = drift(DOCS, [quick(results)])
    assert not problems, "\n".join(problems) + "\n(rewrite them: manipgen reproduce xu2020 --quick --write-docs)"
    assert {b for b in find_blocks(DOCS) if b.startswith("xu2020 quick ")} == {
        "xu2020 quick figures",
        "xu2020 quick rms",
        "xu2020 quick claims",
    }


def test_a_moved_value_is_named_by_block_row_and_column(results: xu_runs.XuResults) -> None:
    """The physical parameters' fit RMS of joint 3 one percent higher (a change the 3-digit table shows):
    the comparison names the block, the row and the column, and the total it moves."""
    run = results.quick.result.run
    fit_rms = {**run.fit_rms, "physical": run.fit_rms["physical"] * np.where(np.arange(7) == 2, 1.01, 1.0)}
    result = replace(results.quick.result, run=replace(run, fit_rms=fit_rms))
    moved = replace(results, quick=replace(results.quick, result=result))
    problems = [p for p in drift(DOCS, [quick(moved)]) if "block 'xu2020 quick rms'" in p]
    assert any("row joint 3, column 'excitation, μ'" in p for p in problems), problems
    assert any("row total, column 'excitation, μ'" in p for p in problems), problems
    assert all(p.startswith("identification.md, block 'xu2020 quick ") for p in problems), problems


def test_every_quick_claim_is_judged_beside_the_papers_values(results: xu_runs.XuResults) -> None:
    rep = quick(results)
    assert [j.claim.key for j in rep.claims] == [c.key for c in xu.CLAIMS if c.tier == "quick"]
    assert all(j.verdict.holds is not None for j in rep.claims)
    rms = {t.key: t for t in rep.tables}["rms"]
    assert rms.rows[-1][0] == "total"
    paper_total = rms.rows[-1][1][-1][0]  # Xu et al.'s physical total on q_ref,1, as printed
    assert getattr(paper_total, "value", None) == TABLE8["physical", 1].total


def test_the_full_tier_reads_its_results(results: xu_runs.XuResults) -> None:
    """The full tier's tables and claims (its fresh design takes many minutes: the quick round trip
    stands in for it): every claim of both tiers judged, each full claim as its quick one."""
    rep = papers.judged(xu.PAPER, "full", replace(results, full=results.quick), 0.0)
    assert [(t.key, t.tier) for t in rep.tables] == [
        ("figures", "quick"),
        ("rms", "quick"),
        ("figures", "full"),
        ("rms", "full"),
    ]
    verdicts = {j.claim.key: j.verdict.holds for j in rep.claims}
    assert len(verdicts) == len(xu.CLAIMS) and None not in verdicts.values()
    assert all(verdicts["full." + k] == v for k, v in verdicts.items() if not k.startswith("full."))
