"""Generation-time choices of the real-time pipeline: which estimator, observer and controller.

Written on the command line as ``--estimator lsf:n=4,p=1`` or in the robot YAML as
``realtime: {estimator: {name: lsf, n: 4, p: 1}, observer: momentum, controller: computed_torque,
config: {kalman.q_var: 20, obs.k_o: 25}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codegen.blocks import registry
from codegen.errors import DescriptionError
from codegen.model.robot import Robot


class OptionError(ValueError):
    """A malformed estimator/observer/controller choice (message names the option)."""


@dataclass(frozen=True)
class EstimatorChoice:
    name: str
    params: tuple[tuple[str, float], ...] = ()

    def get(self, key: str) -> float:
        return dict(self.params)[key]

    @property
    def label(self) -> str:
        return self.name + (":" + ",".join(f"{k}={v:g}" for k, v in self.params) if self.params else "")


def estimator_choice(name: str, params: dict[str, object]) -> EstimatorChoice:
    """An estimator with its options (the registry's defaults for those not given), checked."""
    specs = registry.estimators()
    if name not in specs:
        raise OptionError(f"unknown estimator {name!r}; choose from {', '.join(specs)}")
    spec = specs[name]
    allowed = spec.options
    merged: dict[str, float] = {k: float(v) for k, v in spec.defaults.items()}
    for key, value in params.items():
        if key not in allowed:
            raise OptionError(
                f"estimator {name} has no option {key!r}" + (f" (options: {', '.join(allowed)})" if allowed else "")
            )
        try:
            v = allowed[key](value)
        except (TypeError, ValueError):
            raise OptionError(f"estimator {name}: {key} must be {allowed[key].__name__}, got {value!r}") from None
        if isinstance(value, float) and allowed[key] is int and value != int(value):
            raise OptionError(f"estimator {name}: {key} must be an integer, got {value!r}")
        merged[key] = float(v)
    problem = spec.check(merged) if spec.check is not None else None
    if problem:
        raise OptionError(problem)
    return EstimatorChoice(name, tuple(sorted(merged.items())))


def parse_estimator(text: str) -> EstimatorChoice:
    """``name`` or ``name:key=value,key=value``."""
    name, _, rest = text.partition(":")
    params: dict[str, object] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise OptionError(f"estimator option {item!r} is not key=value")
        try:
            params[key.strip()] = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            raise OptionError(f"estimator option {item!r}: {value!r} is not a number") from None
    return estimator_choice(name.strip(), params)


@dataclass(frozen=True)
class RtOptions:
    estimator: EstimatorChoice = field(default_factory=lambda: estimator_choice(registry.default_estimator().name, {}))
    observer: str = field(default_factory=lambda: registry.default_observer().name)
    controller: str = field(default_factory=lambda: registry.default_controller().name)
    constant_params: bool = False  # fold the robot's parameters in (fast path, no model config)
    sample_period: float | None = None  # None: the robot description's

    def __post_init__(self) -> None:
        if self.observer not in registry.observers():
            raise OptionError(f"unknown observer {self.observer!r}; choose from {', '.join(registry.observers())}")
        if self.sample_period is not None and not (0 < self.sample_period < 10):
            raise OptionError(f"sample period must be in (0, 10) s, got {self.sample_period!r}")
        if self.controller not in registry.controllers():
            raise OptionError(
                f"unknown controller {self.controller!r}; choose from {', '.join(registry.controllers())}"
            )

    def as_dict(self) -> dict[str, Any]:
        """Every option at full precision (the generated manifest: `manipgen verify` regenerates a
        folder from it); :func:`rt_options_from_dict` reads it back."""
        return {
            "estimator": self.estimator.name,
            "estimator_params": dict(self.estimator.params),
            "observer": self.observer,
            "controller": self.controller,
            "constant_params": self.constant_params,
            "sample_period": self.sample_period,
        }

    @property
    def label(self) -> str:
        return (
            f"{self.estimator.label} + {self.observer} + {self.controller}"
            + (" (constant parameters)" if self.constant_params else "")
            + (f" @ {self.sample_period!r} s" if self.sample_period else "")
        )


def parse_label(label: str) -> RtOptions:
    """The inverse of :attr:`RtOptions.label` ("kalman + momentum + computed_torque", "lsf:n=4,p=1 +
    ... (constant parameters) @ 0.004 s"): the pipeline a saved config names."""
    text, at, period = label.partition(" @ ")
    sample_period = None
    if at:
        if not period.endswith(" s"):
            raise OptionError(f"pipeline {label!r}: expected '... @ <seconds> s'")
        try:
            sample_period = float(period[:-2])
        except ValueError:
            raise OptionError(f"pipeline {label!r}: {period!r} is not a sample period") from None
    constant = text.endswith(" (constant parameters)")
    text = text.removesuffix(" (constant parameters)")
    parts = [part.strip() for part in text.split(" + ")]
    if len(parts) != 3:
        raise OptionError(f"pipeline {label!r}: expected 'estimator + observer + controller'")
    return RtOptions(parse_estimator(parts[0]), parts[1], parts[2], constant, sample_period)


def rt_options_from_dict(d: dict[str, Any]) -> RtOptions:
    """The inverse of :meth:`RtOptions.as_dict` (checked like any other options)."""
    return RtOptions(
        estimator=estimator_choice(str(d["estimator"]), dict(d["estimator_params"])),
        observer=str(d["observer"]),
        controller=str(d["controller"]),
        constant_params=bool(d["constant_params"]),
        sample_period=None if d["sample_period"] is None else float(d["sample_period"]),
    )


@dataclass(frozen=True)
class RealtimeDefaults:
    """The robot YAML's ``realtime:`` section (options and config overrides with their lines)."""

    options: RtOptions = field(default_factory=lambda: RtOptions())
    config: tuple[tuple[str, tuple[float, ...], int], ...] = ()  # (block.field, values, line)
    given: frozenset[str] = field(default_factory=frozenset)  # which of the options were set


def realtime_defaults(robot: Robot) -> RealtimeDefaults:
    """The pipeline a robot's description asks for (its ``realtime:`` section), checked against the
    blocks that exist; an elastic arm's controller defaults to the registry's elastic default (it
    commands motor torques). Errors name the description's file, field and line."""
    kw: dict[str, object] = {}
    for key, value, line in robot.realtime.choices:
        try:
            if key == "estimator":
                kw[key] = parse_estimator(str(value))
            else:
                kw[key] = value
                RtOptions(**{key: value})  # type: ignore[arg-type]
        except OptionError as exc:
            raise DescriptionError(robot.file, f"realtime.{key}", str(exc), line or None) from None
    given = frozenset(kw)
    if robot.elastic and "controller" not in kw:
        kw["controller"] = registry.default_controller(elastic=True).name
    return RealtimeDefaults(options=RtOptions(**kw), config=robot.realtime.config, given=given)  # type: ignore[arg-type]
