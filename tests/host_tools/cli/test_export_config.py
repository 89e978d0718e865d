"""`manipgen export-config` (issue #26 item 3): every kind of config JSON the tools write becomes a
const C config that, compiled and read back, equals the JSON's config bit for bit; a config for
another robot or pipeline is refused (one line), and the C refuses to compile into another layout.

The tools write two kinds: a whole pipeline's config (RtConfig.save: evaluate --tune, thresholds
--out, demo and target collision_config.json) and a model-only one (identify's
config_identified.json, pipeline "any", write_params_config)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from codegen.blocks.options import parse_estimator
from codegen.model.description import load_robot
from host_tools.bindings.compiled import generated_folder
from host_tools.bindings.rt import Realtime, load_rt, rt_options
from host_tools.cli import main
from host_tools.reports.identification import write_params_config
from tests.codegen.emit.test_rt_c import STRICT
from tests.tooling import require_tool

DUMP = """#include <stdio.h>
#include "{stem}.h"
int main(void)
{{
    return fwrite(&{name}, sizeof {name}, 1U, stdout) == 1U ? 0 : 1;
}}
"""


def _read_back(folder: Path, c_file: Path, name: str, tmp: Path) -> bytes:
    """The exported object's bytes, as a program built from the C source (strict C99) writes them."""
    gcc = require_tool("gcc")
    main_c = tmp / "dump_main.c"
    main_c.write_text(DUMP.format(stem=c_file.stem, name=name))
    exe = tmp / "dump"
    subprocess.run(
        [gcc, *STRICT, "-I", str(folder), "-I", str(c_file.parent), str(c_file), str(main_c), "-o", str(exe)],
        check=True,
        capture_output=True,
    )
    return subprocess.run([str(exe)], check=True, capture_output=True).stdout


def _assert_equal_bits(rt: Realtime, raw: bytes) -> None:
    """Every field of the C object equals the config the JSON loads into (the same bytes)."""
    dtype = rt.config._s.dtype
    assert len(raw) == dtype.itemsize
    back = np.frombuffer(raw, dtype=dtype)[0]
    for key in rt.config.keys():
        kind, _, field = key.partition(".")
        assert np.asarray(back[kind][field]).tobytes() == np.asarray(rt.config[key]).tobytes(), key


def _random_config(rt: Realtime, rng: np.random.Generator) -> None:
    """Values no default has: full-precision reals in the fields' ranges."""
    rt.config["obs.k_o"] = rng.uniform(5.0, 80.0)
    rt.config["est.gain"] = rt.config["est.gain"] * rng.uniform(0.9, 1.1, rt.config["est.gain"].shape)
    rt.config["model.params"] = rt.config["model.params"] * rng.uniform(0.95, 1.05, rt.config["model.params"].shape)
    rt.config["enc.offset"] = rng.uniform(-0.1, 0.1, rt.config["enc.offset"].shape)


@pytest.mark.parametrize("precision", ["double", "float"])
def test_a_saved_pipeline_config_round_trips_bit_for_bit(
    precision: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rt = load_rt("planar2", precision=precision)  # type: ignore[arg-type]
    _random_config(rt, np.random.default_rng(1))
    rt.config.save(tmp_path / "tuned.json")
    out = tmp_path / "fw" / "tuned_gains.c"
    assert main(["export-config", str(tmp_path / "tuned.json"), "--out", str(out), "--precision", precision]) == 0
    assert "planar2_rt_config_tuned_gains" in capsys.readouterr().out
    text = out.read_text()
    assert ".obs = {" in text and "const planar2_rt_config_t planar2_rt_config_tuned_gains = {" in text
    fresh = load_rt("planar2", precision=precision)  # type: ignore[arg-type]
    fresh.config.load(tmp_path / "tuned.json")
    _assert_equal_bits(fresh, _read_back(fresh.folder, out, "planar2_rt_config_tuned_gains", tmp_path))


def test_an_identified_model_config_exports_for_the_chosen_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    robot = load_robot("planar2")
    rng = np.random.default_rng(2)
    standard = np.asarray(robot.standard_parameters(), float) * rng.uniform(0.9, 1.1, len(robot.standard_parameters()))
    write_params_config(robot, standard.tolist(), tmp_path / "config_identified.json")
    out = tmp_path / "identified.c"
    argv = ["export-config", str(tmp_path / "config_identified.json"), "--out", str(out), "--name", "arm_model"]
    assert main([*argv, "--estimator", "lsf:n=6,p=2", "--observer", "adaptive"]) == 0
    capsys.readouterr()
    options = rt_options("lsf:n=6,p=2", "adaptive", None, None)
    rt = Realtime(generated_folder(robot, rt=options))
    rt.config.load(tmp_path / "config_identified.json")
    assert np.array_equal(rt.config["model.params"], standard)
    _assert_equal_bits(rt, _read_back(rt.folder, out, "arm_model", tmp_path))
    # and compiled against another pipeline's header it stops at the layout check
    other = generated_folder(robot, rt=rt_options(None, None, None, None))
    with pytest.raises(subprocess.CalledProcessError) as err:
        _read_back(other, out, "arm_model", tmp_path)
    assert "exported for another planar2_rt_config_t layout" in err.value.stderr.decode()


def test_an_identified_configs_friction_terms_are_generated_or_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#47: identify's config sets a Stribeck term on joint 2 of planar2, whose description declares
    none. Exported for the description's pipeline it is refused in one line naming the field, the
    term, the joint and the way out; with --friction-from (as manipgen generate takes it) the
    exported C equals the config bit for bit in the pipeline generated with that term, which
    manipgen generate --friction-from writes."""
    from host_tools.bindings.rt import with_config_terms

    robot = load_robot("planar2")
    path = tmp_path / "config_identified.json"
    extra = {"fric.fs": [0.0, 0.4], "fric.stribeck_velocity": [0.1, 0.05], "fric.fd": [0.0, 0.0]}
    write_params_config(robot, list(robot.standard_parameters()), path, extra)
    out = tmp_path / "identified.c"
    argv = ["export-config", str(path), "--out", str(out), "--name", "arm_model"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists()
    assert "config.fric.fs: the generated code has no Stribeck term on joint 2 (it would ignore 0.4)" in err
    assert "--friction-from" in err
    assert main([*argv, "--friction-from", str(path)]) == 0
    capsys.readouterr()
    rt = Realtime(generated_folder(with_config_terms(robot, path)))
    rt.config.load(path)
    assert rt.config.keys().count("fric.fs") == 1 and "fric.fd" not in rt.config.keys()
    _assert_equal_bits(rt, _read_back(rt.folder, out, "arm_model", tmp_path))
    assert main(["generate", "planar2", "--friction-from", str(path), "--out", str(tmp_path / "gen")]) == 0
    assert "friction terms (run-time coefficients fric.*): elbow: stribeck" in capsys.readouterr().out
    assert (tmp_path / "gen" / "planar2_rt.c").read_text() == (rt.folder / "planar2_rt.c").read_text()


def test_wrong_robot_pipeline_or_name_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rt = load_rt("planar2")
    rt.config.save(tmp_path / "c.json")
    cases = [
        (["--robot", "kuka_iiwa14"], "robot: written for 'planar2', --robot gives 'kuka_iiwa14'"),
        (["--estimator", "findiff"], "pipeline: written for 'kalman + momentum + computed_torque'"),
        (["--name", "x" * 32], "at most 31 characters"),
    ]
    for extra, message in cases:
        assert main(["export-config", str(tmp_path / "c.json"), "--out", str(tmp_path / "o.c"), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["config"]["obs.k_o"] = -1.0
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["export-config", str(tmp_path / "bad.json"), "--out", str(tmp_path / "o.c")]) == 2
    err = capsys.readouterr().err
    assert "bad.json: config.obs.k_o" in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.c").exists()


def test_the_pipeline_label_reads_back() -> None:
    from codegen.blocks.options import RtOptions, parse_label

    for options in [
        RtOptions(),
        RtOptions(parse_estimator("lsf:n=6,p=2"), "adaptive", "pid", True, 0.004),
        RtOptions(parse_estimator("imu:tip=1"), "direct", "computed_torque", False, None),
    ]:
        assert parse_label(options.label) == options


USE = """#include <stdio.h>
#include <string.h>
#include "tuned.h"
int main(void)
{
    static planar2_rt_t rt;
    planar2_rt_input_t in;
    planar2_rt_output_t out;
    memset(&in, 0, sizeof in);
    in.valid[0] = 1U;
    in.valid[1] = 1U;
    planar2_rt_init(&rt, &planar2_rt_config_tuned);
    planar2_rt_step(&rt, &in, &out);
    if (rt.cfg != &planar2_rt_config_tuned || out.ready != 1U || out.fault != MG_FAULT_NONE) {
        return 1;
    }
    planar2_rt_configure(&rt, &planar2_rt_default_config);
    planar2_rt_step(&rt, &in, &out);
    return (rt.cfg == &planar2_rt_default_config && out.ready == 1U) ? 0 : 2;
}
"""


def test_an_instance_runs_on_the_const_config_itself(tmp_path: Path) -> None:
    """No copy (issue #26 item 2): the instance uses the exported const object, and _rt_configure
    switches to another between steps."""
    gcc = require_tool("gcc")
    rt = load_rt("planar2")
    rt.config.save(tmp_path / "tuned.json")
    assert main(["export-config", str(tmp_path / "tuned.json"), "--out", str(tmp_path / "tuned.c")]) == 0
    (tmp_path / "use.c").write_text(USE)
    sources = [str(p) for p in sorted(rt.folder.glob("*.c"))] + [str(tmp_path / "tuned.c"), str(tmp_path / "use.c")]
    exe = tmp_path / "use"
    subprocess.run(
        [gcc, *STRICT, "-I", str(rt.folder), *sources, "-lm", "-o", str(exe)], check=True, capture_output=True
    )
    assert subprocess.run([str(exe)]).returncode == 0


def test_the_default_name_fits_31_characters() -> None:
    """``<robot>_rt_config_<stem>`` where it fits, else ``<robot>_cfg_<stem>`` cut to C99's 31."""
    from codegen.emit.config_export import MAX_NAME, default_name

    assert default_name("planar2", "tuned_gains") == "planar2_rt_config_tuned_gains"
    assert default_name("planar2", "config_identified") == "planar2_cfg_config_identified"
    long = default_name("schunk_lwa4p", "config_identified_after_the_second_run")
    assert long == "schunk_lwa4p_cfg_config_identif" and len(long) == MAX_NAME
    assert default_name("schunk_lwa4p", "abcdefghijklm_n") == "schunk_lwa4p_cfg_abcdefghijklm"  # no trailing _
