"""collide's loop keeps a gain margin (host_tools.studies.loop_margin, issue #46): the margin the
linear analysis predicts is where the generated pipeline on the loopback goes unstable, and the
scaled gains keep 2 where the encoders are coarse and leave a fine-encoder arm's gains alone."""

from __future__ import annotations

import numpy as np
import pytest

from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import load_rt
from host_tools.bindings.source import RobotSource
from host_tools.identification.excitation import random_excitation
from host_tools.reports.collide_study import summary
from host_tools.studies.collide import choices
from host_tools.studies.collide_defaults import ENTRIES
from host_tools.studies.collide_study import CollideItem, CollideRow, run_collide_draw
from host_tools.studies.loop_margin import MARGIN, gain_margin, scaled_gains
from host_tools.studies.paper_setups import COLLISION

PLANAR2_CPR = np.full(2, 16384.0)  # robots/planar2.yaml: link-side encoders, gear 1


def test_the_margin_is_where_the_generated_loop_goes_unstable() -> None:
    """planar2's computed torque (Kp = 100, Kd = 13) on its Kalman estimate (Q = 10) with a model
    whose every parameter is g times the plant's: M_hat = g M, so the PD law runs at gain g exactly.
    Below the predicted margin the loop tracks, above it the oscillation grows to the torque limit."""
    robot = RobotSource.of("planar2").robot()
    margin = gain_margin(robot.sample_period, 10.0, PLANAR2_CPR, np.ones(2), np.full(2, 100.0), np.full(2, 13.0))
    # a coarse encoder's slow Kalman leaves these gains little margin (the defect it fixes)
    assert 1.05 < margin[0] < 1.15 and margin[0] == margin[1]
    motion = random_excitation(robot, 3, base_frequency=1 / 6.0, rate=1 / robot.sample_period).trajectory(
        robot.sample_period
    )
    true = robot.standard_parameters()
    behind = {}
    for g in (0.9 * margin[0], 1.15 * margin[0]):
        rt = load_rt(robot, *choices(None))
        COLLISION.apply(rt.config, robot)
        rt.config["ctl.kp"], rt.config["ctl.kd"] = 100.0, 13.0
        rt.config["model.params"] = g * true
        log = simulate(rt, motion, true_params=true).log
        k1 = int(round(1.0 / robot.sample_period))
        behind[g] = float(np.abs(log.extra["qd_true"][k1:] - log.qd_des[k1:]).max())
    stable, unstable = behind.values()
    # tracking within a few hundredths of a rad/s (the motion's speeds reach 2 rad/s) against an
    # oscillation tens of times larger: the loop's own verdict, no threshold near either figure
    assert stable < 0.1 < 1.0 < unstable, behind


@pytest.mark.parametrize(("cpr", "gear"), [(PLANAR2_CPR, np.ones(2)), (np.full(2, 4096.0), np.ones(2))])
def test_scaled_gains_keep_the_margin_at_the_same_damping(cpr: np.ndarray, gear: np.ndarray) -> None:
    kp, kd = scaled_gains(1e-3, 10.0, cpr, gear, 100.0, 13.0)
    assert np.all(kp < 100.0) and np.all(kd < 13.0)
    margin = gain_margin(1e-3, 10.0, cpr, gear, kp, kd)
    # lambda is the largest that keeps the margin, rounded down to 1e-3: the margin at least MARGIN,
    # and above it by no more than a step of 1e-3 in lambda moves it (measured 0.20 % at planar2's
    # lambda 0.627, 0.31 % at the 4096-count encoder's 0.395): 0.5 %
    assert np.all(margin >= MARGIN) and np.all(margin < MARGIN * 1.005), margin


@pytest.mark.parametrize(
    ("cpr", "kp", "named"),
    [(np.array([16384.0, 0.0]), 100.0, "encoder cpr"), (PLANAR2_CPR, -100.0, "Kp"), (PLANAR2_CPR, np.nan, "Kp")],
)
def test_a_loop_that_is_not_one_is_refused(cpr: np.ndarray, kp: float, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        gain_margin(1e-3, 10.0, cpr, np.ones(2), np.full(2, kp), np.full(2, 13.0))
    with pytest.raises(ValueError, match=named):
        scaled_gains(1e-3, 10.0, cpr, np.ones(2), kp, 13.0)


def test_a_fine_encoder_keeps_its_gains() -> None:
    """The iiwa: 65536 counts per motor turn through 160:1 (robots/kuka_iiwa14.yaml): margin 13."""
    cpr, gear = np.full(7, 65536.0), np.full(7, 160.0)
    assert np.all(gain_margin(1e-3, 10.0, cpr, gear, np.full(7, 100.0), np.full(7, 13.0)) > 10)
    kp, kd = scaled_gains(1e-3, 10.0, cpr, gear, 100.0, 13.0)
    assert np.all(kp == 100.0) and np.all(kd == 13.0)


def test_collide_runs_the_scaled_gains() -> None:
    """collide's set-up pins the rule (paper_setups.LOOP_GAINS): planar2's Kalman-fed pipelines get
    the scaled gains, its pipelines fed by one IMU per link (every joint's q-dot the gyros') and the
    iiwa's Kp = 100, Kd = 13; one IMU at planar2's tip leaves a combination of rates to the encoders
    and gets the Kalman loop's scaled gains (at Kp = 100 that loop oscillated on a draw, 2026-12-01)."""
    for name, estimator, reduced in (
        ("planar2", None, True),
        ("planar2", ENTRIES["adaptive_imu"], False),
        ("planar2", ENTRIES["adaptive_imu_tip"], True),
        ("kuka_iiwa14", None, False),
        ("kuka_iiwa14", ENTRIES["adaptive_imu_tip"], False),  # its fine encoders keep the margin at 100, 13
    ):
        robot = RobotSource.of(name).robot()
        rt = load_rt(robot, *choices(estimator))
        COLLISION.apply(rt.config, robot)
        kp, kd = np.asarray(rt.config["ctl.kp"]), np.asarray(rt.config["ctl.kd"])
        if reduced:
            assert np.all(kp < 100.0) and np.all(kd < 13.0)
            margin = gain_margin(robot.sample_period, 10.0, rt.config["enc.cpr"], rt.config["enc.gear"], kp, kd)
            assert np.all(margin >= MARGIN)
        else:
            assert np.all(kp == 100.0) and np.all(kd == 13.0), (name, estimator)


def test_a_study_item_on_its_own_loop_counts_its_own_impacts() -> None:
    """planar2's IMU-fed observer keeps Kp = 100, Kd = 13, so its loop meets impacts placed on it, at
    other tip speeds than the Kalman-fed loop's: the study's item maps each to its target speed (the
    labels of the impacts it met), and the report groups them with the others' by target."""
    source = RobotSource.of("planar2")
    order = ("momentum", "adaptive_imu")
    items = tuple(CollideItem("planar2", source.key, o, 0, 0.1, False, "{}", 0.0, 0.0) for o in order)
    rows = [CollideRow(it, entry, *times) for it, (entry, *times) in zip(items, run_collide_draw(items, source))]
    kal, imu = (row.result for row in rows)
    assert set(imu["impact_delay_ms"]) != set(kal["impact_delay_ms"])  # other speeds: its own impacts
    for entry in (kal, imu):  # each of its own impacts stands for one of the targets
        assert sorted(entry["impact_targets"].values()) == [0.1, 0.25, 0.5]
    assert kal["model"] == imu["model"] == "description"
    delays = summary(rows, len(rows))["groups"]["planar2"]["observers"]["adaptive_imu"]["delay_by_kind"]
    assert {k for k in delays if k.startswith("impact")} == {"impact 0.1 m/s", "impact 0.25 m/s", "impact 0.5 m/s"}


def test_gyros_see_every_joint_with_one_imu_per_revolute_link() -> None:
    """The structural rule behind the IMU-fed loop's gains (codegen.blocks.imu.gyros_see_every_joint):
    one IMU on every link of an all-revolute arm (planar2's and the iiwa's imus:) sees every joint's
    rate, one at the tip of a multi-joint arm does not, nor a set that leaves a link without one."""
    from dataclasses import replace

    from codegen.blocks.imu import gyros_see_every_joint

    for name in ("planar2", "kuka_iiwa14"):
        robot = RobotSource.of(name).robot()
        assert gyros_see_every_joint(robot, tip=False) and not gyros_see_every_joint(robot, tip=True), name
        assert not gyros_see_every_joint(replace(robot, imus=robot.imus[1:]), tip=False), name
