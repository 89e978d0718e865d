"""`manipgen excite`'s files: the design as JSON, one period as a figure, and the C evaluating it."""

from __future__ import annotations

import json
from pathlib import Path

from codegen.emit.files import write_file
from codegen.model.robot import Robot
from host_tools.identification.excitation import DesignResult
from host_tools.reports import plots


def write(result: DesignResult, robot: Robot, sample_period: float, out: Path) -> list[Path]:
    """excitation.json (the design and its coefficients), excitation.png (one period) and the C
    (<robot>_excitation.{h,c}) evaluating it at the controller's sample period."""
    from codegen.emit.excitation import excitation_files

    exc = result.excitation
    files = excitation_files(robot.c_name, robot.name, exc.a, exc.b, exc.q0, exc.base_frequency, sample_period)
    written = []
    for name, text in files.items():
        write_file(out / name, text)
        written.append(out / name)
    write_file(out / "excitation.json", json.dumps(result.to_dict(), indent=1) + "\n")
    written.append(out / "excitation.json")
    written.append(plots.excitation(exc, out / "excitation.png", robot))
    return written
