"""`manipgen identify`'s report: the JSON document of an identification, markdown tables like
Xu et al. (2020) Tables 4, 5, 8, the measured-vs-predicted torque plots like its Fig. 5, the identified robot as
YAML and URDF, and the run-time config with the identified parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from codegen.emit.files import write_file
from codegen.model.export import robot_to_urdf, robot_to_yaml
from codegen.model.robot import Robot
from host_tools.identification.friction_terms import DAHL_LENGTHS, FOLDS, MIN_GAIN, SMOOTH_SCALES, STRIBECK_VELOCITIES
from host_tools.identification.physical import PhysicalResult
from host_tools.identification.pipeline import with_coulomb_scales
from host_tools.identification.run import IdentificationResult, runtime_config
from host_tools.identification.synthetic import NOISE_FLOOR_FACTOR, WELL_EXCITED_RSD, SyntheticResult
from host_tools.reports import plots


def document(r: IdentificationResult) -> dict[str, Any]:
    """The identification as JSON (every ratio a fraction)."""
    rep, phys = r.reported, r.physical
    doc: dict[str, Any] = {
        "robot": r.robot.name,
        "n_base": r.n_base,
        "n_essential": len(rep.essential.names),
        "eliminated": rep.essential.removed,
        "periods_averaged": r.periods,
        "base": {
            n: {"value": float(v), "rsd": float(s) / 100} for n, v, s in zip(rep.names, rep.base.values, rep.base.rsd)
        },
        "essential": {
            n: {"value": float(v), "rsd": float(s) / 100}
            for n, v, s in zip(rep.essential.names, rep.essential.values, rep.essential.rsd)
        },
        "physical": {n: float(v) for n, v in zip(phys.names, phys.mu)},
        "physical_objective": phys.objective,
        "base_objective": phys.base_objective,
        "physical_starts": phys.starts,
        "fit_rms": {k: v.tolist() for k, v in r.fit_rms.items()},
        "settings": {"identification": vars(r.settings), "physical": vars(r.physical_settings)},
        "coulomb": {
            "model": r.robot.coulomb.model,
            "velocity_scale": list(r.robot.coulomb.velocity_scale),
            "candidates_fit_rms": {str(k): v for k, v in r.scale_fit.items()},
        },
    }
    if r.validation is not None:
        val = r.validation
        doc["validation_torque"] = "low-passed at the band" if r.fit.periodic else "measured, unfiltered"
        doc["validation_rms"] = {name: rms.tolist() for name, rms in val.rms.items()}
        doc["validation_residual"] = {
            "mean": val.residual.mean.tolist(),
            "cutoff_hz": val.residual.cutoff_hz,
            "power_below_cutoff": val.residual.power_below_cutoff.tolist(),
        }
    doc["baseline_ls"] = r.baseline
    if r.checks.data is not None or r.checks.validate is not None:
        doc["checks"] = r.checks.as_json()
        doc["flagged_samples"] = r.checks.flagged_samples()
        doc["flagged_left_out"] = not r.checks.keep_flagged
    if rep.selection is not None:
        doc["friction_terms"] = _friction_terms(r)
    if r.velocity:
        doc["velocity"] = r.velocity
    doc["identified_standard"] = phys.standard.tolist()
    doc["stage_seconds"] = r.stage_seconds
    doc["seconds"] = r.seconds
    return doc


def _friction_terms(r: IdentificationResult) -> dict[str, Any]:
    sel = r.reported.selection
    assert sel is not None
    out: dict[str, Any] = {
        "per_joint": sel.terms.as_json(),
        "cv_rms_description_model": sel.cv_rms_plain.tolist(),
        "cv_rms": sel.cv_rms.tolist(),
        "grids": {
            "dahl_length": list(DAHL_LENGTHS),
            "stribeck_velocity": list(STRIBECK_VELOCITIES),
            "smooth_scale": list(SMOOTH_SCALES),
        },
        "folds": FOLDS,
        "min_gain": MIN_GAIN,
        "margin": "a term stays for a joint if the mean of its relative gains on the held-out blocks (weighted by "
        "their rows) exceeds one standard error of that mean and min_gain (the one-standard-error rule of "
        "cross-validation); held_out_rms_without / with are over all the blocks' rows together, which one block "
        "can dominate: they may rise for a kept term",
        "structure": [
            {"joint": j + 1, "form": form, "trials": trials}
            for j, (form, trials) in enumerate(zip(sel.forms(r.reported.names), sel.trials))
        ],
        "physical": "the physical parameters fitted with the terms' coefficients (from the description "
        "model's solution): what config_identified.json gives the generated C",
    }
    if r.terms_physical is not None:
        out["physical_coefficients"] = dict(zip(sel.terms.names(), r.terms_physical.tolist()))
        out["runtime_config"] = sel.terms.runtime_config(r.terms_physical)
    return out


def synthetic_document(s: SyntheticResult) -> dict[str, Any]:
    """The synthetic round trip's document: the identification's, the truth and the noise floors."""
    doc = document(s.run)
    doc["truth"] = {
        "base": dict(zip(s.names, s.truth.tolist())),
        "relative_error": dict(zip(s.names, s.relative_error.tolist())),
    }
    doc["well_excited"] = s.well_excited
    doc["well_excited_rsd"] = WELL_EXCITED_RSD / 100
    doc["max_rel_error_well_excited"] = s.max_rel_error_well_excited
    doc["noise_floor_rms"] = s.noise_floor_rms
    doc["noise_floor_factor"] = NOISE_FLOOR_FACTOR
    doc["warnings"] = list(s.warnings)
    doc["validation_noise_floor_rms"] = s.validation_noise_floor_rms
    doc["validation_rms_truth"] = s.validation_rms_truth.tolist()
    doc["stage_seconds"] = s.stage_seconds
    doc["seconds"] = s.seconds
    doc["synthetic"] = vars(s.options)
    return doc


def figure_arrays(r: IdentificationResult) -> dict[str, Any]:
    """What the figures plot (plots.identification_fit, plots.identification_validation)."""
    arrays: dict[str, Any] = {
        "tau": r.fit.tau,
        "base": r.fit.base,
        "essential": r.fit.essential,
        "physical": r.fit.physical,
        "ts": r.fit.sample_period,
        "periodic": r.fit.periodic,
    }
    if r.validation is not None:
        val = r.validation
        arrays["validation"] = {
            "tau": val.data.tau,
            "keep": val.data.keep,
            "t": val.data.time,
            "base": val.base,
            "physical": val.physical,
        }
    return arrays


def table(doc: dict[str, Any]) -> str:
    lines = [
        f"# Identification of {doc['robot']}",
        "",
        f"{_parameter_count(doc)}; {doc['n_essential']} essential "
        f"(eliminated: {', '.join(doc['eliminated']) or 'none'}); {doc['periods_averaged']} periods averaged.",
        f"Objective |tau - Y_e pi_e|: least squares {doc['base_objective']:.4g} N m, "
        f"physical {doc['physical_objective']:.4g} N m.",
        "",
        "| parameter | base | RSD % | essential | RSD % |" + (" truth |" if "truth" in doc else ""),
        "| --- | --: | --: | --: | --: |" + (" --: |" if "truth" in doc else ""),
    ]
    for n, b in doc["base"].items():
        e = doc["essential"].get(n)
        row = f"| {n} | {b['value']:.5g} | {100 * b['rsd']:.3g} | " + (
            f"{e['value']:.5g} | {100 * e['rsd']:.3g} |" if e else "— | — |"
        )
        if "truth" in doc:
            row += f" {doc['truth']['base'][n]:.5g} |"
        lines.append(row)
    lines += _structure_lines(doc)
    if "validation_rms" in doc:
        n = len(doc["validation_rms"]["base"])
        lines += [
            "",
            "Validation RMS torque error per joint, N m (Xu et al. 2020 Table 8):",
            "",
            "| parameters | " + " | ".join(f"joint {i + 1}" for i in range(n)) + " |",
            "| --- |" + " --: |" * n,
        ]
        lines += [
            f"| {k} | " + " | ".join(f"{v:.4f}" for v in vals) + " |" for k, vals in doc["validation_rms"].items()
        ]
        lines += _baseline_lines(doc)
    return "\n".join(lines) + "\n"


def _parameter_count(doc: dict[str, Any]) -> str:
    """How many parameters were fitted: the description's base parameters, and the friction terms
    identify added to them (each a column beside the base parameters, so the essential set, chosen
    from all of them, may hold more than the base count)."""
    terms = len(doc["base"]) - doc["n_base"]
    if terms <= 0:
        return f"{doc['n_base']} base parameters"
    return (
        f"{len(doc['base'])} parameters fitted: {doc['n_base']} base parameters of the description's model "
        f"and {terms} friction term{'s' if terms > 1 else ''} chosen on held-out blocks (below)"
    )


def _baseline_lines(doc: dict[str, Any]) -> list[str]:
    """The plain least-squares baseline's validation row, and each fit's ratio to it."""
    b = doc.get("baseline_ls") or {}
    plain = b.get("validation_rms")
    if not plain:
        return []

    def ratio(x: float, ref: float) -> float:
        return x / ref if ref > 0 else float("nan")  # a joint the baseline fits exactly: no ratio (nan)

    def ratios(vals: list[float]) -> str:
        r = [ratio(v, p) for v, p in zip(vals, plain)]
        finite = [x for x in r if np.isfinite(x)]
        spread = f"{min(finite):.3f}-{max(finite):.3f} x" if finite else "n/a"
        return f"joints {spread}" + (f", {len(r) - len(finite)} exact in the baseline" if len(finite) < len(r) else "")

    total = b["validation_rms_sum"]
    lines = [
        f"| plain least squares ({b['n_parameters']} parameters) | " + " | ".join(f"{v:.4f}" for v in plain) + " |",
        "",
        f"Against plain least squares ({b['method']}): RMS sum "
        + "; ".join(
            f"{k} {sum(vals):.4f} N m ({ratio(sum(vals), total):.3f} x, {ratios(vals)})"
            for k, vals in doc["validation_rms"].items()
        )
        + f"; plain least squares {total:.4f} N m.",
    ]
    return lines


def _structure_lines(doc: dict[str, Any]) -> list[str]:
    """The velocity used and the friction form chosen per joint with its held-out figures."""
    lines: list[str] = []
    v = doc.get("velocity")
    if v:
        sums = v.get("held_out_rms_sum")
        figures = f" (held-out RMS sum {', '.join(f'{k} {x:.4f}' for k, x in sums.items())} N m)" if sums else ""
        lines += ["", f"Velocity: {v['used']} ({v['requested']} requested: {v['reason']}){figures}."]
    ft = doc.get("friction_terms")
    if not ft or "structure" not in ft:
        return lines
    lines += [
        "",
        "Friction per joint, chosen on held-out blocks of the fitting run (RMS N m over all their rows without "
        f"-> with each term tried; kept if its mean gain over the {ft['folds']} blocks, weighted by their rows, "
        f"exceeds one standard error of it and {100 * ft['min_gain']:g} %):",
        "",
        "| joint | form | trials |",
        "| --- | --- | --- |",
    ]
    for row in ft["structure"]:
        tried = "; ".join(
            f"{t['kind']} {t['shape']:g}: {t['held_out_rms_without']:.4f} -> {t['held_out_rms_with']:.4f} "
            f"(mean gain {100 * t['mean_gain']:.1f} % vs {100 * t['margin']:.1f} %{', kept' if t['kept'] else ''})"
            for t in row["trials"]
        )
        lines.append(f"| {row['joint']} | {row['form']} | {tried or '—'} |")
    return lines


def write(doc: dict[str, Any], arrays: dict[str, Any], robot: Robot, out: Path) -> list[Path]:
    """identification.{json,md,png} and the identified ``robot`` (the description identified) as
    <robot>_identified.yaml and .urdf."""
    fitted = tuple(doc["coulomb"]["velocity_scale"])
    scaled = bool(doc["coulomb"]["candidates_fit_rms"])
    if scaled:
        robot = with_coulomb_scales(robot, fitted)
    write_file(out / "identification.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "identification.md", table(doc))
    result = PhysicalResult(np.zeros(0), [], np.asarray(doc["identified_standard"]), 0.0, 0.0)
    ident_robot = result.robot(robot)
    header = (
        f"Identified by `manipgen identify` from {robot.name}: physical parameters retrieved from "
        f"{doc['n_essential']} essential parameters (objective {doc['physical_objective']:.4g} N m).\n"
        "Kinematics, limits, encoders as in the original description."
    )
    yaml_path = out / f"{robot.c_name}_identified.yaml"
    write_file(yaml_path, robot_to_yaml(ident_robot, header))
    urdf_path = out / f"{robot.c_name}_identified.urdf"
    write_file(urdf_path, robot_to_urdf(ident_robot))
    written = [
        out / "identification.json",
        out / "identification.md",
        plots.identification_fit(arrays, out / "identification.png", robot.name),
        yaml_path,
        urdf_path,
    ]
    if "validation" in arrays:
        written.append(
            plots.identification_validation(arrays["validation"], out / "identification_validation.png", robot.name)
        )
    # the description's generated C takes the identified model at run time: the parameters, the
    # Coulomb scales (fitted or the description's) and the friction terms
    values = runtime_config(robot, doc["identified_standard"], doc.get("friction_terms", {}).get("runtime_config"))
    written.append(write_params_config(robot, values.pop("model.params"), out / "config_identified.json", values))
    return written


def write_params_config(
    robot: Robot, standard: list[float], path: Path, extra: dict[str, list[float]] | None = None
) -> Path:
    """A config JSON (docs/realtime.md) setting ``model.params`` and the ``extra`` fields (the Coulomb
    scales, the friction terms' ``fric.*``): it loads into any pipeline of the robot with run-time
    parameters (``rt.config.load``, ``--config``) generated with the friction terms it sets (the
    description's ``friction:``, ``manipgen generate --friction-from``): a non-zero ``fric.*``
    coefficient of a term a pipeline lacks is refused there, a zero one skipped)."""
    from host_tools.bindings.rt import ANY_PIPELINE, CONFIG_FORMAT, CONFIG_VERSION

    doc = {
        "format": CONFIG_FORMAT,
        "version": CONFIG_VERSION,
        "robot": robot.c_name,
        "pipeline": ANY_PIPELINE,
        "config": {"model.params": [float(v) for v in standard], **(extra or {})},
    }
    write_file(path, json.dumps(doc, indent=1) + "\n")
    return path
