"""The pipeline's oracle as an object with the Realtime's interface (config, step, state): the same
CasADi expressions evaluated in Python, the plumbing written again in numpy (tests.oracles.*).
Slow; the C is compared with it sample by sample."""

from __future__ import annotations

from typing import Any

import numpy as np

from codegen.blocks.options import RtOptions
from codegen.blocks.pipeline import Pipeline, build_pipeline
from codegen.model.description import load_robot
from host_tools.bindings.rt import Realtime
from tests.oracles import pipeline
from tests.oracles.base import Data


class RtReference:
    def __init__(self, spec: Any, options: RtOptions, config: dict[str, np.ndarray] | None = None) -> None:
        self.pipe: Pipeline = build_pipeline(load_robot(spec), options)
        self.data: Data = pipeline.new_data(self.pipe, config)

    def set_config(self, values: dict[str, Any]) -> None:
        """``{"est.gain": ...}`` keys as in RtConfig; derived values recomputed (like _rt_configure)."""
        for k, v in values.items():
            target = self.data["cfg." + k]
            self.data["cfg." + k] = np.array(np.broadcast_to(np.asarray(v, dtype=target.dtype), target.shape))
        pipeline.configure(self.pipe, self.data)

    def step(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        d = self.data
        for k, f in ((f.name, f) for f in self.pipe.inputs):
            v = inputs.get(k)
            d["in." + k] = f.zeros() if v is None else np.array(v).astype(d["in." + k].dtype).reshape(f.shape)
        pipeline.step(self.pipe, d)
        return {f.name: np.array(d["out." + f.name]) for f in self.pipe.outputs}

    def load_state(self, rt: Realtime) -> None:
        """Copy the C instance's state (and config) into the reference: step-by-step comparisons."""
        s = rt.state
        for key in list(self.data):
            space, _, rest = key.partition(".")
            if space == "cfg":
                self.data[key] = np.array(rt.config[rest])
            elif space == "st":
                kind, name = rest.split(".")
                self.data[key] = np.array(s[kind][name])
        self.data["loc.first"] = np.array(int(s["first"]))
