"""The generated real-time pipeline on the host: the very C of the controller, through cffi.

    from host_tools import load_rt
    rt = load_rt("kuka_iiwa14", observer="momentum", controller="computed_torque")  # estimator: the description's
    rt.config["obs.k_o"] = 50.0            # run-time config: no recompilation
    out = rt.step(counts, valid, tau, q_des, qd_des, qdd_des)
    outs = rt.run(log)                     # a whole log, looping in C

Config, state, inputs and outputs are numpy structured views on the C structs (field names as in
``<robot>_rt.h``); ``rt.config`` reads/writes ``"<block>.<field>"`` keys and saves/loads JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks import friction, registry
from codegen.blocks.base import Field
from codegen.blocks.options import EstimatorChoice, RtOptions, parse_estimator, parse_label, realtime_defaults
from codegen.emit.cprint import Precision
from codegen.emit.files import write_file
from codegen.model.robot import Robot, with_friction_terms
from host_tools.bindings.build import build
from host_tools.bindings.compiled import generated_folder

CONFIG_FORMAT = "manipgen-rt-config"
CONFIG_VERSION = 1
ANY_PIPELINE = "any"  # a config's "pipeline" when it holds only fields of the robot's model
_PRIMITIVE = {"double": "f8", "float": "f4", "int32_t": "i4", "uint32_t": "u4", "int64_t": "i8", "uint8_t": "u1"}


class ConfigError(ValueError):
    """A config file or value that does not fit this pipeline (names the file and the field)."""


def numpy_dtype(ffi: Any, ctype: Any) -> np.dtype:
    """The numpy dtype with the exact layout of a cffi struct/array/primitive type."""
    t = ffi.typeof(ctype) if isinstance(ctype, str) else ctype
    if t.kind == "struct":
        names, formats, offsets = [], [], []
        for name, fld in t.fields:
            names.append(name)
            formats.append(numpy_dtype(ffi, fld.type))
            offsets.append(fld.offset)
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": ffi.sizeof(t)})
    if t.kind == "array":
        return np.dtype((numpy_dtype(ffi, t.item), (t.length,)))
    if t.kind == "pointer":  # the instance's config pointer: an address, not data
        return np.dtype(f"u{ffi.sizeof(t)}")
    return np.dtype(_PRIMITIVE[t.cname])


def view(ffi: Any, ptr: Any, dtype: np.dtype, count: int | None = None) -> np.ndarray:
    arr = np.frombuffer(ffi.buffer(ptr), dtype=dtype)
    return arr if count is not None else arr[0]


def manifest_fields(rt: dict[str, Any]) -> dict[str, Field]:
    """The config fields with their valid ranges, as the manifest records them."""
    out: dict[str, Field] = {}
    for b in rt["blocks"]:
        for name, ctype, shape in b["config"]:
            r = b["ranges"][name]
            out[f"{b['kind']}.{name}"] = Field(
                name,
                ctype,
                tuple(shape),
                "",
                low=r["low"],
                high=r["high"],
                low_open=r["low_open"],
                choices=tuple(r["choices"]),
                unused=tuple(r.get("unused", ())),
                unused_why=r.get("unused_why", ""),
            )
    return out


def missing_term(key: str, values: np.ndarray) -> None:
    """A config value for a friction term (``fric.*``) the generated code has on no joint: accepted
    (and without effect) where the term's coefficient is 0, refused in one line where it is not."""
    term = friction.coefficient_term(key)
    if not np.all(np.isfinite(values)):
        raise ConfigError(f"{key}: must be finite numbers")
    nonzero = np.flatnonzero(np.ravel(values))
    if term is not None and nonzero.size:
        joints = (
            "any joint"
            if np.size(values) == 1
            else f"joint{'s' * (nonzero.size > 1)} " + ", ".join(str(j + 1) for j in nonzero)
        )
        raise ConfigError(f"{key}: " + friction.missing(term).format(joints=joints, value=np.ravel(values)[nonzero[0]]))


def with_config_terms(robot: Robot, path: str | Path) -> Robot:
    """The robot with the friction terms (codegen.blocks.friction) a config JSON sets a non-zero
    coefficient for on some joint (identify's config_identified.json: the terms it chose), besides
    the description's: the description to generate a pipeline that takes that config."""
    values = config_values(path)
    try:
        return with_friction_terms(robot, config_terms(values, robot.dof))
    except ConfigError as exc:
        raise ConfigError(f"{path}: config.{exc}") from None


def config_values(path: str | Path) -> dict[str, Any]:
    """The ``config`` fields of a config JSON (RtConfig.save's, identify's config_identified.json)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        values = doc["config"]
        if not isinstance(values, dict):
            raise TypeError
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: cannot read the fields of a {CONFIG_FORMAT} JSON ({exc!r})") from None
    return values


def config_terms(values: dict[str, Any], dof: int) -> list[list[str]]:
    """Per joint, the friction terms (codegen.blocks.friction) config fields ``values`` set a non-zero
    coefficient for."""
    extra: list[list[str]] = [[] for _ in range(dof)]
    for term in friction.TERMS.values():
        key = f"fric.{term.coefficient}"
        if key not in values:
            continue
        try:
            v = np.broadcast_to(np.asarray(values[key], dtype=float), (dof,))
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected 1 or {dof} numbers, got {values[key]!r}") from None
        for j in np.flatnonzero(v):
            extra[j].append(term.name)
    return extra


class RtConfig:
    """Run-time configuration of one pipeline: ``cfg["est.gain"]``, ``cfg.save(p)``, ``cfg.load(p)``."""

    def __init__(
        self, struct: Any, robot: str, label: str, sample_period: float, fields: dict[str, Field] | None = None
    ) -> None:
        self._s, self.robot, self.label, self.sample_period = struct, robot, label, sample_period
        self._fields = fields or {}
        self.designed: dict[str, list[float]] = {}  # the design values of the last redesign, per joint

    def keys(self) -> list[str]:
        return [f"{k}.{f}" for k in self._s.dtype.names or () for f in self._s.dtype[k].names or ()]

    def _split(self, key: str) -> tuple[str, str]:
        kind, _, name = key.partition(".")
        if kind not in (self._s.dtype.names or ()) or name not in (self._s.dtype[kind].names or ()):
            raise ConfigError(f"{key}: no such config field (fields: {', '.join(self.keys())})")
        return kind, name

    def __getitem__(self, key: str) -> np.ndarray:
        kind, name = self._split(key)
        return self._s[kind][name]

    def __setitem__(self, key: str, value: Any) -> None:
        try:
            v = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected numbers, got {value!r}") from None
        if key in friction.FIELDS and key not in self._fields and key not in self.keys():
            missing_term(key, v)  # a term the generated code lacks: zeros (and its shape) change nothing
            return
        kind, name = self._split(key)
        target = self._s[kind][name]
        problem = self._fields[key].problem(v) if key in self._fields else None
        if problem:
            raise ConfigError(f"{key}: {problem}")
        try:
            if target.shape == ():
                if v.size != 1:
                    raise ValueError
                self._s[kind][name] = v.reshape(())
            else:
                target[...] = np.broadcast_to(v, target.shape)
        except ValueError:
            raise ConfigError(f"{key}: expected shape {target.shape} (or a scalar), got {v.shape}") from None

    def to_dict(self) -> dict[str, Any]:
        return {k: np.asarray(self[k]).tolist() for k in self.keys()}

    def redesign(self, **values: Any) -> None:
        """A new design of the estimator's run-time gains from its design values (its registry
        spec's ``design_keys`` and ``redesign``), with this config's encoder; e.g. the kalman
        estimator's ``redesign(q_var=50.0)``: jerk variance Q per joint (rad^2/s^6), measurement
        variance ``r_var`` (default: (2 pi / (cpr gear))^2 / 3 from this config's encoder) ->
        ``est.gain``. ``designed`` keeps the values given, per joint."""
        choice = parse_label(self.label).estimator
        spec = registry.estimators()[choice.name]
        if spec.redesign is None:
            raise ConfigError(f"{spec.name}: its gains are est.* config fields, not designed from values")
        unknown = sorted(set(values) - set(spec.design_keys))
        if unknown:
            has = ", ".join(spec.design_keys)
            raise ConfigError(f"{spec.name}: no design value {', '.join(unknown)} (it has {has})")
        enc = {k: self[k] for k in self.keys() if k.startswith("enc.")}
        try:
            fields = spec.redesign(self.sample_period, dict(choice.params), enc, values)
        except ValueError as exc:
            raise ConfigError(f"{', '.join(sorted(values))}: {exc}") from None
        for key, value in fields.items():
            self[key] = value
        n = len(self["enc.cpr"])
        given = {k: np.broadcast_to(np.asarray(v, float), (n,)) for k, v in values.items() if v is not None}
        self.designed.update({k: [float(x) for x in v] for k, v in given.items()})

    def save(self, path: str | Path) -> None:
        doc = {
            "format": CONFIG_FORMAT,
            "version": CONFIG_VERSION,
            "robot": self.robot,
            "pipeline": self.label,
            "config": self.to_dict(),
        }
        write_file(path, json.dumps(doc, indent=1) + "\n")

    def load(self, path: str | Path) -> None:
        """Read a config JSON written by save (or by tune/thresholds): checks robot and fields."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read config JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != CONFIG_FORMAT:
            raise ConfigError(f"{path}: format: not a {CONFIG_FORMAT} file")
        if doc.get("version") != CONFIG_VERSION:
            raise ConfigError(f"{path}: version: {doc.get('version')!r} is not supported (expected {CONFIG_VERSION})")
        if doc.get("robot") != self.robot:
            raise ConfigError(f"{path}: robot: written for {doc.get('robot')!r}, this pipeline is {self.robot!r}")
        values = doc.get("config")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: config: expected a mapping of block.field values")
        for key, value in values.items():  # friction terms the pipeline lacks: refused unless 0 (__setitem__)
            try:
                self[key] = value
            except ConfigError as exc:
                raise ConfigError(f"{path}: config.{exc}") from None


class Realtime:
    """One instance of a generated pipeline (C state, config, step and run)."""

    def __init__(self, folder: str | Path, sanitize: bool = False, portable_math: bool = False) -> None:
        """``sanitize``: the ASan + UBSan build (host_tools.bindings.build.SANITIZE; the process must preload
        host_tools.bindings.build.sanitizer_preload()); ``portable_math``: the build whose sin, cos, exp
        and tanh give the same bits on every processor (manipgen_linalg.h; ``manipgen target pil``)."""
        self.folder = Path(folder)
        mod, self.manifest = build(self.folder, sanitize, portable_math)
        self.module_file = str(mod.__file__)  # the compiled cffi extension
        self.ffi, self.lib = mod.ffi, mod.lib
        m = self.manifest
        p = self.name = m["robot"]
        self.dof: int = m["dof"]
        self.rt_manifest: dict[str, Any] = m["rt"]
        self.sample_period: float = self.rt_manifest["sample_period"]
        self._rt = self.ffi.new(f"{p}_rt_t *")
        self._cfg = self.ffi.new(f"{p}_rt_config_t *")
        self._cfg[0] = getattr(self.lib, f"{p}_rt_default_config")
        self._in_t, self._out_t = f"{p}_rt_input_t", f"{p}_rt_output_t"
        self.input_dtype = numpy_dtype(self.ffi, self._in_t)
        self.output_dtype = numpy_dtype(self.ffi, self._out_t)
        self._in_ptr, self._out_ptr = self.ffi.typeof(f"{self._in_t} *"), self.ffi.typeof(f"{self._out_t} *")
        self._one = self.inputs(1)
        self.config = RtConfig(
            view(self.ffi, self._cfg, numpy_dtype(self.ffi, f"{p}_rt_config_t")),
            p,
            self.rt_manifest["label"],
            self.sample_period,
            manifest_fields(self.rt_manifest),
        )
        self.state = view(self.ffi, self._rt, numpy_dtype(self.ffi, f"{p}_rt_t"))
        self._init = getattr(self.lib, f"{p}_rt_init")
        self._configure = getattr(self.lib, f"{p}_rt_configure")
        self._step = getattr(self.lib, f"{p}_rt_step")
        self._run = getattr(self.lib, f"{p}_rt_run")
        self.reset()

    @property
    def label(self) -> str:
        return str(self.rt_manifest["label"])

    def reset(self) -> None:
        """Clear all state and (re)take the config; the next step is the first."""
        self._init(self._rt, self._cfg)
        self._pushed = bytes(self.ffi.buffer(self._cfg))

    def snapshot(self) -> bytes:
        """The whole C state (estimators, observers, controller), to ``restore`` later: a closed loop can
        branch from a common past (e.g. several collisions after the same contact-free motion)."""
        return bytes(self.ffi.buffer(self._rt))

    def restore(self, snapshot: bytes) -> None:
        """Back to a snapshot's state, under the config set now (re-taken, as by _rt_configure, so
        a change made since the snapshot holds)."""
        if len(snapshot) != self.ffi.sizeof(f"{self.name}_rt_t"):
            raise ValueError(
                f"not a snapshot of this pipeline ({len(snapshot)} bytes, the state has "
                f"{self.ffi.sizeof(self.name + '_rt_t')})"
            )
        self.ffi.buffer(self._rt)[:] = snapshot
        self._configure(self._rt, self._cfg)
        self._pushed = bytes(self.ffi.buffer(self._cfg))

    def config_bytes(self) -> bytes:
        """The config struct as the C library lays it out (for a target of the same layout)."""
        return bytes(self.ffi.buffer(self._cfg))

    def config_sources(self, name: str, stem: str, source: str) -> dict[str, str]:
        """``{stem}.c`` and ``{stem}.h`` defining the config in use as ``const <robot>_rt_config_t
        name`` (designated initialiser; ``manipgen export-config``), ``source`` quoted in them."""
        from codegen.emit.config_export import exported_config

        blocks = [
            (b["kind"], [Field(n, ctype, tuple(shape), "") for n, ctype, shape in b["config"]])
            for b in self.rt_manifest["blocks"]
        ]
        values = {key: self.config[key] for key in self.config.keys()}
        precision: Precision = self.manifest["options"]["precision"]
        return exported_config(self.name, blocks, precision, values, name, stem, source, self.label)

    def _sync(self) -> None:
        now = bytes(self.ffi.buffer(self._cfg))
        if now != self._pushed:
            self._configure(self._rt, self._cfg)
            self._pushed = now

    def inputs(self, count: int) -> np.ndarray:
        """A zeroed input array (structured, fields as in <robot>_rt_input_t); valid = 1."""
        a = np.zeros(count, dtype=self.input_dtype)
        a["valid"] = 1
        if "motor_valid" in (a.dtype.names or ()):  # an elastic arm's second channel
            a["motor_valid"] = 1
        return a

    def step(
        self,
        counts: Any,
        valid: Any = None,
        tau: Any = None,
        q_des: Any = None,
        qd_des: Any = None,
        qdd_des: Any = None,
        motor_counts: Any = None,
        motor_valid: Any = None,
        reset: bool = False,
    ) -> dict[str, np.ndarray]:
        """One sample; arguments per joint (valid defaults to all 1, the rest to 0)."""
        a = self._one.copy()  # inputs(1), built once (a closed loop steps tens of thousands of times)
        fill_inputs(
            a,
            {
                "counts": counts,
                "valid": valid,
                "tau": tau,
                "q_des": q_des,
                "qd_des": qd_des,
                "qdd_des": qdd_des,
                "motor_counts": motor_counts,
                "motor_valid": motor_valid,
                "reset": reset,
            },
        )
        out = self._run_array(a)
        return {k: out[k][0] for k in out.dtype.names or ()}

    def encoder_counts(self, q: Any, theta: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The counts (primary, second channel; int64, unwrapped) robot positions q (..., dof) show
        through this config's encoders: the loopback's sensor model (<robot>_loopback_encoder). The
        second channel reads theta (an elastic arm's motor positions, link side) if given, else q."""
        q = np.asarray(q, float)
        if q.shape[-1:] != (self.dof,):
            raise ValueError(f"q must end in a dimension of {self.dof} joints, got shape {q.shape}")
        if theta is not None and np.shape(theta) != q.shape:
            raise ValueError(f"theta must have the shape of q {q.shape}, got {np.shape(theta)}")
        real = np.float32 if self.input_dtype["tau"].base == np.float32 else np.float64
        flat = np.ascontiguousarray(q.reshape(-1, self.dof), dtype=real)
        th = None if theta is None else np.ascontiguousarray(np.reshape(theta, (-1, self.dof)), dtype=real)
        counts, motor = np.zeros(flat.shape, np.int64), np.zeros(flat.shape, np.int64)
        fn, rc = getattr(self.lib, f"{self.name}_loopback_encoder"), f"{self.name}_real_t *"
        for k in range(len(flat)):
            fn(
                self._cfg,
                self.ffi.cast(rc, self.ffi.from_buffer(flat[k])),
                self.ffi.NULL if th is None else self.ffi.cast(rc, self.ffi.from_buffer(th[k])),
                self.ffi.cast("int64_t *", self.ffi.from_buffer(counts[k])),
                self.ffi.cast("int64_t *", self.ffi.from_buffer(motor[k])),
            )
        return counts.reshape(q.shape), motor.reshape(q.shape)

    def run_inputs(self, a: np.ndarray) -> dict[str, np.ndarray]:
        """Run a structured input array through the C step (one C loop); outputs per field (K, ...)."""
        out = self._run_array(a)
        return {k: out[k].copy() for k in out.dtype.names or ()}

    def _run_array(self, a: np.ndarray) -> np.ndarray:
        """run_inputs' outputs as one new structured array (K,)."""
        self._sync()
        a = np.ascontiguousarray(a, dtype=self.input_dtype)
        out = np.zeros(len(a), dtype=self.output_dtype)
        self._run(
            self._rt,
            self.ffi.cast(self._in_ptr, self.ffi.from_buffer(a)),
            self.ffi.cast(self._out_ptr, self.ffi.from_buffer(out, require_writable=True)),
            len(a),
        )
        return out

    def run(self, log: Any) -> dict[str, np.ndarray]:
        """Run a log (host_tools.data.logs.Log or a mapping with counts, valid, tau, q_des, ...). A
        log with a stated start position (its ``encoder_offset``) runs with those encoder offsets
        (``enc.offset``; the config's own restored after)."""
        fields = log.inputs() if hasattr(log, "inputs") else dict(log)
        a = self.inputs(len(np.asarray(fields["counts"])))
        fill_inputs(a, fields)
        offset = getattr(log, "encoder_offset", None)
        if offset is None:
            return self.run_inputs(a)
        saved = np.array(self.config["enc.offset"], copy=True)
        self.config["enc.offset"] = offset
        try:
            return self.run_inputs(a)
        finally:
            self.config["enc.offset"] = saved


def fill_inputs(a: np.ndarray, values: Mapping[str, Any]) -> None:
    names = a.dtype.names or ()
    for key, value in values.items():
        if value is None:
            continue
        if key not in names:
            raise KeyError(f"unknown input {key!r} (inputs: {', '.join(names)})")
        v = np.asarray(value)
        if key in ("counts", "motor_counts"):
            v = (v.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)  # raw register bits
        field = a[key]  # a view: writing into it writes a
        field[...] = v.reshape(field.shape) if v.size == field.size else v


def rt_options(
    estimator: str | EstimatorChoice | None = None,
    observer: str | None = None,
    controller: str | None = None,
    constant_params: bool | None = None,
    base: RtOptions | None = None,
    sample_period: float | None = None,
) -> RtOptions:
    b = base or RtOptions()
    if isinstance(estimator, str):  # a user's text (load_rt's); the studies pass it parsed
        estimator = parse_estimator(estimator)
    return RtOptions(
        estimator=estimator or b.estimator,
        observer=observer if observer is not None else b.observer,
        controller=controller if controller is not None else b.controller,
        constant_params=constant_params if constant_params is not None else b.constant_params,
        sample_period=sample_period if sample_period is not None else b.sample_period,
    )


def load_rt(
    spec: str | Path | Robot,
    estimator: str | None = None,
    observer: str | None = None,
    controller: str | None = None,
    constant_params: bool | None = None,
    precision: Precision = "double",
    base_link: str | None = None,
    tip_link: str | None = None,
    overlay: str | Path | None = None,
    sample_period: float | None = None,
    portable_math: bool = False,
) -> Realtime:
    """A robot's real-time pipeline, generated (cached), compiled and loaded. Unset choices come from
    the robot description's ``realtime:`` section, then the defaults (kalman, momentum, computed_torque).
    ``sample_period`` (s) overrides the description's: the discretisations are made for it. ``spec``:
    a bundled name, a description path (with the URDF chain arguments) or a Robot already loaded.
    ``portable_math``: see Realtime."""
    from codegen.model.description import load_robot

    robot = (
        spec if isinstance(spec, Robot) else load_robot(spec, base_link=base_link, tip_link=tip_link, overlay=overlay)
    )
    opts = rt_options(estimator, observer, controller, constant_params, realtime_defaults(robot).options, sample_period)
    return Realtime(generated_folder(robot, precision=precision, rt=opts), portable_math=portable_math)
