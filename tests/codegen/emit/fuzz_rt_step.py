"""Hypothesis fuzzing of a generated ``<robot>_rt_step`` through cffi, in an ASan + UBSan build
(#10 item 2). tests/codegen/emit/test_fuzz_sanitized.py runs it in a subprocess with the ASan runtime
preloaded (Python itself is not instrumented):

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) python -m tests.codegen.emit.fuzz_rt_step kuka_iiwa14 double

Each example: a config with zero, tiny, huge, negative, NaN or infinite values in some real fields
(gains, thresholds, limits, parameters), then a sequence of segments -- smooth motion, counter
wraps, garbage counts, lost samples in bursts, NaN/Inf/huge torques and desired values -- then the
default config and sane inputs again. Checked on every step: no sanitizer report (the process would
abort), every real output finite, ``fault`` = 1 exactly when an input was not finite or beyond
the input limit; after the return to sanity: no fault, ``ready`` = 1, and the estimates and
the residual converge to those of a freshly initialised instance fed the same sane inputs. Prints
one JSON line of counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.blocks.options import realtime_defaults
from codegen.blocks.pipeline import INPUT_LIMIT
from host_tools.bindings.compiled import generated_folder
from host_tools.bindings.rt import Realtime, rt_options

REAL_INPUTS = ("tau", "q_des", "qd_des", "qdd_des")
HOSTILE = [0.0, -0.0, 1e-300, 1e-30, 1e30, -1e30, 1e300, -1e300, np.inf, -np.inf, np.nan]
SEGMENTS = ("smooth", "wrap", "garbage", "lost", "hostile", "huge_sane")
RECOVERY = 3000  # sane samples at the end
# what must settle as in a fresh instance: the estimators and the observer (a collision reaction
# the fuzz triggered stays latched -- that is the detection's contract, not a numeric fault)
SETTLING = ("q_hat", "qd_hat", "qdd_hat", "theta_hat", "thetad_hat", "thetadd_hat", "r")


class Fuzz:
    def __init__(self, rt: Realtime, fresh: Realtime) -> None:
        self.rt, self.fresh = rt, fresh
        self.n = rt.dof
        self.real = np.float32 if rt.input_dtype["tau"].base == np.float32 else np.float64
        self.default = {k: np.array(rt.config[k], copy=True) for k in rt.config.keys()}
        self.real_keys = [k for k in rt.config.keys() if rt.config[k].dtype.kind == "f"]
        self.counts = {
            "examples": 0,
            "steps": 0,
            "fault_input": 0,
            "fault_result": 0,
            "hostile_configs": 0,
            "recovered_like_fresh": 0,
        }

    def set_config(self, changes: dict[str, tuple[int, float]]) -> None:
        """Write straight into the C config (no host-side validation: the C must cope)."""
        struct = self.rt.config._s  # the C struct's numpy view
        for key, v in self.default.items():
            kind, name = key.split(".")
            struct[kind][name] = v
        for key, (index, value) in changes.items():
            kind, name = key.split(".")
            field = struct[kind][name]
            if np.ndim(field) == 0:
                struct[kind][name] = value
            else:
                field[np.unravel_index(index % field.size, field.shape)] = value

    def segment(self, draw: Any, kind: str, start: np.ndarray) -> np.ndarray:
        length = draw(st.integers(1, 60))
        a = self.rt.inputs(length)
        counts = start.astype(np.int64) + np.cumsum(
            np.asarray(
                draw(
                    st.lists(
                        st.lists(st.integers(-300, 300), min_size=self.n, max_size=self.n),
                        min_size=length,
                        max_size=length,
                    )
                ),
                np.int64,
            ),
            axis=0,
        )
        if kind == "wrap":  # around the 32- and 16-bit wrap points, either way
            base = draw(
                st.sampled_from([2**32 - 50 * length, 2**31 - 50 * length, 2**16 - 50 * length, 2**15 - 50 * length])
            )
            counts = base + np.arange(length)[:, None] * draw(st.sampled_from([97, -97])) + counts - start
        if kind == "garbage":
            counts = np.asarray(
                draw(
                    st.lists(
                        st.lists(st.integers(0, 2**32 - 1), min_size=self.n, max_size=self.n),
                        min_size=length,
                        max_size=length,
                    )
                )
            )
        a["counts"] = (counts & 0xFFFFFFFF).astype(np.uint32)
        if "motor_counts" in (a.dtype.names or ()):
            a["motor_counts"] = a["counts"]
        if kind == "lost":
            lost = np.asarray(
                draw(
                    st.lists(
                        st.lists(st.booleans(), min_size=self.n, max_size=self.n), min_size=length, max_size=length
                    )
                )
            )
            a["valid"] = ~lost
            if "motor_valid" in (a.dtype.names or ()):
                a["motor_valid"] = ~lost[::-1]
        scale = {"huge_sane": INPUT_LIMIT}.get(kind, 5.0)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        for name in REAL_INPUTS:
            a[name] = (rng.uniform(-scale, scale, (length, self.n))).astype(self.real)
        if kind == "hostile":
            for _ in range(draw(st.integers(1, 6))):
                name = draw(st.sampled_from(REAL_INPUTS))
                a[name][draw(st.integers(0, length - 1)), draw(st.integers(0, self.n - 1))] = draw(
                    st.sampled_from(HOSTILE)
                )
        if "reset" in (a.dtype.names or ()):
            a["reset"] = rng.random(length) < 0.02
        return a

    def expect_input_fault(self, a: np.ndarray) -> np.ndarray:
        bad = np.zeros(len(a), bool)
        for name in REAL_INPUTS:
            v = a[name].astype(float).reshape(len(a), -1)
            bad |= ~np.all(np.abs(v) <= INPUT_LIMIT, axis=1)
        return bad

    def check_outputs(self, out: dict[str, np.ndarray]) -> None:
        for name, v in out.items():
            if v.dtype.kind == "f":
                assert np.all(np.isfinite(v)), f"non-finite output {name}"
        assert set(np.unique(out["fault"])) <= {0, 1, 2}

    def run(self, draw: Any) -> None:
        changes: dict[str, tuple[int, float]] = {}
        if draw(st.booleans()):
            for key in draw(st.lists(st.sampled_from(self.real_keys), min_size=1, max_size=4, unique=True)):
                changes[key] = (draw(st.integers(0, 10**6)), draw(st.sampled_from(HOSTILE)))
            self.counts["hostile_configs"] += 1
        self.set_config(changes)
        bad_config = any(not np.isfinite(v) for _, v in changes.values())
        self.rt.reset()
        start = np.asarray(draw(st.lists(st.integers(-5000, 5000), min_size=self.n, max_size=self.n)), np.int64)
        for kind in draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=8)):
            a = self.segment(draw, kind, start)
            out = self.rt.run_inputs(a)
            self.check_outputs(out)
            expected = self.expect_input_fault(a)
            assert np.array_equal(out["fault"] == 1, expected), (kind, out["fault"], expected)
            if bad_config:  # a non-finite config value faults every step (no saturation hides it)
                assert np.all(out["fault"] != 0), (kind, changes)
            self.counts["fault_input"] += int(np.sum(out["fault"] == 1))
            self.counts["fault_result"] += int(np.sum(out["fault"] == 2))
            self.counts["steps"] += len(a)
            start = a["counts"][-1].astype(np.int64)
        self.recover(start)
        self.counts["examples"] += 1

    def recover(self, start: np.ndarray) -> None:
        """Default config, an arm creeping on from the last counts, zero torque and desired values: the fuzzed
        instance's estimates and residual must settle where a fresh one's do."""
        self.set_config({})
        a = self.rt.inputs(RECOVERY)
        # a steady creep of one count per sample: the velocity's sign is never in doubt (sign(qd)
        # friction would make a still arm's residual hinge on the sign of a 1e-15 velocity)
        a["counts"] = ((start + np.arange(RECOVERY)[:, None]) & 0xFFFFFFFF).astype(np.uint32)
        if "motor_counts" in (a.dtype.names or ()):
            a["motor_counts"] = a["counts"]
        out = self.rt.run_inputs(a)
        self.check_outputs(out)
        assert np.all(out["fault"][1:] == 0) and np.all(out["ready"][1:] == 1)
        self.fresh.reset()
        ref = self.fresh.run_inputs(a)
        self.counts["steps"] += RECOVERY
        if not np.allclose(out["q"][-1], ref["q"][-1], rtol=0, atol=1e-9):
            return  # the fuzz moved the unwrapped position by whole counter ranges: not comparable
        head, tail = slice(100, 200), slice(RECOVERY - 100, RECOVERY)
        tol = 1e-6 if self.real == np.float64 else 1e-3
        # the model-adaptive observer's parameter estimate is learned state that moves only with
        # excitation (Brunot et al. 2019): its residual need not return to a fresh instance's on a creep
        learned = str(self.rt.rt_manifest["observer"]).startswith("adaptive")
        for name, v in ref.items():
            if name in SETTLING and not (learned and name == "r"):
                scale = 1.0 + np.max(np.abs(v[tail]))
                err = np.max(np.abs(out[name][tail] - v[tail]))
                early = np.max(np.abs(out[name][head] - v[head]))
                # equal to the fresh instance's, or (a huge but finite state left by a hostile config,
                # decaying at the filter's own rate) converging to it: 1000 times closer at the end
                assert err <= tol * scale or err <= 1e-3 * early, (
                    f"{name} did not recover: {err:g} at the end, {early:g} early (scale {scale:g})"
                )
        self.counts["recovered_like_fresh"] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("robot")
    ap.add_argument("precision", choices=("double", "float"))
    ap.add_argument("--estimator")
    ap.add_argument("--observer")
    ap.add_argument("--controller")
    ap.add_argument("--examples", type=int, default=100)
    args = ap.parse_args(argv)
    from codegen.model.description import load_robot

    base = realtime_defaults(load_robot(args.robot)).options
    opts = rt_options(args.estimator, args.observer, args.controller, base=base)
    folder = generated_folder(args.robot, precision=args.precision, rt=opts)
    fuzz = Fuzz(Realtime(folder, sanitize=True), Realtime(folder, sanitize=True))

    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def fuzz_step(data: st.DataObject) -> None:
        with np.errstate(over="ignore"):  # 1e300 into a float input is inf: on purpose
            fuzz.run(data.draw)

    fuzz_step()
    print(
        json.dumps(
            {
                "robot": args.robot,
                "precision": args.precision,
                "pipeline": fuzz.rt.label,
                "module": fuzz.rt.module_file,
                **fuzz.counts,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
