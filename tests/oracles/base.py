"""What every oracle shares: the state of the world as a dict of bindings, a CasADi call on it, and
the table of oracles by block name."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import casadi as cs
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
    numeric = _numeric(f)
    for b, v in zip(numeric.writes, numeric([data[b] for b in numeric.reads])):
        data[b] = v.reshape(np.shape(data[b]))


class _Numeric:
    """A CasADi function evaluated on numpy buffers (``Function.buffer``): the same numeric evaluation
    as ``f(*args)``, bit for bit, without CasADi's per-argument numpy -> DM -> numpy conversions (about
    0.3 ms a call, nine tenths of the oracle's time). The function reads its inputs from slices of one
    array and writes its outputs' nonzeros into slices of another, both bound once. Inputs are dense
    vectors (SX symbols), read in their column-major order, which is a vector's order; an output
    comes back as the dense row-major array ``np.array(DM)`` gives (its nonzeros scattered where its
    sparsity puts them)."""

    def __init__(self, f: FunctionSpec) -> None:
        fn = f.casadi
        self.name, self.reads, self.writes = fn.name(), f.reads, f.writes
        self.buffer, self.run = fn.buffer()
        self.sizes = [int(fn.nnz_in(i)) for i in range(fn.n_in())]
        self.sparsity = [fn.sparsity_out(i) for i in range(fn.n_out())]
        self.dense = [sp.is_dense() and sp.is_column() for sp in self.sparsity]
        self.x, self.y = np.zeros(sum(self.sizes)), np.zeros(sum(sp.nnz() for sp in self.sparsity))
        self.ins, self.outs = _slices(self.x, self.sizes), _slices(self.y, [sp.nnz() for sp in self.sparsity])
        for i, a in enumerate(self.ins):
            self.buffer.set_arg(i, a.data)  # type: ignore[call-arg]  # the buffer gives its size
        for i, nz in enumerate(self.outs):
            self.buffer.set_res(i, nz.data)  # type: ignore[call-arg]

    def __call__(self, values: list[np.ndarray]) -> list[np.ndarray]:
        flat = [np.ravel(v) for v in values]
        if [v.size for v in flat] != self.sizes:
            raise ValueError(f"{self.name}: inputs {self.reads} have {[v.size for v in flat]} values, not {self.sizes}")
        if flat:
            np.concatenate(flat, out=self.x, casting="unsafe")  # bools, counts: as np.asarray(dtype=float)
        self.run()
        return [nz.copy() if dense else _dense(sp, nz) for sp, dense, nz in zip(self.sparsity, self.dense, self.outs)]


def _slices(whole: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Consecutive views of ``whole`` of ``sizes`` elements (contiguous, so a buffer can be bound)."""
    ends = np.cumsum([0, *sizes])
    return [whole[a:b] for a, b in zip(ends[:-1], ends[1:])]


def _dense(sp: cs.Sparsity, nonzeros: np.ndarray) -> np.ndarray:
    full = np.zeros(sp.numel())
    full[sp.find()] = nonzeros  # column-major positions
    return full.reshape(sp.size2(), sp.size1()).T  # as np.array(DM): rows x columns


_NUMERIC: dict[int, _Numeric] = {}  # by the spec's id, while the spec lives (a pipeline is built per reference)


def _numeric(f: FunctionSpec) -> _Numeric:
    key = id(f)
    if key not in _NUMERIC:
        _NUMERIC[key] = _Numeric(f)
        weakref.finalize(f, _NUMERIC.pop, key, None)
    return _NUMERIC[key]
