"""What a work item carries to a worker that may run on another machine: the robot description as
text (never a path that only the sending machine has, never a cffi object) and the options of the
C to build from it. The worker writes the text into its own build cache ($MANIPGEN_CACHE), loads it
there, and generates and compiles once per description and options into the same content-addressed,
locked cache as every local build (host_tools.bindings.build); a worker with an empty cache works.

The generated C only names the description's file (``manifest.json``'s ``description``), never its
folder, so the C a worker builds is byte-identical to the sender's.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from codegen.blocks.options import EstimatorChoice, realtime_defaults, rt_options_from_dict
from codegen.emit.cprint import Precision
from codegen.model.description import load_robot
from codegen.model.robot import Robot, with_friction_terms, with_standin_limits
from host_tools.bindings.build import cache_root, locked
from host_tools.bindings.compiled import generated_folder
from host_tools.bindings.rt import Realtime, rt_options

OVERLAY_FILE = "overlay.yaml"


@dataclass(frozen=True)
class RobotSource:
    """A robot description as bytes, with the URDF chain arguments (``load_robot``'s)."""

    filename: str  # the description's file name (its suffix says the format)
    text: bytes
    base_link: str | None = None
    tip_link: str | None = None
    overlay: bytes | None = None  # a URDF's YAML overlay
    # friction terms per joint besides the description's (a config's: with_config_terms)
    friction_terms: tuple[tuple[str, ...], ...] = ()
    # STANDIN_LIMITS for the joints without position or velocity limits (collide, issue #46)
    standin_limits: bool = False

    @staticmethod
    def of(
        spec: str | Path, base_link: str | None = None, tip_link: str | None = None, overlay: str | Path | None = None
    ) -> RobotSource:
        """The description ``load_robot`` reads for these arguments (checked here: a bad file fails on
        the sending machine, with its file and field named, not on a worker)."""
        robot = load_robot(spec, base_link=base_link, tip_link=tip_link, overlay=overlay)
        path = Path(robot.file)
        return RobotSource(
            path.name, path.read_bytes(), base_link, tip_link, Path(overlay).read_bytes() if overlay else None
        )

    @staticmethod
    def named_in(folder: Path, name: str) -> RobotSource:
        """The description a spec file in ``folder`` names (a study's ``robots:``): a file next to the
        spec, else a bundled name or a path from the working directory. Raises DescriptionError."""
        local = folder / name
        return RobotSource.of(local if local.suffix and local.is_file() else name)

    @property
    def key(self) -> str:
        h = hashlib.sha256(self.filename.encode() + b"\0" + self.text)
        h.update(b"\0" + (self.overlay or b"") + f"\0{self.base_link}\0{self.tip_link}".encode())
        if self.friction_terms:
            h.update(repr(self.friction_terms).encode())
        if self.standin_limits:
            h.update(b"\0standin limits")
        return h.hexdigest()[:16]

    def robot(self) -> Robot:
        """The description, loaded from this machine's cache (written there once)."""
        with _MEMO_LOCK:
            if self.key not in _ROBOTS:
                path, overlay = self._materialised()
                robot = load_robot(path, base_link=self.base_link, tip_link=self.tip_link, overlay=overlay)
                terms = self.friction_terms
                robot = with_friction_terms(robot, terms) if terms else robot
                _ROBOTS[self.key] = with_standin_limits(robot) if self.standin_limits else robot
            return _ROBOTS[self.key]

    def _materialised(self) -> tuple[Path, Path | None]:
        folder = cache_root() / "descriptions" / self.key
        files = [(folder / self.filename, self.text)] + (
            [(folder / OVERLAY_FILE, self.overlay)] if self.overlay else []
        )
        with locked(cache_root() / "locks" / f"description_{self.key}.lock"):
            for path, text in files:
                if not path.is_file() or path.read_bytes() != text:
                    folder.mkdir(parents=True, exist_ok=True)
                    part = path.with_name(path.name + f".{os.getpid()}.part")
                    part.write_bytes(text)
                    part.replace(path)  # whole or absent, also for a reader without the lock
        return folder / self.filename, (folder / OVERLAY_FILE) if self.overlay else None


_ROBOTS: dict[str, Robot] = {}
_MEMO_LOCK = threading.Lock()


@dataclass(frozen=True)
class PipelineSource:
    """A real-time pipeline as a work item carries it: the description and the generation options
    (``RtOptions.as_dict`` as sorted JSON, so the item is hashable and pickles small)."""

    robot: RobotSource
    options: str
    precision: Precision = "double"

    @staticmethod
    def of(
        robot: RobotSource | str | Path,
        estimator: str | EstimatorChoice | None = None,
        observer: str | None = None,
        controller: str | None = None,
        sample_period: float | None = None,
        precision: Precision = "double",
    ) -> PipelineSource:
        """``load_rt``'s choices (unset ones from the description's ``realtime:`` section, then the
        defaults) for a description: a RobotSource, a bundled name or a file."""
        src = robot if isinstance(robot, RobotSource) else RobotSource.of(robot)
        defaults = realtime_defaults(src.robot()).options
        options = rt_options(estimator, observer, controller, None, defaults, sample_period)
        return PipelineSource(src, json.dumps(options.as_dict(), sort_keys=True), precision)

    def folder(self) -> Path:
        """The generated folder in this machine's cache (generated once)."""
        return generated_folder(
            self.robot.robot(), precision=self.precision, rt=rt_options_from_dict(json.loads(self.options))
        )

    def realtime(self) -> Realtime:
        """A fresh pipeline instance, compiled once per machine."""
        return Realtime(self.folder())
