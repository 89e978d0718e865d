"""Kirchhoff (2011) (two-stage identification of an elastic arm) as `manipgen reproduce kirchhoff2011`:
its claims, each with the thesis' values it rests on (kirchhoff_paper), what is compared and how ours
are judged -- on the stored designs' runs (quick) and on fresh designs' (full, keys ``full.``). The
runs and tables are kirchhoff_runs'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from host_tools.studies.reproduce.kirchhoff_paper import (
    ACTUATOR_PARAMETERS,
    DISSIPATION_S,
    PAPER_TABLE_4_3_RANDOM,
    PAPER_TABLE_4_4_D_OPT,
    PAPER_TABLE_4_5_MAX_ERROR,
    table_4_2_errors,
)
from host_tools.studies.reproduce.kirchhoff_runs import ROBOT, KirchhoffResults, compute, notes, paper, tables
from host_tools.studies.reproduce.records import Claim, Num, Paper, Text, Verdict, text, tiered_claims

Doc = dict[str, Any]
Judge = Callable[[Doc], Verdict]

K_E_ERRORS = table_4_2_errors("k_e")  # 0.55 %, 0.20 %, 0.25 %, 0.22 %
K_E_BOUND = max(K_E_ERRORS)


def _listing(values: Sequence[float | None], digits: int | None = 2) -> Text:
    return text(*(text(", " if k else "", Num(v, digits)) for k, v in enumerate(values)))


def _actuators(d: Doc) -> Verdict:
    """Every k_e within the thesis' largest k_e error, and eq. 4.4's 16 parameters."""
    k_e = [a["relative_error"] for a in d["actuator"] if a["name"].startswith("k_e")]
    holds = len(d["actuator"]) == ACTUATOR_PARAMETERS and all(e <= K_E_BOUND for e in k_e)
    return Verdict(
        holds,
        text(Num(len(d["actuator"]), None), " parameters; k_e relative errors (%): ", _listing([100 * e for e in k_e])),
    )


def _per_joint_at_most(key: str, bound: Sequence[float]) -> Judge:
    def judge(d: Doc) -> Verdict:
        ours = d["validation"][key]
        return Verdict(
            all(o <= b for o, b in zip(ours, bound)) and len(ours) == len(bound),
            text("ours (N m): ", _listing(ours)),
        )

    return judge


def _load(d: Doc) -> Verdict:
    worst = d["load_max_error"]
    name = max(d["load"], key=lambda b: b["error"])["name"]
    return Verdict(worst <= PAPER_TABLE_4_5_MAX_ERROR, text("largest |error| ", Num(worst, 2), f" ({name})"))


# (name, the thesis' statement, its values, the criterion, the judge of one study document)
CLAIMED: tuple[tuple[str, str, Text, str, Judge], ...] = (
    (
        "actuator-stage",
        "the actuator side identified on its own (§4.2.1, eq. 4.4: “a 4 × 16 regressor matrix, a 16 × 1 base "
        "parameter vector”), the spring stiffness to within a percent (§4.3.1, Table 4.2)",
        text("16 parameters; Table 4.2's k_e relative errors (%): ", _listing([100 * e for e in K_E_ERRORS], 2)),
        f"16 parameters, and each of our k_e at most the thesis' largest k_e error ({100 * K_E_BOUND:.2f} %)",
        _actuators,
    ),
    (
        "actuator-generalises",
        "the actuator model, identified on the excitation, “nearly produces the same accurate torque estimation” "
        "on a random trajectory (§4.3.1, Table 4.3)",
        text("Table 4.3, random (N m): ", _listing(PAPER_TABLE_4_3_RANDOM, None)),
        "our motor-torque RMS on a random motion at most Table 4.3's, joint by joint",
        _per_joint_at_most("motor_torque_rms", PAPER_TABLE_4_3_RANDOM),
    ),
    (
        "load-stage",
        "“the base parameter estimation error is very small for most of them” (§4.3.1, Table 4.5: the load "
        "side identified with the stage-1 springs)",
        text("Table 4.5's largest |error| ", paper(PAPER_TABLE_4_5_MAX_ERROR)),
        "our largest |error| of a load side base parameter at most Table 4.5's",
        _load,
    ),
    (
        "elastic-torque",
        "the elastic transmission torque predicted by the load side model on an evaluation trajectory "
        "(§4.3.1, Table 4.4, D-optimal, ε_RMS)",
        text("Table 4.4 (N m): ", _listing(PAPER_TABLE_4_4_D_OPT, None)),
        "our RMS of Y_b β̂ against the true (I + A)ᵀ τ_el at most Table 4.4's, joint by joint",
        _per_joint_at_most("elastic_torque_vs_true_rms", PAPER_TABLE_4_4_D_OPT),
    ),
)


WHERE = {"quick": "simulated biorob4, the stored designs", "full": "simulated biorob4, fresh designs"}

# §5.3's collision test (Fig. 5.5): the same runs for both tiers (no design enters them), judged once
# (a quick claim is judged in the full tier too)
COLLISION_WHERE = "simulated biorob4, §5.3's collision test (`manipgen elastic collide biorob4`)"
# Without reaction the arm presses on a static contact: the tau_el observer's residual is the contact
# torque through eq. 5.9's first-order lag (K_O = 25: a time constant of 40 ms), settled 3 s after the
# detection; 5 % leaves room for the link velocity estimate's and the spring's model of the torque
PRESSING = 0.05
# "approximately one second": ours within half to twice it (an order-of-magnitude reading of a
# figure without numbers)
DISSIPATION_BAND = (0.5 * DISSIPATION_S, 2.0 * DISSIPATION_S)


def _collision(judge: Callable[[Doc], Verdict]) -> Callable[[KirchhoffResults], Verdict]:
    def at(r: KirchhoffResults) -> Verdict:
        if r.collision is None:
            return Verdict(None, text("the collision test was not run"))
        return judge(r.collision)

    return at


def _detected(c: Doc) -> Verdict:
    free = max(c["free_max_abs_r"])
    delays = [c[k]["delay_ms"] for k in ("no_reaction", "reaction")]
    holds = free < c["settings"]["threshold"] and not c["free_false_alarm"] and all(d is not None for d in delays)
    return Verdict(
        holds,
        text(
            "detected after ",
            _listing(delays, 3),
            " ms (without, with the reaction); largest |r| without the obstacle ",
            Num(free),
            " N m",
        ),
    )


def _pressing(c: Doc) -> Verdict:
    run = c["no_reaction"]
    r_end, contact = abs(run["r_end"]), run["contact_torque_end"]
    stays = run["above_threshold_s"] is not None and run["contact_s"] is not None and run["in_contact_at_end"]
    holds = stays and contact > 0 and abs(r_end - contact) <= PRESSING * contact
    return Verdict(
        holds,
        text(
            "|r| at the end ",
            Num(r_end),
            " N m, the contact torque ",
            Num(contact),
            " N m; in contact at the end: ",
            "yes" if run["in_contact_at_end"] else "no",
        ),
    )


def _dissipated(c: Doc) -> Verdict:
    run = c["reaction"]
    took = run["above_threshold_s"]
    low, high = DISSIPATION_BAND
    holds = took is not None and low <= took <= high and not run["in_contact_at_end"]
    return Verdict(
        holds,
        text(
            "some |r| above the threshold until ",
            Num(took),
            " s after the detection; out of contact at the end: ",
            "no" if run["in_contact_at_end"] else "yes",
        ),
    )


COLLISION_CLAIMS: tuple[Claim[KirchhoffResults], ...] = (
    Claim(
        "collision.detected",
        "quick",
        COLLISION_WHERE,
        "“the control loop calculates the residual in each step ... and checks whether the norm exceeds the "
        "collision threshold of 0.1Nm”; “the implemented collision detection works” (§5.3)",
        text("threshold 0.1 N m"),
        "the contact detected in both runs, and the motion without the obstacle below the threshold on every "
        "joint (no false alarm)",
        _collision(_detected),
    ),
    Claim(
        "collision.no-reaction",
        "quick",
        COLLISION_WHERE,
        "“First a collision without reaction is carried out (see figure 5.5(a)). Here, the detected joint torque "
        "increases till the maximum torque is reached” (§5.3)",
        text("Fig. 5.5 (a), no numbers"),
        f"without reaction the residual stays above the threshold to the end, still in contact, and equals the "
        f"pressing contact torque then within {PRESSING:.0%} (not checked: the torque limit; the state feedback's "
        "integral is clamped, so ours settles below it)",
        _collision(_pressing),
    ),
    Claim(
        "collision.reaction",
        "quick",
        COLLISION_WHERE,
        "“the collision strategy successfully reduces the detected joint torques after collision detection (see "
        "figure 5.5(b)) ... the time till the collision is dissipated takes approximately one second” (§5.3)",
        text("about ", Num(DISSIPATION_S, None), " s"),
        f"with the reflex every |r| back below the threshold for good within {DISSIPATION_BAND[0]:g}-"
        f"{DISSIPATION_BAND[1]:g} s of the detection, and out of contact at the end",
        _collision(_dissipated),
    ),
)
CLAIMS: tuple[Claim[KirchhoffResults], ...] = (
    *tiered_claims(CLAIMED, WHERE.__getitem__, KirchhoffResults.doc),
    *COLLISION_CLAIMS,
)

PAPER: Paper[KirchhoffResults] = Paper(
    key="kirchhoff2011",
    citation="Kirchhoff (2011)",
    subject="two-stage identification of an elastic arm (simulated BioRob)",
    compute=compute,
    tables=tables,
    claims=CLAIMS,
    notes=notes,
    robots=(ROBOT,),
)
