"""One evaluation point for the step (issue 47 item 2): a block function's outputs CSE'd together,
and the sines and cosines of q_hat computed once for the functions that share them
(codegen.blocks.shared), with the same bits as each function computing its own."""

from __future__ import annotations

import casadi as cs
import numpy as np
import pytest

import codegen.blocks.pipeline as pipeline_module
from codegen.blocks.options import RtOptions
from codegen.blocks.pipeline import build_pipeline
from codegen.blocks.shared import COS, Q_HAT, SIN
from codegen.model.description import load_robot


def _trig_of_inputs(f: cs.Function) -> int:
    """How many sin/cos instructions of ``f`` take an input element directly."""
    held: set[int] = set()
    count = 0
    for k in range(f.n_instructions()):
        op, ins, outs = f.instruction_id(k), f.instruction_input(k), f.instruction_output(k)
        if op in (cs.OP_SIN, cs.OP_COS) and ins[0] in held:
            count += 1
        if op == cs.OP_INPUT:
            held.add(outs[0])
        elif op != cs.OP_OUTPUT:
            held.discard(outs[0])
    return count


@pytest.fixture(scope="module")
def iiwa_ct() -> tuple[pipeline_module.Pipeline, pipeline_module.Pipeline]:
    """kalman + momentum + computed torque on the iiwa, shared and (share_trig disabled) not."""
    robot = load_robot("kuka_iiwa14")
    shared = build_pipeline(robot, RtOptions(controller="computed_torque"))
    original = pipeline_module.share_trig
    pipeline_module.share_trig = lambda blocks, n: None
    try:
        alone = build_pipeline(robot, RtOptions(controller="computed_torque"))
    finally:
        pipeline_module.share_trig = original
    return shared, alone


def test_a_functions_outputs_share_their_subexpressions(iiwa_ct) -> None:
    """The momentum observer writes p and the residual (twice: state and output): CSE'd together,
    a second CSE over all its outputs finds nothing left to merge."""
    _, alone = iiwa_ct
    f = next(b for b in alone.blocks if b.kind == "obs").fn("step").casadi
    outs = f.call(f.sx_in())
    again = cs.Function("again", f.sx_in(), cs.cse(outs))
    assert again.n_instructions() == f.n_instructions()


def test_observer_and_controller_read_one_sin_cos_of_q_hat_with_the_same_bits(iiwa_ct) -> None:
    shared, alone = iiwa_ct
    assert shared.shared is not None and alone.shared is None
    assert shared.shared.reads == (Q_HAT,) and shared.shared.writes == (COS, SIN)
    rng = np.random.default_rng(7)
    n = shared.n
    for kind in ("obs", "ctl"):
        new = next(b for b in shared.blocks if b.kind == kind).fn("step")
        old = next(b for b in alone.blocks if b.kind == kind).fn("step")
        assert new.reads[-2:] == (COS, SIN)
        assert _trig_of_inputs(new.casadi) == 0 < _trig_of_inputs(old.casadi)
        for _ in range(20):  # q_hat over several turns: every quadrant of the argument reduction
            data = {b: rng.standard_normal(new.casadi.size_in(i)) for i, b in enumerate(new.reads)}
            data[Q_HAT] = rng.uniform(-20.0, 20.0, n)
            trig = shared.shared.casadi(data[Q_HAT])
            data[COS], data[SIN] = (np.array(t).ravel() for t in trig)
            a = old.casadi(*[data[b] for b in old.reads])
            b = new.casadi(*[data[b] for b in new.reads])
            for x, y in zip(a if isinstance(a, (list, tuple)) else [a], b if isinstance(b, (list, tuple)) else [b]):
                assert np.array_equal(np.array(x), np.array(y)), kind  # bit for bit, not approximately


def test_a_single_user_keeps_its_own_sin_cos() -> None:
    """kalman + momentum without a controller: the observer alone takes sin/cos of q_hat, nothing
    is shared and its function is as built."""
    pipe = build_pipeline(load_robot("planar2"), RtOptions(controller="none"))
    assert pipe.shared is None
    assert _trig_of_inputs(next(b for b in pipe.blocks if b.kind == "obs").fn("step").casadi) > 0
