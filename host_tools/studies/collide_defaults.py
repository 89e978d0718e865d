"""What `manipgen collide` compares (a module of its own: the command line's parser reads it without
loading the dynamics): every registered observer, fed as it reads its motion (the Kalman filter's
estimates, or the plant's exact motion for a measured one), and the entries its spec feeds from
simulated IMUs (``<observer>_imu``: one per link, the description's ``imus:``; ``<observer>_imu_tip``:
one at the tip frame). The default set and its order come from the specs too
(``registry.Observer.collide`` and ``.imu``)."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.blocks import imu as imu_block
from codegen.blocks import kalman, registry
from codegen.model.robot import Robot


@dataclass(frozen=True)
class ImuSetup:
    suffix: str  # of the entry's name after <observer>_imu
    option: str  # of the imu estimator
    label: str


IMU_SETUPS = {
    "links": ImuSetup("", "", "one IMU per link"),
    "tip": ImuSetup("_tip", ":tip=1", "one IMU at the tip"),
}


@dataclass(frozen=True)
class Entry:
    """One residual collide compares: an observer and the estimator that feeds it."""

    name: str
    observer: registry.Observer  # the observer its pipeline runs
    estimator: str  # the estimator choice of its pipeline
    imu: str = ""  # its IMU set-up (IMU_SETUPS), "" for none
    listed: registry.Observer | None = None  # the spec it is listed under, if not observer (Observer.imu_build)

    @property
    def spec(self) -> registry.Observer:
        """The observer spec that lists it: its series, its place, whether the default set has it."""
        return self.listed or self.observer

    @property
    def qd_qdd(self) -> str:
        """Where its q-dot (and q-ddot, if it reads one) come from."""
        motion = ", ".join(self.observer.motion)
        if self.observer.measured:
            return f"exact {motion} (plant)"
        if self.imu:
            return f"IMU-fused {motion} ({IMU_SETUPS[self.imu].label})"
        return f"Kalman {motion}"

    def order(self) -> tuple[int, int, int]:
        """Its place in the default set: series, then the feed (estimated, measured, IMU set-ups),
        then registration."""
        feed = 2 + list(IMU_SETUPS).index(self.imu) if self.imu else int(self.observer.measured)
        return self.spec.collide, feed, list(registry.observers()).index(self.spec.name)


def _entries() -> dict[str, Entry]:
    observers = registry.observers()
    own = {n: Entry(n, o, kalman.SPEC.name) for n, o in observers.items() if o.build is not None}
    imu = imu_block.SPEC.name
    fed = {
        f"{e.name}_{imu}{IMU_SETUPS[s].suffix}": Entry(
            f"{e.name}_{imu}{IMU_SETUPS[s].suffix}",
            observers[e.observer.imu_build or e.name],
            imu + IMU_SETUPS[s].option,
            s,
            e.observer if e.observer.imu_build else None,
        )
        for e in own.values()
        for s in e.observer.imu
    }
    return own | fed


def lacking_sensors(entry: Entry, robot: Robot) -> str | None:
    """Why ``robot`` cannot run ``entry`` (None: it can): an entry fed by one IMU per link reads the
    description's IMUs (the tip set-up simulates its own at the tip frame)."""
    if entry.imu == "links" and not robot.imus:
        return (
            "one IMU per link needs the description's imus: list (docs/collision.md, IMU-fused q̇, q̈); "
            "*_imu_tip needs none"
        )
    return None


ENTRIES = _entries()
# Birjandi & Haddadin's observers with each source of qd, qdd (the Kalman filter's, the plant's exact, simulated
# IMUs'), and the adaptive observer's momentum form (qd only; issue #25) with the same three
DEFAULT_OBSERVERS = tuple(
    e.name for e in sorted(ENTRIES.values(), key=Entry.order) if e.spec.collide and (not e.imu or e.spec.imu[e.imu])
)
