"""What a real-time block is: fields (config, state, outputs), CasADi step functions, its plumbing.

A block never writes C. It declares
* ``config`` fields: run-time gains and limits (the host may change them without recompiling),
* ``state`` fields: what it keeps between samples (also derived values and workspaces),
* ``output`` fields it adds to ``<robot>_rt_output_t`` (and extra ``input`` fields, rarely),
* ``functions``: CasADi functions whose arguments are *bindings* such as ``cfg.est.gain``
  (config), ``st.est.x`` (state), ``in.tau`` (input), ``out.qd_hat`` (output) or ``loc.q``
  (a local of the step function); the C template calls them (the tests' numpy oracles, in
  tests/oracles/, evaluate them too),
* ``template``: the jinja2 snippet (``templates/rt/<name>.c.j2``) with its plumbing in C: the
  block's control flow, written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import casadi as cs
import numpy as np

from codegen.symbolic.functions import Arg, FunctionSpec

CType = Literal["real", "int32", "uint32", "int64", "uint8"]
NUMPY: dict[CType, type] = {
    "real": np.float64,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint8": np.uint8,
}


@dataclass(frozen=True)
class Field:
    name: str
    ctype: CType
    shape: tuple[int, ...]
    doc: str
    default: tuple[float, ...] = ()  # config fields: flattened default value
    low: float | None = None  # config fields: valid range (checked on every input path)
    high: float | None = None
    low_open: bool = False  # low itself excluded
    choices: tuple[float, ...] = ()  # or one of these values
    # config fields: elements (per joint: joints, 0-based) the generated code does not read, which
    # must stay 0 (a coefficient of a term not generated there), and why: a text with {joints}
    # ("joint 3", "joints 1, 4") and {value} (the first non-zero one)
    unused: tuple[int, ...] = ()
    unused_why: str = ""

    def problem(self, values: np.ndarray) -> str | None:
        """Why these values are not valid for this field, or None."""
        v = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(v)):
            return "must be finite numbers"
        flat = v.ravel()
        bad = [i for i in self.unused if flat[0 if flat.size == 1 else i] != 0]
        if bad:
            joints = ("joint " if len(bad) == 1 else "joints ") + ", ".join(str(i + 1) for i in bad)
            return self.unused_why.format(joints=joints, value=flat[0 if flat.size == 1 else bad[0]])
        if self.ctype != "real" and not np.all(v == np.round(v)):
            return "must be integers"
        if self.choices and not np.all(np.isin(v, self.choices)):
            return "must be one of " + ", ".join(f"{c:g}" for c in self.choices)
        if self.low is not None and (np.any(v <= self.low) if self.low_open else np.any(v < self.low)):
            return f"must be {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None and np.any(v > self.high):
            return f"must be <= {self.high:g}"
        return None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape, dtype=NUMPY[self.ctype])

    def default_array(self) -> np.ndarray:
        if not self.default:
            return self.zeros()
        return np.array(self.default, dtype=NUMPY[self.ctype]).reshape(self.shape)


@dataclass
class Block:
    """One stage of the pipeline (see the module docstring)."""

    kind: str  # enc, est, obs, det, ctl, model
    name: str  # e.g. kalman
    doc: str  # header comment: what it implements, which paper and equation
    config: list[Field] = field(default_factory=list)
    state: list[Field] = field(default_factory=list)
    outputs: list[Field] = field(default_factory=list)
    inputs: list[Field] = field(default_factory=list)  # extra fields of <robot>_rt_input_t it reads
    functions: list[FunctionSpec] = field(default_factory=list)
    derive: FunctionSpec | None = None  # config -> derived state, at init and at every config change
    template: str = ""  # templates/rt/<template>.c.j2 ('' = the generic plumbing of its kind)
    template_text: str = ""  # or the plumbing itself (jinja), for blocks registered from outside the project
    options: dict[str, object] = field(default_factory=dict)  # generation-time choices
    scratch: list[Field] = field(default_factory=list)  # its plumbing's locals (loc.<name>, its template declares them)

    def fn(self, name: str) -> FunctionSpec:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)


def parameter_names(inputs: tuple[str, ...], outputs: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """C parameter names of a block function from its bindings: cfg.est.gain -> cfg_est_gain,
    out.q -> out_q; an output bound where an input is (st.est.x in and out) gets _next."""
    ins = [binding.replace(".", "_") for binding in inputs]
    outs = [binding.replace(".", "_") + ("_next" if binding in inputs else "") for binding in outputs]
    if len(set(ins + outs)) != len(ins) + len(outs):
        raise ValueError(f"bindings {inputs} -> {outputs} name a parameter twice")
    return ins, outs


def bound(
    name: str,
    f: cs.Function,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    doc: str,
    optional: tuple[str, ...] = (),
) -> FunctionSpec:
    """The C function spec of ``f`` whose arguments are read from ``inputs`` and written to
    ``outputs`` (bindings; those in ``optional`` may be NULL: Arg.optional); its parameters are named
    for them (parameter_names)."""
    unknown = set(optional) - set(outputs)
    if unknown:
        raise ValueError(f"{name}: optional bindings {sorted(unknown)} are not outputs")
    ins, outs = parameter_names(inputs, outputs)
    return FunctionSpec(
        name,
        doc,
        tuple(Arg(a, int(f.numel_in(i)), "", b) for i, (a, b) in enumerate(zip(ins, inputs))),
        tuple(Arg(a, int(f.numel_out(i)), "", b, b in optional) for i, (a, b) in enumerate(zip(outs, outputs))),
        f,
    )


def sx_function(
    name: str,
    inputs: list[tuple[str, cs.SX]],
    outputs: list[tuple[str, cs.SX]],
    doc: str,
    optional: tuple[str, ...] = (),
) -> FunctionSpec:
    """A block function from (binding, symbol) pairs; outputs are densified and CSE'd together: a
    subexpression that several outputs share (the momentum observer's p in st.obs.p and in the
    residual written to both st.obs.r and out.r) is computed once. CSE merges structurally equal
    nodes only (no reassociation): every output has the same arithmetic, and bits, as CSE'd alone.
    ``optional``: output bindings the caller may leave out (a NULL pointer: not stored)."""
    together = cs.cse([cs.densify(cs.vec(e)) for _, e in outputs])
    f = cs.Function(name, [s for _, s in inputs], together)
    return bound(name, f, tuple(b for b, _ in inputs), tuple(b for b, _ in outputs), doc, optional)


def per_joint(values: float | list[float] | tuple[float, ...], n: int) -> tuple[float, ...]:
    if isinstance(values, (int, float)):
        return (float(values),) * n
    vals = tuple(float(v) for v in values)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise ValueError(f"expected 1 or {n} values, got {len(vals)}")
    return vals
