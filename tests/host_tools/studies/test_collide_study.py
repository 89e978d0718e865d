"""`manipgen study` with collision items (host_tools.studies.collide_study): an item is collide's
observer entry bit for bit; the report's rates are the store's counts with exact intervals; an
interrupted and resumed study, and one run on a local Dask cluster, store what a serial one does."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from host_tools.bindings.libm import libm_fingerprint
from host_tools.reports.collide_study import clopper_pearson, poisson_exact, summary
from host_tools.studies import collide
from host_tools.studies.cluster import InlineExecutor
from host_tools.studies.collide_study import CollideItem, run_collide_draw, stored_collisions
from host_tools.studies.study import Study, load_study, open_store, run_study
from tests.tooling import ROOT, cli_in_process, require_module

BIN = Path(sys.executable).parent
TINY = ROOT / "examples" / "studies" / "collide_tiny.yaml"  # planar2, 2 draws x 2 observers, 6 s motions
ADDED = ("push_delays_ms", "check_s", "standin_limits")  # the study's keys beside collide's entry


def _content(store: Path) -> list[tuple[str, str]]:
    """Every row's key and result (not its time on the worker nor when it finished)."""
    with sqlite3.connect(store) as db:
        return sorted(db.execute("SELECT key, result FROM collide_items"))


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Path]:
    """The tiny study run here, one item after the other, uninterrupted."""
    study = load_study(TINY)
    store = tmp_path_factory.mktemp("whole") / "s.sqlite"
    with open_store(store) as db:
        assert run_study(study, db, InlineExecutor()) == 4
    return study, store


def test_an_item_is_collides_entry_of_its_observer(whole: tuple[Study, Path]) -> None:
    """The items of draw 0 equal `collide`'s entries for the same settings with both observers,
    bit for bit (the study adds keys, changes none); the threshold ratio is collide's."""
    study, store = whole
    with open_store(store, create=False) as db:
        rows = stored_collisions(db, study.collisions)
    first = [r for r in rows if r.item.seed == 0]
    settings = replace(first[0].item.collide_settings(), observers=tuple(r.item.observer for r in first))
    doc = collide.scenario(study.sources[first[0].item.description], settings).doc
    ratio = {o: e.pop("ratio_to_momentum") for o, e in doc["observers"].items()}
    for row in first:
        mine = {k: v for k, v in row.result.items() if k not in ADDED}
        assert mine == json.loads(json.dumps(doc["observers"][row.item.observer]))
        assert len(row.result["push_delays_ms"]) == len(settings.events)
    adaptive = summary(first, 2)["groups"]["planar2"]["observers"]["adaptive"]["threshold_ratio"]
    assert adaptive["median"] == ratio["adaptive"] and adaptive["draws"] == 1


def test_a_draws_observers_run_together_give_each_ones_entry_alone(whole: tuple[Study, Path]) -> None:
    """A draw's items run as one task (run_collide_draw: adaptive's plant runs replayed from
    momentum's, fed alike) store what each gets run alone, closed loop, bit for bit."""
    study, store = whole
    with open_store(store, create=False) as db:
        rows = [r for r in stored_collisions(db, study.collisions) if r.item.seed == 1]
    assert [r.item.observer for r in rows] == ["momentum", "adaptive"]  # one feed: adaptive is replayed
    assert collide.feeds(("momentum", "adaptive")) == [("momentum", "adaptive")]
    alone, _, _ = run_collide_draw((rows[1].item,), study.sources[rows[1].item.description])[0]
    assert json.loads(json.dumps(alone)) == rows[1].result


def test_an_interrupted_and_resumed_study_equals_an_uninterrupted_one(
    whole: tuple[Study, Path], tmp_path: Path
) -> None:
    """Interrupted (KeyboardInterrupt, as Ctrl-C raises it in the command, after two stored items)
    and run again: the second run runs the rest only, and the store holds what the whole run's does."""
    study, reference = whole
    store = tmp_path / "parts.sqlite"

    def interrupt(done: int, total: int, item: object) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with open_store(store) as db, ThreadPoolExecutor(1) as pool, pytest.raises(KeyboardInterrupt):
        run_study(study, db, pool, interrupt)
    assert len(_content(store)) == 2
    with open_store(store) as db:
        assert run_study(study, db, InlineExecutor()) == 2
        assert run_study(study, db, InlineExecutor()) == 0
    assert _content(store) == _content(reference)


def test_a_local_cluster_stores_what_a_serial_run_does_and_the_report_counts_the_rows(
    whole: tuple[Study, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scheduler local:2` (two worker processes) stores the serial run's rows; the report's rates
    and intervals are the rows' counts."""
    require_module("distributed", "pip install 'manipgen[cluster]'")
    _, reference = whole
    store, out = tmp_path / "c.sqlite", tmp_path / "report"
    cmd = [str(BIN / "manipgen"), "study", str(TINY), "--store", str(store)]
    r = subprocess.run([*cmd, "--scheduler", "local:2"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert _content(store) == _content(reference)
    r = cli_in_process(capsys, *cmd[1:], "--report", "--out", str(out))  # no interpreter of its own
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "report.json").read_text())
    assert doc["items"] == doc["total"] == 4 and (out / "report_rates.png").is_file()
    assert "| momentum | 2 |" in r.stdout
    results: dict[str, list[dict[str, Any]]] = {}
    for key, result in _content(store):
        results.setdefault(json.loads(key)["observer"], []).append(json.loads(result))
    for observer, found in results.items():
        s = doc["groups"]["planar2"]["observers"][observer]
        missed = [x["missed"] + sum(d is None for d in x["push_delays_ms"]) for x in found]
        contacts = sum(x["events"] + len(x["push_delays_ms"]) for x in found)
        assert (s["miss_per_contact"]["count"], s["miss_per_contact"]["of"]) == (sum(missed), contacts)
        assert s["miss_per_run"]["count"] == sum(m > 0 for m in missed)
        assert s["false_alarm_per_run"]["count"] == sum(x["false_alarms"] > 0 for x in found)
        hours = sum(x["check_s"] for x in found) / 3600
        assert s["false_alarms_per_hour"]["count"] == sum(x["false_alarms"] for x in found)
        assert s["false_alarms_per_hour"]["hours"] == pytest.approx(hours, rel=1e-12)  # a sum's rounding
        steps = [d for x in found for d in x["delays_ms"]["100"] if d is not None]
        kind = s["delay_by_kind"]["step 100 Hz (rise 3.5 ms)"]
        # the report's median of no detection is None (an observer that missed every step of a kind)
        assert kind["median_ms"] == (np.median(steps) if steps else None) and kind["contacts"] == len(found)


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000])
def test_clopper_pearson_at_the_ends_is_the_closed_form(n: int) -> None:
    """0 of n: [0, 1 - 0.025^(1/n)]; n of n: [0.025^(1/n), 1] (the binomial's tail equals 0.025 there)."""
    assert clopper_pearson(0, n) == (0.0, pytest.approx(1 - 0.025 ** (1 / n), rel=1e-12))
    assert clopper_pearson(n, n) == (pytest.approx(0.025 ** (1 / n), rel=1e-12), 1.0)


def test_clopper_pearson_inside_is_where_the_binomial_tails_are_2_5_percent() -> None:
    """k of n: P(X >= k | lower) = 0.025 and P(X <= k | upper) = 0.025, X ~ B(n, p)."""
    from math import comb

    def tail(p: float, ks: range, n: int) -> float:
        return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in ks)

    for k, n in ((1, 10), (3, 20), (50, 100)):
        low, high = clopper_pearson(k, n)
        assert tail(low, range(k, n + 1), n) == pytest.approx(0.025, rel=1e-9)
        assert tail(high, range(0, k + 1), n) == pytest.approx(0.025, rel=1e-9)


def test_the_poisson_interval_of_no_event_is_the_closed_form() -> None:
    """0 events in T h: the upper bound is -ln(0.025) / T (P(0 events | rate) = exp(-rate T) = 0.025);
    1 event: the lower bound solves P(X >= 1) = 1 - exp(-m) = 0.025."""
    assert poisson_exact(0, 2.0) == (0.0, pytest.approx(-np.log(0.025) / 2.0, rel=1e-12))
    assert poisson_exact(1, 1.0)[0] == pytest.approx(-np.log(0.975), rel=1e-9)


@pytest.mark.parametrize(
    ("grid", "field"),
    [
        ("robots: [planar2]\n  seeds: 0", "collide.seeds"),
        ("robots: [planar2]\n  nope: 1", "collide.nope"),
        ("robots: [planar2]\n  observers: [nope]", "collide.observers[0]"),
        ("robots: [planar2]\n  friction_error: [yes please]", "collide.friction_error[0]"),
        ("robots: [planar2]\n  push: {hz: -1}", "collide.push"),
        ("robots: [planar2]\n  events: [30.0]", "collide"),
        ("robots: [planar2]\n  push: {seconds: 5}", "collide.push.seconds"),
        ("robots: [planar2]\n  cutoffs: fast", "collide.cutoffs"),
        ("robots: [no_such_robot]", "collide.robots[0]"),
        ("seeds: 2", "collide.robots"),
    ],
)
def test_a_bad_collision_grid_names_file_and_field(tmp_path: Path, grid: str, field: str) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(f"collide:\n  {grid}\n")
    with pytest.raises(DescriptionError) as info:
        load_study(spec)
    assert str(spec) in str(info.value) and field in str(info.value), str(info.value)


def test_grids_span_their_axes_and_keys_follow_the_settings(tmp_path: Path) -> None:
    """Items: robots x model errors x friction error x seeds x observers; the default observers are
    collide's less those the robot lacks sensors for; a changed setting makes other keys."""
    spec = tmp_path / "a.yaml"
    spec.write_text(
        "collide:\n- robots: [planar2]\n  seeds: [3, 4]\n  friction_error: [false, true]\n"
        "  observers: [momentum]\n- robots: [ur5]\n  model_errors: [0.05]\n"
    )
    study = load_study(spec)
    first = [it for it in study.collisions if it.model_error == 0.1]
    assert sorted((it.seed, it.friction_error) for it in first) == [(3, False), (3, True), (4, False), (4, True)]
    # each carries the client's C-library fingerprint, which its worker checks (run_task)
    assert {it.arithmetic for it in study.collisions} == {libm_fingerprint()}
    second = [it.observer for it in study.collisions if it.model_error == 0.05]
    assert second and "adaptive_imu" not in second and "adaptive_imu_tip" in second  # ur5 has no imus:
    spec.write_text("collide:\n  robots: [planar2]\n  amplitude: 4\n  observers: [momentum]\n")
    a = load_study(spec).collisions[0]
    assert isinstance(a, CollideItem) and a.collide_settings().amplitude == 4.0 and a.key != first[0].key


def test_a_description_without_motion_limits_runs_its_items_on_collides_stand_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Liu et al.'s LWA-4P gives no position or velocity limits (issue #46 item 2): its items run on
    the stand-in collide uses (codegen.model.robot.STANDIN_LIMITS), each entry saying so, equal to
    collide's entry on the same settings bit for bit, and the report states it for the robot."""
    spec = tmp_path / "lwa4p.yaml"
    spec.write_text(
        "collide:\n  robots: [schunk_lwa4p]\n  observers: [momentum]\n  duration: 6.0\n  design_motions: 2\n"
        "  warmup_motions: 0\n  events: [3.0]\n  cutoffs: [100]\n  impact_speeds: [0.25]\n  push: null\n"
    )
    study = load_study(spec)
    store = tmp_path / "s.sqlite"
    with open_store(store) as db:
        assert run_study(study, db, InlineExecutor()) == 1
        (row,) = stored_collisions(db, study.collisions)
    assert "error" not in row.result, row.result
    joints = [j.name for j in load_robot("schunk_lwa4p").joints]
    assert row.result["standin_limits"]["joints"] == joints
    source = study.sources[row.item.description]
    assert source.standin_limits
    doc = collide.scenario(source, replace(row.item.collide_settings(), observers=("momentum",))).doc
    entry = doc["observers"]["momentum"]
    entry.pop("ratio_to_momentum")
    assert {k: v for k, v in row.result.items() if k not in ADDED} == json.loads(json.dumps(entry))
    r = cli_in_process(capsys, "study", str(spec), "--store", str(store), "--report", "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["groups"]["schunk_lwa4p"]["standin_limits"] == row.result["standin_limits"]
    assert "no position or velocity limits for " + ", ".join(joints) in r.stdout
