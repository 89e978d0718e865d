"""`manipgen reproduce`: the docs' generated tables against a fresh run of Liu et al.'s quick tier
(they cannot drift from the code), a changed default caught by that comparison, the comparison's
tolerance, and the command (its errors, its JSON). The quick tier's computation runs once for the
module (about 40 s); it needs Liu et al.'s Experiment 1 (../shared/data/lwa4p or
$MANIPGEN_SHARED_DATA/lwa4p): without it a skip, in CI a failure, as tests/acceptance/test_real_data.py."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from host_tools.cli import main
from host_tools.reports.docs_blocks import cell_problem, close, drift, find_blocks
from host_tools.reports.reproduce import number
from host_tools.studies import paper_setups
from host_tools.studies.reproduce import birjandi, liu, liu_runs, papers
from host_tools.studies.reproduce.birjandi_paper import BirjandiResults
from host_tools.studies.reproduce.liu_paper import LABELS, TABLE6, registered
from host_tools.studies.reproduce.records import Num, Paper, Reproduction, text
from tests.tooling import ROOT, paper_inputs

DATA = Path(os.environ.get("MANIPGEN_SHARED_DATA", ROOT.parent / "shared" / "data"))
DOCS = ROOT / "docs"
FIRST = liu_runs.LIU_SETUPS[0]  # 10 mdeg, 125 Hz
# The tests of the quick runs (the module fixtures below) run in one xdist worker (dev.sh's --dist
# loadgroup), which computes each once: spread over two, each worker computed them again
ON_QUICK_RUNS = pytest.mark.xdist_group("reproduce-quick-runs")


@pytest.fixture(scope="module")
def results() -> liu_runs.LiuResults:
    if not (DATA / liu_runs.EXPERIMENT1).is_file():
        message = f"Liu et al.'s Experiment 1 is not in {DATA / liu_runs.EXPERIMENT1}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return liu_runs.compute("quick", paper_inputs(liu.PAPER, DATA))


@pytest.fixture(scope="module")
def birjandi_results() -> BirjandiResults:
    """Birjandi & Haddadin's quick tier: one collide run on planar2 with four observers (about 40 s)."""
    return birjandi.compute("quick", paper_inputs(birjandi.PAPER, DATA))


def quick(r: liu_runs.LiuResults) -> Reproduction:
    return papers.judged(liu.PAPER, "quick", r, 0.0)


@ON_QUICK_RUNS
def test_the_docs_tables_are_a_fresh_quick_run(results: liu_runs.LiuResults) -> None:
    """Every block of docs/ that `manipgen reproduce liu --quick --write-docs` writes, value by value
    (docs_blocks.close: within half a unit of the printed last digit), and every table has one."""
    problems = drift(DOCS, [quick(results)])
    assert not problems, "\n".join(problems) + "\n(rewrite them: manipgen reproduce liu --quick --write-docs)"
    assert {b for b in find_blocks(DOCS) if b.startswith("liu quick ")} == {
        "liu quick simulated",
        "liu quick filters",
        "liu quick experiment1",
        "liu quick model_error",
        "liu quick recorded_runs",
        "liu quick claims",
    }


@ON_QUICK_RUNS
def test_a_changed_default_is_caught_naming_the_study_and_the_row(
    results: liu_runs.LiuResults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #43's regression: computed torque feeding friction forward (ctl.friction_ff = 1) instead
    of the paper's eq. 2. Set in the study's set-up record, it moves the model-based observers'
    figures at 10 mdeg, 125 Hz (the one set-up rerun here), and the comparison names the block and
    the rows."""
    record = paper_setups.VELOCITY_ESTIMATORS
    monkeypatch.setattr(
        paper_setups, "VELOCITY_ESTIMATORS", replace(record, pinned={**record.pinned, "ctl.friction_ff": 1.0})
    )
    inputs = paper_inputs(liu.PAPER, DATA)
    rerun = liu_runs.simulated(inputs.robots[liu_runs.ROBOT], inputs, "paper", setups=(FIRST,))
    assert rerun[FIRST]["setup"]["controller"].endswith("ctl.friction_ff = 1")
    changed = replace(results, simulated={"paper": {**results.simulated["paper"], **rerun}})
    problems = drift(DOCS, [quick(changed)])
    moved = [
        p for p in problems if "block 'liu quick simulated'" in p and "column '10 mdeg, 125 Hz: Table 4 gains'" in p
    ]
    rows = {p.split(": row ")[1].split(",")[0] for p in moved}
    assert {"nlHG", "SliMod"} <= rows, problems
    assert all(p.startswith("evaluation.md, block 'liu quick ") for p in problems), problems


@ON_QUICK_RUNS
def test_the_full_tier_reads_its_results(results: liu_runs.LiuResults) -> None:
    """The full tier's tables and claims (its GA runs take 20 min: here the quick tier's figures stand
    in for them): every claim of both tiers judged, the GA's and the retuned tables filled."""
    stand_in = replace(
        results,
        simulated={**results.simulated, "ga": results.simulated["paper"]},
        retuned=results.simulated["paper"][FIRST],
    )
    rep = papers.judged(liu.PAPER, "full", stand_in, 0.0)
    keys = ["simulated", "filters", "experiment1", "model_error", "recorded_runs", "tuned", "retuned"]
    assert [t.key for t in rep.tables] == keys
    assert len(rep.claims) == len(liu.CLAIMS) and all(j.verdict.holds is not None for j in rep.claims)
    retuning = {j.claim.key: j.verdict.holds for j in rep.claims if "retuning" in j.claim.key}
    assert retuning == {"ga.retuning-trades-accuracy": False, "ga.retuning-helps": False}  # the same gains: ratio 1


@ON_QUICK_RUNS
def test_without_the_data_experiment1_is_reported_not_checked(results: liu_runs.LiuResults, tmp_path: Path) -> None:
    """A user without Liu et al.'s data package gets the simulated tables, a note, and Experiment 1's
    claims "not checked" (not a verdict)."""
    inputs = paper_inputs(liu.PAPER, tmp_path)
    replayed, missing = liu_runs.experiment1(inputs.robots[liu_runs.ROBOT], inputs)
    assert replayed == {} and str(tmp_path / liu_runs.EXPERIMENT1) in missing
    rep = quick(replace(results, experiment1=replayed, missing=missing))
    assert rep.notes == (missing,) and "experiment1" not in [t.key for t in rep.tables]
    assert {j.claim.key for j in rep.claims if j.verdict.holds is None} == {
        c.key for c in liu.CLAIMS if c.key.startswith("exp1.")
    }


@pytest.mark.parametrize(
    "value", [0.00776, 0.0077649999, 7.7e-3, 3.654e-5, 1268.65, 9.96, 99.96, 0.1, 1.0, 123456.7, -0.0153]
)
@pytest.mark.parametrize("digits", [2, 3])
def test_a_printed_value_matches_the_value_it_was_printed_from(value: float, digits: int) -> None:
    printed = number(value, digits)
    assert close(printed, value), printed
    assert abs(value) < 10**digits or printed == f"{value:.0f}"  # no integer digit rounded away


def test_the_tolerance_is_half_a_unit_of_the_last_printed_digit() -> None:
    assert close("0.00776", 0.007765) and close("0.00776", 0.007755)  # the ties: either way
    assert not close("0.00776", 0.0077651) and not close("0.00776", 0.0077549)
    assert close("0.00776", 0.007765 * (1 + 1e-15))  # another machine's last bits at a tie
    assert close("3.7e-5", 3.65e-5) and not close("3.7e-5", 3.64e-5)
    assert close("1269", 1268.65) and not close("1269", 1268.4)
    assert close("0.00290", 0.0029049) and not close("0.00290", 0.002906)  # trailing zeros count
    assert close("0", 0.0) and not close("0", 1e-300)  # a printed 0 is an exact zero
    assert number(0.0029, 3) == "0.00290" and number(3.654e-5, 2) == "3.7e-5" and number(1268.65, 3) == "1269"


def test_a_measured_time_is_checked_for_its_place_not_its_value() -> None:
    """A time measured on the machine that ran it (Num.measured) moves with the load: the docs'
    check wants a number where it stands, any number; every other figure is compared as above."""
    timed = text("step ", Num(276.8, measured=True), " µs, ", Num(0.0337), " of the period")
    assert cell_problem("step 170 µs, 0.0337 of the period", timed) is None
    assert cell_problem("step — µs, 0.0337 of the period", timed) is not None  # no number where one stands
    assert cell_problem("step 170 µs, 0.0205 of the period", timed) is not None  # an unmeasured figure moved
    assert (
        cell_problem(
            "step 170 µs, 0.0337 of the period", text("step ", Num(276.8), " µs, ", Num(0.0337), " of the period")
        )
        is not None
    )


def test_the_names_are_the_registered_estimators() -> None:
    """Liu et al.'s names lower-cased are the registry's (a renamed block fails here, not in a run)."""
    from codegen.blocks import registry

    assert sorted(registered(label) for label in LABELS) == sorted(registry.study_estimators())
    with pytest.raises(KeyError):
        registered("Tachometer")


def test_every_key_names_its_paper_as_docs_references_cites_it() -> None:
    references = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    for key, (citation, _) in papers.PAPERS.items():
        assert f"| {citation} |" in references, citation
        record = papers.paper(key)
        assert record.key == key and record.citation == citation
    assert papers.resolve("xu") == ["xu2020"] and papers.resolve("all") == list(papers.PAPERS)


def test_an_unknown_paper_is_one_line_naming_the_keys(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["reproduce", "smith", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("manipgen: error: unknown paper 'smith'")
    assert all(k in err for k in ("liu", "birjandi", "brunot2019", "kirchhoff2011", "xu2020", "all"))
    monkeypatch.setitem(papers.PAPERS, "xu2020", ("Xu et al. (2020)", None))  # as a paper not yet reproduced
    assert main(["reproduce", "xu", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "manipgen: error: Xu et al. (2020) (xu2020): not yet reproduced by this command"


def _computed(results: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The command runs the module's computations (by paper key) instead of its own (the same code
    after them)."""
    real = papers.paper

    def paper(key: str) -> Any:
        record = real(key)
        if isinstance(record, Paper) and key in results:
            return replace(record, compute=lambda tier, inputs: results[key])
        return record

    monkeypatch.setattr(papers, "paper", paper)


@ON_QUICK_RUNS
def test_all_prints_json_and_says_what_is_not_yet_reproduced(
    results: liu_runs.LiuResults,
    birjandi_results: BirjandiResults,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _computed({"liu": results, "birjandi": birjandi_results}, monkeypatch)
    for key in ("brunot2019", "kirchhoff2011", "xu2020"):  # their runs: test_reproduce_<author>.py
        monkeypatch.setitem(papers.PAPERS, key, (papers.PAPERS[key][0], None))
    assert main(["reproduce", "all", "--quick", "--json", "--check-docs", "--docs", str(DOCS)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["not_yet_reproduced"] == {
        "brunot2019": "Brunot et al. (2019)",
        "kirchhoff2011": "Kirchhoff (2011)",
        "xu2020": "Xu et al. (2020)",
    }
    rows = doc["papers"]["liu"]["tables"][0]["rows"]
    for name in ("nlHG", "SliMod"):  # ours beside the paper's
        assert rows[name]["Liu et al. Table 6"]["values"] == [TABLE6[name].normal]
        assert rows[name]["10 mdeg, 125 Hz: Table 4 gains"]["values"][0] > 0
    verdicts = {c["claim"]: c["verdict"] for c in doc["papers"]["liu"]["claims"]}
    assert verdicts["exp1.recorded-outputs"] == "holds" and set(verdicts.values()) <= {"holds", "does not hold"}
    assert main(["reproduce", "liu", "--quick"]) == 0
    assert "not yet reproduced" not in capsys.readouterr().out


def birjandi_quick(r: BirjandiResults) -> Reproduction:
    return papers.judged(birjandi.PAPER, "quick", r, 0.0)


@ON_QUICK_RUNS
def test_birjandi_docs_tables_are_a_fresh_quick_run(birjandi_results: BirjandiResults) -> None:
    """docs/collision.md's blocks that `manipgen reproduce birjandi --quick --write-docs` writes, value
    by value, and every table of the quick tier has one."""
    problems = drift(DOCS, [birjandi_quick(birjandi_results)])
    assert not problems, "\n".join(problems) + "\n(rewrite them: manipgen reproduce birjandi --quick --write-docs)"
    assert birjandi_results.quick["settings"]["setup"] == "birjandi"  # the paper's set-up, not collide's
    blocks = find_blocks(DOCS)
    assert {b for b in blocks if b.startswith("birjandi quick ")} == {
        "birjandi quick observers",
        "birjandi quick claims",
    }
    assert blocks["birjandi quick observers"].path.name == "collision.md"


@ON_QUICK_RUNS
def test_birjandi_a_moved_threshold_is_caught_naming_the_block_row_and_column(
    birjandi_results: BirjandiResults,
) -> None:
    """The momentum observer's designed thresholds 2 % higher (as a changed default of the collision
    study would move them): the comparison names the observers' block, the momentum row and the
    threshold column, and the claims that quote it."""
    doc = copy.deepcopy(birjandi_results.quick)
    momentum = doc["observers"]["momentum"]
    momentum["threshold_mean"] = [1.02 * t for t in momentum["threshold_mean"]]
    problems = drift(DOCS, [birjandi_quick(replace(birjandi_results, quick=doc))])
    assert any(
        p.startswith("collision.md, block 'birjandi quick observers': row momentum, column 'largest threshold (N m)'")
        for p in problems
    ), problems
    assert any(p.startswith("collision.md, block 'birjandi quick claims': row sim.ten-times-lower,") for p in problems)


@ON_QUICK_RUNS
def test_birjandi_full_tier_reads_its_results(birjandi_results: BirjandiResults) -> None:
    """The full tier's tables and claims (its kuka_iiwa14 runs take many minutes: the quick run
    stands in for its draws): every claim judged; the step's cost against the paper's 1 ms period."""
    draws = {0: birjandi_results.quick, 1: birjandi_results.quick}
    others = {"friction": birjandi_results.quick, "planar2": birjandi_results.quick}
    product = {0: birjandi_results.quick, 1: birjandi_results.quick}  # collide's set-up, beside the paper's
    for step, holds in ((500.0, True), (1500.0, False)):  # µs per step of the adaptive pipeline
        stand_in = replace(
            birjandi_results,
            draws=draws,
            step_us={"momentum": 50.0, "adaptive_imu": step},
            others=others,
            product=product,
        )
        rep = papers.judged(birjandi.PAPER, "full", stand_in, 0.0)
        keys = ["observers", "iiwa", "draws", "setups", "compute", "friction", "planar2"]
        assert [t.key for t in rep.tables] == keys
        assert len(rep.claims) == len(birjandi.PAPER.claims)
        assert all(j.verdict.holds is not None for j in rep.claims)
        verdicts = {j.claim.key: j.verdict.holds for j in rep.claims}
        assert verdicts["compute"] is holds
        for name, verdict in verdicts.items():  # the same runs at each draw: each full claim as its quick one
            if name.startswith("iiwa."):
                assert verdict == verdicts["sim." + name.removeprefix("iiwa.")], name


def test_birjandi_setups_text_names_each_difference_once() -> None:
    """The full tier's set-up block says what collide's set-up changes: every field that differs
    (paper_setups.differences) named once, fields that differ alike for one reason (the IMUs' two
    biases) in one clause, each clause with both values and its reason."""
    text = birjandi._differs()
    changed = paper_setups.differences(paper_setups.BIRJANDI, paper_setups.COLLISION)
    assert all(text.count(f"{k} ") + text.count(f"{k},") == 1 for k in changed), text
    assert "est.acc_bias, est.gyro_bias = set per draw in collide's, 0.0 in the paper's: " in text
    assert text.count("calibrated at rest") == 1 and "None" not in text
    assert "obs.rate = 1.0 in collide's, 1e+30 in the paper's: " in text
