"""What identification takes from the input checks (host_tools.data.checks): their findings on the
fitting and the validation log, which samples are left out, and whether the data belong to the robot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from codegen.model.robot import Robot
from host_tools.data.checks import SETTLE, TIMING_SETTLE_FIT, LogChecks
from host_tools.data.csvdata import Samples
from host_tools.data.logs import Log, recorded_for

if TYPE_CHECKING:  # the excitation design imports the trajectory splines (0.25 s)
    from host_tools.identification.excitation import Excitation


@dataclass(frozen=True)
class InputChecks:
    """The input checks' findings on the fitting and the validation log (None: a CSV, not checked),
    and whether their flagged samples are kept (--keep-flagged) or left out (the default)."""

    data: LogChecks | None = None
    validate: LogChecks | None = None
    keep_flagged: bool = False

    def left_out(self, checks: LogChecks | None, sample_period: float) -> np.ndarray | None:
        """The samples to leave out of one log (None: none): the flagged ones and the filters'
        settling around them (LogChecks.left_out)."""
        return None if checks is None or self.keep_flagged else checks.left_out(sample_period, TIMING_SETTLE_FIT)

    def as_json(self) -> list[dict[str, Any]]:
        """Every finding, {kind, joint, t0, t1, samples, detail, source (the file)}."""
        return [{**f, "source": c.source} for c in (self.data, self.validate) if c is not None for f in c.as_json()]

    def flagged_samples(self) -> dict[str, int]:
        return {w: int(c.flagged.sum()) for w, c in (("data", self.data), ("validate", self.validate)) if c is not None}

    def lines(self) -> list[str]:
        out = [line for c in (self.data, self.validate) if c is not None for line in c.lines()]
        if out:
            out.append(
                "the flagged samples are used as they are (--keep-flagged)"
                if self.keep_flagged
                else f"the flagged samples (and {SETTLE:g} s either side: the filters' settling; less around gaps "
                "and repeated rows where they are dense) are left out of the fit and the validation RMS "
                "(--keep-flagged keeps them)"
            )
        return out


def check_inputs(robot: Robot, log: Log | Samples, exc: Excitation | None, validate: Log | Samples | None) -> None:
    """The data and the excitation belong to this robot (one clear error otherwise)."""
    if exc is not None and len(exc.q0) != robot.dof:
        raise ValueError(f"the excitation has {len(exc.q0)} joints, {robot.name} has {robot.dof}")
    for what, data in (("DATA", log), ("--validate", validate)):
        if isinstance(data, Log) and data.robot != robot.c_name:
            raise ValueError(f"{what}: the log is of robot {recorded_for(data)!r}, not {robot.name!r}")
        if data is not None and np.shape(data.tau)[1] != robot.dof:
            raise ValueError(f"{what}: {np.shape(data.tau)[1]} joints in the data, {robot.name} has {robot.dof}")
