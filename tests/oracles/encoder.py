"""The encoder read's oracle: runtime mg_unwrap per joint and channel, the lost-sample hold and fault
counters (templates/rt/encoder.c.j2), then the block's position functions."""

from __future__ import annotations

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from tests.oracles.base import Data, evaluate, register


def unwrap(raw: int, bits: int, signed: bool, started: bool, last: int, total: int) -> tuple[int, int]:
    """(new last, new total): runtime mg_unwrap in Python integers."""
    bits = bits if 2 <= bits <= 32 else 32
    mask = (1 << bits) - 1
    raw &= mask
    half = 1 << (bits - 1)
    if not started:
        value = raw - (1 << bits) if signed and raw >= half else raw
        return raw, value
    delta = (raw - last) & mask
    if delta >= half:
        delta -= 1 << bits
    return raw, total + delta


@register("encoder")
def read(d: Data, block: Block, ctx: Ctx) -> None:
    channels = (("", "in.counts", "in.valid"), ("motor_", "in.motor_counts", "in.motor_valid"))
    for prefix, counts, valid in channels[: 2 if "in.motor_counts" in d else 1]:
        n = len(d[counts])
        for i in range(n):
            present = prefix == "" or d["cfg.enc.motor_cpr"][i] >= 1.0
            if not present:
                continue
            if d[valid][i]:
                last, total = unwrap(
                    int(d[counts][i]),
                    int(d[f"cfg.enc.{prefix}bits"][i]),
                    bool(d[f"cfg.enc.{prefix}is_signed"][i]),
                    bool(d[f"st.enc.{prefix}started"][i]),
                    int(d[f"st.enc.{prefix}last"][i]),
                    int(d[f"st.enc.{prefix}total"][i]),
                )
                d[f"st.enc.{prefix}last"][i], d[f"st.enc.{prefix}total"][i] = last, total
                d[f"st.enc.{prefix}started"][i] = 1
            else:
                d[f"st.enc.{prefix}faults"][i] += 1
        d[f"loc.{prefix}total_r"] = d[f"st.enc.{prefix}total"].astype(float)
    evaluate(block.fn("position"), d)
    d["out.faults"] = d["st.enc.faults"].copy()
    d["loc.valid"] = (d["in.valid"] != 0).astype(float)
    if "in.motor_counts" in d:
        evaluate(block.fn("motor_position"), d)
        d["out.motor_faults"] = d["st.enc.motor_faults"].copy()
        d["loc.motor_valid"] = ((d["in.motor_valid"] != 0) & (d["cfg.enc.motor_cpr"] >= 1.0)).astype(float)
