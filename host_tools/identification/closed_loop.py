"""The closed-loop model of output-error identification, in C (``<robot>_oesim``, see
codegen.blocks.closed_loop): the plant with a candidate base-parameter vector under the known controller.

    source = RobotSource.of("ur5")
    model = ClosedLoopModel(source)
    loop = Loop.from_rt(load_rt(source.robot(), observer="none", controller=controllers.PID.name))
    sim = model.simulate(beta, loop, q_des, qd_des, q0, qd0, cols=range(model.n_base))
    sim.tau, sim.dtau        # (K, n), (K, n, len(cols)): d tau_k / d beta
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks import controllers, findiff
from codegen.blocks.options import EstimatorChoice, RtOptions
from codegen.emit.host import HOST_FOLDER
from codegen.emit.oesim import oesim_files
from codegen.model.robot import Robot
from host_tools.bindings.build import build, cache_root, locked
from host_tools.bindings.compiled import generated_folder, generator_fingerprint
from host_tools.bindings.loopback import SimulationError
from host_tools.bindings.rt import Realtime
from host_tools.bindings.source import RobotSource
from host_tools.identification.least_squares import model


@dataclass(frozen=True)
class Loop:
    """The known part of the closed loop: the pid block's gains (per joint), the drive gains
    G_tau (torque = G_tau x controller output; 1 when the log holds torques) and the controller's
    own model (standard parameters; its gravity compensation)."""

    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    i_max: np.ndarray
    tau_max: np.ndarray
    ctl_params: np.ndarray
    drive_gain: np.ndarray
    substeps: int = 1

    @classmethod
    def from_rt(cls, rt: Realtime, substeps: int = 1) -> Loop:
        """The controller of a pipeline generated with the pid controller (its current config)."""
        if rt.rt_manifest.get("controller") != controllers.PID.name:
            raise ValueError(
                f"the pipeline's controller is {rt.rt_manifest.get('controller')!r}; output-error "
                "identification models the pid controller"
            )
        c = rt.config
        return cls(
            kp=c["ctl.kp"].copy(),
            kd=c["ctl.kd"].copy(),
            ki=c["ctl.ki"].copy(),
            i_max=c["ctl.i_max"].copy(),
            tau_max=c["ctl.tau_max"].copy(),
            ctl_params=c["model.params"].copy(),
            drive_gain=np.ones(rt.dof),
            substeps=substeps,
        )

    def with_gains(self, **values: Any) -> Loop:
        """A copy with some per-joint arrays replaced (one value or one per joint)."""
        new: dict[str, Any] = {
            k: np.broadcast_to(np.asarray(v, float), np.shape(getattr(self, k))).copy() for k, v in values.items()
        }
        return replace(self, **new)


@dataclass
class Simulation:
    q: np.ndarray  # (K, n) state at the sample instants
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray  # (K, n) torque held over sample k
    y: np.ndarray | None = None  # (K, n, nb) base regressor at (q_k, qd_k, qdd_k)
    dq: np.ndarray | None = None  # (K, n, nc) d q_k / d beta[cols]
    dtau: np.ndarray | None = None  # (K, n, nc) d tau_k / d beta[cols]


def oesim_folder(robot: Robot, sample_period: float | None = None) -> Path:
    """Generate (cached) the closed-loop model's folder: the robot's dynamics files + its oesim."""
    dyn_folder = generated_folder(
        robot, rt=RtOptions(estimator=EstimatorChoice(findiff.FINDIFF.name), observer="none", controller="none")
    )
    ts = sample_period or robot.sample_period
    key = hashlib.sha256(f"{robot.digest}|{ts!r}|{generator_fingerprint()}".encode()).hexdigest()[:16]
    folder = cache_root() / "oesim" / f"{robot.c_name}_{key}"
    with locked(cache_root() / "locks" / f"oesim_{key}.lock"):
        if not (folder / "manifest.json").is_file():
            tmp = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            p = robot.c_name
            for name in (f"{p}_dynamics.c", f"{p}_dynamics.h", "manipgen_linalg.h"):
                shutil.copy(dyn_folder / name, tmp / name)
            (tmp / HOST_FOLDER).mkdir()
            for name, text in oesim_files(robot, ts).items():
                (tmp / HOST_FOLDER / name).write_text(text, encoding="utf-8")
            manifest = json.loads((dyn_folder / "manifest.json").read_text(encoding="utf-8"))
            manifest.pop("rt", None)
            manifest["oesim"] = {"sample_period": ts}
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            shutil.rmtree(folder, ignore_errors=True)
            tmp.rename(folder)
    return folder


class ClosedLoopModel:
    """The generated closed-loop simulation of one robot, parameterised by base parameters."""

    def __init__(self, source: RobotSource, sample_period: float | None = None) -> None:
        """``source``: the description as read once (RobotSource.of; a work item's text is loaded
        from this machine's cache). The work items of output error carry it to workers."""
        self.source = source
        self.robot = source.robot()
        self.ident = model(self.robot)
        mod, manifest = build(oesim_folder(self.robot, sample_period))
        self._ffi, self._lib = mod.ffi, mod.lib
        self.sample_period: float = manifest["oesim"]["sample_period"]
        self.n, self.n_base = self.robot.dof, self.ident.base.n_base

    def standard(self, beta: np.ndarray) -> np.ndarray:
        """The standard vector simulated for base parameters beta (non-base entries 0)."""
        return self.ident.base.to_standard(np.asarray(beta, float))

    def simulate(
        self,
        beta: np.ndarray,
        loop: Loop,
        q_des: np.ndarray,
        qd_des: np.ndarray,
        q0: np.ndarray,
        qd0: np.ndarray,
        regressor: bool = False,
        cols: Iterable[int] | None = None,
        dq: bool = True,
        dtau: bool = True,
    ) -> Simulation:
        """Run the closed loop along (q_des, qd_des) (K, n) with base parameters beta. ``cols``: base
        parameters to differentiate with respect to (None: no sensitivities)."""
        ffi, n = self._ffi, self.n
        p = self.robot.c_name
        q_des, qd_des = (np.ascontiguousarray(x, float) for x in (q_des, qd_des))
        k = len(q_des)
        if q_des.shape != (k, n) or qd_des.shape != (k, n):
            raise ValueError(f"q_des and qd_des must be (K, {n})")
        beta = np.asarray(beta, float)
        if beta.shape != (self.n_base,) or not np.all(np.isfinite(beta)):
            raise ValueError(f"beta must be {self.n_base} finite base parameters")
        c_loop = ffi.new(f"{p}_oe_loop_t *")
        for name in ("kp", "kd", "ki", "i_max", "tau_max", "drive_gain"):
            v = np.broadcast_to(np.asarray(getattr(loop, name), float), (n,))
            setattr(c_loop, name, [float(x) for x in v])
        c_loop.ctl_pi = [float(x) for x in np.asarray(loop.ctl_params, float)]
        c_loop.substeps = int(loop.substeps)
        col = np.ascontiguousarray([] if cols is None else list(cols), dtype=np.int32)
        nc = len(col)
        pi = np.ascontiguousarray(self.standard(beta))
        start_q, start_qd = (np.ascontiguousarray(np.broadcast_to(np.asarray(x, float), (n,))) for x in (q0, qd0))
        q, qd, qdd, tau = (np.zeros((k, n)) for _ in range(4))
        y = np.zeros((k, n, self.n_base)) if regressor else None
        s_q = np.zeros((k, n, nc)) if nc and dq else None
        s_tau = np.zeros((k, n, nc)) if nc and dtau else None

        def ptr(a: np.ndarray | None, ctype: str = "double") -> Any:
            return ffi.NULL if a is None else ffi.cast(ctype + " *", ffi.from_buffer(a))

        status = getattr(self._lib, f"{p}_oe_simulate")(
            c_loop,
            ptr(pi),
            k,
            ptr(q_des),
            ptr(qd_des),
            ptr(start_q),
            ptr(start_qd),
            ptr(q),
            ptr(qd),
            ptr(qdd),
            ptr(tau),
            ptr(y),
            ptr(col if nc else None, "int32_t"),
            nc,
            ptr(s_q),
            ptr(s_tau),
        )
        if status == -2:
            raise ValueError("the closed-loop model refused its arguments (substeps < 1 or a column out of range)")
        if status != 0:
            raise SimulationError(
                "the closed-loop simulation failed: M(q) stopped being positive definite, or the "
                "loop diverged (parameters not physical enough, or gains that make it unstable)"
            )
        return Simulation(q, qd, qdd, tau, y, s_q, s_tau)
