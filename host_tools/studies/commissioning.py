"""The model a commissioning run identifies (issue #46: ``manipgen collide --model identified``).

collide's observers run on the description's model with every inertial parameter off by up to
``model_error`` (Birjandi & Haddadin eq. 22). A user does not deploy a model-based observer on such a
model: it runs the arm first, and ``manipgen identify`` fits the model on that run. Here that run is
the draw's warm-up motions (collide.commissioning_motion: held out from the threshold design, whose
blocks then see the model's error on motions it was not fitted on) in closed loop through the
pipeline of the drawn model (Kalman estimator, computed torque: collide's own loop). The model is
identified on its log with identify's recorded-run settings, the description's friction forms kept
(the generated pipeline has no other friction terms: ``friction_terms`` off) and the velocity chosen
on held-out blocks. The identified parameters then replace the drawn ones in the non-adaptive observers'
pipelines (observer and controller: one model); the model-adaptive observers keep the drawn model,
which they adapt on line (as ``thresholds``' auto keeps them on the description's: design_model).
"""

from __future__ import annotations

import numpy as np

from codegen.model.robot import Robot
from host_tools.bindings.loopback import simulate
from host_tools.bindings.rt import Realtime
from host_tools.data.trajectories import Trajectory
from host_tools.identification.pipeline import IdentSettings, default_min_speed
from host_tools.identification.run import identify_run

MODELS = ("description", "identified")  # collide --model: the non-adaptive observers' nominal model


def commissioning_settings(robot: Robot) -> IdentSettings:
    """identify's recorded-run settings (velocity chosen on held-out blocks) with the description's
    friction forms only: the pipeline the parameters go to has no other friction term."""
    return IdentSettings(min_speed=default_min_speed(robot, False, False), velocity="auto")


def identified_parameters(robot: Robot, rt: Realtime, motion: Trajectory, true: np.ndarray) -> np.ndarray:
    """``motion`` in closed loop through ``rt`` (its model the drawn one) on the plant of ``true``,
    and the standard parameters (model.params) identified on that run's log."""
    run = simulate(rt, motion, true_params=true)
    result = identify_run(robot, run.log, None, None, commissioning_settings(robot))
    params = np.asarray(result.config()["model.params"], dtype=float)
    if params.shape != true.shape or not np.all(np.isfinite(params)):
        raise ValueError(f"{robot.name}: the commissioning run's identification gave no usable model")
    return params
