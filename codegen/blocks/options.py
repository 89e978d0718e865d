"""Generation-time choices of the real-time pipeline: which estimator, observer and controller.

Written on the command line as ``--estimator lsf:n=4,p=1`` or in the robot YAML as
``realtime: {estimator: {name: lsf, n: 4, p: 1}, observer: momentum, controller: computed_torque,
config: {kalman.q_var: 20, obs.k_o: 25}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ESTIMATORS: dict[str, dict[str, type]] = {
    "findiff": {},
    "movav": {"p": int},
    "lsf": {"n": int, "p": int},
    "bde": {"n": int},
    "tse": {"n": int},
    "ewlr": {"n": int, "lam": float},
    "kalman": {},
    "linhg": {},
    "nlhg": {},
    "slimod": {},
}
OBSERVERS = ("none", "momentum", "adaptive", "adaptive_measured", "direct", "direct_measured")
CONTROLLERS = ("none", "computed_torque", "pid", "state_feedback")  # state_feedback: elastic arms
DEFAULT_OPTIONS: dict[str, dict[str, float]] = {
    "movav": {"p": 2},
    "lsf": {"n": 4, "p": 1},
    "bde": {"n": 2},
    "tse": {"n": 3},
    "ewlr": {"n": 10, "lam": 0.8},
}


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
    if name not in ESTIMATORS:
        raise OptionError(f"unknown estimator {name!r}; choose from {', '.join(ESTIMATORS)}")
    allowed = ESTIMATORS[name]
    merged: dict[str, float] = dict(DEFAULT_OPTIONS.get(name, {}))
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
    _check(name, merged)
    return EstimatorChoice(name, tuple(sorted(merged.items())))


def _check(name: str, o: dict[str, float]) -> None:
    if name == "movav" and not 1 <= o["p"] <= 64:
        raise OptionError(f"movav: window p must be in 1..64, got {o['p']:g}")
    if name == "lsf" and not (0 < o["p"] < o["n"] <= 64):
        raise OptionError(f"lsf: need 0 < p < n <= 64 (order p, samples n), got n={o['n']:g} p={o['p']:g}")
    if name in ("bde", "tse") and not 1 <= o["n"] <= 8:
        raise OptionError(f"{name}: order n must be in 1..8, got {o['n']:g}")
    if name == "ewlr" and not (2 <= o["n"] <= 64 and 0 < o["lam"] <= 1):
        raise OptionError(f"ewlr: need 2 <= n <= 64 and 0 < lam <= 1, got n={o['n']:g} lam={o['lam']:g}")


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
    estimator: EstimatorChoice = EstimatorChoice("kalman")
    observer: str = "momentum"
    controller: str = "computed_torque"
    constant_params: bool = False  # fold the robot's parameters in (fast path, no model config)
    sample_period: float | None = None  # None: the robot description's

    def __post_init__(self) -> None:
        if self.observer not in OBSERVERS:
            raise OptionError(f"unknown observer {self.observer!r}; choose from {', '.join(OBSERVERS)}")
        if self.sample_period is not None and not (0 < self.sample_period < 10):
            raise OptionError(f"sample period must be in (0, 10) s, got {self.sample_period!r}")
        if self.controller not in CONTROLLERS:
            raise OptionError(f"unknown controller {self.controller!r}; choose from {', '.join(CONTROLLERS)}")

    @property
    def label(self) -> str:
        return (
            f"{self.estimator.label} + {self.observer} + {self.controller}"
            + (" (constant parameters)" if self.constant_params else "")
            + (f" @ {self.sample_period!r} s" if self.sample_period else "")
        )


@dataclass(frozen=True)
class RealtimeDefaults:
    """The robot YAML's ``realtime:`` section (options and config overrides with their lines)."""

    options: RtOptions = RtOptions()
    config: tuple[tuple[str, tuple[float, ...], int], ...] = ()  # (block.field, values, line)
    given: frozenset[str] = field(default_factory=frozenset)  # which of the options were set
