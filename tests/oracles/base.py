"""What every oracle shares: the state of the world as a dict of bindings, a CasADi call on it, and
the table of oracles by block name."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from codegen.blocks.base import Block
from codegen.blocks.context import Ctx
from codegen.symbolic.functions import FunctionSpec

Data = dict[str, np.ndarray]  # binding (cfg.est.gain, st.obs.r, in.tau, out.qd_hat, loc.q) -> value
Oracle = Callable[[Data, Block, Ctx], None]  # one block's step, in numpy, on the data
ORACLES: dict[str, Oracle] = {}  # block name -> its oracle (a motor-side estimator uses its link twin's)


def register(*names: str) -> Callable[[Oracle], Oracle]:
    """Decorator: the oracle of the blocks called ``names``."""

    def add(oracle: Oracle) -> Oracle:
        for name in names:
            ORACLES[name] = oracle
        return oracle

    return add


def evaluate(f: FunctionSpec, data: Data) -> None:
    """A block's call, numerically: the same CasADi function, its arguments read from and its results
    written to the data's bindings."""
    args = [np.asarray(data[b], dtype=float).ravel() for b in f.reads]
    res = f.casadi(*args)
    res = res if isinstance(res, (list, tuple)) else [res]
    for b, v in zip(f.writes, res):
        data[b] = np.array(v, dtype=float).reshape(np.shape(data[b]))
