"""The C of a designed excitation (codegen.symbolic.excitation's expressions, the coefficients as constant
tables): ``<robot>_excitation.{h,c}``, evaluated on the target from an integer sample index."""

from __future__ import annotations

import numpy as np

from codegen import __version__
from codegen.emit.cfunction import view
from codegen.emit.cprint import Precision, literal
from codegen.emit.templates import template_environment
from codegen.symbolic.excitation import fourier_function, samples_per_period
from codegen.symbolic.functions import FunctionSpec


def excitation_files(
    c_name: str,
    robot_name: str,
    a: np.ndarray,
    b: np.ndarray,
    q0: np.ndarray,
    base_frequency: float,
    sample_period: float,
    precision: Precision = "double",
) -> dict[str, str]:
    """{file name: text}. The period must be a whole number of samples."""
    n, harmonics = a.shape
    k = samples_per_period(base_frequency, sample_period)
    fn = fourier_function(n, harmonics, base_frequency)
    ctx = {
        "p": c_name,
        "P": c_name.upper(),
        "version": __version__,
        "robot_name": robot_name,
        "dof": n,
        "harmonics": harmonics,
        "base_frequency": f"{base_frequency:g}",
        "period": f"{1 / base_frequency:g}",
        "K": k,
        "ts": literal(sample_period, precision),
        "real": precision,
        "index_type": "uint32_t",
        "a": [literal(v, precision) for v in np.asarray(a, float).ravel("F")],
        "b": [literal(v, precision) for v in np.asarray(b, float).ravel("F")],
        "q0": [literal(v, precision) for v in np.asarray(q0, float)],
        "body": view(
            FunctionSpec.of(fn, "q, qd, qdd of the Fourier series (codegen.symbolic.excitation)"),
            precision,
            portable=False,
        ),
    }
    env = template_environment()
    return {
        f"{c_name}_excitation.h": env.get_template("excitation.h.j2").render(ctx),
        f"{c_name}_excitation.c": env.get_template("excitation.c.j2").render(ctx),
    }
