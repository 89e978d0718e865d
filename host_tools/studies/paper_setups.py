"""Each study's paper set-up as one explicit record: the controller it runs and every real-time
config field it uses, each either pinned to the paper's value, set per set-up by the study (with
how), or the robot description's own. Nothing a study runs comes from a block's design default:
a default changed for the demo or a user's arm (``ctl.friction_ff`` went 0 -> 1 for the iiwa demo
and silently took the estimator study off the paper's controller) cannot move a reproduction.
``tests/host_tools/studies/test_paper_setups.py`` generates each study's pipelines and fails,
naming the study and the field, for any config field the record does not state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from codegen.blocks import controllers

# the robot description's own fields: its parameters, encoders and torque limits
DESCRIPTION_FIELDS = ("model.", "enc.gear", "enc.bits", "enc.direction", "enc.is_signed", "enc.offset", "ctl.tau_max")


@dataclass(frozen=True)
class PaperSetup:
    """A study's set-up from its paper. Field names are the pipeline's config keys; a name ending
    in "." stands for every field of that block."""

    study: str  # the study (and the command that runs it)
    paper: str  # its authors, as docs/references.md lists the paper
    controller: str  # the registered controller the study runs
    pinned: Mapping[str, Any]  # config fields set to the paper's values
    per_setup: Mapping[str, str]  # config fields the study sets from each set-up: how
    description: tuple[str, ...] = DESCRIPTION_FIELDS

    def unstated(self, keys: Iterable[str]) -> list[str]:
        """The config fields among ``keys`` this record does not state: they would come from a
        block default."""
        stated = (*self.pinned, *self.per_setup, *self.description)
        return [k for k in keys if not any(k == s or (s.endswith(".") and k.startswith(s)) for s in stated)]

    def apply(self, config: Any) -> None:
        """Set the pinned fields in a pipeline's config (``Realtime.config``)."""
        for key, value in self.pinned.items():
            config[key] = value


# Liu, Giusti & Althoff §IV: every estimator in the same loop, computed torque (eq. 2-3)
#   u = M(x1_hat) nu + n(x1_hat, x2_hat),  nu = qdd_d + Kp (q_d - x1_hat) + Kd (qd_d - x2_hat),
# with n holding Coriolis, centripetal, gravity and friction: friction compensated at the estimate
# (ctl.friction_ff = 0), Kp = 100, Kd = 13 on every joint.
VELOCITY_ESTIMATORS = PaperSetup(
    study="velocity estimators in the closed loop (manipgen evaluate)",
    paper="Liu, Giusti & Althoff",
    controller=controllers.COMPUTED_TORQUE.name,
    pinned={"ctl.kp": 100.0, "ctl.kd": 13.0, "ctl.friction_ff": 0.0},
    per_setup={
        "enc.cpr": "the set-up's resolution: 360000 / mdeg counts per turn at the link",
        "est.eps": "epsilon of the high-gain observers: 0.03 at 125 Hz, 0.01 at 250 Hz (Tables 4, 7, 8)",
        "est.": "the estimator's gains: its design's (--gains default), the paper's (--gains paper) "
        "or the GA's (--tune)",
    },
)
