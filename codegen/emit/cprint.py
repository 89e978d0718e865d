"""Straight-line C for a CasADi SX function, printed from CasADi's own algorithm (instruction list).

Why not CasADi's CodeGenerator: its output carries a runtime API (sparsity, work, incref, ...) per
function as exported symbols, and prints every constant as a double literal and math calls as
``sin``/``sqrt`` even for a float ``casadi_real``, which the float build must not contain. Walking the
instruction list of the very same SX function gives the same arithmetic in the same order, with
typed literals (``2.5f``), the float math functions, work variables as C locals and an exact
operation count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

import casadi as cs

Precision = Literal["double", "float"]

_BINARY = {cs.OP_ADD: "+", cs.OP_SUB: "-", cs.OP_MUL: "*", cs.OP_DIV: "/"}
_UNARY = {
    cs.OP_SIN: "sin",
    cs.OP_COS: "cos",
    cs.OP_SQRT: "sqrt",
    cs.OP_TANH: "tanh",
    cs.OP_FABS: "fabs",
    cs.OP_EXP: "exp",
    cs.OP_LOG: "log",
    cs.OP_TAN: "tan",
    cs.OP_ATAN: "atan",
    cs.OP_ASIN: "asin",
    cs.OP_ACOS: "acos",
}
_COMPARE = {cs.OP_LT: "<", cs.OP_LE: "<=", cs.OP_EQ: "==", cs.OP_NE: "!=", cs.OP_AND: "&&", cs.OP_OR: "||"}
_FUNC_BINARY = {cs.OP_ATAN2: "atan2", cs.OP_POW: "pow", cs.OP_CONSTPOW: "pow", cs.OP_FMIN: "fmin", cs.OP_FMAX: "fmax"}


def literal(value: float, precision: Precision) -> str:
    text = repr(float(value)) if precision == "double" else f"{float(value):.9g}"
    if "inf" in text or "nan" in text:
        raise ValueError(f"non-finite constant {value} in a generated expression")
    if not any(c in text for c in ".e"):
        text += ".0"
    return text + ("f" if precision == "float" else "")


# math the generated code calls through manipgen_linalg.h's MG_SIN, MG_SINF, ...: the C library's, or
# its portable versions when MANIPGEN_PORTABLE_MATH is defined (the same bits on host and target)
PORTABLE = frozenset({"sin", "cos", "exp", "tanh"})
# math manipgen_linalg.h always defines inline (MG_FMAX, ...): C99's results without a library call
INLINE = frozenset({"fmin", "fmax"})


def math_fn(name: str, precision: Precision, portable: bool = True) -> str:
    c_name = name + ("f" if precision == "float" else "")
    return f"MG_{c_name.upper()}" if portable and name in PORTABLE | INLINE else c_name


@dataclass(frozen=True)
class Body:
    lines: tuple[str, ...]
    ops: int


def body(
    f: cs.Function,
    in_names: list[str],
    out_names: list[str],
    precision: Precision,
    indent: str = "  ",
    portable: bool = True,
) -> Body:
    """Statements computing f's (dense) outputs from pointer arguments named in/out_names;
    ``portable``: sin, cos, exp, tanh through manipgen_linalg.h's MG_SIN, ... (else the C library's)."""
    n_work = int(f.sz_w())
    lines: list[str] = []
    counts: Counter[str] = Counter()
    one, zero = literal(1.0, precision), literal(0.0, precision)
    for k in range(f.n_instructions()):
        op = f.instruction_id(k)
        ins = f.instruction_input(k)
        outs = f.instruction_output(k)
        if op == cs.OP_INPUT:
            lines.append(f"w{outs[0]} = {in_names[ins[0]]}[{ins[1]}];")
        elif op == cs.OP_OUTPUT:
            lines.append(f"{out_names[outs[0]]}[{outs[1]}] = w{ins[0]};")
        elif op == cs.OP_CONST:
            lines.append(f"w{outs[0]} = {literal(f.instruction_constant(k), precision)};")
        elif op == cs.OP_ASSIGN:
            lines.append(f"w{outs[0]} = w{ins[0]};")
        elif op in _BINARY:
            counts[_BINARY[op]] += 1
            lines.append(f"w{outs[0]} = w{ins[0]} {_BINARY[op]} w{ins[1]};")
        elif op in _COMPARE:  # derivatives of fmin/fmax (saturations) select by comparisons
            counts[_COMPARE[op]] += 1
            lines.append(f"w{outs[0]} = (w{ins[0]} {_COMPARE[op]} w{ins[1]}) ? {one} : {zero};")
        elif op == cs.OP_NOT:  # if_else's other branch
            counts["!"] += 1
            lines.append(f"w{outs[0]} = (w{ins[0]} != {zero}) ? {zero} : {one};")
        elif op == cs.OP_IF_ELSE_ZERO:
            counts["?"] += 1
            lines.append(f"w{outs[0]} = (w{ins[0]} != {zero}) ? w{ins[1]} : {zero};")
        elif op == cs.OP_NEG:
            counts["-"] += 1
            lines.append(f"w{outs[0]} = -w{ins[0]};")
        elif op == cs.OP_SQ:
            counts["*"] += 1
            lines.append(f"w{outs[0]} = w{ins[0]} * w{ins[0]};")
        elif op == cs.OP_TWICE:
            counts["+"] += 1
            lines.append(f"w{outs[0]} = w{ins[0]} + w{ins[0]};")
        elif op == cs.OP_INV:
            counts["/"] += 1
            lines.append(f"w{outs[0]} = {one} / w{ins[0]};")
        elif op == cs.OP_SIGN:
            counts["sign"] += 1
            x = f"w{ins[0]}"
            lines.append(f"w{outs[0]} = ({x} > {zero}) ? {one} : (({x} < {zero}) ? -{one} : {zero});")
        elif op in _UNARY:
            counts[_UNARY[op]] += 1
            lines.append(f"w{outs[0]} = {math_fn(_UNARY[op], precision, portable)}(w{ins[0]});")
        elif op in _FUNC_BINARY:
            counts[_FUNC_BINARY[op]] += 1
            lines.append(f"w{outs[0]} = {math_fn(_FUNC_BINARY[op], precision, portable)}(w{ins[0]}, w{ins[1]});")
        else:
            raise NotImplementedError(f"CasADi operation {op} has no C printing rule")
    decl: list[str] = []
    names = [f"w{i}" for i in range(n_work)]
    for i in range(0, len(names), 12):
        decl.append(" ".join(f"real_t {name};" for name in names[i : i + 12]))  # one per declaration (MISRA 12.3)
    return Body(tuple(indent + line for line in decl + lines), sum(counts.values()))
