"""`manipgen collide --model identified` (issue #46): the non-adaptive observers (momentum, direct*)
run on the model identified on a commissioning run of the draw's design motions, the model-adaptive
ones on the drawn model as before. Checked on planar2's draw 15, whose drawn model closes a loop that
oscillates at its torque limit (test_collide.py): the identified model's mass matrix is checked against
the plant's, a quantity the identification never fitted directly."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from host_tools import load
from host_tools.bindings.source import RobotSource
from host_tools.reports.collision import markdown
from host_tools.studies.collide import CollideSettings, check_settings, scenario, shared_runs
from host_tools.studies.collide_study import CollideItem, run_collide_draw

SEED = 15
OBSERVERS = ("momentum", "adaptive_momentum")


def _mass_error(robot_name: str, model: np.ndarray, true: np.ndarray, q: np.ndarray) -> float:
    """The largest ||M_model(q) - M(q)|| / ||M(q)|| (Frobenius) over the poses q."""
    dyn = load(robot_name)
    return max(
        float(np.linalg.norm(dyn.mass_matrix(qk, params=model) - dyn.mass_matrix(qk, params=true)))
        / float(np.linalg.norm(dyn.mass_matrix(qk, params=true)))
        for qk in q
    )


def test_the_commissioning_run_identifies_the_plant_and_leaves_the_draw_as_it_was() -> None:
    robot = RobotSource.of("planar2").robot()
    drawn = shared_runs(robot, CollideSettings(seed=SEED))
    runs = shared_runs(robot, CollideSettings(seed=SEED, model="identified"))
    assert drawn.identified is None and runs.identified is not None
    # only the model-adaptive observers asked for: no commissioning run (they keep the drawn model);
    # a study's draw identifies whichever of its observers comes first (its runs are shared)
    adaptive = CollideSettings(seed=SEED, model="identified", observers=("adaptive_momentum",))
    assert shared_runs(robot, adaptive).identified is None
    assert shared_runs(robot, adaptive, identify=True).identified is not None
    # the draw itself does not move: the drawn model, the motions and the impacts the adaptive
    # observers meet are the default run's, bit for bit
    assert runs.model.tobytes() == drawn.model.tobytes() and runs.impacts == drawn.impacts
    assert runs.test.q.tobytes() == drawn.test.q.tobytes()
    # the non-adaptive observers' impacts and count floor are the identified loop's own, not the drawn one's
    mine = runs.identified
    assert [i.contact.start for i in mine.impacts] != [i.contact.start for i in drawn.impacts]
    assert mine.least.tobytes() != drawn.least.tobytes()
    # M(q) along the check motion (every 50th sample; held out from the commissioning run): the
    # draw's inertial parameters are up to 10 % off; the loopback's plant has exactly the model's
    # structure, so the identified model is far closer (measured: 19.4 % and 0.12 %)
    q = runs.test.q[::50]
    before = _mass_error("planar2", drawn.model, drawn.true, q)
    after = _mass_error("planar2", runs.identified.model, runs.true, q)
    assert before > 0.02 and after < 0.1 * before, (before, after)


def test_only_the_non_adaptive_observers_take_the_identified_model() -> None:
    source = RobotSource.of("planar2")
    default = scenario(source, CollideSettings(seed=SEED, observers=OBSERVERS)).doc
    said: list[str] = []
    identified = scenario(source, CollideSettings(seed=SEED, observers=OBSERVERS, model="identified"), said.append).doc
    assert said[0].startswith("commissioning run: identifying") and said[0].endswith("on the warm-up motions")
    before, after = default["observers"]["momentum"], identified["observers"]["momentum"]
    assert (before["model"], after["model"]) == ("description", "identified")
    # the drawn model's loop falls behind, the identified model's tracks (measured: largest tracking
    # error 0.185 -> 0.0023 rad; before collide's gains kept a 6 dB margin, 2026-12-01, the drawn
    # model's loop oscillated at the 60 N m limit, 0.62 rad)
    assert not before["closed_loop"]["torque_limited"] and not after["closed_loop"]["torque_limited"]
    assert max(after["closed_loop"]["max_tracking_error"]) < 0.1 * max(before["closed_loop"]["max_tracking_error"])
    # the model-adaptive observer: its entry as without the option (its ratio is to momentum's thresholds)
    keep = {k: v for k, v in default["observers"]["adaptive_momentum"].items() if k != "ratio_to_momentum"}
    assert {k: v for k, v in identified["observers"]["adaptive_momentum"].items() if k != "ratio_to_momentum"} == keep
    assert "model" not in default
    errors = identified["model"]["torque_error_rms"]  # measured on joint 1: 1.16 -> 0.0069 N m
    assert all(i < 0.2 * d for i, d in zip(errors["identified"], errors["drawn"])), errors
    assert len(identified["model"]["identified_impacts"]) == len(default["impacts"])
    text = markdown(identified)  # the report marks the observers on the identified model, and says so
    assert "| momentum (identified model) |" in text and "| adaptive_momentum |" in text
    assert "drawn → identified (N m)" in text and "(identified model)" not in markdown(default)
    # the identified model's paragraph only when an observer ran on it: a document that keeps the
    # commissioning run's entry but none of the observers on that model does not say it
    unused = copy.deepcopy(identified)
    unused["observers"] = {k: v for k, v in unused["observers"].items() if v["model"] != "identified"}
    assert unused["model"] and unused["observers"] and "drawn → identified" not in markdown(unused)

    # each impact under its target speed's column (the 3 columns after the 3 steps'), the identified
    # loop's own; a target that loop's motion was too slow for: n/a
    def impact_cells(doc: dict[str, Any]) -> list[str]:
        row = next(r for r in markdown(doc).splitlines() if r.startswith("| momentum (identified model) |"))
        return [c.strip() for c in row.split("|")[1:-1]][7:10]

    own = [("—" if x is None else f"{x:.1f}") for x in after["impact_delay_ms"].values()]
    assert impact_cells(identified) == own
    fewer = copy.deepcopy(identified)
    first = next(iter(after["impact_delay_ms"]))
    del fewer["observers"]["momentum"]["impact_delay_ms"][first]
    assert impact_cells(fewer) == ["n/a", *own[1:]]


def test_an_unknown_model_is_one_error() -> None:
    robot = RobotSource.of("planar2").robot()
    with pytest.raises(ValueError, match="unknown model 'fitted'; choose from description, identified"):
        check_settings(robot, CollideSettings(model="fitted"))


def test_a_study_item_is_collides_entry_with_the_identified_model() -> None:
    """A study grid's ``model: identified`` (a CollideSettings field) gives each item the observer's
    entry of `manipgen collide --model identified`, the push's delays on the observer's own runs."""
    source = RobotSource.of("planar2")
    settings = json.dumps({"model": "identified"})
    # the model-adaptive observer's item first: the draw's shared runs still hold the identified model
    order = ("adaptive_momentum", "momentum")
    items = tuple(CollideItem("planar2", source.key, o, SEED, 0.1, False, settings, 0.2, 1.5) for o in order)
    got = [entry for entry, *_ in run_collide_draw(items, source)]
    doc = scenario(source, CollideSettings(seed=SEED, observers=OBSERVERS, model="identified")).doc
    for o, entry in zip(order, got):  # the ratio to momentum is the report's (collide_study.summary)
        assert entry.items() >= {k: v for k, v in doc["observers"][o].items() if k != "ratio_to_momentum"}.items()
    assert got[1]["model"] == "identified" and len(got[1]["push_delays_ms"]) == 3
    for entry in got:  # each impact the observer met stands for one of the targets
        assert sorted(entry["impact_targets"].values()) == [0.1, 0.25, 0.5]


def test_the_command_line_passes_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    from host_tools.cli import main

    assert (
        main(["collide", "planar2", "--seed", "2", "--model", "identified", "--observers", "momentum", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["model"] == "identified" and doc["observers"]["momentum"]["model"] == "identified"


def test_the_commissioning_run_is_the_warm_up_held_out_from_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is identified on the warm-up motions, which the threshold design leaves out: each
    held-out block of the design then sees the model's error on a motion it was not fitted on, as
    the check motion does. Without a warm-up, on the design motions."""
    import host_tools.studies.collide as collide

    seen: list[Any] = []
    real = collide.identified_parameters

    def spy(robot: Any, rt: Any, motion: Any, true: np.ndarray) -> np.ndarray:
        seen.append(motion)
        return real(robot, rt, motion, true)

    monkeypatch.setattr(collide, "identified_parameters", spy)
    robot = RobotSource.of("planar2").robot()
    runs = shared_runs(robot, CollideSettings(seed=SEED, model="identified"))
    warmup = seen[-1]
    assert len(warmup.time) == runs.k_design  # the warm-up's samples, none of the design's
    assert warmup.q.tobytes() == runs.design.q[: runs.k_design].tobytes()
    short = CollideSettings(seed=SEED, model="identified", warmup_motions=0, design_motions=2, duration=6.0)
    runs = shared_runs(robot, short)
    assert seen[-1].q.tobytes() == runs.design.q.tobytes()
