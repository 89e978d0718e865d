"""The controllers' oracle: one step function, no plumbing of their own."""

from __future__ import annotations

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from tests.oracles.base import Data, evaluate, register


@register("computed_torque", "pid", "state_feedback")
def step(d: Data, block: Block, ctx: Ctx) -> None:
    evaluate(block.fn("step"), d)
