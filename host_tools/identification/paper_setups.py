"""A study's paper set-up as one explicit record (``PaperSetup``), and the records of the studies
this layer runs: the identification round trip (Xu et al. 2020), output error's closed loop (Brunot
et al. 2019) and the elastic arm's two-stage identification (Kirchhoff 2011). The record type lives
here, in the lowest layer that runs a paper's study, so that every study above it states its set-up
the same way; host_tools.studies.paper_setups holds the other studies' records and the list of all.

A record names the controller the study runs and states every real-time config field the study
uses: pinned to a value (the paper's where the paper states it, otherwise the study's own choice,
which is the block's default of the day the record was written), pinned to a design rule
(``Designed``: a Kalman gain for a stated Q, gains from the description's springs), set per set-up
by the study (with how), or the robot description's own. Nothing a study runs comes from a block's
design default: a default changed for the demo or a user's arm (``ctl.friction_ff`` went 0 -> 1 for
the iiwa demo and silently took the estimator study off Liu et al.'s controller) cannot move a
reproduction. tests/host_tools/studies/test_paper_setups.py generates each study's pipelines and
fails, naming the study and the field, for any config field its record does not state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codegen.blocks import controllers, kalman
from codegen.blocks.options import parse_label
from codegen.model.robot import Robot
from host_tools.bindings.rt import RtConfig

# the robot description's own fields: its parameters, encoders (but their resolution, which a
# study that varies it states), torque limits, and the friction terms beyond viscous and Coulomb it
# declares with their coefficients (fric.: generated only where the description or an identified
# config declares them, issue #47; no bundled robot declares any)
DESCRIPTION_FIELDS = (
    "model.",
    "fric.",
    "enc.gear",
    "enc.bits",
    "enc.direction",
    "enc.is_signed",
    "enc.offset",
    "ctl.tau_max",
)
# the description's fields of a study that runs the encoders as described: all of theirs (the
# motor channels' too)
AS_DESCRIBED = ("model.", "fric.", "enc.", "ctl.tau_max")
# an elastic arm's too: its springs (stiffness k_e, damping d_e), which the controller and the
# tau_el momentum observer read
ELASTIC_FIELDS = (*AS_DESCRIBED, "ctl.k_e", "obs.k_e", "obs.d_e")


@dataclass(frozen=True)
class Designed:
    """A field pinned to a design rule rather than a number, so that one record serves every arm:
    ``design(config, robot, *args)`` from the pipeline's config (its rate, its encoders) and the
    robot description. ``design`` is a module-level function: a record pickles into work items."""

    rule: str  # the rule, as a reader (and a report) needs it
    design: Callable[..., Any]
    args: tuple[Any, ...] = ()

    def value(self, config: RtConfig, robot: Robot | None) -> Any:
        return self.design(config, robot, *self.args)


def blocks_of(label: str) -> tuple[str, str, str]:
    """The (estimator, observer, controller) a pipeline label names (Realtime.label, the manifest's
    rt.label)."""
    options = parse_label(label)
    return options.estimator.name, options.observer, options.controller


@dataclass(frozen=True)
class PaperSetup:
    """A study's set-up from its paper. Field names are the pipeline's config keys; a name ending
    in "." stands for every field of that block."""

    study: str  # the study (and the command that runs it)
    paper: str  # its authors, as docs/references.md lists the paper
    controller: str  # the registered controller the study runs
    pinned: Mapping[str, Any]  # config fields set to the paper's (or the study's) values or rules
    per_setup: Mapping[str, str]  # config fields the study sets from each set-up: how
    # fields pinned only where the pipeline runs the named block (an estimator or observer): each
    # observer's own gains, each estimator's own noise model
    blocks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    description: tuple[str, ...] = DESCRIPTION_FIELDS

    def stated(self, *blocks: str) -> tuple[str, ...]:
        """Every field this record states for a pipeline running ``blocks`` (blocks_of)."""
        own = (k for b in blocks for k in self.blocks.get(b, {}))
        return (*self.pinned, *own, *self.per_setup, *self.description)

    def unstated(self, keys: Iterable[str], *blocks: str) -> list[str]:
        """The config fields among ``keys`` of a pipeline running ``blocks`` this record does not
        state: they would come from a block default."""
        stated = self.stated(*blocks)
        return [k for k in keys if not any(k == s or (s.endswith(".") and k.startswith(s)) for s in stated)]

    def apply(self, config: RtConfig, robot: Robot | None = None) -> None:
        """Set the pinned fields a pipeline's config (``Realtime.config``) has: the record's and its
        blocks'; a ``Designed`` field from its rule (``robot``: for rules that read the description).
        The pipeline must run the record's controller."""
        blocks = blocks_of(config.label)
        if blocks[2] != self.controller:
            raise ValueError(f"{self.study}: the pipeline runs {blocks[2]}, {self.paper}'s set-up {self.controller}")
        pins = dict(self.pinned)
        for b in blocks:
            pins.update(self.blocks.get(b, {}))
        has = set(config.keys())
        for key, value in pins.items():
            if key in has:
                config[key] = value.value(config, robot) if isinstance(value, Designed) else value


def _kalman_gain(config: RtConfig, robot: Robot | None, q_var: float) -> np.ndarray:
    config.redesign(q_var=q_var)
    return config["est.gain"]


def kalman_gain(q_var: float) -> Designed:
    """The Kalman estimator's gain designed for the jerk variance ``q_var`` (rad^2/s^6) and R the
    encoder's quantisation, at the pipeline's rate (the kalman block's design, Liu et al. §II-C)."""
    return Designed(f"designed for Q = {q_var:g} rad^2/s^6 and R = the encoder's quantisation", _kalman_gain, (q_var,))


def _quantisation(config: RtConfig, robot: Robot | None) -> np.ndarray:
    return kalman.measurement_variances(config["enc.cpr"], config["enc.gear"])


# R = (2 pi / (cpr gear))^2 / 3 per joint, the encoder's quantisation (as the kalman block's R)
QUANTISATION = Designed("the encoder's quantisation, (2 pi / (cpr gear))^2 / 3", _quantisation)


def _springs(robot: Robot | None) -> tuple[np.ndarray, np.ndarray]:
    """The description's spring stiffness k_e and motor inertia per elastic joint."""
    if robot is None:
        raise ValueError("an elastic arm's controller gains are designed from its description: pass the robot")
    drives = [j.elastic for j in robot.joints if j.elastic is not None]
    return np.array([d.stiffness for d in drives]), np.array([d.motor_inertia for d in drives])


def _times_stiffness(config: RtConfig, robot: Robot | None, factor: float) -> np.ndarray:
    return factor * _springs(robot)[0]


def _motor_damping(config: RtConfig, robot: Robot | None, k_theta: float, twice_ratio: float) -> np.ndarray:
    ke, im = _springs(robot)
    return twice_ratio * np.sqrt(im * (k_theta * ke + ke))


# The elastic arm's state feedback with gravity compensation (Kirchhoff 2011 §3.2.4: P on the motor's
# and the link's states, PI on the link position). Kirchhoff states no gains: these are the study's
# own, the state_feedback block's design rule when this record was written, from the description's
# springs: K_th = 4 k_e, D_th a damping ratio of 0.7 of the motor against K_th + k_e, K_q = k_e,
# K_i = 2 k_e, D_q = 0, an integral clamp of 0.1 rad s.
STATE_FEEDBACK: Mapping[str, Any] = {
    "ctl.k_theta": Designed("K_th = 4 k_e", _times_stiffness, (4.0,)),
    "ctl.d_theta": Designed(
        "D_th = 1.4 sqrt(I_m (K_th + k_e)): a damping ratio of 0.7 of the motor", _motor_damping, (4.0, 1.4)
    ),
    "ctl.k_q": Designed("K_q = k_e", _times_stiffness, (1.0,)),
    "ctl.k_i": Designed("K_i = 2 k_e", _times_stiffness, (2.0,)),
    "ctl.d_q": 0.0,
    "ctl.i_max": 0.1,
}

# Xu et al. (2020) §IV: the excitation (L = 5, 0.05 Hz) run on the iiwa, positions and torques
# averaged over periods. The loopback's run of it (manipgen identify --synthetic): Xu et al. track
# the excitation with the iiwa's own joint position control (iiwa stack), which the paper does not
# give; the study's stand-in is computed torque with Kp = 100, Kd = 13 (Liu et al.'s loop; the
# iiwa description's gains), the friction fed forward at the desired velocity (at the estimate
# sgn(qd_hat) chatters at every reversal and puts motion beyond the derivative band into the run:
# the study's choice) and the Kalman estimate with Q = 10 rad^2/s^6 (the study's choice, the
# kalman block's default when this record was written). The validation motion runs in the same loop.
XU_IDENTIFICATION = PaperSetup(
    study="the identification round trip on the loopback (manipgen identify --synthetic)",
    paper="Xu et al. (2020)",
    controller=controllers.COMPUTED_TORQUE.name,
    pinned={"ctl.kp": 100.0, "ctl.kd": 13.0, "ctl.friction_ff": 1.0},
    per_setup={},
    blocks={kalman.SPEC.name: {"est.gain": kalman_gain(10.0)}},
    description=AS_DESCRIBED,
)

# Brunot et al. (2019) §2.2: a linear controller per joint, PD or PID with the integral action
# "weak, or even deactivated", the drive gain known (G_tau = 1: the log holds torques). The synthetic
# closed-loop run (manipgen identify --synthetic --method ...): the pid block (its gravity
# compensation included) as a PD, Ki = 0 (the paper's deactivated integral action; the clamp, 0.1
# rad s, then does nothing: the pid block's default when this record was written), critically
# damped at the set-up's bandwidth on each joint's inertia at the start (the study's choice;
# Brunot et al. give no gains).
BRUNOT_OUTPUT_ERROR = PaperSetup(
    study="output-error identification of a synthetic closed-loop run (manipgen identify --synthetic --method)",
    paper="Brunot et al. (2019)",
    controller=controllers.PID.name,
    pinned={"ctl.ki": 0.0, "ctl.i_max": 0.1},
    per_setup={
        "ctl.kp": "(2 pi f)^2 M_jj(q0), f = OESynthetic.bandwidth (5 Hz)",
        "ctl.kd": "2 (2 pi f) M_jj(q0): critically damped",
    },
    description=AS_DESCRIBED,
)

# Kirchhoff (2011) §4.2-4.3: the two stages (actuator, then load) each tracking its excitation on
# the elastic arm, and a validation motion, simulated as in §4.3.1 (manipgen elastic identify): the
# state feedback above, the description's EWLR velocity estimates (§5.3's weighted linear regression).
KIRCHHOFF_IDENTIFICATION = PaperSetup(
    study="the elastic arm's two-stage identification on the loopback (manipgen elastic identify)",
    paper="Kirchhoff (2011)",
    controller=controllers.STATE_FEEDBACK.name,
    pinned=STATE_FEEDBACK,
    per_setup={},
    description=ELASTIC_FIELDS,
)
