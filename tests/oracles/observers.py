"""Oracles of the memoryless observers' plumbing and the friction terms before them: the momentum
observer (templates/rt/momentum.c.j2: p_0 from the first sample, where r starts at 0), the direct residual, the [fric]
block (its last position starts at the first sample's)."""

from __future__ import annotations

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from tests.oracles.base import Data, evaluate, register


@register("momentum")
def momentum(d: Data, block: Block, ctx: Ctx) -> None:
    evaluate(block.fn("step"), d)
    if d["loc.first"]:
        d["st.obs.p0"] = d["st.obs.p"].copy()
        for b in ("st.obs.integ", "st.obs.r", "out.r"):
            d[b] = d[b] * 0.0


@register("direct", "direct_measured")
def step_only(d: Data, block: Block, ctx: Ctx) -> None:
    evaluate(block.fn("step"), d)


@register("terms")
def friction_terms(d: Data, block: Block, ctx: Ctx) -> None:
    if d["loc.first"] and block.options["position"]:
        d["st.fric.q_last"] = d["out.q"].copy()
    evaluate(block.fn("step"), d)
