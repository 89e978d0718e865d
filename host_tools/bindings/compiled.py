"""The generated C of a robot, loaded through cffi, with numpy in / numpy out methods.

from host_tools import load
dyn = load("kuka_iiwa14")
tau = dyn.rnea(q, qd, qdd)                  # the constant-parameter fast path
tau = dyn.rnea(q, qd, qdd, params=pi)       # any parameter set (standard or base vector)
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import numpy as np

import codegen
from codegen import __version__
from codegen.blocks import registry
from codegen.blocks.options import RtOptions, realtime_defaults
from codegen.emit.cprint import Precision
from codegen.emit.generate import generate
from codegen.model.description import load_robot
from codegen.model.robot import Robot
from codegen.resources import resource_dir
from host_tools.bindings.build import build, cache_root, locked


class ForwardDynamicsError(ArithmeticError):
    """M(q) was not positive definite (a pivot of its factorisation was not positive)."""


def generator_files() -> list[Path]:
    """The generator itself: codegen's modules, the templates and the runtime files."""
    return _python_files() + _resource_files()


def _python_files() -> list[Path]:
    return sorted(p for p in Path(codegen.__file__).resolve().parent.rglob("*.py") if p.is_file())


def _resource_files() -> list[Path]:
    files: list[Path] = []
    for folder in (resource_dir("templates"), resource_dir("runtime")):
        files += [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in (".j2", ".h", ".c")]
    return files


@functools.cache
def _python_fingerprint() -> str:
    """codegen's Python as this process runs it, hashed once: every codegen module is imported
    first, so that a later edit of the files on disk (a long-lived worker while a developer edits)
    cannot file this process's generated C under the edited generator's key."""
    registry.observers()  # the blocks register in the registry's own order (BUILTIN), not the walk's
    for module in pkgutil.walk_packages(codegen.__path__, "codegen."):
        importlib.import_module(module.name)
    h = hashlib.sha256()
    for path in _python_files():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def generator_fingerprint() -> str:
    """Hash of the generator itself: codegen's Python as this process imported it
    (``_python_fingerprint``) and the templates and runtime files as they are now (read at every
    generation): a changed generator regenerates."""
    h = hashlib.sha256(__version__.encode() + _python_fingerprint().encode())
    for path in _resource_files():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


class CompiledDynamics:
    """numpy wrappers around one generated folder's functions."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._mod, self.manifest = build(self.folder)
        self._ffi, self._lib = self._mod.ffi, self._mod.lib
        m = self.manifest
        self.name: str = m["robot"]
        self.dof: int = m["dof"]
        self.dtype = np.float32 if m["options"]["precision"] == "float" else np.float64
        self._ctype = "float[]" if self.dtype == np.float32 else "double[]"
        self.standard_parameter_names: tuple[str, ...] = tuple(m["standard_parameter_names"])
        self.standard_parameters = np.array(m["standard_parameters"])
        self.base_parameter_names: tuple[str, ...] = tuple(m["base_parameter_names"])
        self.base_parameters = np.array(m["base_parameters"])
        self.base_expressions: tuple[str, ...] = tuple(m["base_expressions"])
        self.n_standard, self.n_base = m["n_standard"], m["n_base"]
        self.regrouping = np.zeros((self.n_base, self.n_standard))
        for i, row in enumerate(m["regrouping"]):
            for j, v in row:
                self.regrouping[i, j] = v
        self._base_columns = list(m["base_columns"])
        self._sizes = {f["name"]: f for f in m["functions"]}

    # --- parameters ---------------------------------------------------------------------------
    def standard_from_base(self, beta: np.ndarray) -> np.ndarray:
        """A standard vector with the same dynamics as base vector beta (others zero)."""
        out = np.zeros(self.n_standard)
        out[self._base_columns] = beta
        return out

    def _params(self, params: np.ndarray) -> np.ndarray:
        p = np.asarray(params, dtype=float).ravel()
        if p.size == self.n_standard:
            return p
        if p.size == self.n_base:
            return self.standard_from_base(p)
        raise ValueError(f"params must have {self.n_standard} (standard) or {self.n_base} (base) entries, got {p.size}")

    # --- calls --------------------------------------------------------------------------------
    def _call(self, name: str, *args: np.ndarray, params: np.ndarray | None = None) -> Any:
        if params is not None:
            name += "_p"
            args = args + (self._params(params),)
        spec = self._sizes[name]
        c_in = []
        for (arg_name, size), value in zip(spec["inputs"], args):
            a = np.ascontiguousarray(value, dtype=self.dtype).ravel()
            if a.size != size:
                raise ValueError(f"{name}: {arg_name} must have {size} entries, got {a.size}")
            c_in.append(a)
        outs = [np.zeros(size, dtype=self.dtype) for _, size in spec["outputs"]]
        ret = getattr(self._lib, f"{self.name}_{name}")(
            *[self._ffi.from_buffer(self._ctype, a) for a in c_in],
            *[self._ffi.from_buffer(self._ctype, o, require_writable=True) for o in outs],
        )
        if spec["returns"] == "int" and ret != 0:
            raise ForwardDynamicsError(f"{name}: M(q) is not positive definite")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _matrix(self, v: np.ndarray, cols: int) -> np.ndarray:
        return v.reshape(-1, cols)

    def rnea(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._call("rnea", q, qd, qdd, params=params)

    def mass_matrix(self, q: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._matrix(self._call("mass_matrix", q, params=params), self.dof)

    def coriolis_matrix(self, q: np.ndarray, qd: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._matrix(self._call("coriolis_matrix", q, qd, params=params), self.dof)

    def coriolis(self, q: np.ndarray, qd: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        """C(q, qd) qd."""
        return self._call("coriolis", q, qd, params=params)

    def gravity(self, q: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._call("gravity", q, params=params)

    def friction(self, qd: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._call("friction", qd, params=params)

    def nonlinear_effects(self, q: np.ndarray, qd: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        return self._call("nonlinear_effects", q, qd, params=params)

    def forward_dynamics(
        self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, params: np.ndarray | None = None
    ) -> np.ndarray:
        return self._call("forward_dynamics", q, qd, tau, params=params)

    # series-elastic arms (Kirchhoff 2011 §3.2): theta, thetad are the motor positions and velocities in
    # link units; tau_m the motor torques, link side
    def elastic_torque(self, q: np.ndarray, qd: np.ndarray, theta: np.ndarray, thetad: np.ndarray) -> np.ndarray:
        return self._call("elastic_torque", q, qd, theta, thetad)

    def motor_acceleration(
        self, q: np.ndarray, qd: np.ndarray, theta: np.ndarray, thetad: np.ndarray, tau_m: np.ndarray
    ) -> np.ndarray:
        return self._call("motor_acceleration", q, qd, theta, thetad, tau_m)

    def elastic_forward_dynamics(
        self,
        q: np.ndarray,
        qd: np.ndarray,
        theta: np.ndarray,
        thetad: np.ndarray,
        tau_m: np.ndarray,
        params: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(qdd, thetadd) of the coupled link and motor dynamics (``params``: the links' parameters); C:
        ``<robot>_elastic_dynamics``, a name short enough to stay distinct from its ``_p`` form within
        31 characters (MISRA C:2012 rule 5.1)."""
        qdd, thetadd = self._call("elastic_dynamics", q, qd, theta, thetad, tau_m, params=params)
        return qdd, thetadd

    def motor_rest(
        self, q: np.ndarray, qd: np.ndarray, params: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(theta, thetad): the motors holding the links at q against gravity (Kirchhoff 2011 eq. 3.28), and
        their rate along qd."""
        theta, thetad = self._call("motor_rest", q, qd, params=params)
        return theta, thetad

    def elastic_link_force(
        self, q: np.ndarray, qd: np.ndarray, theta: np.ndarray, thetad: np.ndarray, params: np.ndarray | None = None
    ) -> np.ndarray:
        """(I + A)^T tau_el - n(q, qd) = M(q) qdd (Kirchhoff 2011 eq. 3.24); C: ``<robot>_elastic_link_rhs``."""
        return self._call("elastic_link_rhs", q, qd, theta, thetad, params=params)

    def motor_regressor(self, q: np.ndarray, qd: np.ndarray, theta: np.ndarray, thetad: np.ndarray) -> np.ndarray:
        """Y_m (n x 4n): tau_m - I_m thetadd = Y_m [d_e, d_vm, k_e, d_Cm] per joint (Kirchhoff 2011 eq. 4.4)."""
        return self._matrix(self._call("motor_regressor", q, qd, theta, thetad), 4 * self.dof)

    def regressor(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Base regressor Y_b, shape (dof, n_base)."""
        return self._matrix(self._call("regressor", q, qd, qdd), self.n_base)

    def regressor_batch(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Y_b at every sample of (K, dof) arrays, shape (K, dof, n_base): one C call looping over
        the samples (``<robot>_regressor_batch``, host/<robot>_host.c)."""
        args = [np.ascontiguousarray(a, dtype=self.dtype) for a in (q, qd, qdd)]
        k = len(args[0])
        if any(a.shape != (k, self.dof) for a in args):
            raise ValueError(f"q, qd, qdd must all be (K, {self.dof}), got {[a.shape for a in args]}")
        y = np.zeros((k, self.dof, self.n_base), dtype=self.dtype)
        getattr(self._lib, f"{self.name}_regressor_batch")(
            k,
            *[self._ffi.from_buffer(self._ctype, a) for a in args],
            self._ffi.from_buffer(self._ctype, y, require_writable=True),
        )
        return y

    def tip_pose(self, q: np.ndarray) -> np.ndarray:
        return self._matrix(self._call("tip_pose", q), 4)

    def tip_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Rows [v; omega] of the tip, base-frame axes; shape (6, dof)."""
        return self._matrix(self._call("tip_jacobian", q), self.dof)


def generated_folder(
    spec: str | Path | Robot,
    base_link: str | None = None,
    tip_link: str | None = None,
    overlay: str | Path | None = None,
    precision: Precision = "double",
    rt: RtOptions | None = None,
) -> Path:
    """Generate (once per description, options and generator version) into the cache; ``spec`` a
    bundled name, a description path or a Robot already loaded."""
    robot = (
        spec if isinstance(spec, Robot) else load_robot(spec, base_link=base_link, tip_link=tip_link, overlay=overlay)
    )
    rt = rt if rt is not None else realtime_defaults(robot).options
    key = hashlib.sha256(f"{robot.digest}|{precision}|{rt.label}|{generator_fingerprint()}".encode()).hexdigest()[:16]
    folder = cache_root() / "generated" / f"{robot.c_name}_{key}"
    with locked(cache_root() / "locks" / f"gen_{key}.lock"):
        if not (folder / "manifest.json").is_file():
            generate(robot, precision, rt).write(folder)
    return folder


def load(
    spec: str | Path | Robot,
    base_link: str | None = None,
    tip_link: str | None = None,
    overlay: str | Path | None = None,
    precision: Precision = "double",
) -> CompiledDynamics:
    """A bundled robot name, a .yaml/.urdf path or a Robot -> its generated C, compiled and loaded."""
    return CompiledDynamics(generated_folder(spec, base_link, tip_link, overlay, precision))
