"""The motor-side velocity estimator of an elastic arm (Kirchhoff 2011 §5.3: the tau_el observer needs the
motor velocity as well as the link's): the link estimator's own method, a second instance reading
the second (motor) encoder channel ``out.theta`` and its validity, writing ``out.theta_hat``,
``out.thetad_hat``, ``out.thetadd_hat``. Its config and state are its own (``cfg.mest``,
``st.mest``); a Kalman filter's gain is designed for the motor encoders' resolution.
Model-based estimators (nlhg, slimod) have no motor-side form: their model is the rigid link's.
"""

from __future__ import annotations

from codegen.symbolic.functions import FunctionSpec

from . import registry
from .base import Block, Field, bound

RENAMED = {
    "out.q": "out.theta",
    "loc.valid": "loc.motor_valid",
    "out.q_hat": "out.theta_hat",
    "out.qd_hat": "out.thetad_hat",
    "out.qdd_hat": "out.thetadd_hat",
}


def _rebind(binding: str) -> str:
    if binding in RENAMED:
        return RENAMED[binding]
    space, _, rest = binding.partition(".")
    kind, _, name = rest.partition(".")
    if space in ("cfg", "st") and kind == "est":
        return f"{space}.mest.{name}"
    raise ValueError(f"the motor-side estimator cannot read {binding}")


def _fn(f: FunctionSpec) -> FunctionSpec:
    return bound(
        f.name,
        f.casadi,
        tuple(_rebind(b) for b in f.reads),
        tuple(_rebind(b) for b in f.writes),
        f.doc + " (motor side)",
        tuple(_rebind(a.binding) for a in f.outputs if a.optional),
    )


def build(est: Block) -> Block:
    """The motor-side twin of the link estimator ``est`` (ValueError for a model-based one)."""
    if registry.estimators()[est.name].model_based:
        model_free = [n for n, e in registry.estimators().items() if not e.model_based]
        raise ValueError(
            f"the {est.name} estimator has no motor-side form (its model is the rigid link's); "
            f"an elastic arm needs one of {', '.join(model_free)}"
        )
    n = est.outputs[0].shape[0]
    return Block(
        kind="mest",
        name=est.name,
        doc=__doc__ or "",
        template="motor_estimator",
        config=list(est.config),
        state=list(est.state),
        outputs=[
            Field("theta_hat", "real", (n,), "estimated motor position, link side (rad or m)"),
            Field("thetad_hat", "real", (n,), "estimated motor velocity, link side"),
            Field("thetadd_hat", "real", (n,), "estimated motor acceleration where the estimator gives it, else 0"),
        ],
        functions=[_fn(f) for f in est.functions],
        derive=None if est.derive is None else _fn(est.derive),
        options=dict(est.options),
    )
