"""cprint.schedule: the pipeline's functions printed in an order that keeps few values alive gives
the same bits as CasADi's order (the same operations on the same operands), and a call writes an
output in place only when every element of the input it shares is read before it is written."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import casadi as cs
import numpy as np

from codegen.blocks.options import RtOptions, parse_estimator
from codegen.blocks.pipeline import build_pipeline
from codegen.emit.cprint import SCHEDULE_LIMIT, _operands, body, reads_first, schedule
from codegen.model.description import load_robot
from tests.tooling import require_tool


def _c_function(name: str, f: cs.Function, scheduled: bool) -> str:
    ins = [f"in{i}" for i in range(f.n_in())]
    outs = [f"out{i}" for i in range(f.n_out())]
    params = ", ".join([f"const double *{a}" for a in ins] + [f"double *{a}" for a in outs])
    lines = body(f, ins, outs, "double", indent="    ", portable=False, scheduled=scheduled).lines
    return f"void {name}({params})\n{{\n" + "\n".join(lines) + "\n}\n"


def _observer() -> cs.Function:
    """The iiwa's momentum observer step: sin/cos, the two recursions, friction signs, 7 outputs each."""
    pipe = build_pipeline(load_robot("kuka_iiwa14"), RtOptions(parse_estimator("kalman"), "momentum", "none"))
    obs = pipe.block("obs")
    assert obs is not None
    fn = obs.fn("step").function
    assert fn is not None
    return fn


def test_scheduled_observer_has_casadi_orders_bits(tmp_path: Path) -> None:
    f = _observer()
    order = schedule(f)
    deps = _operands(f)
    assert sorted(order) == list(range(f.n_instructions()))  # every instruction once
    at = {k: n for n, k in enumerate(order)}
    assert all(at[d] < at[k] for k in order for d in deps[k])  # each after its operands
    assert list(order) != list(range(f.n_instructions()))  # it does reorder this function
    src = tmp_path / "two.c"
    src.write_text(
        "#include <math.h>\n#include <string.h>\ntypedef double real_t;\n"
        + _c_function("casadi_order", f, False)
        + _c_function("scheduled", f, True)
    )
    lib = tmp_path / "two.so"
    cc = require_tool("gcc")
    subprocess.run(
        [cc, "-std=c99", "-O2", "-ffp-contract=off", "-shared", "-fPIC", str(src), "-o", str(lib), "-lm"], check=True
    )
    dll = ctypes.CDLL(str(lib))
    rng = np.random.default_rng(3)
    n_out = [f.nnz_out(i) for i in range(f.n_out())]
    for _ in range(200):
        ins = [rng.uniform(-3.0, 3.0, f.nnz_in(i)) for i in range(f.n_in())]
        results = []
        for name in ("casadi_order", "scheduled"):
            outs = [np.full(m, np.nan) for m in n_out]
            args = [a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) for a in ins + outs]
            getattr(dll, name)(*args)
            results.append(np.concatenate(outs))
        # bit for bit: the same IEEE operations on the same operands, only in another order
        assert results[0].tobytes() == results[1].tobytes()
        assert np.all(np.isfinite(results[0]))


def test_in_place_only_where_each_element_is_read_before_it_is_written(tmp_path: Path) -> None:
    x = cs.SX.sym("x", 3)
    scaled = cs.Function("scaled", [x], [2.0 * x])  # element j reads x[j] only
    rotated = cs.Function("rotated", [x], [cs.vertcat(x[1], x[2], x[0])])  # y[0] = x[1] is printed first
    src = tmp_path / "alias.c"
    src.write_text(
        "typedef double real_t;\n" + _c_function("scaled", scaled, True) + _c_function("rotated", rotated, True)
    )
    lib = tmp_path / "alias.so"
    subprocess.run([require_tool("gcc"), "-std=c99", "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    dll = ctypes.CDLL(str(lib))
    for f, expected in ((scaled, [2.0, 4.0, 6.0]), (rotated, [2.0, 3.0, 1.0])):
        v = np.array([1.0, 2.0, 3.0])
        ptr = v.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        getattr(dll, f.name())(ptr, ptr)  # the input and the output one array
        # reads_first says whether that call is right: in place where it says so, wrong where it does not
        assert reads_first(f, schedule(f), 0, 0) == (v.tolist() == expected)
    assert reads_first(scaled, schedule(scaled), 0, 0)
    assert not reads_first(rotated, schedule(rotated), 0, 0)


def test_a_function_over_the_limit_is_printed_in_casadis_order() -> None:
    """Over SCHEDULE_LIMIT instructions (cppcheck's value flow on a large function in schedule's
    order: cprint's comment) the printed body and the order reads_first judges are CasADi's; the
    iiwa observer, under it, is reordered (test above)."""
    x = cs.SX.sym("x", 2)
    acc = x
    for _ in range(SCHEDULE_LIMIT // 2):  # three instructions a round (*, +, sin): over the limit
        acc = cs.vertcat(acc[1] * acc[0] + 1.0, cs.sin(acc[0]))
    big = cs.Function("big", [x], [acc, 2.0 * x])
    assert big.n_instructions() > SCHEDULE_LIMIT
    assert schedule(big) == tuple(range(big.n_instructions()))
    assert body(big, ["in0"], ["out0", "out1"], "double", scheduled=True).lines == (
        body(big, ["in0"], ["out0", "out1"], "double", scheduled=False).lines
    )
