"""Xu et al. (2020) reproduced: the identification chain on the simulated KUKA LBR iiwa 14 (the bundled
``kuka_iiwa14``, whose description is the truth), the loop of host_tools.identification.paper_setups.
XU_IDENTIFICATION, as `manipgen identify kuka_iiwa14 --synthetic` runs it: the excitation (L = 5,
0.05 Hz, Table 3's limits) tracked for 6 periods with 0.2 N m of torque noise, 5 averaged, base and
essential parameters by weighted least squares, the physical parameters by the multi-start (5
starts), validation on another 20 s motion.

- quick: the stored excitation (xu_excitation: designed once by the full tier's settings), its
  cond(Y_b) recomputed, and the round trip on it (~30 s);
- full: also a fresh design (4 starts of 300 IPOPT iterations, `manipgen excite`'s defaults) and the
  round trip on that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import casadi as cs
import numpy as np

from codegen.model.robot import Robot
from codegen.symbolic.dynamics import Dynamics
from host_tools.identification.excitation import Excitation, ExciteSettings, design, regressor_cond
from host_tools.identification.physical import LINK_MU, PhysicalSettings
from host_tools.identification.synthetic import Synthetic, SyntheticResult, synthetic
from host_tools.studies.reproduce.records import Inputs, Num, Table, Text, Tier, text
from host_tools.studies.reproduce.xu_excitation import EXCITATION, STORED
from host_tools.studies.reproduce.xu_paper import (
    BASE_PARAMETERS,
    COND,
    ELIMINATED,
    ESSENTIAL_PARAMETERS,
    PHYSICAL_SECONDS,
    PHYSICAL_STARTS,
    SETS,
    TABLE8,
    TABLE9_FVAL,
)

ROBOT = "kuka_iiwa14"  # the paper's arm
REPORT_RATE = 500.0  # Hz: cond(Y_b) over one period at Xu et al.'s f_s (§IV-A)
OPTIONS = Synthetic()  # identify --synthetic's: 6 periods, 0.2 N m noise, seed 0
# Xu et al. (2020) Table 1 as written: the physical fit's objective over the essential parameters
# (identify's default fits the whole model, host_tools.identification.physical)
PHYSICAL = PhysicalSettings(objective="essential")
MASS_SAMPLES = 10_000  # random configurations M(q) of the physical parameters is checked at
MASS_SEED = 3


@dataclass(frozen=True)
class Round:
    """One round trip: the excitation (how it came about, its cond), the identification, and the
    physical parameters' consistency."""

    excitation: str  # where it came from
    cond: float
    design_seconds: float | None  # None: the stored one
    result: SyntheticResult
    min_mass_eigenvalue: float  # of M(q) over MASS_SAMPLES random q, the physical parameters
    triangle_margin: float  # min over links of (l_j + l_k - l_i) / tr(I_C), the principal moments


@dataclass(frozen=True)
class XuResults:
    quick: Round  # the stored excitation
    full: Round | None = None  # a fresh design (the full tier)

    def round(self, tier: Tier) -> Round:
        r = self.quick if tier == "quick" else self.full
        assert r is not None, "the full tier's results were not computed"
        return r


def _consistency(robot: Robot, s: SyntheticResult) -> tuple[float, float]:
    """The physical parameters' smallest eigenvalue of M(q) at random q (one draw per joint within
    its limits, else +-pi) and their smallest triangle-inequality margin."""
    phys = s.run.physical
    identified = phys.robot(robot)
    dyn = Dynamics(identified)
    mass = cs.Function("m", [dyn.q], [dyn.mass_matrix(cs.SX(cs.DM(identified.standard_parameters())))])
    n = robot.dof
    q = np.random.default_rng(MASS_SEED).uniform(-np.pi, np.pi, (n, MASS_SAMPLES))
    blocks = np.array(mass.map(MASS_SAMPLES)(q)).reshape(n, MASS_SAMPLES, n).transpose(1, 0, 2)
    stride = len(phys.mu) // n
    margins = []
    for j in range(n):
        m = dict(zip(LINK_MU, phys.mu[j * stride : j * stride + len(LINK_MU)]))
        i_c = np.array([[m["Ixx"], m["Ixy"], m["Ixz"]], [m["Ixy"], m["Iyy"], m["Iyz"]], [m["Ixz"], m["Iyz"], m["Izz"]]])
        lam = np.linalg.eigvalsh(i_c)
        margins.append(float((lam[0] + lam[1] - lam[2]) / lam.sum()))  # the tightest of the three
    return float(np.min(np.linalg.eigvalsh(blocks))), min(margins)


def round_trip(robot: Robot, exc: Excitation, origin: str, design_seconds: float | None, inputs: Inputs) -> Round:
    def stage(what: str) -> None:
        inputs.progress(f"Xu et al.: {origin}: {what}")

    result = synthetic(robot, OPTIONS, physical=PHYSICAL, stage=stage, excitation=exc)
    stage("M(q) of the physical parameters")
    eigen, margin = _consistency(robot, result)
    return Round(origin, regressor_cond(robot, exc, REPORT_RATE), design_seconds, result, eigen, margin)


FULL_DESIGN = ExciteSettings()  # manipgen excite's defaults: 4 starts, 300 iterations, seed 0


def compute(tier: Tier, inputs: Inputs) -> XuResults:
    source = inputs.robots[ROBOT]
    robot = source.robot()
    quick = round_trip(robot, Excitation.from_dict(EXCITATION), STORED, None, inputs)
    if tier == "quick":
        return XuResults(quick)
    inputs.progress(f"Xu et al.: designing the excitation ({FULL_DESIGN.starts} starts)")
    designed = design(robot, FULL_DESIGN, executor=inputs.executor, source=source)
    origin = f"designed now ({FULL_DESIGN.starts} starts of {FULL_DESIGN.max_iter} iterations)"
    return XuResults(quick, round_trip(robot, designed.excitation, origin, designed.seconds, inputs))


def paper(value: float) -> Num:
    return Num(value, None)


def totals(r: Round) -> dict[str, dict[str, float]]:
    """The total RMS (the sum over the joints, as Table 8's "Total") per run and parameter set."""
    val = r.result.run.validation
    assert val is not None  # the round trip always validates
    return {
        "excitation": {s: float(np.sum(r.result.run.fit_rms[s])) for s in SETS},
        "validation": {s: float(np.sum(val.rms[s])) for s in SETS},
    }


def figures_table(r: Round, tier: Tier) -> Table:
    run = r.result.run
    essential = run.reported.essential
    phys = run.physical
    rows: list[tuple[str, tuple[Text, ...]]] = [
        ("base parameters", (text(Num(run.n_base, None)), text(paper(BASE_PARAMETERS)))),
        (
            "essential parameters (eliminated)",
            (
                text(Num(len(essential.names), None), f" ({', '.join(essential.removed)})"),
                text(paper(ESSENTIAL_PARAMETERS), f" ({', '.join(ELIMINATED)})"),
            ),
        ),
        ("cond(Y_b), one period at 500 Hz", (text(Num(r.cond)), text(paper(COND)))),
        (
            "physical parameters: multi-start, starts run",
            (text(Num(len(phys.starts), None)), text(paper(PHYSICAL_STARTS), " (", paper(PHYSICAL_SECONDS), " s)")),
        ),
        (
            "objective |τ − Y_e π_e|, physical / least squares (N m)",
            (text(Num(phys.objective), " / ", Num(phys.base_objective)), text(paper(TABLE9_FVAL), " / —")),
        ),
        (
            "physical: min eigenvalue of M(q) (kg m²), smallest triangle margin",
            (text(Num(r.min_mass_eigenvalue), ", ", Num(r.triangle_margin)), text("positive definite (§V)")),
        ),
    ]
    title = (
        f"Xu et al. (2020)'s figures on the simulated iiwa ({r.excitation}; the round trip of `manipgen identify "
        f"kuka_iiwa14 --synthetic`: {OPTIONS.periods} periods, {OPTIONS.torque_noise:g} N m torque noise; the "
        "physical fit's objective over the essential parameters, Table 1 as written); "
        "Xu et al.'s from the real iiwa (§IV, Tables 4, 5, 9). M(q) at "
        f"{MASS_SAMPLES} random q; the triangle margin (λ₁ + λ₂ − λ₃) / tr(I_C) of the links' principal moments."
    )
    return Table("figures", tier, title, ("figure", "ours", "Xu et al. (2020)"), tuple(rows))


def _joint_cells(values: Sequence[Sequence[float] | np.ndarray], k: int | None, digits: int | None) -> tuple[Text, ...]:
    """Column-wise: joint k's values (k None: the totals)."""
    return tuple(text(Num(float(np.sum(v)) if k is None else float(v[k]), digits)) for v in values)


def rms_table(r: Round, tier: Tier) -> Table:
    run = r.result.run
    val = run.validation
    assert val is not None
    ours = [run.fit_rms[s] for s in SETS] + [val.rms[s] for s in SETS]
    theirs = [TABLE8[s, 1].joints for s in SETS]
    rows = []
    for k in range(len(theirs[0])):
        rows.append((f"joint {k + 1}", (*_joint_cells(ours, k, 3), *_joint_cells(theirs, k, None))))
    rows.append(("total", (*_joint_cells(ours, None, 3), *(text(paper(TABLE8[s, 1].total)) for s in SETS))))
    short = {"base": "π_b", "essential": "π_e", "physical": "μ"}
    columns = (
        "joint",
        *(f"excitation, {short[s]}" for s in SETS),
        *(f"validation, {short[s]}" for s in SETS),
        *(f"Xu et al. q_ref,1, {short[s]}" for s in SETS),
    )
    title = (
        "RMS torque prediction error per joint, N m (Xu et al. 2020 Table 8), of the base (π_b), essential (π_e) "
        f"and physical (μ) parameters: ours on the averaged excitation periods (noise floor "
        f"{r.result.noise_floor_rms:.3g} N m) and on a 20 s validation motion (one noisy pass: noise floor "
        f"{r.result.validation_noise_floor_rms:.3g} N m); Xu et al.'s on the real iiwa's excitation (q_ref,1): "
        "their noise and model errors, not ours, set the magnitude."
    )
    return Table("rms", tier, title, columns, tuple(rows))


def notes(r: XuResults) -> tuple[str, ...]:
    """The wall times (not in the tables: they vary from run to run)."""
    out = []
    for rd in (r.quick, r.full):
        if rd is not None:
            s = rd.result
            design = "" if rd.design_seconds is None else f"excitation design {rd.design_seconds:.0f} s, "
            out.append(
                f"{rd.excitation}: {design}round trip {s.seconds:.0f} s, of which the physical parameters' "
                f"multi-start {s.run.physical.seconds:.1f} s (Xu et al. (2020): {PHYSICAL_SECONDS:g} s)"
            )
    return tuple(out)


def tables(r: XuResults, tier: Tier) -> tuple[Table, ...]:
    out = [figures_table(r.quick, "quick"), rms_table(r.quick, "quick")]
    if tier == "full" and r.full is not None:
        out += [figures_table(r.full, "full"), rms_table(r.full, "full")]
    return tuple(out)
