"""Config JSON, log NPZ, the robot YAML's realtime: section and the CLI options: round trips and
one clear error per bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codegen.blocks.options import realtime_defaults
from codegen.errors import DescriptionError
from codegen.model.description import load_robot
from host_tools.bindings.rt import ConfigError
from host_tools.data.logs import Log, LogError
from tests.codegen.blocks.helpers import fresh_rt
from tests.tooling import ROOT


def test_config_round_trip_and_runtime_change_without_recompiling(tmp_path: Path) -> None:
    rt = fresh_rt("planar2", "kalman")
    rt.config["obs.k_o"] = [40.0, 60.0]
    rt.config["det.threshold"] = 0.7
    path = tmp_path / "cfg.json"
    rt.config.save(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "manipgen-rt-config" and doc["robot"] == "planar2"
    other = fresh_rt("planar2", "kalman")
    other.config.load(path)
    assert np.array_equal(other.config["obs.k_o"], [40.0, 60.0])
    assert np.array_equal(other.config["det.threshold"], [0.7, 0.7])
    # a changed gain changes the C's behaviour at the next step (rt_configure), same build
    a, b = fresh_rt("planar2", "kalman"), fresh_rt("planar2", "kalman")
    b.config["ctl.kp"] = 400.0
    oa = a.step([100, 200], q_des=[0.1, 0.1])
    ob = b.step([100, 200], q_des=[0.1, 0.1])
    assert not np.allclose(oa["tau_cmd"], ob["tau_cmd"])
    assert a.folder == b.folder


def test_payload_in_the_config_changes_the_model() -> None:
    rt = fresh_rt("planar2", "findiff", "none", "computed_torque")
    q_des = rt.step([1000, 2000])["q"]  # hold still: no saturation, tau = g(q)
    rt.reset()
    o1 = rt.step([1000, 2000], q_des=q_des)
    rt.config["model.payload"] = [2.0, 1.6, 0, 0, 0, 0, 0, 0, 0, 1.28]  # 2 kg at 0.8 m on link 2
    rt.reset()
    o2 = rt.step([1000, 2000], q_des=q_des)
    from host_tools import load

    dyn = load("planar2")
    pi = dyn.standard_parameters.copy()
    k = dyn.standard_parameter_names.index("M2")
    pi[k : k + 10] += [2.0, 1.6, 0, 0, 0, 0, 0, 0, 0, 1.28]
    q = o2["q"]
    assert np.allclose(o2["tau_cmd"] - o1["tau_cmd"], dyn.gravity(q, params=pi) - dyn.gravity(q), atol=1e-9)


def test_snapshot_and_restore_branch_a_run() -> None:
    rt = fresh_rt("planar2", "kalman")
    rt.config["det.threshold"] = 1e9
    rng = np.random.default_rng(3)
    counts = np.cumsum(rng.integers(-40, 40, (60, 2)), axis=0) + 1000
    tau = rng.normal(size=(60, 2))
    first = rt.run({"counts": counts[:30], "tau": tau[:30]})
    mark = rt.snapshot()
    rest = rt.run({"counts": counts[30:], "tau": tau[30:]})
    rt.run({"counts": counts[::-1], "tau": -tau})  # wander off
    rt.restore(mark)
    again = rt.run({"counts": counts[30:], "tau": tau[30:]})
    rt.reset()
    whole = rt.run({"counts": counts, "tau": tau})
    for key in ("qd_hat", "r", "tau_cmd"):
        assert np.abs(rest[key]).max() > 0
        assert np.array_equal(again[key], rest[key])
        assert np.array_equal(whole[key], np.concatenate([first[key], rest[key]]))
    assert not np.any(whole["collision"])
    with pytest.raises(ValueError, match="not a snapshot"):
        rt.restore(mark[:-1])
    # a config change made after the snapshot holds after the restore (the C state keeps a copy)
    rt.config["det.threshold"] = 1e-9
    rt.restore(mark)
    assert np.all(rt.run({"counts": counts[30:], "tau": 5 * tau[30:]})["collision"][-1] == 1)
    rt.config["det.threshold"] = 1e9
    rt.restore(mark)
    assert not np.any(rt.run({"counts": counts[30:], "tau": 5 * tau[30:]})["collision"])


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda d: d.update(robot="kuka_iiwa14"), "robot"),
        (lambda d: d["config"].update({"est.nope": 1}), "est.nope"),
        (lambda d: d["config"].update({"obs.k_o": [1, 2, 3]}), "obs.k_o"),
        (lambda d: d.update(version=99), "version"),
    ],
)
def test_bad_config_files_name_the_field(tmp_path: Path, edit, needle: str) -> None:
    rt = fresh_rt("planar2", "kalman")
    path = tmp_path / "cfg.json"
    rt.config.save(path)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=needle) as info:
        rt.config.load(path)
    assert str(path) in str(info.value)


def test_log_round_trip_and_errors(tmp_path: Path) -> None:
    k, n = 50, 2
    z = np.zeros((k, n))
    log = Log(
        "planar2",
        0.001,
        np.arange(k) * 0.001,
        np.arange(k * n).reshape(k, n),
        np.ones((k, n), bool),
        z,
        z,
        z,
        z,
        extra={"q_true": z + 1},
    )
    p = log.save(tmp_path / "a.npz")
    back = Log.load(p)
    assert np.array_equal(back.counts, log.counts) and np.array_equal(back.extra["q_true"], z + 1)
    out = fresh_rt("planar2", "findiff", "none", "none").run(back)
    assert out["q"].shape == (k, n)
    np.savez(
        tmp_path / "bad.npz",
        format=np.array("manipgen-log"),
        version=np.array(1),
        robot=np.array("x"),
        sample_period=np.array(0.001),
        time=np.arange(3),
        counts=np.zeros((3, 2), int),
        valid=np.ones((3, 2)),
        tau=np.zeros((3, 2)),
        q_des=np.zeros((2, 2)),
        qd_des=np.zeros((3, 2)),
        qdd_des=np.zeros((3, 2)),
    )
    with pytest.raises(LogError, match="q_des"):
        Log.load(tmp_path / "bad.npz")


def test_yaml_realtime_section_sets_defaults_and_errors_name_the_line(tmp_path: Path) -> None:
    robot = load_robot("schunk_lwa4p")
    assert realtime_defaults(robot).options.estimator.name == "linhg"
    src = (ROOT / "robots" / "planar2.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(src + "realtime:\n  estimator: kalman\n  config:\n    kalman.nope: 3\n")
    from codegen.blocks.options import RtOptions
    from codegen.blocks.pipeline import build_pipeline
    from tests.oracles.pipeline import default_config

    with pytest.raises(DescriptionError, match=r"bad.yaml:\d+: realtime.config.kalman.nope"):
        build_pipeline(load_robot(bad), realtime_defaults(load_robot(bad)).options)
    bad.write_text(src + "realtime:\n  estimator: {name: lsf, n: 2, p: 5}\n")
    with pytest.raises(DescriptionError, match=r"bad.yaml:\d+: realtime.estimator"):
        realtime_defaults(load_robot(bad))
    ok = tmp_path / "ok.yaml"
    ok.write_text(src + "realtime:\n  estimator: linhg\n  config:\n    linhg.h1: [10, 20]\n    kalman.q_var: 5\n")
    pipe = build_pipeline(load_robot(ok), realtime_defaults(load_robot(ok)).options)
    assert default_config(pipe)["cfg.est.h1"].tolist() == [10.0, 20.0]
    assert RtOptions().estimator.name == "kalman"


def test_cli_generate_with_pipeline_options(tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "host_tools.cli"]
    r = subprocess.run(
        exe
        + [
            "generate",
            "planar2",
            "--estimator",
            "lsf:n=5,p=2",
            "--observer",
            "none",
            "--controller",
            "pid",
            "--out",
            str(tmp_path / "g"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["rt"]["estimator"] == "lsf" and manifest["rt"]["controller"] == "pid"
    assert "planar2_rt_est_step" in r.stdout
    r = subprocess.run(
        exe + ["generate", "planar2", "--estimator", "lsf:n=2,p=5", "--out", str(tmp_path / "h")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "lsf" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize(
    "key,value,needle",
    [
        ("det.reaction", 7, "one of 0, 1, 2"),
        ("est.gain", np.nan, "finite"),
        ("obs.k_o", -1.0, ">= 0"),
        ("det.debounce", 2.5, "integers"),
        ("enc.gear", 0.0, "> 0"),
        ("obs.k_o", "abc", "numbers"),
    ],
)
def test_host_config_rejects_out_of_range_values(key: str, value: object, needle: str) -> None:
    rt = fresh_rt("planar2", "kalman")
    before = np.array(rt.config[key], copy=True)
    with pytest.raises(ConfigError, match=needle) as info:
        rt.config[key] = value
    assert key in str(info.value)
    assert np.array_equal(rt.config[key], before)


@pytest.mark.parametrize(
    "line,needle",
    [
        ("linhg.eps: 0", "realtime.config.linhg.eps: must be > 0"),
        ("enc.gear: 0", "realtime.config.enc.gear"),
        ("kalman.r_var: -1", "realtime.config.kalman.r_var"),
        ("det.reaction: 5", "realtime.config.det.reaction"),
    ],
)
def test_yaml_config_values_are_range_checked(tmp_path: Path, line: str, needle: str) -> None:
    from codegen.blocks.pipeline import build_pipeline

    src = (ROOT / "robots" / "planar2.yaml").read_text()
    est = "linhg" if "linhg" in line else "kalman"
    bad = tmp_path / "bad.yaml"
    bad.write_text(src + f"realtime:\n  estimator: {est}\n  config:\n    {line}\n")
    robot = load_robot(bad)
    with pytest.raises(DescriptionError, match=needle):
        build_pipeline(robot, realtime_defaults(robot).options)


def test_bad_estimator_option_is_one_clear_error(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "host_tools.cli",
            "generate",
            "planar2",
            "--estimator",
            "lsf:n=abc",
            "--out",
            str(tmp_path / "g"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "not a number" in r.stderr and "Traceback" not in r.stderr


def test_log_keeps_collision_truth(tmp_path: Path) -> None:
    k, n = 10, 2
    z = np.zeros((k, n))
    truth = np.zeros(k, bool)
    truth[5:] = True
    log = Log(
        "planar2",
        0.001,
        np.arange(k) * 1e-3,
        np.zeros((k, n), np.int64),
        np.ones((k, n), bool),
        z,
        z,
        z,
        z,
        extra={"collision_true": truth},
    )
    assert np.array_equal(Log.load(log.save(tmp_path / "c.npz")).extra["collision_true"], truth)
