"""The block registry: every estimator, observer and controller declares itself here once.

A block module builds its :class:`~codegen.blocks.base.Block` (CasADi functions, fields, the C
template it uses) and registers a spec with what the rest of the tool needs to
know about it: its name, its generation-time options with their defaults and checks, how to build
it, when it gives an acceleration, its GA genes for tuning and its place in Liu et al.'s study; an
observer also the motion it reads and from where, the sensors the loopback provides for it, the gains
``thresholds --tune`` searches and its place in ``collide``; a controller the arms it is for. Every
list of names (the command line's choices and help, ``evaluate``, ``tune``, ``thresholds``,
``collide``, the reports, the motor-side estimators, the pipeline's checks and defaults) reads this
registry, so adding a block is one module (and, if its C plumbing is not the generic one, one
template)::

    from codegen.blocks import registry
    registry.register(registry.Estimator(name="mine", summary="...", build=build, ...))

Modules outside the project register the same way before they generate
(``tests/codegen/blocks/test_block_registry.py`` adds an alpha-beta filter from the test file alone).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codegen.blocks.base import Block
    from codegen.blocks.context import Ctx
    from codegen.blocks.options import EstimatorChoice
    from codegen.model.robot import Robot

# the project's own block modules: importing one registers its blocks
BUILTIN = (
    "codegen.blocks.findiff",
    "codegen.blocks.fir",
    "codegen.blocks.kalman",
    "codegen.blocks.linhg",
    "codegen.blocks.nlhg",
    "codegen.blocks.slimod",
    "codegen.blocks.imu",
    "codegen.blocks.momentum",
    "codegen.blocks.adaptive",
    "codegen.blocks.direct",
    "codegen.blocks.controllers",
)

Design = dict[str, tuple[tuple[float, ...], int]]  # realtime.config design values: key -> (values, line)


@dataclass(frozen=True)
class Gene:
    """A run-time gain the GA searches (Liu et al. §III), in log space within [low, high]."""

    key: str  # config key without ``cfg.``, e.g. est.h1
    low: float
    high: float
    per_joint: bool = True  # one gene per joint, else one scalar


@dataclass(frozen=True)
class Estimator:
    """A velocity estimator (``out.q_hat``, ``out.qd_hat``, ``out.qdd_hat``; Liu et al. §II)."""

    name: str
    summary: str  # one line: what it is, which paper and equation
    build: Callable[[Ctx, EstimatorChoice], Block]
    options: Mapping[str, type] = field(default_factory=dict)  # generation-time options (name:key=value)
    defaults: Mapping[str, float] = field(default_factory=dict)
    check: Callable[[Mapping[str, float]], str | None] | None = None  # why these options are invalid
    acceleration: str = ""  # when it gives q-ddot, for messages: "" never, "always", or a condition ("with p >= 2")
    model_based: bool = False  # reads the rigid model (forward dynamics): no motor-side twin on elastic arms
    genes: tuple[Gene, ...] = ()  # continuous gains the GA tunes
    grid: tuple[str, ...] = ()  # integer-option variants the grid search tries instead
    in_study: bool = False  # one of Liu et al.'s compared estimators (evaluate's default set)
    design_keys: tuple[str, ...] = ()  # generation-time design values in realtime.config (<name>.<key>)
    # after the config overrides: (its block, all blocks, robot, design values given, sample period)
    finish: Callable[[Block, list[Block], Robot, Design, float], None] | None = None
    # a new design of its run-time gains from design values, without regenerating (RtConfig.redesign,
    # the GA's genes among design_keys): (sample period, its options, the config's enc.* fields, the
    # design values given) -> the config fields it sets; a ValueError says why the values are refused
    redesign: Callable[[float, Mapping[str, float], Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None
    template: str | Path | None = None  # C plumbing from outside templates/: jinja text or a .c.j2 file
    default: bool = False  # the pipeline's estimator when nothing else is chosen
    sensors: tuple[str, ...] = ()  # its inputs read from sensors the loopback simulates (in.<name>)

    def template_text(self) -> str:
        """The C plumbing given with the spec ('' when the block names one under templates/rt)."""
        if self.template is None:
            return ""
        return self.template.read_text() if isinstance(self.template, Path) else self.template


@dataclass(frozen=True)
class Tunable:
    """A run-time gain ``manipgen thresholds --tune`` chooses on a collision-free log: the candidate
    whose residual is quietest (host_tools.studies.thresholds.tune_observer)."""

    key: str  # config key, e.g. obs.lam
    grid: tuple[float, ...]  # the candidates
    what: str  # in words, for messages and help: "the adaptive observer's damping lambda"


@dataclass(frozen=True)
class Observer:
    """A collision observer (residual ``out.r``, Birjandi & Haddadin, Kirchhoff (2011) §5) or ``none``."""

    name: str
    summary: str
    build: Callable[[Ctx], Block] | None  # None: no observer
    motion: tuple[str, ...] = ("qd",)  # what it reads of the motion besides q: ("qd",) or ("qd", "qdd")
    # that motion from inputs (in.qd_meas, in.qdd_meas: IMU-fused, or the loopback's exact motion)
    # instead of the estimator's qd_hat, qdd_hat
    measured: bool = False
    elastic: bool = False  # available on series-elastic arms
    window: int = 1_000_000  # samples within which detection isolates the joint after the flag
    fields: tuple[str, ...] = ()  # its config fields (obs.<field> keys a description may set)
    adaptive: bool = False  # model-adaptive (Birjandi & Haddadin): learns the model error online (obs.k_o, obs.freeze)
    tunables: tuple[Tunable, ...] = ()  # gains `manipgen thresholds --tune` chooses on a log
    # `manipgen collide`'s default set: 0 not compared; else its series (1: Birjandi & Haddadin's residuals,
    # 2: the adaptive observer's momentum form, issue #25), each listing its observers fed by the
    # estimator, then the measured ones, then the IMU-fed entries
    collide: int = 0
    # collide's entries fed by the imu estimator's q-dot (and q-ddot): "links" one IMU per link (the
    # description's imus:), "tip" one at the tip frame -> whether the default set compares it
    imu: Mapping[str, bool] = field(default_factory=dict)
    # the registered observer those IMU-fed entries run ("": this one), listed under this one's name
    imu_build: str = ""
    default: bool = False  # the pipeline's observer when nothing else is chosen

    @property
    def needs_acceleration(self) -> bool:
        """Reads the estimator's q-ddot."""
        return "qdd" in self.motion and not self.measured

    @property
    def sensors(self) -> tuple[str, ...]:
        """The inputs the loopback provides for it (in.<name>: the simulated plant's exact motion)."""
        return tuple(f"{m}_meas" for m in self.motion) if self.measured else ()

    @property
    def replays_logs(self) -> bool:
        """A residual a log can be replayed through (`manipgen thresholds`): it reads q, tau and the
        estimator's motion only, not measured motion a log does not carry."""
        return self.build is not None and not self.measured


@dataclass(frozen=True)
class Controller:
    """A joint controller (``out.tau_cmd``) or ``none``."""

    name: str
    summary: str
    build: Callable[[Ctx], Block] | None  # None: no controller
    rigid: bool = True  # available on rigid arms
    elastic: bool = False  # available on series-elastic arms (commands motor torques)
    default: bool = False  # the pipeline's controller of a rigid arm when nothing else is chosen
    default_elastic: bool = False  # that of a series-elastic arm


_ESTIMATORS: dict[str, Estimator] = {}
_OBSERVERS: dict[str, Observer] = {"none": Observer("none", "no collision observer", None, elastic=True)}
_CONTROLLERS: dict[str, Controller] = {"none": Controller("none", "no controller", None, elastic=True)}
_loaded = False
_ORIGIN: dict[str, tuple[int, int]] = {}  # block name -> (its module's place in BUILTIN, registration count)


def register(*specs: Estimator | Observer | Controller) -> None:
    """Add blocks to the registry (a name may be registered once; re-registering the same spec is
    harmless, so a module may be imported twice)."""
    for spec in specs:
        table: dict[str, Any] = (
            _ESTIMATORS if isinstance(spec, Estimator) else _OBSERVERS if isinstance(spec, Observer) else _CONTROLLERS
        )
        if spec.name in table and table[spec.name] != spec:
            raise ValueError(f"a block named {spec.name!r} is already registered")
        if not spec.name.isidentifier():
            raise ValueError(f"block names are C identifiers, got {spec.name!r}")
        if spec.name not in table:
            # where it was registered from (the calling module), for the registry's order (_load)
            caller = sys._getframe(1).f_globals.get("__name__", "")
            _ORIGIN[spec.name] = (BUILTIN.index(caller) if caller in BUILTIN else len(BUILTIN), len(_ORIGIN))
        table[spec.name] = spec


def _load() -> None:
    """Import the built-in block modules; the tables then list their blocks in BUILTIN's order (a
    module's blocks in the order it registers them), then the others in registration order --
    whichever module an import chain happened to load first (a test module, a walk over the package)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN:
            importlib.import_module(module)
        tables: tuple[dict[str, Any], ...] = (_ESTIMATORS, _OBSERVERS, _CONTROLLERS)
        for table in tables:
            ordered = sorted(table.items(), key=lambda item: _ORIGIN.get(item[0], (-1, -1)))
            table.clear()
            table.update(ordered)


def estimators() -> Mapping[str, Estimator]:
    _load()
    return MappingProxyType(_ESTIMATORS)


def observers() -> Mapping[str, Observer]:
    _load()
    return MappingProxyType(_OBSERVERS)


def controllers() -> Mapping[str, Controller]:
    _load()
    return MappingProxyType(_CONTROLLERS)


def default_estimator() -> Estimator:
    return next(e for e in estimators().values() if e.default)


def default_observer() -> Observer:
    return next(o for o in observers().values() if o.default)


def default_controller(elastic: bool = False) -> Controller:
    """The pipeline's controller when nothing else is chosen, for a rigid or a series-elastic arm."""
    return next(c for c in controllers().values() if (c.default_elastic if elastic else c.default))


def study_estimators() -> tuple[str, ...]:
    """Liu et al.'s compared estimators, in registration order (evaluate's default set)."""
    return tuple(n for n, e in estimators().items() if e.in_study)


def tuned_estimators() -> tuple[str, ...]:
    """Those with continuous gains the GA tunes (Liu et al. §III)."""
    return tuple(n for n, e in estimators().items() if e.genes)


def acceleration_estimators() -> str:
    """Which estimators give q-ddot, in words (for errors)."""
    parts = [
        n if e.acceleration == "always" else f"{n} {e.acceleration}" for n, e in estimators().items() if e.acceleration
    ]
    return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else "".join(parts)
