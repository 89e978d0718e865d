"""Base parameters: counts (Xu et al. 2020: 57 for the iiwa), rank, regrouping exactness, names."""

from __future__ import annotations

import dataclasses

import casadi as cs
import numpy as np
import pytest

from codegen.model.description import load_robot
from codegen.symbolic.dynamics import Dynamics
from codegen.symbolic.params import BaseParameters, base_parameters


def full_regressor(dyn: Dynamics, rng: np.random.Generator, n: int) -> np.ndarray:
    """Independent sampling (another seed, other distributions than params.py uses)."""
    f = cs.Function("Y", [dyn.q, dyn.qd, dyn.qdd], [dyn.regressor()])
    rows = [
        np.array(f(rng.uniform(-3, 3, dyn.n), rng.uniform(-2, 2, dyn.n), rng.uniform(-5, 5, dyn.n))) for _ in range(n)
    ]
    return np.vstack(rows)


@pytest.mark.parametrize("name", ["kuka_iiwa14", "franka_panda", "schunk_lwa4p", "planar2"])
def test_base_count_is_the_rank_and_regrouping_is_exact(name: str) -> None:
    robot = load_robot(name)
    dyn = Dynamics(robot)
    base = base_parameters(robot, dyn)
    w = full_regressor(dyn, np.random.default_rng(99), 60)
    norms = np.linalg.norm(w, axis=0)
    live = norms > 1e-10 * norms.max()  # columns of round-off only (e.g. XX1 of a vertical axis) are zero
    s = np.linalg.svd(w[:, live] / norms[live], compute_uv=False)
    assert base.n_base == int(np.sum(s > 1e-8 * s[0])) == base.rank
    # Y pi = Y_b (K pi) for any pi: the regrouping matrix K is exact
    yb = w[:, list(base.columns)]
    assert np.abs(yb @ base.k - w).max() <= 1e-9 * np.abs(w).max()
    # inertial first, then joint parameters
    kinds = [n.rstrip("R").rstrip("0123456789") for n in base.names]
    assert all(k not in ("IA", "FV", "FC", "FO") for k in kinds[: base.n_inertial])
    assert all(k in ("IA", "FV", "FC", "FO") for k in kinds[base.n_inertial :])
    # identification reads them back from the generated folder's manifest instead of re-deriving them
    from host_tools.bindings.compiled import CompiledDynamics, generated_folder

    recorded = BaseParameters.from_manifest(CompiledDynamics(generated_folder(robot)).manifest)
    assert (recorded.names, recorded.columns, recorded.expressions) == (base.names, base.columns, base.expressions)
    assert recorded.n_inertial == base.n_inertial and recorded.rank == base.rank
    assert np.array_equal(recorded.k, base.k)  # JSON keeps every double exactly


def test_iiwa_has_xu_et_als_57_base_parameters_and_62_with_rotor_inertia() -> None:
    robot = load_robot("kuka_iiwa14")
    base = base_parameters(robot)
    assert (base.n_base, base.n_inertial) == (57, 43)
    with_ia = dataclasses.replace(robot, joint_parameters=("IA", "FV", "FC"))
    assert base_parameters(with_ia).n_base == 62


def test_iiwa_names_follow_khalil() -> None:
    """Xu et al. (2020) Table 4 keeps ZZ1R, XX2R, MY2R, ..., and regroups with the MDH lengths."""
    base = base_parameters(load_robot("kuka_iiwa14"))
    expr = dict(zip(base.names, base.expressions))
    assert {"ZZ1R", "XX2R", "ZZ2R", "MY2R", "MX2", "XX7R", "ZZ7", "MY7"} <= set(base.names)
    assert expr["ZZ1R"] == "ZZ1R = ZZ1 + YY2"
    assert "d3*M3" in expr["MY2R"] and "MZ3" in expr["MY2R"]
    assert "d5*M5" in expr["MY4R"] and "- MZ5" in expr["MY4R"]
    assert expr["XX7R"] == "XX7R = XX7 - YY7"


def test_planar2_base_parameters_in_closed_form() -> None:
    """Two-link planar arm: MX1R = MX1 + l1 M2, ZZ1R = ZZ1 + IA1 + l1^2 M2 (textbook regrouping)."""
    robot = load_robot("planar2")
    base = base_parameters(robot)
    beta = dict(zip(base.names, base.k @ robot.standard_parameters()))
    m2, l1, lc1, m1 = 1.5, 1.0, 0.5, 2.0
    assert beta["MX1R"] == pytest.approx(m1 * lc1 + l1 * m2)
    zz1 = m1 / 12 + m1 * lc1**2
    assert beta["ZZ1R"] == pytest.approx(zz1 + 0.01 + l1**2 * m2)
    assert base.n_base == 11


def test_base_parameters_are_derived_once_per_description() -> None:
    """The same description (equal, not only the same object) gets the very result of its first
    derivation, which equals a fresh one (params._derive_base_parameters) field by field and cannot be
    changed in place; a changed description is derived anew; another description's dynamics refused."""
    from codegen.symbolic import params

    robot = load_robot("planar2")
    first = base_parameters(robot)
    assert base_parameters(load_robot("planar2"), Dynamics(load_robot("planar2"))) is first
    fresh = params._derive_base_parameters(robot, Dynamics(robot), None)
    assert (fresh.names, fresh.columns, fresh.expressions, fresh.n_inertial, fresh.rank) == (
        first.names,
        first.columns,
        first.expressions,
        first.n_inertial,
        first.rank,
    )
    assert np.array_equal(fresh.k, first.k)
    with pytest.raises(ValueError):
        first.k[0, 0] = 2.0
    without_ia = dataclasses.replace(robot, joint_parameters=("FV", "FC"))
    # IA2 is a base parameter of its own (IA1 regroups into ZZ1R): without rotor inertias it is gone
    assert "IA2" in first.names and "IA2" not in base_parameters(without_ia).names
    with pytest.raises(ValueError, match="another description"):
        base_parameters(robot, Dynamics(without_ia))
