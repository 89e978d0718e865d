"""Kirchhoff (2011) reproduced: the two-stage identification of the elastic arm (§4.2-4.3.1) on the
simulated BioRob (the bundled ``biorob4``, whose description is the truth), the loop of
host_tools.identification.paper_setups.KIRCHHOFF_IDENTIFICATION, as `manipgen elastic identify biorob4`
runs it (host_tools.identification.elastic.study): each stage's excitation tracked for 6 periods with
0.02 N m of noise on the motor torque, the actuators identified (eq. 4.4), then the links with the
identified springs, validated on a random 20 s motion.

- quick: the stored designs (kirchhoff_excitations), their cond recomputed, the two stages on them;
  and the collision test of §5.3 (Fig. 5.5: host_tools.studies.elastic_collision, three short runs);
- full: both excitations designed afresh (D-optimal, 2 starts each) and the two stages on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from host_tools.identification.elastic import StudySettings, study
from host_tools.identification.excitation import Excitation
from host_tools.studies import elastic_collision
from host_tools.studies.reproduce.kirchhoff_excitations import ACTUATOR, LOAD, STORED
from host_tools.studies.reproduce.kirchhoff_paper import (
    DISSIPATION_S,
    LOAD_BASE_PARAMETERS,
    PAPER_TABLE_4_2,
    PAPER_TABLE_4_3_RANDOM,
    PAPER_TABLE_4_4_D_OPT,
    PAPER_TABLE_4_5_MAX_ERROR,
)
from host_tools.studies.reproduce.records import Inputs, Num, Table, Text, Tier, text

ROBOT = "biorob4"  # the thesis' BioRob arm (4 elastic joints)
SETTINGS = StudySettings()  # the study's: 5 harmonics, 0.1 Hz, 6 periods, 0.02 N m, seed 0


@dataclass(frozen=True)
class KirchhoffResults:
    quick: dict[str, Any]  # elastic.study's document on the stored designs
    full: dict[str, Any] | None = None  # on fresh designs (the full tier)
    # the collision test of §5.3 (elastic_collision.scenario's figures, without the traces); the same
    # runs in both tiers (no design enters them)
    collision: dict[str, Any] | None = None

    def doc(self, tier: Tier) -> dict[str, Any]:
        d = self.quick if tier == "quick" else self.full
        assert d is not None, "the full tier's results were not computed"
        return d


def compute(tier: Tier, inputs: Inputs) -> KirchhoffResults:
    robot = inputs.robots[ROBOT].robot()

    def progress(origin: str) -> Any:
        return lambda what: inputs.progress(f"Kirchhoff (2011): {origin}: {what}")

    stored = (Excitation.from_dict(ACTUATOR), Excitation.from_dict(LOAD))
    quick = study(robot, SETTINGS, progress("the stored designs"), designs=stored)
    progress("§5.3")("the collision test (Fig. 5.5)")
    collision = {k: v for k, v in elastic_collision.scenario(robot).items() if k != "traces"}
    if tier == "quick":
        return KirchhoffResults(quick, None, collision)
    return KirchhoffResults(quick, study(robot, SETTINGS, progress("fresh designs")), collision)


def paper(value: float) -> Num:
    return Num(value, None)


def origin(tier: Tier) -> str:
    return STORED if tier == "quick" else f"fresh designs ({SETTINGS.starts} IPOPT starts each, grid {SETTINGS.grid})"


def actuator_table(d: dict[str, Any], tier: Tier) -> Table:
    """Eq. 4.4's parameters, ours beside Table 4.2."""
    theirs = [pair for row in PAPER_TABLE_4_2 for pair in row]
    rows = []
    for k, a in enumerate(d["actuator"]):
        rsd = a["rsd"]
        cells: tuple[Text, ...] = (
            text(Num(a["exact"], 4)),
            text(Num(a["estimated"], 4)),
            text(Num(None if a["relative_error"] is None else 100 * a["relative_error"], 2)),
            text(Num(None if rsd is None else 100 * rsd, 2)),
        )
        if k < len(theirs):
            exact, estimated = theirs[k]
            cells += (text(paper(exact)), text(paper(estimated)), text(Num(100 * abs(estimated - exact) / exact, 2)))
        else:
            cells += (text("—"),) * 3
        rows.append((a["name"], cells))
    title = (
        f"Actuator side (eq. 4.4: d_e, d_v,m, k_e, d_C,m per joint) on the simulated biorob4, {origin(tier)}; "
        "Kirchhoff (2011) Table 4.2 from the thesis' Simulink model (joint 2's d_v,m as printed: 3.630e-3, "
        "probably 3.630e-4). Errors and RSD in %."
    )
    columns = (
        "parameter",
        "exact",
        "estimated",
        "error %",
        "RSD %",
        "Kirchhoff exact",
        "Kirchhoff estimated",
        "Kirchhoff error %",
    )
    return Table("actuator", tier, title, columns, tuple(rows))


def validation_table(d: dict[str, Any], tier: Tier) -> Table:
    v = d["validation"]
    rows = []
    for j in range(len(v["motor_torque_rms"])):
        rows.append(
            (
                f"joint {j + 1}",
                (
                    text(Num(v["motor_torque_rms"][j], 2)),
                    text(paper(PAPER_TABLE_4_3_RANDOM[j])),
                    text(Num(v["elastic_torque_vs_true_rms"][j], 2)),
                    text(paper(PAPER_TABLE_4_4_D_OPT[j])),
                    text(Num(v["elastic_torque_std"][j], 3)),
                ),
            )
        )
    title = (
        f"Validation on a random {v['seconds']:g} s motion, N m ({origin(tier)}): the motor torque predicted by "
        "stage 1 (Kirchhoff (2011) Table 4.3, random motion) and Y_b β̂ against the true (I + A)ᵀ τ_el (Table 4.4's "
        "ε_RMS, D-optimal); the spread of the true one for scale."
    )
    columns = (
        "joint",
        "motor torque RMS",
        "Kirchhoff Table 4.3",
        "(I + A)ᵀ τ_el RMS vs the true one",
        "Kirchhoff Table 4.4",
        "std of the true one",
    )
    return Table("validation", tier, title, columns, tuple(rows))


def figures_table(d: dict[str, Any], tier: Tier) -> Table:
    ex = d["excitation"]
    rows: tuple[tuple[str, tuple[Text, ...]], ...] = (
        ("actuator parameters (eq. 4.4)", (text(Num(len(d["actuator"]), None)), text(paper(16)))),
        (
            "load side base parameters",
            (
                text(Num(len(d["load"]), None), " (link friction included)"),
                text(paper(LOAD_BASE_PARAMETERS), " (16 after symmetry, Table 4.5)"),
            ),
        ),
        (
            "largest |error| of a load side base parameter",
            (text(Num(d["load_max_error"], 2)), text(paper(PAPER_TABLE_4_5_MAX_ERROR))),
        ),
        ("cond(Y) of the actuator excitation", (text(Num(ex["actuator"]["cond"])), text("—"))),
        ("cond(Y_b) of the load excitation", (text(Num(ex["load"]["cond"])), text("—"))),
    )
    title = f"Kirchhoff (2011)'s two stages on the simulated biorob4 ({origin(tier)}): sizes and the load side's error."
    return Table("figures", tier, title, ("figure", "ours", "Kirchhoff (2011)"), rows)


RUNS = {"no_reaction": "without reaction", "reaction": "with the reflex (eq. 5.1)"}


def _seconds(value: float | None) -> Text:
    return text(Num(value, 4), " s") if value is not None else text("not detected")


def collision_table(c: dict[str, Any]) -> Table:
    """§5.3's collision test (Fig. 5.5), without and with the reaction, beside what the thesis says."""
    j = c["settings"]["joint"]
    rows: list[tuple[str, tuple[Text, ...]]] = [
        ("contact at", (*(_seconds(c[k]["contact_s"]) for k in RUNS), text("—"))),
        ("detected after (ms)", (*(text(Num(c[k]["delay_ms"], 3)) for k in RUNS), text("—"))),
        ("isolated link", (*(text(Num(c[k]["link"], None)) for k in RUNS), text("—"))),
        (
            f"peak contact torque on joint {j} (N m)",
            (*(text(Num(c[k]["max_contact_torque"])) for k in RUNS), text("—")),
        ),
        (
            f"|r{j}| 1 s after the detection (N m)",
            (
                *(text(Num(c[k]["r_1s_after_detection"])) for k in RUNS),
                text("(a) rising until the motor torque saturates; (b) reduced"),
            ),
        ),
        (
            f"|r{j}| at the end (N m) / the contact torque then",
            (
                *(text(Num(abs(c[k]["r_end"])), " / ", Num(c[k]["contact_torque_end"])) for k in RUNS),
                text("—"),
            ),
        ),
        (
            "some |r| above the threshold until (s after the detection)",
            (
                *(text(Num(c[k]["above_threshold_s"], 3)) for k in RUNS),
                text("(b) “approximately one second” (", Num(DISSIPATION_S, None), " s)"),
            ),
        ),
        ("in contact at the end", (*(text("yes" if c[k]["in_contact_at_end"] else "no") for k in RUNS), text("—"))),
        (
            "largest |r| without the obstacle (N m)",
            (text(Num(max(c["free_max_abs_r"])), " (one run, no reaction needed)"), text("—"), text("—")),
        ),
    ]
    s = c["settings"]
    title = (
        f"Kirchhoff (2011) §5.3's collision test on biorob4 (`manipgen elastic collide biorob4 --json`): joint {j} "
        f"driven {math.degrees(abs(s['travel'])):g}° from vertical in {s['duration']:g} s into a Hunt-Crossley "
        f"obstacle at the height l₁ ({c['obstacle_height_m']:g} m), threshold {s['threshold']:g} N m on every joint, "
        f"K_R = {s['k_r']:g} I; once without reaction and once with the reflex of eq. 5.1; Kirchhoff's column is "
        "Fig. 5.5 (a) and (b) as §5.3 describes it (the figure has no numbers to compare)."
    )
    return Table("collision", "quick", title, ("", *RUNS.values(), "Kirchhoff (2011) Fig. 5.5"), tuple(rows))


def tables(r: KirchhoffResults, tier: Tier) -> tuple[Table, ...]:
    out = [figures_table(r.quick, "quick"), actuator_table(r.quick, "quick"), validation_table(r.quick, "quick")]
    if r.collision is not None:
        out.append(collision_table(r.collision))
    if tier == "full" and r.full is not None:
        out += [figures_table(r.full, "full"), actuator_table(r.full, "full"), validation_table(r.full, "full")]
    return tuple(out)


def notes(r: KirchhoffResults) -> tuple[str, ...]:
    if r.full is None:
        return ()
    return (f"fresh designs: {r.full['design_seconds']:.0f} s",)
