"""A C function's parts for the templates, from its one description
(:class:`codegen.symbolic.functions.FunctionSpec`): the body printed by cprint, the operation
count, the inputs it does not read. Every emitter (dynamics, pipeline, loopback, output-error
simulator, excitation) renders its functions through :func:`view` and templates/macros.j2's
``body`` macro."""

from __future__ import annotations

import textwrap
from typing import Any

import casadi as cs

from codegen.emit.cprint import Precision, body
from codegen.symbolic.functions import FunctionSpec


def unused_inputs(function: cs.Function) -> set[int]:
    """The indices of ``function``'s inputs that no instruction reads (C: ``(void)name;``)."""
    used = {
        function.instruction_input(k)[0]
        for k in range(function.n_instructions())
        if function.instruction_id(k) == cs.OP_INPUT
    }
    return set(range(function.n_in())) - used


def view(spec: FunctionSpec, precision: Precision, portable: bool = True, scheduled: bool = False) -> dict[str, Any]:
    """The template's view of ``spec``: name, doc (and doc_lines wrapped for a header comment),
    inputs/outputs (the Args), lines and ops of the body (none when the template writes it),
    unused input names, return type and meaning, and ``params``: the pointer parameter list of a
    static function (``const real_t *in..., real_t *out...``). ``portable``, ``scheduled``: see
    cprint.body."""
    lines: tuple[str, ...] = ()
    ops = "see the functions it calls"
    unused: list[str] = []
    if spec.function is not None:
        b = body(
            spec.function,
            [a.name for a in spec.inputs],
            [a.name for a in spec.outputs],
            precision,
            indent="    ",
            portable=portable,
            scheduled=scheduled,
            optional=frozenset(a.name for a in spec.outputs if a.optional),
        )
        lines, ops = b.lines, str(b.ops)
        skipped = unused_inputs(spec.function)
        unused = [a.name for i, a in enumerate(spec.inputs) if i in skipped]
    return {
        "name": spec.name,
        "doc": spec.doc,
        "doc_lines": textwrap.wrap(spec.doc, 96),
        "inputs": spec.inputs,
        "outputs": spec.outputs,
        "lines": lines,
        "ops": ops,
        "unused": unused,
        "ret": spec.ret,
        "returns": spec.returns,
        "params": ", ".join(
            [f"const real_t *{a.name}" for a in spec.inputs] + [f"real_t *{a.name}" for a in spec.outputs]
        ),
    }
