"""Straight-line C for a CasADi SX function, printed from CasADi's own algorithm (instruction list).

Why not CasADi's CodeGenerator: its output carries a runtime API (sparsity, work, incref, ...) per
function as exported symbols, and prints every constant as a double literal and math calls as
``sin``/``sqrt`` even for a float ``casadi_real``, which the float build must not contain. Walking the
instruction list of the very same SX function gives the same arithmetic, with typed literals
(``2.5f``), the float math functions, work variables as C locals and an exact operation count; in
CasADi's order, or (the real-time step's functions) in :func:`schedule`'s, which keeps fewer values
alive: the same operations on the same operands, so the same bits.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter
from collections.abc import Sequence
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


# math the generated code calls through manipgen_linalg.h's MG_SIN, MG_SINF, ...: sin and cos in double
# are the header's own in every build; the others the C library's, or their portable versions when
# MANIPGEN_PORTABLE_MATH is defined (the same bits on host and target)
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


# operations that read one work variable (instruction_input's further entries are not operands)
_ONE_OPERAND = frozenset({cs.OP_ASSIGN, cs.OP_NOT, cs.OP_NEG, cs.OP_SQ, cs.OP_TWICE, cs.OP_INV, cs.OP_SIGN, *_UNARY})
_LEAF = frozenset({cs.OP_INPUT, cs.OP_CONST})
# operations printed as a C library call (a call clobbers every caller-saved floating-point register);
# sin and cos stay here in double too, where they are inline: computed first, as the calls, the iiwa's
# host step measured 2,487 instructions, 2,527 in the order of their readers (bench/bench_rt.py --quick)
_CALLS = frozenset(
    {op for op, name in _UNARY.items() if name not in ("fabs", "sqrt")}  # both inline instructions
    | {op for op, name in _FUNC_BINARY.items() if name not in INLINE}
)


def _operands(f: cs.Function) -> list[list[int]]:
    """Per instruction, the instructions whose results it reads (CasADi reuses work variables, so a
    variable's reader reads the last instruction that wrote it before the reader)."""
    last: dict[int, int] = {}
    deps: list[list[int]] = []
    for k in range(f.n_instructions()):
        op, ins = f.instruction_id(k), f.instruction_input(k)
        if op in _LEAF:
            reads: list[int] = []
        elif op == cs.OP_OUTPUT or op in _ONE_OPERAND:
            reads = [int(ins[0])]
        else:
            reads = [int(ins[0]), int(ins[1])]
        deps.append([last[w] for w in reads])
        if op != cs.OP_OUTPUT:
            last[int(f.instruction_output(k)[0])] = k
    return deps


# Functions with more instructions keep CasADi's order (schedule returns it, body prints CasADi's
# own work variables): cppcheck's value flow, which the static-analysis tests and the MISRA check run
# on every pipeline, took over 200 s on the iiwa adaptive observer's 3,222-instruction predict in
# schedule's order against 35 s for the whole file in CasADi's (2026-11-29, cppcheck 2.10). The step's
# small functions, where the order pays (the momentum observer, the controller: at most 1,124 on the
# bundled robots), lie far below; a model-adaptive predict (3,222-5,231 on the iiwa) is dominated by
# its covariance update, which the order does not touch.
SCHEDULE_LIMIT = 2500


def scheduling(f: cs.Function) -> bool:
    """Whether f is printed in schedule's order (else CasADi's): at most SCHEDULE_LIMIT instructions."""
    return f.n_instructions() <= SCHEDULE_LIMIT


@functools.lru_cache(maxsize=32)  # the pipeline's call plumbing asks again for the order body printed
def schedule(f: cs.Function) -> tuple[int, ...]:
    """The order in which to print f's instructions: the same operations on the same operands (so
    the same results, bit for bit), ordered to keep few values alive at once. CasADi's own order
    computes each output vector in turn, depth first: the momentum observer finishes all of p before
    it starts the integral, so the link velocities of the outward pass stay alive (spilled to the
    stack) across p's whole inward pass. Here the next output element is the one with the fewest
    operations still to compute (its cone, minus what is done), printed depth first, its loads and
    constants right before their first reader: the iiwa's observer and residual finish link by link
    as the inward pass reaches them. Ties keep CasADi's output order. Loads may move past stores:
    the caller passes outputs that alias no input (pipeline.RtEmitter._call checks in-place calls
    against this order). Over SCHEDULE_LIMIT instructions: CasADi's order."""
    if not scheduling(f):
        return tuple(range(f.n_instructions()))
    deps = _operands(f)
    n = len(deps)
    is_leaf = [f.instruction_id(k) in _LEAF for k in range(n)]
    outputs = [k for k in range(n) if f.instruction_id(k) == cs.OP_OUTPUT]
    readers: list[list[int]] = [[] for _ in range(n)]  # instruction -> the outputs whose cone holds it
    for o in outputs:
        seen, todo = {o}, [o]
        while todo:
            k = todo.pop()
            readers[k].append(o)
            for d in deps[k]:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
    left = {o: 0 for o in outputs}
    for k in range(n):
        for o in readers[k]:
            left[o] += 1
    done = [False] * n
    order: list[int] = []

    heap = [(left[o], o) for o in outputs]  # (operations left, output); stale entries skipped
    heapq.heapify(heap)

    def emit(k: int) -> None:
        done[k] = True
        order.append(k)
        for o in readers[k]:
            left[o] -= 1
            heapq.heappush(heap, (left[o], o))

    def cheapest() -> int:
        while True:
            count, o = heapq.heappop(heap)
            if not done[o] and count == left[o]:
                return o

    calls = [k for k in range(n) if f.instruction_id(k) in _CALLS]
    for t in range(len(calls) + len(outputs)):
        target = calls[t] if t < len(calls) else cheapest()
        stack: list[tuple[int, bool]] = [(target, False)]
        while stack:  # depth first, without recursion (cones can be deep)
            k, expanded = stack.pop()
            if done[k]:
                continue
            if expanded:
                for d in deps[k]:
                    if is_leaf[d] and not done[d]:
                        emit(d)
                emit(k)
                continue
            stack.append((k, True))
            stack.extend((d, False) for d in reversed(deps[k]) if not done[d] and not is_leaf[d])
    order += [k for k in range(n) if not done[k]]  # nothing reaches an output: CasADi's order
    return tuple(order)


def reads_first(f: cs.Function, order: Sequence[int], i_in: int, i_out: int) -> bool:
    """True if, printed in ``order``, every element of input ``i_in`` is read before the same element
    of output ``i_out`` is written: then both may be one array (the call writes its result in place)."""
    pos = {k: n for n, k in enumerate(order)}
    last_read: dict[int, int] = {}
    written: dict[int, int] = {}
    for k in range(f.n_instructions()):
        op = f.instruction_id(k)
        if op == cs.OP_INPUT and int(f.instruction_input(k)[0]) == i_in:
            j = int(f.instruction_input(k)[1])
            last_read[j] = max(last_read.get(j, -1), pos[k])
        elif op == cs.OP_OUTPUT and int(f.instruction_output(k)[0]) == i_out:
            written[int(f.instruction_output(k)[1])] = pos[k]
    return all(last_read.get(j, -1) < at for j, at in written.items())


def _rename(f: cs.Function, order: Sequence[int], deps: list[list[int]]) -> tuple[dict[int, int], int]:
    """Work variable per value-producing instruction in ``order``: a variable is free again after its
    value's last reader (as CasADi's live variables). Returns (instruction -> variable, count)."""
    last_use: dict[int, int] = {}
    for pos, k in enumerate(order):
        for d in deps[k]:
            last_use[d] = pos
    var: dict[int, int] = {}
    free: list[int] = []
    count = 0
    for pos, k in enumerate(order):
        for d in dict.fromkeys(deps[k]):
            if last_use.get(d) == pos:
                free.append(var[d])
        if f.instruction_id(k) != cs.OP_OUTPUT:
            if free:
                var[k] = free.pop()
            else:
                var[k] = count
                count += 1
            if k not in last_use:  # never read: free at once
                free.append(var[k])
    return var, count


def body(
    f: cs.Function,
    in_names: list[str],
    out_names: list[str],
    precision: Precision,
    indent: str = "  ",
    portable: bool = True,
    scheduled: bool = False,
    optional: frozenset[str] = frozenset(),
) -> Body:
    """Statements computing f's (dense) outputs from pointer arguments named in/out_names;
    ``portable``: sin, cos, exp, tanh through manipgen_linalg.h's MG_SIN, ... (else the C library's);
    ``scheduled``: in :func:`schedule`'s order where :func:`scheduling` (else CasADi's), the same
    operations; ``optional``: the out_names that may be NULL (their stores are skipped then; every
    value is computed as without them, so the other outputs' bits do not depend on it)."""
    if scheduled and scheduling(f):
        deps = _operands(f)
        order = schedule(f)
        var, n_work = _rename(f, order, deps)

        def operands(k: int) -> list[int]:
            return [var[d] for d in deps[k]] + [0, 0]

        def result(k: int) -> int:
            return var[k]
    else:
        order, n_work = tuple(range(f.n_instructions())), int(f.sz_w())

        def operands(k: int) -> list[int]:
            return [int(i) for i in f.instruction_input(k)]

        def result(k: int) -> int:
            return int(f.instruction_output(k)[0])

    lines: list[str] = []
    counts: Counter[str] = Counter()
    one, zero = literal(1.0, precision), literal(0.0, precision)
    for k in order:
        op = f.instruction_id(k)
        ins = f.instruction_input(k) if op in _LEAF else operands(k)
        outs = f.instruction_output(k) if op == cs.OP_OUTPUT else [result(k)]
        if op == cs.OP_INPUT:
            lines.append(f"w{outs[0]} = {in_names[ins[0]]}[{ins[1]}];")
        elif op == cs.OP_OUTPUT and out_names[outs[0]] in optional:
            lines.append(f"if ({out_names[outs[0]]} != NULL) {{ {out_names[outs[0]]}[{outs[1]}] = w{ins[0]}; }}")
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
