"""Closed-loop simulation in C: the generated pipeline (``rt_step``) around a simulated robot
(``<robot>_loopback``, RK4 on the generated forward dynamics). One C call per run; Python only
prepares arrays and packs the result into the log format (host_tools.data.logs) with the ground truth.

    rt = load_rt("kuka_iiwa14")
    run = simulate(rt, trajectory.resample(rt.sample_period))
    run.log.save("run.npz"); run.out["qd_hat"]; run.ise_velocity
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from codegen.errors import ManipgenWarning
from host_tools.bindings.imu_sensors import ImuSensors
from host_tools.bindings.rt import Realtime
from host_tools.data.logs import Log
from host_tools.data.trajectories import Trajectory


@dataclass(frozen=True)
class Contact:
    """A plane obstacle for the tip, Hunt-Crossley contact (Kirchhoff 2011 eq. 5.19, codegen.symbolic.contact),
    present from ``start`` to ``stop`` s. Defaults: Kirchhoff (2011) §5.3 (flat surface e = 1, k = 10 kN/m,
    alpha = 0.04 s/m, lambda = 3/2 alpha k)."""

    point: tuple[float, float, float]  # a point of its surface, base frame (m)
    normal: tuple[float, float, float]  # outward normal, base frame (normalised here)
    stiffness: float = 1.0e4  # N/m^e
    alpha: float = 0.04  # s/m
    exponent: float = 1.0
    start: float = 0.0  # s
    stop: float = float("inf")  # s

    @property
    def damping(self) -> float:
        return 1.5 * self.alpha * self.stiffness


EARLY = 1.0  # s: a collision latched this early, before any contact, is the thresholds' doing


class RunWarning(ManipgenWarning):
    """A run that went, but probably not as meant (a collision latched before any contact)."""


def _warn_early_latch(
    rt: Realtime, outs: dict[str, np.ndarray], ext: np.ndarray | None, contact: np.ndarray | None
) -> None:
    """Warn when the detection latched within the first second with no external torque yet and its
    reaction (stop or reflex) then took over the motion; a flag-only run (reaction 0) is a study that
    reads its own windows."""
    if "collision" not in outs or not np.any(outs["collision"]) or int(rt.config["det.reaction"]) == 0:
        return
    k = int(np.argmax(outs["collision"] > 0))
    pushed = any(f is not None and np.any(f[: k + 1] != 0) for f in (ext, contact))
    if k * rt.sample_period < EARLY and not pushed:
        thresholds = ", ".join(f"{v:.3g}" for v in np.atleast_1d(rt.config["det.threshold"]))
        warnings.warn(
            f"collision latched at t = {k * rt.sample_period:.3f} s, before any external force: the thresholds "
            f"(det.threshold {thresholds}) are below this robot's residual in normal motion; design them from "
            "a collision-free run (manipgen record, then manipgen thresholds)",
            RunWarning,
            stacklevel=3,
        )


class SimulationError(RuntimeError):
    """The simulated robot's M(q) stopped being positive definite (wrong true parameters?)."""


@dataclass
class Run:
    log: Log  # inputs the pipeline saw + ground truth (q_true, qd_true, ...)
    out: dict[str, np.ndarray]  # the pipeline's outputs per sample
    imu_read: np.ndarray | None = None  # what simulated IMUs read (K, 6 m), if the pipeline has any
    inputs: np.ndarray | None = None  # what the pipeline read at each sample (simulate(record=True))
    # the pipeline's state before sample k's step, for each k of simulate's ``keep`` (resume)
    states: dict[int, bytes] = field(default_factory=dict)
    # the simulated IMUs' chain there (the plant's imu_chain: simulate's ``imu_chain`` continues it)
    imu_states: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def ise_velocity(self) -> np.ndarray:
        """Integral squared velocity-estimation error per joint (Liu et al. eq. 5), (rad/s)^2 s."""
        return ise(self.log.extra["qd_true"], self.out["qd_hat"], self.log.sample_period)

    @property
    def ise_tracking(self) -> np.ndarray:
        """Integral squared tracking error q_d - q per joint, rad^2 s."""
        return ise(self.log.q_des, self.log.extra["q_true"], self.log.sample_period)


def ise(x: np.ndarray, x_hat: np.ndarray, ts: float) -> np.ndarray:
    """sum_k (x_k - x_hat_k)^2 T_s per column: the rectangle rule of Liu et al. eq. 5."""
    e = np.asarray(x, float) - np.asarray(x_hat, float)
    with np.errstate(over="ignore", invalid="ignore"):  # an unstable run: inf, not a warning
        return np.sum(e * e, axis=0) * ts


def valid_arr_of(val: np.ndarray | None, k: int, n: int) -> np.ndarray:
    return np.ones((k, n), bool) if val is None else val.astype(bool)


def simulate(
    rt: Realtime,
    trajectory: Trajectory,
    true_params: np.ndarray | None = None,
    tau_ext: np.ndarray | None = None,
    valid: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    qd0: np.ndarray | None = None,
    substeps: int = 8,
    delay: int = 0,
    reset: bool = True,
    contact: Contact | None = None,
    theta0: np.ndarray | None = None,
    thetad0: np.ndarray | None = None,
    imu: ImuSensors | None = None,
    step: Callable[[Any, Any], None] | None = None,
    tau0: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
    record: bool = False,
    keep: Sequence[int] = (),
    imu_noise: np.ndarray | None = None,
    imu_chain: np.ndarray | None = None,
) -> Run:
    """Run the closed loop along ``trajectory`` (sampled at the pipeline's period). The plant has
    ``true_params`` (standard vector; default the description's) and starts at q0 = q_d(0),
    qd0 = qd_d(0) unless given; ``tau_ext`` (K, n) is added to its joint torques; ``valid`` (K, n)
    drops encoder samples; the command of sample k acts over sample k + ``delay`` (drive latency);
    ``contact``: a plane obstacle the tip may hit (its joint torque at each sample is added to
    extra["tau_ext_true"]); ``tau0``: the torque applied over the sample before the first (0: from
    rest; a run that continues another passes that run's last command, extra["tau_cmd"][-1], or the
    pipeline sees the torque drop to 0 at its first sample: issue #46).

    An elastic arm (series-elastic drives, Kirchhoff (2011) §3.2): the controller's output is the motor torque;
    the motors start at theta0, thetad0, by default at rest against gravity at q0 (Kirchhoff 2011 eq. 3.28
    with the plant's parameters); the log's ``tau`` is the motor torque, its ``motor_counts`` the motor
    encoders', extra also holds theta_true, thetad_true.

    A pipeline with the ``imu`` estimator reads simulated IMUs: ``imu`` (default: ImuSensors(),
    Birjandi & Haddadin's BMI055); the run's ``imu_read`` holds what they read (K, 6 m: the gyroscopes' axes, then the
    accelerometers'). ``imu_noise`` (K, 6 m): their white noise instead of ``imu``'s noise_seed's;
    ``imu_chain``: their chain (filter states, joint rates a sample before) where a run this one
    continues left it, its ``imu_states`` at a ``keep`` sample (default: settled at the first reading).

    ``step(in, out)``, if given, runs the pipeline instead of rt's step on this processor: it gets
    each sample's input and fills its output (cffi pointers to <robot>_rt_input_t and _output_t),
    e.g. on a Cortex-M over a serial line (``manipgen target pil``); what it raises ends the run and
    is raised here. rt's config still reads the encoders.

    ``progress(done, total)``, if given, is called every PROGRESS_SAMPLES samples and after the last
    one; the loop then calls the step (rt's own C step, or ``step``) through a Python callback, a few
    microseconds a sample beside the plant's RK4 sub-steps, with the same computation as without it.
    ``record`` keeps what the step read at each sample in the run's ``inputs`` (replay), and ``keep``
    rt's state before the step of each of those samples in the run's ``states`` (``resume`` continues
    from one: a run that leaves this one there, bit for bit); the loop's C keeper does both
    (<robot>_loopback_keeping), no Python per sample."""
    _check(rt, trajectory, true_params, tau_ext, substeps, delay, keep, step is None)
    k, n = trajectory.q.shape
    real = np.float32 if rt.input_dtype["tau"].base == np.float32 else np.float64
    plant = rt.ffi.new(f"{rt.name}_plant_t *")
    params = rt.manifest["standard_parameters"] if true_params is None else true_params
    plant.params = [float(v) for v in np.asarray(params, float).ravel()]
    plant.substeps = substeps
    plant.delay = delay
    # the torque over the sample before the first (in.tau at 0, and until a delayed command acts): tau0
    start_tau = np.zeros(trajectory.q.shape[1]) if tau0 is None else np.asarray(tau0, float).reshape(-1)
    plant.tau0 = [float(v) for v in start_tau]
    if contact is not None:
        _set_contact(plant, contact, rt.sample_period)
    q_des, qd_des, qdd_des = (_arr(x, (k, n), real) for x in (trajectory.q, trajectory.qd, trajectory.qdd))
    ext = None if tau_ext is None else _arr(tau_ext, (k, n), real)
    val = None if valid is None else _arr(valid, (k, n), np.uint8)
    if reset:
        rt.reset()
    rt._sync()
    q_true, qd_true, qdd_true, tau = (np.zeros((k, n), real) for _ in range(4))
    a = _Arrays(
        start_q=_arr(trajectory.q[0] if q0 is None else q0, (n,), real),
        start_qd=_arr(trajectory.qd[0] if qd0 is None else qd0, (n,), real),
        q_des=q_des,
        qd_des=qd_des,
        qdd_des=qdd_des,
        ext=ext,
        val=val,
        q_true=q_true,
        qd_true=qd_true,
        qdd_true=qdd_true,
        tau=tau,
        counts=np.zeros((k, n), np.int64),
        motor_counts=np.zeros((k, n), np.int64),
        tau_contact=None if contact is None else np.zeros((k, n), real),
        out=np.zeros(k, dtype=rt.output_dtype),
    )
    elastic = bool(rt.manifest.get("elastic"))
    if elastic:
        a.start_th, a.start_thd = _motor_start(rt, a, real, params, theta0, thetad0)
        a.theta_true, a.thetad_true = np.zeros((k, n), real), np.zeros((k, n), real)
    _imus(rt, plant, a, imu, imu_noise, imu_chain)
    run = _looped(rt, trajectory, plant, a, elastic, step, progress, record, keep)
    _warn_early_latch(rt, run.out, a.ext, a.tau_contact)
    return run


def _imus(
    rt: Realtime,
    plant: Any,
    a: _Arrays,
    imu: ImuSensors | None,
    imu_noise: np.ndarray | None,
    imu_chain: np.ndarray | None,
) -> None:
    """simulate's IMUs (default ImuSensors()) set on ``plant`` and their arrays in ``a``, for a
    pipeline that reads them; for one that does not, none may be given."""
    if "imu_gyro" in (rt.input_dtype.names or ()):
        k, real = a.q_des.shape[0], a.q_des.dtype.type
        a.noise, a.read, a.chain = _set_imus(
            rt, plant, ImuSensors() if imu is None else imu, k, real, imu_noise, imu_chain
        )
    elif imu is not None or imu_noise is not None or imu_chain is not None:
        raise ValueError("this pipeline reads no IMU, so it takes no imu sensors (generate it with the imu estimator)")


def _looped(
    rt: Realtime,
    trajectory: Trajectory,
    plant: Any,
    a: _Arrays,
    elastic: bool,
    step: Callable[[Any, Any], None] | None,
    progress: Callable[[int, int], None] | None,
    record: bool,
    keep: Sequence[int],
) -> Run:
    """simulate's one loopback call (the step wrapped for ``progress``; ``record`` and ``keep`` by the
    C keeper, no Python per sample) and its run."""
    k = len(trajectory.time)
    keeper = _Keeper(rt, k, record, keep, a.chain) if record or keep else None
    _call(rt, _counted(rt, step, progress, k), plant, k, a, keeper)
    run = _run(rt, trajectory, a, elastic, plant)
    if keeper is not None:
        run.states, run.inputs, run.imu_states = keeper.states(), keeper.inputs, keeper.chains()
    return run


class _Keeper:
    """What <robot>_loopback_keeping keeps of a run (simulate's ``record`` and ``keep``): the arrays
    its C keeper writes, each sample's input and rt's state before the step of each ``keep`` sample."""

    def __init__(
        self, rt: Realtime, k: int, record: bool, keep: Sequence[int], chain: np.ndarray | None = None
    ) -> None:
        ffi, p = rt.ffi, rt.name
        self.at = np.array(sorted(set(keep)), np.int64)
        self.inputs = np.zeros(k, rt.input_dtype) if record else None
        self.kept = np.zeros((len(self.at), ffi.sizeof(f"{p}_rt_t")), np.uint8)
        self.c = ffi.new(f"{p}_loopback_keeper_t *")
        self.callback: Any = ffi.NULL  # the step's cffi callback, if any (the keeper's step)
        self.c.rt = rt._rt
        if self.inputs is not None:
            self.c.inputs = ffi.cast(f"{p}_rt_input_t *", ffi.from_buffer(self.inputs, require_writable=True))
        if len(self.at):
            self.c.keep = ffi.cast("int64_t *", ffi.from_buffer(self.at))
            self.c.n_keep = len(self.at)
            self.c.states = ffi.cast(f"{p}_rt_t *", ffi.from_buffer(self.kept, require_writable=True))
        # the plant's IMU chain with each state (a run that continues this one there reads it)
        self.chain = None if chain is None else np.zeros((len(self.at), len(chain)), chain.dtype)
        if chain is not None and self.chain is not None and len(self.at):
            self.c.chain = ffi.cast(f"{p}_real_t *", ffi.from_buffer(chain))
            self.c.chain_size = len(chain)
            self.c.chains = ffi.cast(f"{p}_real_t *", ffi.from_buffer(self.chain, require_writable=True))

    def states(self) -> dict[int, bytes]:
        return {int(at): self.kept[i].tobytes() for i, at in enumerate(self.at)}

    def chains(self) -> dict[int, np.ndarray]:
        """The IMU chain at each kept sample after the first (at sample 0 it is where the run started)."""
        if self.chain is None:
            return {}
        return {int(at): self.chain[i].copy() for i, at in enumerate(self.at) if at > 0}


def _call(
    rt: Realtime, step: Callable[[Any, Any], None] | None, plant: Any, k: int, a: _Arrays, keeper: _Keeper | None
) -> None:
    """The loopback's C call around rt's step or ``step`` (through ``keeper`` if given); its failures raised."""
    failed: list[BaseException] = []
    run_with = _runner(rt, step, failed, keeper)  # the callback stays referenced until the call returns
    status = run_with[0](*run_with[1:], plant, k, *a.pointers(rt))
    if failed:
        raise failed[0]
    if status == -2:
        raise ValueError(
            "the loopback refused the plant (substeps or delay out of range, or an elastic arm without theta0, thetad0)"
        )
    if status != 0:
        raise SimulationError("the simulated robot's inertia matrix is not positive definite")


def _check(
    rt: Realtime,
    trajectory: Trajectory,
    true_params: np.ndarray | None,
    tau_ext: np.ndarray | None,
    substeps: int,
    delay: int,
    keep: Sequence[int] = (),
    own_step: bool = True,
) -> None:
    """simulate's arguments, checked before anything runs (ValueError)."""
    k = len(trajectory.time)
    if keep and (not own_step or not all(0 <= at < k for at in keep)):
        raise ValueError(f"keep: samples 0..{k - 1} of rt's own step, got {sorted(keep)}")
    if (
        len(trajectory.time) >= 2
        and abs(float(trajectory.time[1] - trajectory.time[0]) - rt.sample_period) > 1e-9 * rt.sample_period
    ):
        raise ValueError(
            f"trajectory sampled every {trajectory.time[1] - trajectory.time[0]:g} s, the pipeline "
            f"runs every {rt.sample_period:g} s: use trajectory.resample(rt.sample_period)"
        )
    if substeps < 1:
        raise ValueError("substeps must be >= 1")
    max_delay = int(getattr(rt.lib, f"{rt.name.upper()}_LOOPBACK_MAX_DELAY"))
    if not 0 <= delay <= max_delay:
        raise ValueError(f"delay must be 0..{max_delay} samples, got {delay}")
    if len(trajectory.time) < 2:
        raise ValueError("the trajectory needs at least 2 samples")
    if true_params is not None and np.size(true_params) != rt.manifest["n_standard"]:
        raise ValueError(
            f"true_params must have {rt.manifest['n_standard']} standard parameters, got {np.size(true_params)}"
        )
    for name, a in (("true_params", true_params), ("tau_ext", tau_ext)):
        if a is not None and not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or inf")


def _arr(x: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=dtype), shape))


@dataclass
class _Arrays:
    """Every array handed to C, in the loopback's argument order from the start state on; they stay
    referenced here until the call returns (a cast pointer does not keep its buffer alive)."""

    start_q: np.ndarray
    start_qd: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray
    qdd_des: np.ndarray
    ext: np.ndarray | None  # tau_ext
    val: np.ndarray | None  # valid
    q_true: np.ndarray
    qd_true: np.ndarray
    qdd_true: np.ndarray
    tau: np.ndarray  # the command applied over each sample
    counts: np.ndarray
    motor_counts: np.ndarray
    tau_contact: np.ndarray | None
    out: np.ndarray
    start_th: np.ndarray | None = None  # an elastic arm's
    start_thd: np.ndarray | None = None
    theta_true: np.ndarray | None = None
    thetad_true: np.ndarray | None = None
    noise: np.ndarray | None = None  # the simulated IMUs'
    read: np.ndarray | None = None
    chain: np.ndarray | None = None  # their chain (the plant's imu_chain)

    def pointers(self, rt: Realtime) -> list[Any]:
        """The loopback's arguments after the plant and the sample count."""
        ffi, real = rt.ffi, f"{rt.name}_real_t"

        def ptr(a: np.ndarray | None, ctype: str = real) -> Any:
            return ffi.NULL if a is None else ffi.cast(ctype + " *", ffi.from_buffer(a))

        return [
            *(ptr(x) for x in (self.start_q, self.start_qd, self.start_th, self.start_thd)),
            *(ptr(x) for x in (self.q_des, self.qd_des, self.qdd_des, self.ext)),
            ptr(self.val, "uint8_t"),
            *(ptr(x) for x in (self.q_true, self.qd_true, self.qdd_true, self.theta_true, self.thetad_true)),
            ptr(self.tau),
            ptr(self.counts, "int64_t"),
            ptr(self.motor_counts, "int64_t"),
            *(ptr(x) for x in (self.tau_contact, self.noise, self.read)),
            ffi.cast(f"{rt.name}_rt_output_t *", ffi.from_buffer(self.out)),
        ]


def _set_contact(plant: Any, contact: Contact, ts: float) -> None:
    nrm = np.asarray(contact.normal, float)
    if nrm.shape != (3,) or np.asarray(contact.point, float).shape != (3,) or not np.linalg.norm(nrm) > 0:
        raise ValueError("contact: point and normal must be 3-vectors, the normal non-zero")
    if not (contact.stiffness >= 0 and contact.alpha >= 0 and contact.exponent > 0):
        raise ValueError("contact: stiffness and alpha must be >= 0, the exponent > 0")
    plant.contact_point = [float(v) for v in contact.point]
    plant.contact_normal = [float(v) for v in nrm / np.linalg.norm(nrm)]
    plant.contact_k, plant.contact_lambda = contact.stiffness, contact.damping
    plant.contact_exponent = contact.exponent
    plant.contact_start, plant.contact_stop = contact_samples(contact, ts)


def contact_samples(contact: Contact, ts: float) -> tuple[int, int]:
    """The samples the obstacle exists for, start .. stop - 1 (the first at or after its times)."""
    limit = float(2**31 - 1)
    start = int(min(max(np.ceil(contact.start / ts - 1e-9), 0), limit))
    return start, int(min(max(np.ceil(contact.stop / ts - 1e-9), 0), limit))


def contact_from(contact: Contact, k: int, ts: float) -> Contact:
    """``contact`` for a run that starts at sample ``k`` of the run it was set for (k at most its first
    sample): the same samples, counted from k."""
    start, stop = contact_samples(contact, ts)
    if not 0 <= k <= start:
        raise ValueError(f"a run from sample {k} starts after the contact (sample {start})")
    moved = replace(contact, start=(start - k) * ts, stop=contact.stop if np.isinf(contact.stop) else (stop - k) * ts)
    if contact_samples(moved, ts) != (start - k, stop - k if not np.isinf(contact.stop) else stop):
        raise ValueError(f"the contact's samples do not move by {k} whole samples")  # (rounding: never seen)
    return moved


def _motor_start(
    rt: Realtime, a: _Arrays, real: Any, params: Any, theta0: np.ndarray | None, thetad0: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """An elastic arm's motors at the start: theta0, thetad0, or at rest against gravity (Kirchhoff 2011
    eq. 3.28) with the plant's parameters, computed in C."""
    n = a.start_q.shape[0]
    rest = (np.zeros(n, real), np.zeros(n, real))
    if theta0 is None or thetad0 is None:
        ffi, rc = rt.ffi, f"{rt.name}_real_t"
        pi = _arr(params, (rt.manifest["n_standard"],), real)
        buffers = (a.start_q, a.start_qd, pi, rest[0], rest[1])
        getattr(rt.lib, f"{rt.name}_motor_rest_p")(*(ffi.cast(rc + " *", ffi.from_buffer(b)) for b in buffers))
    return _arr(rest[0] if theta0 is None else theta0, (n,), real), _arr(
        rest[1] if thetad0 is None else thetad0, (n,), real
    )


def _set_imus(
    rt: Realtime,
    plant: Any,
    sensors: ImuSensors,
    k: int,
    real: Any,
    noise: np.ndarray | None = None,
    chain: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The simulated IMUs' parameters into the plant; their noise (K, 6 m: ``noise``, or the
    sensors' noise_seed's), what they will read, and their chain (the plant's imu_chain: ``chain``
    where the run starts, if given)."""
    m = rt.input_dtype["imu_gyro"].shape[0]
    plant.imu_bias = [float(v) for v in sensors.biases(m)]
    plant.imu_filter = [[float(v) for v in row] for row in sensors.filters(rt.sample_period)]
    plant.imu_lsb = list(sensors.lsb())
    plant.imu_range = [sensors.gyro_range, sensors.acc_range]
    size = 2 * 6 * m + rt.dof  # <ROBOT>_LOOPBACK_IMU_CHAIN: 2 filter states per IMU axis, the joint rates
    if noise is not None and np.shape(noise) != (k, 6 * m):
        raise ValueError(f"imu_noise must be ({k}, {6 * m}): a value per sample and IMU axis, got {np.shape(noise)}")
    if chain is not None and np.shape(chain) != (size,):
        raise ValueError(f"imu_chain must hold {size} values (a run's imu_states), got {np.shape(chain)}")
    kept = np.zeros(size, real) if chain is None else np.array(chain, real)
    plant.imu_chain = rt.ffi.cast(f"{rt.name}_real_t *", rt.ffi.from_buffer(kept))
    plant.imu_resume = int(chain is not None)
    w = sensors.noise(k, m, rt.sample_period) if noise is None else noise
    return _arr(w, (k, 6 * m), real), np.zeros((k, 6 * m), real), kept


# samples between two progress reports of simulate: a second of a 1 kHz run, a report every few ms to
# a fraction of a second of wall time (the iiwa's RK4 sub-steps take ~0.3 ms a sample)
PROGRESS_SAMPLES = 1000


def _counted(
    rt: Realtime, step: Callable[[Any, Any], None] | None, progress: Callable[[int, int], None] | None, total: int
) -> Callable[[Any, Any], None] | None:
    """``step`` (default: rt's C step, as the loopback calls it) reporting ``progress``; ``step`` if
    there is nothing to report."""
    if progress is None:
        return step
    inner = step if step is not None else partial(getattr(rt.lib, f"{rt.name}_rt_step"), rt._rt)
    done = 0

    def counted(c_in: Any, c_out: Any) -> None:
        nonlocal done
        inner(c_in, c_out)
        done += 1
        if done % PROGRESS_SAMPLES == 0 or done == total:
            progress(done, total)

    return counted


def resume(rt: Realtime, state: bytes) -> None:
    """rt back to a state a run kept (simulate's ``keep``), its bytes as they were: the config is the
    one that run had (unchanged since, or rt's next run re-takes it), so nothing is re-derived."""
    if len(state) != rt.ffi.sizeof(f"{rt.name}_rt_t"):
        raise ValueError(f"not a state of this pipeline ({len(state)} bytes)")
    rt.ffi.buffer(rt._rt)[:] = state


def _runner(
    rt: Realtime, step: Callable[[Any, Any], None] | None, failed: list[BaseException], keeper: _Keeper | None = None
) -> tuple[Any, ...]:
    """The C function to call and its first arguments: the loopback around rt's step, or around
    ``step`` (a cffi callback; what it raises is appended to ``failed``), either one through
    ``keeper``'s C step (<robot>_loopback_keeping) if given."""
    ffi, lib, p = rt.ffi, rt.lib, rt.name
    callback = ffi.NULL
    if step is not None:

        def call(_context: Any, c_in: Any, c_out: Any) -> int:
            step(c_in, c_out)
            return 0

        def error(kind: Any, value: BaseException, _tb: Any) -> int:
            failed.append(value)
            return -1

        callback = ffi.callback(f"{p}_loopback_step_t", call, onerror=error)
    with_step = getattr(lib, f"{p}_loopback_with")
    if keeper is not None:
        keeper.c.step, keeper.callback = callback, callback  # referenced until the call returns
        return (with_step, ffi.addressof(lib, f"{p}_loopback_keeping"), keeper.c, rt._rt.cfg)
    if step is None:
        return (getattr(lib, f"{p}_loopback"), rt._rt)
    return (with_step, callback, ffi.NULL, rt._rt.cfg)


def _run(rt: Realtime, trajectory: Trajectory, a: _Arrays, elastic: bool, plant: Any) -> Run:
    """The outputs and the log (the inputs the pipeline saw, the ground truth in extra)."""
    k, n = a.q_des.shape
    outs = {name: a.out[name].copy() for name in a.out.dtype.names or ()}
    extra: dict[str, Any] = {
        "q_true": a.q_true,
        "qd_true": a.qd_true,
        "qdd_true": a.qdd_true,
        "tau_cmd": outs.get("tau_cmd", a.tau),
    }
    if elastic:
        extra.update(
            theta_true=a.theta_true,
            thetad_true=a.thetad_true,
            motor_counts=a.motor_counts,
            motor_valid=valid_arr_of(a.val, k, n),
        )
    if a.ext is not None or a.tau_contact is not None:
        extra["tau_ext_true"] = (np.zeros((k, n), a.tau.dtype) if a.ext is None else a.ext) + (
            0 if a.tau_contact is None else a.tau_contact
        )
    # the log's tau[k] is what the step saw: the torque applied over the sample before k
    seen = np.vstack([np.array([list(plant.tau0)], a.tau.dtype), a.tau[:-1]])
    extra["joint_names"] = np.array(rt.manifest["joints"], dtype=str)
    log = Log(
        robot=rt.name,
        sample_period=rt.sample_period,
        time=np.asarray(trajectory.time, float),
        counts=a.counts,
        valid=valid_arr_of(a.val, k, n),
        tau=seen,
        q_des=a.q_des,
        qd_des=a.qd_des,
        qdd_des=a.qdd_des,
        extra=extra,
    )
    return Run(log, outs, a.read)


def replay(rt: Realtime, run: Run, reset: bool = True, keep: Sequence[int] = ()) -> Run | None:
    """``run`` (recorded: simulate(record=True)) with ``rt`` in the loop instead of the pipeline that
    ran it, without simulating the plant again: rt's step on the inputs the run read (those rt reads:
    a subset of them), from rt's state now (reset first if ``reset``, as simulate). The plant reads
    nothing of a pipeline but its commands, so where rt's tau_cmd equals the run's at every sample,
    rt's closed loop of the same plant (same simulate arguments, same encoder config) is this run bit
    for bit: by induction over the samples, equal commands before sample k give the same plant state,
    hence the same inputs, at k. A pipeline whose commands differ anywhere (a reaction to a
    detection, another estimator or controller) gives None, its state left as it was before the
    replay, for a closed-loop run. ``keep``: as simulate's (the states in the run's ``states``; the
    IMU chain in its ``imu_states`` where the recorded run kept it too)."""
    inputs = None if run.inputs is None else _inputs_for(rt, run.inputs)
    if inputs is None or "tau_cmd" not in (rt.output_dtype.names or ()) or "tau_cmd" not in run.out:
        return None
    if not all(0 <= k < len(inputs) for k in keep):
        raise ValueError(f"keep: samples 0..{len(inputs) - 1}, got {sorted(keep)}")
    if reset:
        rt.reset()
    rt._sync()
    before = rt.snapshot()
    states: dict[int, bytes] = {}
    parts, at = [], 0
    for k in sorted(set(keep)) + [len(inputs)]:  # the same steps, stopped where a state is kept
        if k > at:
            parts.append(rt.run_inputs(inputs[at:k]))
            at = k
        if k < len(inputs):
            states[k] = rt.snapshot()
    out = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    if out["tau_cmd"].tobytes() != run.out["tau_cmd"].tobytes():
        resume(rt, before)  # the bytes, not restore(): no configure a closed loop would not do
        return None
    log = replace(run.log, extra={**run.log.extra, "tau_cmd": out["tau_cmd"]})
    _warn_early_latch(rt, out, log.extra.get("tau_ext_true"), None)
    # the plant's run is the recorded one: its IMU chain where that run kept it
    chains = {k: v for k, v in run.imu_states.items() if k in states}
    return Run(log, out, run.imu_read, inputs, states, chains)


def tail(run: Run, k: int) -> Run:
    """``run``'s samples from ``k`` on as a recorded run of their own, its time from 0: ``replay`` of it
    from rt's state before sample k's step (``run.states[k]``) is the rest of ``run`` bit for bit where
    rt's commands are the run's (a run needs its ``inputs``: simulate(record=True))."""
    if run.inputs is None:
        raise ValueError("only a recorded run (simulate(record=True)) can be replayed from a sample on")
    whole = len(run.log)
    if not 0 <= k < whole:
        raise ValueError(f"tail: a sample 0..{whole - 1}, got {k}")

    def cut(value: Any) -> Any:
        return value[k:] if isinstance(value, np.ndarray) and value.ndim and len(value) == whole else value

    log = run.log
    rest = replace(
        log,
        time=log.time[k:] - log.time[k],
        **{name: cut(getattr(log, name)) for name in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des")},
        extra={name: cut(value) for name, value in log.extra.items()},
    )
    later = {at - k: state for at, state in run.states.items() if at >= k}
    chains = {at - k: chain for at, chain in run.imu_states.items() if at >= k}
    imu_read = None if run.imu_read is None else run.imu_read[k:]
    return Run(rest, {name: value[k:] for name, value in run.out.items()}, imu_read, run.inputs[k:], later, chains)


def _inputs_for(rt: Realtime, recorded: np.ndarray) -> np.ndarray | None:
    """Recorded inputs in rt's layout (a pipeline that reads fewer of them: no measured motion, say);
    None if rt reads one they lack."""
    ours, theirs = rt.input_dtype, recorded.dtype
    if ours == theirs:
        return recorded
    names = ours.names or ()
    if any(name not in (theirs.names or ()) or theirs[name] != ours[name] for name in names):
        return None
    a = np.zeros(len(recorded), ours)
    for name in names:
        a[name] = recorded[name]
    return a


class Replays:
    """simulate, each distinct plant run once: a run of the same plant as one recorded before (every
    simulate argument, the trajectory and rt's encoder config equal; the pipeline may read fewer
    inputs) is replayed through rt's step (``replay``) where rt's commands are the recorded ones, else
    simulated in closed loop. ``record``: keep the runs to replay (off: every run closed-loop)."""

    def __init__(self, record: bool = True) -> None:
        self.record = record
        self.runs: dict[bytes, Run] = {}
        self.replayed = 0  # runs replayed
        self.simulated = 0  # runs in closed loop

    def simulate(
        self, rt: Realtime, trajectory: Trajectory, keep: Sequence[int] = (), inputs: bool = False, **kw: Any
    ) -> Run:
        """simulate(rt, trajectory, keep=keep, **kw), or its replay; ``inputs``: the run keeps what the
        pipeline read (its ``inputs``, to replay a ``tail`` of it) even when not recording."""
        key = _plant_key(rt, trajectory, kw) if self.record and "step" not in kw else None
        known = None if key is None else self.runs.get(key)
        if known is not None:
            run = replay(rt, known, reset=bool(kw.get("reset", True)), keep=keep)
            if run is not None:
                self.replayed += 1
                return run
        self.simulated += 1
        run = simulate(rt, trajectory, record=(key is not None and known is None) or inputs, keep=keep, **kw)
        if key is not None and known is None:
            # what a replay reads: the log, the inputs and the commands (not the recorder's other outputs)
            commands = {k: v for k, v in run.out.items() if k == "tau_cmd"}
            self.runs[key] = Run(run.log, commands, run.imu_read, run.inputs, imu_states=run.imu_states)
        return run


def _plant_key(rt: Realtime, trajectory: Trajectory, kw: dict[str, Any]) -> bytes:
    """A digest of everything the plant side of a simulate call reads: the robot, the encoder config,
    the description's parameters, the trajectory and every argument."""
    h = hashlib.sha256(repr((rt.name, rt.sample_period, sorted(kw))).encode())
    arrays = [np.asarray(rt.manifest["standard_parameters"], float), trajectory.time, trajectory.q]
    arrays += [trajectory.qd, trajectory.qdd] + [rt.config[key] for key in rt.config.keys() if key.startswith("enc.")]
    for name in sorted(kw):
        value = kw[name]
        if isinstance(value, np.ndarray):
            arrays.append(value)
        else:
            h.update(repr((name, value)).encode())  # scalars and frozen dataclasses (Contact, ImuSensors)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.digest()
