"""The detection's oracle: templates/rt/detect.c.j2 and runtime mg_detect in numpy (hysteresis,
debounce, latch, isolation window, reaction), around the block's level and reflex functions."""

from __future__ import annotations

import numpy as np

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from tests.oracles.base import Data, evaluate, register


@register("threshold")
def detect(d: Data, block: Block, ctx: Ctx) -> None:
    if d["in.reset"]:
        for key in ("st.det.collision", "st.det.link", "st.det.above", "st.det.count", "st.det.since"):
            d[key] = d[key] * 0
    evaluate(block.fn("level"), d)
    standstill = block.fn("standstill")  # one joint's, where its ks is not 0 (as the template calls it)
    for j in np.flatnonzero(d["cfg.det.ks"] != 0):
        args = [float(np.ravel(d[b])[j]) for b in standstill.reads]
        d["st.det.level"][j] = float(standstill.casadi(*args))
    r, lv = d["out.r"], d["st.det.level"]
    above, count = d["st.det.above"], d["st.det.count"]
    rel = float(d["cfg.det.release"])
    highest = 0
    fired = False
    for i in range(len(r)):
        limit = lv[i] * rel if above[i] else lv[i]
        above[i] = 1 if lv[i] > 0 and abs(r[i]) > limit else 0
        count[i] = (count[i] + 1 if count[i] < 0x40000000 else count[i]) if above[i] else 0
        if above[i]:
            highest = i + 1
        if count[i] >= max(int(d["cfg.det.debounce"][i]), 1):
            fired = True
    if fired and not d["st.det.collision"]:
        d["st.det.collision"] = np.array(1, dtype=np.uint8)
        d["st.det.link"] = np.array(highest, dtype=np.int32)
        d["st.det.q_col"] = d["out.q_hat"].copy()
        d["st.det.integ"] = d["st.det.integ"] * 0.0
        d["st.det.since"] = np.array(0, dtype=np.int32)
    elif d["st.det.collision"]:
        if d["st.det.since"] < 0x40000000:
            d["st.det.since"] = np.array(d["st.det.since"] + 1, dtype=np.int32)
        if highest > d["st.det.link"] and d["st.det.since"] <= d["cfg.det.window"]:
            d["st.det.link"] = np.array(highest, dtype=np.int32)
    d["out.collision"], d["out.link"] = d["st.det.collision"].copy(), d["st.det.link"].copy()
    d["out.above"] = above.copy()
    mode = int(d["cfg.det.reaction"])
    if d["st.det.collision"] and mode == 1:
        d["out.q_d"], d["out.qd_d"], d["out.qdd_d"] = d["st.det.q_col"].copy(), r * 0.0, r * 0.0
    elif d["st.det.collision"] and mode == 2:
        evaluate(block.fn("reflex"), d)
        d["out.qdd_d"] = r * 0.0
