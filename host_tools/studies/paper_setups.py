"""Each study's paper set-up as one explicit record (host_tools.identification.paper_setups.PaperSetup):
the controller it runs and every real-time config field it uses, each pinned to the paper's value
(or, where the paper states none, the study's own choice: the block's default of the day the record
was written), pinned to a design rule, set per set-up by the study (with how), or the robot
description's own. Nothing a study runs comes from a block's design default: a default changed for
the demo or a user's arm (``ctl.friction_ff`` went 0 -> 1 for the iiwa demo and silently took the
estimator study off the paper's controller) cannot move a reproduction.

Here the records of the studies in this layer: the velocity estimators (Liu et al.), collision
detection (collide's product set-up, and Birjandi & Haddadin's own, which differs from it where
``BIRJANDI_DIFFERS`` says) and the elastic arm's collision test (Kirchhoff 2011 §5.3);
the identification studies' records (Xu et al. 2020, Brunot et al. 2019, Kirchhoff 2011 §4) live
with them in host_tools.identification.paper_setups. ``RECORDS`` lists every study's record.
``tests/host_tools/studies/test_paper_setups.py`` generates each study's pipelines and fails,
naming the study and the field, for any config field its record does not state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from codegen.blocks import adaptive, controllers, direct, imu, kalman, momentum
from codegen.blocks.options import parse_label
from codegen.model.robot import Robot
from host_tools.bindings.rt import RtConfig
from host_tools.identification.paper_setups import (
    AS_DESCRIBED,
    BRUNOT_OUTPUT_ERROR,
    ELASTIC_FIELDS,
    KIRCHHOFF_IDENTIFICATION,
    QUANTISATION,
    STATE_FEEDBACK,
    XU_IDENTIFICATION,
    Designed,
    PaperSetup,
    kalman_gain,
)
from host_tools.studies import loop_margin
from host_tools.studies.imu_calibration import CALIBRATION_S

__all__ = [
    "BIRJANDI",
    "BIRJANDI_DIFFERS",
    "COLLISION",
    "COLLISION_SETUPS",
    "ELASTIC_COLLISION",
    "LOOP_GAINS",
    "kalman_loop_gains",
    "RECORDS",
    "VELOCITY_ESTIMATORS",
    "PaperSetup",
    "differences",
]

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

# Static thresholds (no velocity, acceleration or standstill part) before a study designs or sets
# them, hysteresis release at half the threshold: the detect block's defaults when these records
# were written (the studies' own choice; det.vs is the standstill scale a fitted design starts from)
STATIC_THRESHOLDS: Mapping[str, Any] = {"det.kv": 0.0, "det.ka": 0.0, "det.ks": 0.0, "det.vs": 0.01, "det.release": 0.5}
# det.window: the samples after a detection in which the isolated link may still change (isolation
# only: the studies time the detection); 1e6 for a low-pass residual, 10 for the model-adaptive
# observer's high-pass one (the observers' registered windows when these records were written)
LOW_PASS_WINDOW = 1e6
# The model-adaptive observers (Birjandi & Haddadin eqs. 9-21) in collide's set-up: the adaptation
# held while a collision is latched, a joint is above its threshold, or (at most 100 samples a time)
# above half of it (freeze = 1, suspect = 0.5, suspect_hold = 100: collide's choice since issue #46,
# the adaptive block's defaults; the paper's observer adapts through contacts, freeze = 0: the
# record BIRJANDI below), and in momentum form fed estimates (adaptive_momentum, also with the IMUs)
# the torque the adaptation explains moving at most 1 N m/s on any joint (obs.rate: a fifth of the
# scenario's 5 N m step over the slowest rise it must catch, 1 s; the block's RATE, issue #46; the
# direct form fed estimates has it too since 2026-12-02, a restart's correction included (RATE_DOC),
# the exact-motion forms have no limit, the block's default NO_RATE; the paper's
# adapts at K whatever r is: rate 1e30 below); the covariance's
# prior 0.1 of each base parameter, floored at 1e-3 of the largest, regrowing at 1/60 per second,
# the tip wrench's damping 1e-6 m^2 (the study's own choices, the adaptive block's defaults when
# this record was written); lambda per observer below
_ADAPTIVE: Mapping[str, Any] = {
    "obs.freeze": 1,
    "obs.suspect": 0.5,
    "obs.suspect_hold": 100,
    "obs.prior": 0.1,
    "obs.floor": 0.001,
    "obs.drift": 0.016666666666666666,
    "obs.lam_f": 1e-06,
}

# collide's Kalman: Q = 10 rad^2/s^6 (the study's choice, the kalman block's default when the
# record was written); computed torque's gains before the margin rule below
_COLLIDE_Q = 10.0
_COLLIDE_KP, _COLLIDE_KD = 100.0, 13.0


def kalman_loop_gains(config: RtConfig) -> tuple[np.ndarray, np.ndarray]:
    """collide's Kp, Kd per joint for a loop on the Kalman estimate with this config's encoders and
    rate: Kp = 100, Kd = 13 scaled where the loop would keep less than a 6 dB gain margin."""
    return loop_margin.scaled_gains(
        config.sample_period, _COLLIDE_Q, config["enc.cpr"], config["enc.gear"], _COLLIDE_KP, _COLLIDE_KD
    )


def _imus_see_every_joint(config: RtConfig, robot: Robot | None) -> bool:
    """Whether the pipeline reads IMUs that see every joint's rate and acceleration (one per link)."""
    est = parse_label(config.label).estimator
    tip = bool(dict(est.params).get("tip"))
    return est.name == imu.SPEC.name and robot is not None and imu.gyros_see_every_joint(robot, tip)


def _loop_gains(config: RtConfig, robot: Robot | None, which: int) -> np.ndarray:
    if _imus_see_every_joint(config, robot):
        # every joint's q-dot from the gyros (above 2 rad/s): no quantisation lag
        return np.full(len(config["enc.cpr"]), (_COLLIDE_KP, _COLLIDE_KD)[which])
    # the encoders' lag remains where the gyros do not see a joint (one IMU at the tip: 3 combinations of
    # n rates, the rest the Kalman prediction's; on planar2 its loop at Kp = 100 oscillated, 2026-12-01)
    return kalman_loop_gains(config)[which]


_MARGIN_RULE = (
    f"{{}}; on the Kalman estimate (Q = {_COLLIDE_Q:g}), where that loop would keep a gain margin under "
    f"{loop_margin.MARGIN:g}, Kp lambda^2, Kd lambda with the largest lambda that keeps it "
    "(host_tools.studies.loop_margin); on the IMU estimator's as given where its gyros see every joint "
    "(codegen.blocks.imu.gyros_see_every_joint: one IMU per link), else as on the Kalman estimate"
)


LOOP_GAINS: Mapping[str, Designed] = {
    "ctl.kp": Designed(_MARGIN_RULE.format(f"Kp = {_COLLIDE_KP:g}"), _loop_gains, (0,)),
    "ctl.kd": Designed(_MARGIN_RULE.format(f"Kd = {_COLLIDE_KD:g}"), _loop_gains, (1,)),
}

# Birjandi & Haddadin §IV: the model error of eq. 22, 20 s Fourier motions, filtered steps on the
# first link (Fig. 6), one BMI055 per link; their controller is not stated. The study's loop is
# computed torque with Kp = 100, Kd = 13 (the study's choice: the computed-torque block's defaults
# when this record was written, and the iiwa description's gains), lowered at the same damping ratio
# where the loop on the Kalman estimate would keep less than a 6 dB gain margin (since 2026-12-01:
# planar2's coarse encoders left Kp = 100, Kd = 13 a margin of 1.10, and a draw's 10 % model error a
# limit cycle: LOOP_GAINS; with one IMU per link the IMU estimator's q-dot is the gyros', and its
# loop keeps Kp = 100, Kd = 13, the impacts placed on its own loop where the gains differ; one IMU at
# the tip leaves joints to the encoders and keeps the Kalman loop's margin), and the friction fed forward at
# the desired velocity. Detection without debounce (the delay to the first sample above) or reaction
# (the arm does not stop: every event is timed on the same motion): the study's choice. K_O = 25
# (§V); K = 100 I (§IV) is the study's setting. Encoders only: a Kalman estimate with Q = 10
# rad^2/s^6 (the study's choice, the kalman block's default when this record was written). The IMU
# estimator: BMI055 noise from the data sheet's densities (150 ug/sqrt(Hz), 0.014 deg/s/sqrt(Hz)
# over the internal filters' bandwidths), 1000 deg/s (§V) and 2 g (not §V's 1 g: codegen.blocks.imu
# says why) full scale, the biases calibrated at rest before the runs (IMU_CALIBRATED; since
# 2026-12-02, before none: docs/collision.md "The IMUs calibrated at rest"), Q = 10 rad^2/s^6, R the
# encoder's quantisation, weak priors (1 rad/s, 100 rad/s^2), crossovers 2 and 0.5 rad/s (the
# study's choices, the imu block's defaults when this record was written).
# The IMU-fed pipelines' biases: each axis' mean reading over CALIBRATION_S at rest at the runs' first pose,
# less the description's model's reading at the pose the encoders report (a user's commissioning step)
IMU_CALIBRATED: Mapping[str, str] = {
    f"est.{axis}_bias": f"a standstill calibration ({CALIBRATION_S:g} s) of the draw's sensors at the runs' "
    "first pose (host_tools.studies.imu_calibration)"
    for axis in ("gyro", "acc")
}
COLLISION = PaperSetup(
    study="collision detection on the loopback (manipgen collide: the product's set-up)",
    paper="Birjandi & Haddadin",
    controller=controllers.COMPUTED_TORQUE.name,
    pinned={
        **LOOP_GAINS,
        "ctl.friction_ff": 1.0,
        "det.debounce": 1,
        "det.reaction": 0,
        "det.k_r": 0.03,  # without reaction, no effect
        **STATIC_THRESHOLDS,
    },
    per_setup={
        "model.params": "the description's, every inertial parameter x U(1 -+ model_error) (eq. 22)",
        "det.threshold": "1e30 (no detection) until designed on the collision-free design run, "
        "then per joint (with shape fitted also det.kv, ka, ks, vs)",
        "obs.k_o": "the model-adaptive observers' K: CollideSettings.adaptive_gain (Birjandi & Haddadin's "
        "K = 100 I); the momentum observer's K_O is pinned",
        **IMU_CALIBRATED,
    },
    blocks={
        kalman.SPEC.name: {"est.gain": kalman_gain(_COLLIDE_Q)},
        imu.SPEC.name: {
            "est.noise_acc": 0.025,
            "est.noise_gyro": 0.0032,
            "est.acc_range": 19.6133,
            "est.gyro_range": 17.453292519943297,
            "est.q_var": 10.0,
            "est.r_var": QUANTISATION,
            "est.prior_qd": 1.0,
            "est.prior_qdd": 100.0,
            "est.wv": 2.0,
            "est.wa": 0.5,
        },
        momentum.SPEC.name: {"obs.k_o": 25.0, "det.window": LOW_PASS_WINDOW},
        direct.DIRECT.name: {"det.window": LOW_PASS_WINDOW},
        direct.DIRECT_MEASURED.name: {"det.window": LOW_PASS_WINDOW},
        # lambda, the torque equations' noise variance (N^2 m^2): with the estimator's qdd 0.1, with
        # exact qd, qdd 1e-6, in momentum form 1e-3 (the adaptive observers' registered values)
        adaptive.ADAPTIVE.name: {**_ADAPTIVE, "obs.lam": 0.1, "obs.rate": adaptive.RATE, "det.window": 10},
        adaptive.ADAPTIVE_MEASURED.name: {**_ADAPTIVE, "obs.lam": 1e-06, "obs.rate": 1e30, "det.window": 10},
        adaptive.ADAPTIVE_MOMENTUM.name: {
            **_ADAPTIVE,
            "obs.lam": 0.001,
            "obs.rate": adaptive.RATE,
            "det.window": LOW_PASS_WINDOW,
        },
        # the same observer adapting the essential parameters only (issue #47): adaptive_momentum's set-up
        adaptive.ADAPTIVE_MOMENTUM_ESSENTIAL.name: {
            **_ADAPTIVE,
            "obs.lam": 0.001,
            "obs.rate": adaptive.RATE,
            "det.window": LOW_PASS_WINDOW,
        },
        # the same observer with every sample's dense covariance update (issue #47; collide's
        # adaptive_momentum_imu runs it): its set-up too
        adaptive.ADAPTIVE_MOMENTUM_DENSE.name: {
            **_ADAPTIVE,
            "obs.lam": 0.001,
            "obs.rate": adaptive.RATE,
            "det.window": LOW_PASS_WINDOW,
        },
        # exact q-dot: no rate limit (the block's; codegen.blocks.adaptive RATE_DOC says why)
        adaptive.ADAPTIVE_MOMENTUM_MEASURED.name: {
            **_ADAPTIVE,
            "obs.lam": 0.001,
            "obs.rate": 1e30,
            "det.window": LOW_PASS_WINDOW,
        },
    },
    description=AS_DESCRIBED,
)

# Birjandi & Haddadin's own set-up, as `manipgen reproduce birjandi` runs it: collide's (above) but
# for what the paper states otherwise. The model-adaptive observer adapts through contacts
# (obs.freeze = 0: eqs. 10-11 run every sample, "a moment before the impact ... Y(delta theta -
# delta theta_hat) ~ 0 can also be assumed during the collision", §III; suspect and suspect_hold act
# only with freeze and keep collide's values). Where collide's set-up differs from it, and why:
# BIRJANDI_DIFFERS. Left as collide's, with the reason (the paper's values that are not run): the
# encoders are the description's (the paper's simulated ones: 12 bits, 3 LSB noise), q and the
# torque are not low-passed to 100 Hz, friction is in the plant and exactly in the model (the paper
# neglects it), the IMUs' accelerometers have 2 g full scale (§V: 1 g; codegen.blocks.imu says why).
_PAPERS_ADAPTATION: Mapping[str, Any] = {"obs.freeze": 0, "obs.rate": 1e30}
# Its IMUs are not calibrated (the biases 0, as collide's were before 2026-12-02).
BIRJANDI = replace(
    COLLISION,
    study="Birjandi & Haddadin's simulation (manipgen reproduce birjandi; manipgen collide --setup birjandi)",
    per_setup={k: v for k, v in COLLISION.per_setup.items() if k not in IMU_CALIBRATED},
    blocks={
        b: {**pins, **_PAPERS_ADAPTATION}
        if "obs.freeze" in pins
        else {**pins, **dict.fromkeys(IMU_CALIBRATED, 0.0)}
        if b == imu.SPEC.name
        else pins
        for b, pins in COLLISION.blocks.items()
    },
)


def calibrates_imus(setup: PaperSetup) -> bool:
    """Whether ``setup`` calibrates an IMU-fed pipeline's biases at rest (IMU_CALIBRATED) rather than pinning them."""
    return all(key in setup.per_setup for key in IMU_CALIBRATED)


# collide's set-up against the paper's: field -> why collide runs its own value (the docs' tables say it)
BIRJANDI_DIFFERS: Mapping[str, str] = {
    "obs.freeze": "collide holds the model-adaptive observers' adaptation on a latched collision, above the "
    "threshold and (100 samples at most) above half of it (issue #46), so a contact that rises slower than the "
    "observer adapts is not absorbed into the model error; the paper's observer adapts through contacts",
    "obs.rate": "collide's model-adaptive observers fed estimates (the momentum form's and the direct form's) "
    "move the torque they explain at most 1 N m/s, so a contact rising over 1 s keeps 80 % of a 5 N m step in "
    "the residual (issue #46); the paper's adapts at K whatever the residual",
    **{
        key: "calibrated at rest before collide's runs (host_tools.studies.imu_calibration), so the IMU-fed "
        "estimator does not meet the sensors' drift (up to 0.1 deg/s and 5 mg) with its joint-space corrections "
        "alone (the accelerometers' drift, seen by one IMU at the tip, put tenths of a rad/s into q-dot near the "
        "stretched pose: docs/collision.md); the paper's sensors have no stated bias"
        for key in IMU_CALIBRATED
    },
}
# collide's set-ups by the name `manipgen collide --setup` takes
COLLISION_SETUPS: Mapping[str, PaperSetup] = {"collide": COLLISION, "birjandi": BIRJANDI}


def differences(a: PaperSetup, b: PaperSetup) -> dict[str, tuple[Any, Any]]:
    """The pinned fields whose values differ between two set-ups (over the records' own pins and
    their blocks'): field -> (a's, b's); a field pinned alike in every block reported once."""
    out: dict[str, tuple[Any, Any]] = {}
    for block in sorted(set(a.blocks) | set(b.blocks)):
        pa = {**a.pinned, **a.blocks.get(block, {})}
        pb = {**b.pinned, **b.blocks.get(block, {})}
        for key in sorted(set(pa) | set(pb)):
            if pa.get(key) != pb.get(key):
                out[key] = (pa.get(key), pb.get(key))
    return out


# Kirchhoff (2011) §5.3: the arm's second joint driven from vertical by 120 degrees into a
# Hunt-Crossley obstacle, the tau_el momentum observer (eq. 5.10), threshold 0.1 N m, the reaction
# of eq. 5.1 with K_R = 0.03 I, once without and once with it. His controller is the state feedback
# of host_tools.identification.paper_setups.STATE_FEEDBACK (no gains stated: the study's own rule);
# his observer's K_I is not given: K_O = 25 (the momentum block's default when this record was
# written); detection at the first sample above (no debounce: the study's choice).
ELASTIC_COLLISION = PaperSetup(
    study="the elastic arm's collision test on the loopback (manipgen elastic collide)",
    paper="Kirchhoff (2011)",
    controller=controllers.STATE_FEEDBACK.name,
    pinned={
        **STATE_FEEDBACK,
        "obs.k_o": 25.0,
        "det.debounce": 1,
        "det.window": LOW_PASS_WINDOW,
        **STATIC_THRESHOLDS,
    },
    per_setup={
        "det.threshold": "ScenarioSettings.threshold (Kirchhoff's 0.1 N m), every joint",
        "det.k_r": "ScenarioSettings.k_r (Kirchhoff's K_R = 0.03 I)",
        "det.reaction": "0 (the free run and the collision without reaction), then 2 (the reflex of eq. 5.1)",
    },
    description=ELASTIC_FIELDS,
)

# every study's record, by the command that runs it
RECORDS = (
    VELOCITY_ESTIMATORS,
    COLLISION,
    BIRJANDI,
    ELASTIC_COLLISION,
    XU_IDENTIFICATION,
    BRUNOT_OUTPUT_ERROR,
    KIRCHHOFF_IDENTIFICATION,
)
