"""The robots of the Pinocchio cross-checks (the reference and the comparison rule are
host_tools.studies.pinocchio_reference, shared with `manipgen verify`).

A :class:`PeerCase` pairs one input of ``host_tools.load`` (a bundled YAML, or a URDF chain) with a
Pinocchio model built without ``codegen`` (``pinocchio_models``): ``pin_model_from_yaml`` for the
bundled YAMLs, ``pinocchio.buildModelFromUrdf`` (+ ``buildReducedModel`` for the Panda fingers) for
the URDFs.

"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import codegen  # noqa: F401  (first: importing it pins numpy's kernels, README "Reproducible figures")

# isort: split
import numpy as np
import pinocchio as pin
import pytest

from codegen.emit.cprint import Precision
from host_tools.studies.identities import States, random_states
from host_tools.studies.pinocchio_models import (
    PIN_TO_PROJECT,
    PROJECT_PARAM_NAMES,
    load_yaml,
    panda_model,
    panda_urdf_path,
    pin_model_from_yaml,
    ur_model,
    ur_urdf_path,
)
from host_tools.studies.pinocchio_reference import (
    DOUBLE_TOL,
    FLOAT_TOL,
    Comparison,
    Friction,
    PinReference,
    compare,
)
from tests.tooling import ROOT

ROBOTS_DIR = ROOT / "robots"

__all__ = ["DOUBLE_TOL", "FLOAT_TOL", "Comparison", "States", "compare", "random_states"]

JOINT_PARAM_KINDS = ("IA", "FV", "FC", "FO")
_NAME = re.compile(r"^(M|MX|MY|MZ|XX|XY|XZ|YY|YZ|ZZ|IA|FV|FC|FO)(\d+)$")

# Pinocchio's dynamic-parameter order from the project's (inverse of PIN_TO_PROJECT)
PROJECT_TO_PIN = np.argsort(PIN_TO_PROJECT)


# ----------------------------------------------------------------------------------------------
# Robots
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PeerCase:
    id: str
    spec: str  # first argument of host_tools.load
    build_pin: Callable[[], pin.Model]
    tip_frame: str  # Pinocchio frame of our tip
    base_frame: str | None = None  # Pinocchio frame of our base (None: the world)
    yaml_path: Path | None = None  # the bundled YAML (None for URDF cases)
    load_kwargs: dict = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    # --- description values the comparison needs -------------------------------------------
    def link_in_joint(self, model: pin.Model) -> list[pin.SE3]:
        """Placement of the user's link frame i in Pinocchio's joint frame i (i = 1..n)."""
        n = model.njoints - 1
        if self.yaml_path is None:  # URDF: the child link frame is the joint frame
            return [pin.SE3.Identity() for _ in range(n)]
        return [model.frames[model.getFrameId(f"link_{i}")].placement for i in range(1, n + 1)]

    def reference(self, model: pin.Model, friction: Friction) -> PinReference:
        return PinReference(model, friction, self.tip_frame, self.base_frame, self.id)

    def friction(self, model: pin.Model) -> Friction:
        """A URDF's friction is its ``<dynamics damping friction>`` as Pinocchio's parser reads them
        (Model.damping: viscous, Model.friction: Coulomb); a YAML's its FV, FC, FO."""
        if self.yaml_path is not None:
            return Friction.from_yaml(self.yaml_path)
        return Friction(np.array(model.damping, float), np.array(model.friction, float), np.zeros(model.nv))

    def declared_joint_parameters(self) -> tuple[str, ...]:
        if self.yaml_path is None:
            return ("IA", "FV", "FC")  # documented default; no overlay here
        return tuple(load_yaml(self.yaml_path).get("joint_parameters", ["IA", "FV", "FC"]))


def _yaml_case(name: str, folder: Path = ROBOTS_DIR) -> PeerCase:
    path = folder / f"{name}.yaml"
    return PeerCase(
        id=name, spec=str(path), yaml_path=path, tip_frame="tip", build_pin=lambda: pin_model_from_yaml(path)
    )


def _ur5_case() -> PeerCase:
    return PeerCase(
        id="ur5_urdf",
        spec=str(ur_urdf_path("ur5")),
        build_pin=lambda: ur_model("ur5"),
        tip_frame="tool0",
        base_frame="base_link",
        load_kwargs=dict(base_link="base_link", tip_link="tool0"),
    )


def _panda_case() -> PeerCase:
    return PeerCase(
        id="panda_urdf",
        spec=str(panda_urdf_path()),
        build_pin=panda_model,
        tip_frame="panda_link8",
        base_frame="panda_link0",
        load_kwargs=dict(base_link="panda_link0", tip_link="panda_link8"),
    )


YAML_CASES = [_yaml_case(n) for n in ("kuka_iiwa14", "schunk_lwa4p", "planar2", "franka_panda", "ur5", "biorob4")]
# prismatic joints, tilted/ceiling gravity, FO, tanh Coulomb, payload, standard DH
YAML_CASES += [_yaml_case(n, Path(__file__).resolve().parent / "data") for n in ("mixed_mdh", "mixed_dh")]
URDF_CASES = [_ur5_case(), _panda_case()]
ALL_CASES = YAML_CASES + URDF_CASES
CASES_BY_ID = {c.id: c for c in ALL_CASES}


def case_params(cases: list[PeerCase] = ALL_CASES) -> list:
    """pytest parameters, ids = robot."""
    return [pytest.param(c, id=c.id) for c in cases]


@cache
def compiled(case_id: str, precision: Precision = "double"):
    from host_tools import load

    c = CASES_BY_ID[case_id]
    return load(c.spec, precision=precision, **c.load_kwargs)


@cache
def pin_model(case_id: str) -> pin.Model:
    return CASES_BY_ID[case_id].build_pin()


# ----------------------------------------------------------------------------------------------
# Parameters: Pinocchio <-> the project's standard vector
# ----------------------------------------------------------------------------------------------
def parse_parameter_name(name: str) -> tuple[str, int]:
    m = _NAME.match(name)
    if m is None:
        raise ValueError(f"unexpected standard parameter name {name!r}")
    return m.group(1), int(m.group(2))


def expected_parameter_names(n: int, declared: tuple[str, ...]) -> list[str]:
    """M1..ZZ1, then the declared joint parameters of joint 1 (IA, FV, FC, FO order), link 2, ..."""
    kinds = [k for k in JOINT_PARAM_KINDS if k in declared]
    return [f"{k}{i}" for i in range(1, n + 1) for k in (*PROJECT_PARAM_NAMES, *kinds)]


@dataclass
class PhysicalParameters:
    """Everything the dynamics depend on, in the user's link frames (Pinocchio objects)."""

    links: list[pin.Inertia]  # link i about/in the user's link frame i
    armature: np.ndarray  # IA
    friction: Friction

    def standard_vector(self, names: tuple[str, ...]) -> np.ndarray:
        rows = [inertia.toDynamicParameters()[PIN_TO_PROJECT] for inertia in self.links]
        joint = {"IA": self.armature, "FV": self.friction.fv, "FC": self.friction.fc, "FO": self.friction.fo}
        out = np.empty(len(names))
        for k, name in enumerate(names):
            kind, i = parse_parameter_name(name)
            if kind in joint:
                out[k] = joint[kind][i - 1]
            else:
                out[k] = rows[i - 1][PROJECT_PARAM_NAMES.index(kind)]
        return out

    def pin_model(self, case: PeerCase, base: pin.Model) -> pin.Model:
        model = base.copy()
        for i, (X, inertia) in enumerate(zip(case.link_in_joint(base), self.links), start=1):
            model.inertias[i] = X.act(inertia)
        model.armature = np.array(self.armature, dtype=float)
        return model


def own_parameters(case: PeerCase, model: pin.Model) -> PhysicalParameters:
    links = [X.actInv(model.inertias[i]) for i, X in enumerate(case.link_in_joint(model), start=1)]
    return PhysicalParameters(links, np.array(model.armature, dtype=float), case.friction(model))


def perturbed_parameters(
    own: PhysicalParameters, declared: tuple[str, ...], rng: np.random.Generator, rel: float = 0.1
) -> PhysicalParameters:
    """Mass, COM and inertia about the COM of each link within about +-rel, physically consistent
    (m > 0, I_c positive definite: I_c' = A I_c A^T with A near identity); declared joint
    parameters scaled by 1 +- rel, or given small random values where they are zero."""
    links = []
    for inertia in own.links:
        m = inertia.mass
        if m == 0.0:
            links.append(inertia)
            continue
        m2 = m * (1.0 + rng.uniform(-rel, rel))
        c2 = np.asarray(inertia.lever) * (1.0 + rng.uniform(-rel, rel, 3)) + rng.uniform(-0.005, 0.005, 3)
        A = np.eye(3) + 0.5 * rel * rng.uniform(-1.0, 1.0, (3, 3))
        Ic2 = A @ np.asarray(inertia.inertia) @ A.T
        Ic2 = 0.5 * (Ic2 + Ic2.T)
        assert np.linalg.eigvalsh(Ic2).min() > 0.0
        links.append(pin.Inertia(m2, c2, Ic2))

    def scale(values: np.ndarray, kind: str, lo: float, hi: float) -> np.ndarray:
        if kind not in declared:
            return values.copy()
        out = values * (1.0 + rng.uniform(-rel, rel, values.size))
        zero = values == 0.0
        out[zero] = rng.uniform(lo, hi, int(zero.sum()))
        return out

    f = own.friction
    friction = Friction(
        scale(f.fv, "FV", 0.05, 0.5), scale(f.fc, "FC", 0.05, 0.5), scale(f.fo, "FO", -0.1, 0.1), f.velocity_scale
    )
    return PhysicalParameters(links, scale(own.armature, "IA", 0.01, 0.1), friction)


def check_all(comparisons: list[Comparison], record: Callable[[Comparison], None]) -> None:
    """Record every comparison, then fail listing all that failed (not only the first)."""
    for c in comparisons:
        record(c)
    bad = [c.message for c in comparisons if not c.ok]
    if bad:
        pytest.fail("\n".join(bad), pytrace=False)
