"""Optional outputs (Arg.optional, issue #47): a generated function stores such an output only when its
pointer is not NULL, and computes the others the same either way; the pipeline's call passes it only
under the template's condition, and refuses a call whose conditions do not match the optional outputs
(the sliced model-adaptive observer writes G into its window's snapshot this way, SLICED_DOC)."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import casadi as cs
import numpy as np
import pytest

from codegen.blocks.base import sx_function
from codegen.blocks.options import RtOptions, parse_estimator
from codegen.blocks.pipeline import build_pipeline
from codegen.emit.cfunction import view
from codegen.emit.pipeline import RtEmitter
from codegen.model.description import load_robot
from tests.tooling import require_tool


def test_a_null_optional_output_is_not_stored_and_the_others_are_unchanged(tmp_path: Path) -> None:
    x = cs.SX.sym("x", 3)
    spec = sx_function("f", [("in.x", x)], [("out.y", 2 * x), ("st.b.g", x * x + 1)], "test", optional=("st.b.g",))
    assert [a.optional for a in spec.outputs] == [False, True]
    v = view(spec, "double", portable=False)
    src = tmp_path / "f.c"
    src.write_text(
        f"#include <stddef.h>\ntypedef double real_t;\nvoid f({v['params']})\n{{\n" + "\n".join(v["lines"]) + "\n}\n"
    )
    lib = tmp_path / "f.so"
    cc = require_tool("gcc")
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    fn = ctypes.CDLL(str(lib)).f
    dbl = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [dbl, dbl, dbl]
    xs = np.array([1.5, -2.0, 3.0])
    y, g = np.zeros(3), np.full(3, 7.0)
    fn(xs.ctypes.data_as(dbl), y.ctypes.data_as(dbl), None)
    assert y.tolist() == (2 * xs).tolist() and g.tolist() == [7.0] * 3  # NULL: nothing stored there
    fn(xs.ctypes.data_as(dbl), y.ctypes.data_as(dbl), g.ctypes.data_as(dbl))
    assert y.tolist() == (2 * xs).tolist() and g.tolist() == (xs * xs + 1).tolist()


def test_the_call_passes_an_optional_output_only_under_its_condition() -> None:
    pipe = build_pipeline(
        load_robot("planar2"), RtOptions(parse_estimator("kalman"), "adaptive_momentum", "computed_torque")
    )
    emitter = RtEmitter(pipe, "planar2", "double")
    call = emitter.call("obs", "predict", {"st.obs.gs": "rt->obs.slice == 0"})
    assert "((rt->obs.slice == 0) ? rt->obs.gs : NULL)" in call
    with pytest.raises(ValueError, match="optional outputs"):
        emitter.call("obs", "predict")  # the snapshot's condition left out
    with pytest.raises(ValueError, match="optional outputs"):
        emitter.call("obs", "prior", {"st.obs.p0": "1"})  # not an optional output
