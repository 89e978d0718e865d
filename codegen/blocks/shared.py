"""One evaluation point for the step: the sines and cosines of the estimate q_hat, computed once.

The observer, the friction terms, the detection and the controller each evaluate the model at the
estimator's q_hat in their own CasADi function (each CSE'd on its own). Where two or more of them
need sin(q_hat_i) or cos(q_hat_i) -- the calls to the C library's (or the portable) sin and cos are
the costliest nodes of the kinematics -- the pipeline computes them once after the estimator into
the step's locals ``loc.cos_q`` and ``loc.sin_q`` (``share_trig``), and those functions read them
instead: each function is rebuilt from its own instruction list with its sin/cos of an element of
``out.q_hat`` replaced by that element of the locals. Every other instruction stays as it was, so
the results are bit-identical: the same library call on the same argument, made once.
"""

from __future__ import annotations

import casadi as cs

from codegen.symbolic.functions import FunctionSpec

from .base import Block, bound

Q_HAT = "out.q_hat"
COS, SIN = "loc.cos_q", "loc.sin_q"
TRIG = {cs.OP_COS: 0, cs.OP_SIN: 1}
# the blocks whose functions the step calls after the estimator, with q_hat final
AFTER_ESTIMATE = ("fric", "obs", "det", "ctl")


def _q_hat_trig(spec: FunctionSpec) -> set[tuple[int, int]]:
    """(0 cos / 1 sin, joint) of every sin or cos of an element of q_hat in ``spec``."""
    f, k_in = spec.function, spec.reads.index(Q_HAT)
    assert f is not None
    source: dict[int, int] = {}  # work variable -> the element of q_hat it holds
    found: set[tuple[int, int]] = set()
    for k in range(f.n_instructions()):
        op, ins, outs = f.instruction_id(k), f.instruction_input(k), f.instruction_output(k)
        if op in TRIG and ins[0] in source:
            found.add((TRIG[op], source[ins[0]]))
        if op == cs.OP_INPUT and ins[0] == k_in:
            source[outs[0]] = ins[1]
        elif op != cs.OP_OUTPUT:
            source.pop(outs[0], None)
    return found


def _rebuilt(spec: FunctionSpec, n: int) -> FunctionSpec:
    """``spec`` reading cos/sin of q_hat from ``loc.cos_q``/``loc.sin_q``: its instruction list
    replayed with those two operations replaced by the locals' elements."""
    f = spec.function
    assert f is not None
    args = [cs.SX.sym(f.name_in(i), f.sparsity_in(i)) for i in range(f.n_in())]
    trig = (cs.SX.sym("cos_q", n), cs.SX.sym("sin_q", n))
    res = [cs.SX.zeros(f.sparsity_out(i)) for i in range(f.n_out())]
    k_in = spec.reads.index(Q_HAT)
    w: dict[int, cs.SX] = {}
    source: dict[int, int] = {}
    for k in range(f.n_instructions()):
        op, ins, outs = f.instruction_id(k), f.instruction_input(k), f.instruction_output(k)
        if op == cs.OP_INPUT:
            w[outs[0]] = args[ins[0]].nz[ins[1]]
        elif op == cs.OP_OUTPUT:
            res[outs[0]].nz[outs[1]] = w[ins[0]]
            continue
        elif op == cs.OP_CONST:
            w[outs[0]] = cs.SX(f.instruction_constant(k))
        elif op in TRIG and ins[0] in source:
            w[outs[0]] = trig[TRIG[op]][source[ins[0]]]
        elif len(ins) == 2:  # the binary operations (and comparisons, if_else_zero)
            w[outs[0]] = cs.SX.binary(op, w[ins[0]], w[ins[1]])
        else:
            w[outs[0]] = cs.SX.unary(op, w[ins[0]])
        if op == cs.OP_INPUT and ins[0] == k_in:
            source[outs[0]] = ins[1]
        else:
            source.pop(outs[0], None)
    g = cs.Function(f.name(), [*args, *trig], res)
    optional = tuple(x.binding for x in spec.outputs if x.optional)
    return bound(spec.name, g, (*spec.reads, COS, SIN), spec.writes, spec.doc, optional)


def share_trig(blocks: list[Block], n: int) -> FunctionSpec | None:
    """Rewrite the blocks' functions (in place) that take sin/cos of q_hat to read them from the
    locals, where more than one function takes them; return the function computing the locals
    (the step calls it after the estimator), or None (nothing shared: the functions as built)."""
    users = [
        (b, i, _q_hat_trig(fn))
        for b in blocks
        if b.kind in AFTER_ESTIMATE
        for i, fn in enumerate(b.functions)
        if fn.function is not None and Q_HAT in fn.reads
    ]
    users = [(b, i, used) for b, i, used in users if used]
    if len(users) < 2:
        return None
    needed = set().union(*(used for _, _, used in users))
    for b, i, _ in users:
        b.functions[i] = _rebuilt(b.functions[i], n)
    q = cs.SX.sym("q", n)
    zero = cs.SX(0)
    cos_q = cs.vertcat(*[cs.cos(q[j]) if (0, j) in needed else zero for j in range(n)])
    sin_q = cs.vertcat(*[cs.sin(q[j]) if (1, j) in needed else zero for j in range(n)])
    f = cs.Function("trig", [q], [cs.densify(cos_q), cs.densify(sin_q)])
    return bound("trig", f, (Q_HAT,), (COS, SIN), "cos and sin of q_hat, shared by the blocks' functions")
