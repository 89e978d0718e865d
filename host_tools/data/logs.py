"""The log format every tool reads and writes (NPZ, versioned): what a real-time loop saw and did.

Arrays (K samples, n joints):
  time (K,) s · counts (K, n) int64 raw link-side counter values · valid (K, n) bool ·
  tau (K, n) link-side torque applied over the previous sample (N m or N; an elastic arm's: the
  motor torque tau_m, link side, e.g. from the motor current) ·
  q_des, qd_des, qdd_des (K, n) desired trajectory ·
  optional: motor_counts, motor_valid (K, n) · tau_cmd (K, n) the controller's output ·
  ground truth of simulated logs: q_true, qd_true, qdd_true (K, n), tau_ext_true (K, n),
  theta_true, thetad_true (K, n) an elastic arm's motors (link side) ·
  collision_true (K,) bool · joint_names (n,) str, description_hash () str and robot_name () str: the
  description it was recorded for (fingerprint; another chain is refused, another hash of the same
  chain one notice; robot_name names it in the refusal, where ``robot`` is its C name) ·
  imported runs (host_tools.data.mat_logs): qd_hat_logged (K, n) the recording controller's own velocity
  estimate, tau_saturated (K, n) bool where the current reached its limit (tau only a bound),
  qd_recorded_<name> (K, n) other estimators' recorded outputs (Liu et al.'s Experiment 1: zero before
  their switch-on) ·
  start_position (n,) the joint positions at the first sample (rad or m) where the user stated them
  (`import-log --start-position`): an encoder counter that wraps within a joint's travel gives the
  unwrapped count, not the absolute position (host_tools.data.checks.start_offsets) ·
  what the recording held before it became these samples (host_tools.data.formats), for the input
  checks: recorded_time (R,) s, the stamps of a resampled recording (a ROS bag's, a CSV's; ordered,
  distinct) on this log's time axis; recorded_repeats (R,) bool, the recorded rows identical to the
  one before at a later stamp (R = the samples where no recorded_time is stored) ·
  tau_sampled () bool, True where ``tau`` was measured at the sample instants (a ROS bag's effort, a
  CSV's tau: what a torque sensor or drive reports at its stamp) instead of held over the sample
  before; identification then takes it as it is (host_tools.identification.pipeline.torque_at_samples).
Scalars: format = "manipgen-log", version, robot (C name), sample_period (s).
Positions are never stored as radians: the counts are what the encoder gave; the robot's encoder
config turns them into positions (so a log replays through the very same C).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from codegen.emit.files import write_file
from codegen.errors import warn
from codegen.model.robot import Robot

FORMAT = "manipgen-log"
VERSION = 1
REQUIRED = ("time", "counts", "valid", "tau", "q_des", "qd_des", "qdd_des")
OPTIONAL = (
    "motor_counts",
    "motor_valid",
    "tau_cmd",
    "q_true",
    "qd_true",
    "qdd_true",
    "tau_ext_true",
    "collision_true",
    "theta_true",
    "thetad_true",
    "qd_hat_logged",
    "tau_saturated",
    "start_position",
    "recorded_time",
    "recorded_repeats",
    "joint_names",  # (n,) str: the chain the log was recorded for (its fingerprint, checked on reading)
    "description_hash",  # () str: description_hash of the description it was recorded for (a notice if it differs)
    "robot_name",  # () str: that description's name (``robot`` is its C name: a long name is shortened)
    # (K, n) s^2: the recording loop's tracking error after a unit step of the desired acceleration
    # (host_tools.data.loop_response; manipgen record's computed torque + Kalman): the off_trajectory check
    # allows for its transients
    "qdd_step_response",
    "tau_sampled",  # () bool: tau measured at the sample instants, not held over the sample before
)
RECORDED_PREFIX = "qd_recorded_"  # + an estimator's name: its recorded output, (K, n)


def joint_names(robot: Robot) -> np.ndarray:
    """The ``joint_names`` array of a log of ``robot``: its chain's joints, in order."""
    return np.array([j.name for j in robot.joints], dtype=str)


# Values whose magnitude is below this are 0 in the description hash's text: the residues of a
# quarter-turn rotation (cos(pi/2) = 6.1e-17) and of a frame change of the inertias (~1e-16 of the
# largest entry) are zeros of the model, and another libm may leave another sign or ulp there. A real
# kinematic length or inertia is many orders above it (a 1 mm offset, a 1e-6 kg m^2 link).
HASH_ZERO = 1e-12
# Significant digits of the description hash's text: a libm that differs in the last bit (2.2e-16
# relative) changes a 10-digit rendering only where the value lies within 1e-16 of a rounding boundary
# (about 1 value in 1e6), while an identified parameter moves far more than 1e-10 of itself.
HASH_DIGITS = 10


def _numbers(values: Any) -> str:
    return " ".join(
        format(0.0 if abs(v) < HASH_ZERO else float(v), f".{HASH_DIGITS}g") for v in np.ravel(np.asarray(values, float))
    )


def description_hash(robot: Robot) -> str:
    """A hash of the model ``robot`` loads to, as text: each joint's type and frames, each link's and
    joint's dynamic parameters, the payload, tip, gravity and Coulomb model (not the file's bytes: an
    edited comment is the same model; not float bits: the text rounds to HASH_DIGITS)."""
    lines = [
        f"gravity {_numbers(robot.gravity)}",
        f"payload {_numbers(robot.payload)}",
        f"tip {_numbers(robot.tip)}",
        f"coulomb {robot.coulomb.model} {_numbers(robot.coulomb.velocity_scale)}",
    ]
    for j, link in zip(robot.joints, robot.links):
        lines.append(
            f"{j.name} {j.type} pre {_numbers(j.pre)} post {_numbers(j.post)} link {_numbers(link)} "
            f"IA FV FC FO {_numbers((j.IA, j.FV, j.FC, j.FO))}"
        )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def fingerprint(robot: Robot) -> dict[str, np.ndarray]:
    """What a log records of the description it was recorded for (check_chain reads it back)."""
    return {
        "joint_names": joint_names(robot),
        "description_hash": np.array(description_hash(robot)),
        "robot_name": np.array(robot.name),
    }


class LogError(ValueError):
    """A log file that does not follow the format (names the file and the array)."""


def recorded_for(log: Log) -> str:
    """The name of the description ``log`` was recorded for: its ``robot_name`` where it records
    one, else ``robot`` (the C name, a long name shortened)."""
    return str(log.extra.get("robot_name", log.robot))


def check_chain(log: Log, robot: Robot, where: str) -> None:
    """Refuse (one line) a log of another robot: by name, and by its chain's joints where the log
    records them (two descriptions may share a name: a URDF's left and right arm are both "talos");
    one notice if the log records another description hash of the same chain."""
    if log.robot != robot.c_name:
        raise LogError(f"{where}: robot: the log is of {recorded_for(log)}, not {robot.name}")
    ours = [j.name for j in robot.joints]
    theirs = [str(v) for v in log.extra.get("joint_names", ours)]
    if theirs != ours:
        raise LogError(
            f"{where}: joint_names: the log was recorded for the joints {', '.join(theirs)}, "
            f"{robot.file} has {', '.join(ours)} (another chain of {robot.name}?)"
        )
    if "description_hash" in log.extra and str(log.extra["description_hash"]) != description_hash(robot):
        # a notice, not a refusal: a description re-identified from its own logs must still read them
        warn(
            where,
            "description_hash",
            f"the log was recorded with other parameters or kinematics of this chain than {robot.file} "
            f"gives (hash {log.extra['description_hash']} then, {description_hash(robot)} now; an edited or "
            "re-identified description?); read with this one",
        )


@dataclass
class Log:
    robot: str
    sample_period: float
    time: np.ndarray
    counts: np.ndarray
    valid: np.ndarray
    tau: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray
    qdd_des: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # OPTIONAL arrays present
    # the encoder offsets (enc.offset, rad or m) that make the generated read of this log start at
    # its stated start_position (host_tools.data.checks.with_start_position; derived, not saved):
    # Realtime.run applies them
    encoder_offset: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.time)

    def inputs(self) -> dict[str, np.ndarray]:
        """The real-time step inputs, per sample."""
        d = {k: getattr(self, k) for k in ("counts", "valid", "tau", "q_des", "qd_des", "qdd_des")}
        for k in ("motor_counts", "motor_valid"):
            if k in self.extra:
                d[k] = self.extra[k]
        return d

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        arrays: dict[str, Any] = {
            "format": np.array(FORMAT),
            "version": np.array(VERSION),
            "robot": np.array(self.robot),
            "sample_period": np.array(self.sample_period),
        }
        for f in fields(self):
            if f.name not in ("robot", "sample_period", "extra", "encoder_offset"):
                arrays[f.name] = getattr(self, f.name)
        arrays.update(self.extra)
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        write_file(path, buf.getvalue())
        return path

    @classmethod
    def load(cls, path: str | Path) -> Log:
        path = Path(path)
        if path.is_dir():
            raise LogError(f"{path}: a folder, but not a ROS 2 bag (no metadata.yaml in it)")
        try:
            with open(path, "rb") as fh:
                magic = fh.read(4)
        except FileNotFoundError:
            raise LogError(f"{path}: no such file") from None  # read_log's wording (elastic reads logs here)
        except OSError as exc:
            raise LogError(f"{path}: cannot read ({exc.strerror})") from None
        if magic != b"PK\x03\x04":  # an NPZ is a zip archive; numpy's own error would suggest pickles
            raise LogError(
                f"{path}: not a log: expected the NPZ log format (docs/realtime.md; `manipgen import-log` "
                "turns the others into one), a Liu et al. .mat run, a ROS bag (.bag, .db3, .mcap, or a bag "
                "folder with metadata.yaml) or a CSV (.csv)"
            )
        z = _read_npz(path)
        if "format" not in z or str(z["format"]) != FORMAT:
            raise LogError(f"{path}: format: not a {FORMAT} file")
        try:
            version = int(z["version"])
        except (KeyError, TypeError, ValueError):
            raise LogError(f"{path}: version: missing or not an integer") from None
        if version != VERSION:
            raise LogError(f"{path}: version: {version} not supported (expected {VERSION})")
        missing = [k for k in REQUIRED + ("robot", "sample_period") if k not in z]
        if missing:
            raise LogError(f"{path}: {missing[0]}: missing array")
        data = {k: z[k] for k in REQUIRED}
        extra = {k: v for k, v in z.items() if k in OPTIONAL or k.startswith(RECORDED_PREFIX)}
        log = cls(robot=str(z["robot"]), sample_period=float(z["sample_period"]), extra=extra, **data)
        log.check(str(path))
        return log

    def check(self, where: str = "log") -> None:
        k = len(self.time)
        n = np.shape(self.counts)[1] if np.ndim(self.counts) == 2 else -1
        r = np.shape(self.extra["recorded_time"])[:1] if "recorded_time" in self.extra else (k,)
        per_name = {
            "collision_true": (k,),
            "start_position": (n,),
            "joint_names": (n,),
            "description_hash": (),
            "robot_name": (),
            "tau_sampled": (),
            "recorded_time": r,
            "recorded_repeats": r,
            "qdd_step_response": np.shape(self.extra.get("qdd_step_response", np.zeros((0, n))))[:1] + (n,),
        }
        for name in REQUIRED[1:] + tuple(self.extra):
            a = getattr(self, name) if name in REQUIRED else self.extra[name]
            shape = per_name.get(name, (k, n))
            if np.shape(a) != shape:
                raise LogError(f"{where}: {name}: expected shape {shape}, got {np.shape(a)}")
        if not np.issubdtype(np.asarray(self.counts).dtype, np.integer):
            raise LogError(f"{where}: counts: must be integers (raw encoder counts)")
        if "tau_sampled" in self.extra and np.asarray(self.extra["tau_sampled"]).dtype != np.bool_:
            # bool() of any other value (the string "False", 0.5) would take it as true
            raise LogError(f"{where}: tau_sampled: must be a boolean (true: tau measured at the sample instants)")
        if not np.all(np.isfinite(self.tau)):
            raise LogError(f"{where}: tau: contains NaN or inf")
        if not np.all(np.isfinite(self.extra.get("qdd_step_response", 0.0))):
            raise LogError(f"{where}: qdd_step_response: contains NaN or inf")


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an NPZ file, read now: a truncated or damaged archive (a copy cut short, a full
    disk) fails here with one line naming the file, not in the middle of a command."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise LogError(f"{path}: cannot read as NPZ, the file is damaged or cut short ({exc})") from None
