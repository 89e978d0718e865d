"""Each study runs its paper's set-up, stated in full (host_tools.studies.paper_setups): every config
field of every pipeline the study builds is pinned, set per set-up or the description's own; a
field left to a block default fails, naming the study and the field."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from codegen.blocks import registry
from host_tools.bindings.source import RobotSource
from host_tools.studies.evaluate import (
    ESTIMATORS,
    EstimatorRequest,
    Setup,
    default_spec,
    pipeline,
    pipeline_source,
    variant,
)
from host_tools.studies.paper_setups import VELOCITY_ESTIMATORS, PaperSetup


def config_keys(folder_manifest: dict[str, Any]) -> list[str]:
    return sorted(folder_manifest["rt"]["default_config"])


@pytest.mark.parametrize("request_", ESTIMATORS, ids=lambda r: r.name)
def test_the_estimator_study_states_every_field_it_runs(request_: EstimatorRequest) -> None:
    """Every registered study estimator's pipeline (generated only: the fields are the manifest's),
    on the paper's robot with the paper's gains where it has them."""
    for setup in (Setup(RobotSource.of("schunk_lwa4p"), gains="paper"), Setup(RobotSource.of("planar2"))):
        folder = pipeline_source(setup, variant(setup, request_.name)).folder()
        keys = config_keys(json.loads((folder / "manifest.json").read_text(encoding="utf-8")))
        left = VELOCITY_ESTIMATORS.unstated(keys)
        assert not left, f"{VELOCITY_ESTIMATORS.study}: {', '.join(left)} would come from a block default"


def test_the_estimator_study_runs_the_papers_controller() -> None:
    """eq. 2: friction compensated at the estimate, Kp = 100, Kd = 13, whatever the defaults say."""
    setup = Setup(RobotSource.of("planar2"))
    rt = pipeline(setup, default_spec("findiff"))
    assert rt.rt_manifest["controller"] == VELOCITY_ESTIMATORS.controller == "computed_torque"
    assert float(rt.config["ctl.friction_ff"]) == 0.0
    assert list(rt.config["ctl.kp"]) == [100.0, 100.0] and list(rt.config["ctl.kd"]) == [13.0, 13.0]


def test_an_unstated_field_is_named() -> None:
    """The check can fail: the record without the friction field names it."""
    pinned = {k: v for k, v in VELOCITY_ESTIMATORS.pinned.items() if k != "ctl.friction_ff"}
    partial = PaperSetup("s", "p", VELOCITY_ESTIMATORS.controller, pinned, VELOCITY_ESTIMATORS.per_setup)
    assert partial.unstated(["ctl.kp", "ctl.friction_ff", "model.params", "est.h1", "enc.gear"]) == ["ctl.friction_ff"]
    assert registry.controllers()[VELOCITY_ESTIMATORS.controller]


def test_model_based_estimators_hold_with_friction_fed_forward() -> None:
    """Issue 43 item 3, Liu et al.'s Table 4 gains at 10 mdeg, 125 Hz. In the paper's loop (friction
    at the estimate) nlHG's and SliMod's velocity ISE meet the issue's goals, 0.02 and 0.05 (measured
    0.0078 and 0.027); with the friction fed forward at the desired velocity instead (``Setup.loop``),
    which the observers' torque no longer cancels, within 1.5x of the paper's loop (measured 0.91x and
    0.92x; with the explicit friction step they were 10.5x and 4.1x: bench/model_based_friction.py).
    The same seed, motion and plant in both loops; ``ctl.friction_ff`` is a run-time field, so the
    two loops share one compiled pipeline."""
    from concurrent.futures import ThreadPoolExecutor

    from host_tools.studies.evaluate import evaluate

    fed = dataclasses.replace(VELOCITY_ESTIMATORS, pinned={**VELOCITY_ESTIMATORS.pinned, "ctl.friction_ff": 1.0})
    source = RobotSource.of("schunk_lwa4p")
    requests = (EstimatorRequest.parse("nlhg"), EstimatorRequest.parse("slimod"))
    ise = {}
    for name, loop in (("paper", VELOCITY_ESTIMATORS), ("fed", fed)):
        with ThreadPoolExecutor(1) as ex:
            doc = evaluate(Setup(source, gains="paper", loop=loop), requests, executor=ex).doc
        assert doc["setup"]["controller"].endswith(f"ctl.friction_ff = {loop.pinned['ctl.friction_ff']:g}")
        ise[name] = {e: doc["estimators"][e]["ise_velocity"] for e in ("nlhg", "slimod")}
    assert ise["paper"]["nlhg"] < 0.02 and ise["paper"]["slimod"] < 0.05, ise
    for e in ("nlhg", "slimod"):
        assert ise["fed"][e] < 1.5 * ise["paper"][e], (e, ise)
