"""``manifest.json``: data about a generated folder (names, counts, operation counts, parameter
values, ranges, hashes, the pipeline's blocks and fields; no C text)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from codegen import __version__
from codegen.blocks.options import RtOptions
from codegen.emit.cprint import Precision
from codegen.emit.host import HOST_FOLDER
from codegen.model.robot import Robot, digest_of
from codegen.symbolic.params import BaseParameters


def _parameters(robot: Robot, base: BaseParameters) -> dict[str, Any]:
    std = robot.standard_parameters()
    return {
        "n_standard": robot.n_standard,
        "n_base": base.n_base,
        "base_ranges": {"inertial": [0, base.n_inertial], "joint": [base.n_inertial, base.n_base]},
        "standard_parameter_names": list(robot.standard_parameter_names),
        "standard_parameters": [float(v) for v in std],
        "base_parameter_names": list(base.names),
        "base_parameters": [float(v) for v in base.values(std)],
        "base_expressions": list(base.expressions),
        "base_columns": list(base.columns),
        "regrouping": [
            [[int(j), float(base.k[i, j])] for j in range(base.k.shape[1]) if base.k[i, j] != 0]
            for i in range(base.n_base)
        ],
    }


def _function(v: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": v["name"],
        "returns": v["ret"],
        "inputs": [[a.name, a.size] for a in v["inputs"]],
        "outputs": [[a.name, a.size] for a in v["outputs"]],
        "ops": int(v["ops"]) if v["ops"].isdigit() else None,
    }


def manifest_text(
    robot: Robot,
    base: BaseParameters,
    precision: Precision,
    rt: RtOptions,
    functions: Iterable[Mapping[str, Any]],
    rt_manifest: dict[str, Any],
    files: Iterable[str],
    host_files: Iterable[str],
) -> str:
    manifest = {
        "generator": "manipgen",
        "version": __version__,
        "robot": robot.c_name,
        "description": Path(robot.file).name,
        "description_hash": robot.digest,
        "options": {"precision": precision, "rt": rt.label, "rt_options": rt.as_dict()},
        "options_hash": digest_of(robot.digest.encode(), precision.encode(), rt.label.encode()),
        "dof": robot.dof,
        "joints": [j.name for j in robot.joints],
        "elastic": robot.elastic,
        "joint_types": [j.type for j in robot.joints],
        **_parameters(robot, base),
        "functions": [_function(v) for v in functions],
        "rt": rt_manifest,
        "files": sorted(files),
        "host_files": sorted(f"{HOST_FOLDER}/{name}" for name in host_files),
    }
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"
