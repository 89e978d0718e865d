"""The block registry's promise: a new estimator is one module (and its plumbing) -- nothing in the
project edited. This file is that module: an alpha-beta filter (Kalata 1984; the steady-state
Kalman filter of a constant-velocity model), its C plumbing given as a string outside templates/,
registered, then taken through generate -> build -> load_rt -> evaluate (and the GA's gene space).

It is also the worked example of docs/design.md "How to add a block". Its test oracle is the generic
estimator plumbing's (tests/oracles/estimators.py: init on the first sample, then step), registered
here for the pipeline's oracle to run it."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import casadi as cs
import numpy as np
import pytest

from codegen.blocks import registry
from codegen.blocks.base import Block, Field, sx_function
from codegen.blocks.context import Ctx
from codegen.blocks.estimator import outputs
from codegen.blocks.options import EstimatorChoice, RtOptions, estimator_choice, parse_estimator
from tests.oracles import ORACLES, RtReference
from tests.oracles.estimators import init_then_step
from tests.tooling import ROOT

NAME = "alphabeta"

# The C plumbing: first sample initialises, then the step (the same calls the generic estimator
# plumbing makes, written here so that the template comes from outside templates/).
TEMPLATE = """\
    /* alpha-beta filter: registered from tests/codegen/blocks/test_block_registry.py */
    if (rt->first) {
{{ call("est", "init") | indent(8, true) }}
    }
{{ call("est", "step") | indent(4, true) }}
"""


def build(ctx: Ctx, choice: EstimatorChoice) -> Block:
    """x_p = x + T v, r = q - x_p, x := x_p + alpha r, v := v + (beta / T) r, per joint."""
    n, ts = ctx.n, ctx.ts
    q, alpha, beta = ctx.sym("q"), ctx.sym("alpha"), ctx.sym("beta")
    x, v = cs.SX.sym("x", n), cs.SX.sym("v", n)
    xp = x + ts * v
    r = q - xp
    x1, v1 = xp + alpha * r, v + beta / ts * r
    step = sx_function(
        "step",
        [("out.q", q), ("st.est.x", x), ("st.est.v", v), ("cfg.est.alpha", alpha), ("cfg.est.beta", beta)],
        [("out.q_hat", x1), ("out.qd_hat", v1), ("out.qdd_hat", cs.SX.zeros(n)), ("st.est.x", x1), ("st.est.v", v1)],
        "predict, correct with the residual",
    )
    init = sx_function("init", [("out.q", q)], [("st.est.x", q), ("st.est.v", cs.SX.zeros(n))], "x := q, v := 0")
    return Block(
        kind="est",
        name=NAME,
        doc="Alpha-beta filter (Kalata 1984): a constant-velocity predictor corrected by the residual.",
        config=[
            Field("alpha", "real", (n,), "position gain (0, 1]", (0.5,) * n, low=0.0, high=1.0, low_open=True),
            Field("beta", "real", (n,), "velocity gain (0, 2)", (0.1,) * n, low=0.0, high=2.0, low_open=True),
        ],
        state=[
            Field("x", "real", (n,), "filtered position"),
            Field("v", "real", (n,), "filtered velocity"),
        ],
        outputs=outputs(n),
        functions=[init, step],
    )


SPEC = registry.Estimator(
    name=NAME,
    summary="alpha-beta filter (Kalata 1984), registered by a test",
    build=build,
    genes=(registry.Gene("est.alpha", 0.05, 1.0), registry.Gene("est.beta", 1e-3, 1.0)),
    template=TEMPLATE,
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The alpha-beta filter (and its oracle) registered for one test; the registries as they were
    afterwards."""
    registry.estimators()  # the built-in blocks first
    monkeypatch.setattr(registry, "_ESTIMATORS", dict(registry._ESTIMATORS))
    registry.register(SPEC)
    monkeypatch.setitem(ORACLES, NAME, init_then_step)
    yield


def alpha_beta(q: np.ndarray, ts: float, alpha: float, beta: float) -> np.ndarray:
    """The filter in plain numpy, sample by sample: the independent reference."""
    x, v = q[0].copy(), np.zeros(q.shape[1])  # init on the first sample, then a step on every one
    out = np.zeros_like(q)
    for k in range(len(q)):
        xp = x + ts * v
        r = q[k] - xp
        x, v = xp + alpha * r, v + beta / ts * r
        out[k] = v
    return out


def test_a_registered_estimator_goes_through_generate_build_load_and_evaluate(registered: None, tmp_path: Path) -> None:
    from host_tools.bindings.rt import load_rt, rt_options
    from host_tools.bindings.source import RobotSource
    from host_tools.cli import main
    from host_tools.studies.evaluate import EstimatorRequest, Setup, evaluate
    from host_tools.studies.tune import gain_space

    # the options layer knows it: name:options parsing, choices in errors
    assert parse_estimator(NAME).name == NAME and NAME in registry.estimators()
    # generate through the command line, into a folder of its own
    assert main(["generate", "planar2", "--estimator", NAME, "--observer", "none", "--out", str(tmp_path)]) == 0
    rt_c = (tmp_path / "planar2_rt.c").read_text()
    assert "alpha-beta filter: registered from tests/codegen/blocks/test_block_registry.py" in rt_c
    assert "planar2_rt_est_step" in rt_c
    # build and load: the C step against the numpy filter on a quantised ramp with lost samples held
    rt = load_rt("planar2", estimator=NAME, observer="none", controller="none")
    rt.config["est.alpha"], rt.config["est.beta"] = [0.4, 0.7], [0.05, 0.2]
    counts = np.floor(np.arange(3000)[:, None] * np.array([[0.37, 0.61]])).astype(np.int64)
    out = rt.run({"counts": counts})
    q = out["q"]
    for j, (a, b) in enumerate(((0.4, 0.05), (0.7, 0.2))):
        ref = alpha_beta(q[:, [j]], rt.sample_period, a, b)[:, 0]
        # the same operations in the same order in C and numpy, double: a few ulps of |v| per step,
        # accumulated through the stable filter (poles inside the unit circle): 1e-9 rad/s is 1e5x that
        assert np.max(np.abs(out["qd_hat"][:, j] - ref)) < 1e-9
    # and against the pipeline's oracle (tests/oracles), sample by sample: the same CasADi calls
    oracle = RtReference("planar2", rt_options(NAME, "none", "none"))
    oracle.set_config({"est.alpha": [0.4, 0.7], "est.beta": [0.05, 0.2]})
    for k in range(200):
        o = oracle.step({"counts": counts[k], "valid": [1, 1]})
        assert np.allclose(o["qd_hat"], out["qd_hat"][k], rtol=1e-12, atol=0) and np.array_equal(o["q"], out["q"][k])
    slope = np.array([0.37, 0.61]) * 2 * np.pi / rt.config["enc.cpr"] / rt.sample_period
    assert np.allclose(out["qd_hat"][-1000:].mean(axis=0), slope, rtol=2e-3)  # converges to the ramp's slope
    # a study: Liu et al.'s closed-loop evaluation, and the GA's genes from the registry
    doc = evaluate(
        Setup(RobotSource.of("planar2"), rate_hz=250), (EstimatorRequest(NAME),), executor=ThreadPoolExecutor(1)
    ).doc
    result = doc["estimators"][NAME]
    assert result["ise_velocity"] is not None and 0 < result["ise_velocity"] < 1.0
    assert {g.key for g in gain_space(NAME, 2)} == {"est.alpha", "est.beta"}


def test_the_pipeline_design_follows_the_registry(registered: None, tmp_path: Path) -> None:
    """An unknown estimator names the registered ones; a registered one without q-ddot is refused by
    the acceleration-based observers with the registry's list of those that give it; the plumbing
    may also come from a .c.j2 file anywhere."""
    from codegen.blocks.options import OptionError
    from codegen.blocks.pipeline import build_pipeline
    from codegen.emit.generate import generate
    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot

    plumbing = tmp_path / "my_filter.c.j2"
    plumbing.write_text(TEMPLATE.replace("registered from", "plumbing read from a file, registered from"))
    registry.register(dataclasses.replace(SPEC, name="alphabeta_file", template=plumbing))
    choice = estimator_choice("alphabeta_file", {})
    rt_c = generate(load_robot("planar2"), rt=RtOptions(estimator=choice, observer="none")).files["planar2_rt.c"]
    assert "alpha-beta filter: plumbing read from a file" in rt_c

    with pytest.raises(OptionError, match=NAME):
        estimator_choice("nope", {})
    robot = load_robot("planar2")
    with pytest.raises(DescriptionError, match=r"needs the joint acceleration.*kalman"):
        build_pipeline(robot, RtOptions(estimator=estimator_choice(NAME, {}), observer="adaptive"))


def _string_constants(path: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_each_block_name_is_a_literal_in_at_most_two_project_modules() -> None:
    """Estimators, observers and controllers: their block module and, if needed, its template; every
    other list reads the registry. A literal is a string constant that is the name or a spec starting
    ``name:`` (prose in docstrings is not)."""
    modules = sorted(p for top in ("codegen", "host_tools") for p in (ROOT / top).rglob("*.py"))
    constants = {p: _string_constants(p) for p in modules}
    templates = sorted((ROOT / "templates").rglob("*.j2"))
    names = [*registry.estimators(), *registry.observers(), *registry.controllers()]
    for name in (n for n in names if n != "none"):
        literal = re.compile(rf"^{name}(:.*)?$")
        where = [p for p, c in constants.items() if any(literal.match(s) for s in c)]
        where += [p for p in templates if re.search(rf"[\"']{name}[\"':]", p.read_text())]
        assert len(where) <= 2, (name, [str(p.relative_to(ROOT)) for p in where])
        assert where and where[0].parent.name == "blocks", (name, where)  # declared in its block module


def test_the_observer_and_controller_lists_read_their_specs() -> None:
    """The defaults, `thresholds`' choices, `collide`'s entries and default set come from the specs."""
    from host_tools.studies.collide_defaults import DEFAULT_OBSERVERS, ENTRIES

    observers, controllers = registry.observers(), registry.controllers()
    assert RtOptions().observer == registry.default_observer().name == "momentum"
    assert RtOptions().controller == registry.default_controller().name == "computed_torque"
    assert registry.default_controller(elastic=True).name == "state_feedback"
    assert [n for n, o in observers.items() if o.replays_logs] == [
        "momentum",
        "adaptive",
        "adaptive_momentum",
        "adaptive_momentum_essential",
        "adaptive_momentum_dense",
        "direct",
    ]
    assert [n for n, o in observers.items() if o.needs_acceleration] == ["adaptive", "direct"]
    assert observers["adaptive_momentum_measured"].sensors == ("qd_meas",)
    assert registry.estimators()["imu"].sensors == ("imu_gyro", "imu_acc")
    assert [n for n, o in observers.items() if o.tunables] == [n for n in observers if n.startswith("adaptive")]
    assert set(ENTRIES) - set(observers) == {"adaptive_imu", "adaptive_imu_tip", "adaptive_momentum_imu", "direct_imu"}
    assert ENTRIES["adaptive_imu_tip"].estimator == "imu:tip=1" and ENTRIES["direct_imu"].qd_qdd.startswith("IMU")
    # the momentum form's IMU-fed entry runs its dense update (registry.Observer.imu_build), listed under it
    assert ENTRIES["adaptive_momentum_imu"].observer.name == "adaptive_momentum_dense"
    assert ENTRIES["adaptive_momentum_imu"].spec.name == "adaptive_momentum"
    assert "adaptive_momentum_dense_imu" not in ENTRIES
    assert DEFAULT_OBSERVERS == (
        "momentum",
        "adaptive",
        "direct",
        "adaptive_measured",
        "direct_measured",
        "adaptive_imu",
        "adaptive_imu_tip",
        "adaptive_momentum",
        "adaptive_momentum_measured",
        "adaptive_momentum_imu",
    )
    assert not controllers["state_feedback"].rigid and controllers["pid"].build is not None


def test_the_registry_order_does_not_depend_on_what_was_imported_first() -> None:
    """A process that imports the block modules in reverse (as a test module or an import chain may,
    before anything asks the registry) lists the blocks as a process that only asks the registry:
    BUILTIN's order, not the import order (a collection that imported adaptive first had put it
    before momentum)."""
    import json
    import subprocess
    import sys

    ask = (
        "from codegen.blocks import registry\n"
        "print(json.dumps([list(registry.observers()), list(registry.estimators()), list(registry.controllers())]))\n"
    )
    reverse = "".join(f"import {m}\n" for m in reversed(registry.BUILTIN))

    def lists(code: str) -> list[list[str]]:
        run = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, check=True)
        return json.loads(run.stdout)

    plain = lists(ask)
    assert lists(reverse + ask) == plain
    assert plain[0].index("momentum") < plain[0].index("adaptive") and plain[2][1] == "computed_torque"
