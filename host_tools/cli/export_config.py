"""`manipgen export-config`: a config JSON the tools write (evaluate --tune, thresholds --out,
identify's config_identified.json, RtConfig.save) -> C for the firmware: a designated-initialiser
``const <robot>_rt_config_t`` and its header, checked against the robot and pipeline."""

from __future__ import annotations

import argparse

from host_tools.cli.generate import sample_period_argument


def add_parser(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(
        "export-config",
        help="a config JSON (tuned gains, thresholds, identified parameters) -> a const C config for the firmware",
    )
    e.add_argument(
        "config", help="a manipgen-rt-config JSON (RtConfig.save, evaluate --tune, thresholds --out, identify)"
    )
    e.add_argument("--out", required=True, help="the C source to write (NAME.c; NAME.h beside it)")
    e.add_argument("--name", help="the C object's name (default: <robot>_rt_config_<file stem>, at most 31 characters)")
    e.add_argument(
        "--robot",
        help="bundled name or a .yaml/.urdf path (default: the config's robot, bundled); must be the config's robot",
    )
    e.add_argument("--base-link", help="URDF: first link of the chain (default: the root)")
    e.add_argument("--tip-link", help="URDF: last link of the chain (default: the only leaf)")
    e.add_argument("--overlay", help="URDF: YAML with what URDF cannot say (friction, encoders, ...)")
    e.add_argument(
        "--precision", choices=("double", "float"), default="double", help="the real type of the firmware's build"
    )
    pipe = e.add_argument_group(
        "pipeline",
        "a config written for one pipeline is exported for it (options that differ are refused); a model-only "
        "config (identify's, pipeline 'any') for these options, else the description's realtime: section",
    )
    pipe.add_argument("--estimator", help="as manipgen generate --estimator (name:key=value,...)")
    pipe.add_argument("--observer", help="as manipgen generate --observer")
    pipe.add_argument("--controller", help="as manipgen generate --controller")
    pipe.add_argument("--constant-params", action="store_true", default=None, help="as manipgen generate")
    pipe.add_argument("--sample-period", type=sample_period_argument, metavar="SECONDS", help="as manipgen generate")
    pipe.add_argument("--friction-from", metavar="CONFIG", help="as manipgen generate (the config itself, typically)")
    e.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from codegen.blocks.options import OptionError, parse_label, realtime_defaults
    from codegen.emit.config_export import default_name
    from codegen.emit.files import write_file
    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.bindings.compiled import generated_folder
    from host_tools.bindings.rt import (
        ANY_PIPELINE,
        CONFIG_FORMAT,
        ConfigError,
        Realtime,
        rt_options,
        with_config_terms,
    )

    def fail(message: str) -> int:
        print(f"manipgen: error: {message}", file=sys.stderr)
        return 2

    path = Path(args.config)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return fail(f"{path}: cannot read config JSON ({exc})")
    if not isinstance(doc, dict) or doc.get("format") != CONFIG_FORMAT:
        return fail(f"{path}: format: not a {CONFIG_FORMAT} file")
    if not isinstance(doc.get("robot"), str) or not isinstance(doc.get("pipeline"), str):
        return fail(f"{path}: robot, pipeline: expected the names of the robot and pipeline it was written for")
    try:
        robot = load_robot(args.robot or doc["robot"], args.base_link, args.tip_link, args.overlay)
    except DescriptionError as exc:
        hint = "" if args.robot else " (the config's robot; give its description with --robot)"
        return fail(f"{exc}{hint}")
    if robot.c_name != doc["robot"]:
        return fail(f"{path}: robot: written for {doc['robot']!r}, --robot gives {robot.name!r}")
    if args.friction_from:
        try:
            robot = with_config_terms(robot, args.friction_from)
        except ConfigError as exc:
            return fail(f"--friction-from {exc}")
    try:
        base = realtime_defaults(robot).options
        given = rt_options(
            args.estimator, args.observer, args.controller, args.constant_params, base, args.sample_period
        )
        if doc["pipeline"] == ANY_PIPELINE:
            options = given
        else:
            options = parse_label(doc["pipeline"])
            chosen = (args.estimator, args.observer, args.controller, args.constant_params, args.sample_period)
            if (
                any(v is not None for v in chosen)
                and rt_options(
                    args.estimator, args.observer, args.controller, args.constant_params, options, args.sample_period
                )
                != options
            ):
                return fail(
                    f"{path}: pipeline: written for {doc['pipeline']!r}, the options give {given.label!r} "
                    "(a config belongs to the pipeline it was made for; leave the options out)"
                )
    except (OptionError, DescriptionError) as exc:
        return fail(f"{path}: pipeline: {exc}")
    rt = Realtime(generated_folder(robot, precision=args.precision, rt=options))
    try:
        rt.config.load(path)
    except ConfigError as exc:
        return fail(str(exc))
    out = Path(args.out)
    stem = out.stem if out.suffix == ".c" else out.name
    name = args.name or default_name(robot.c_name, stem)
    try:
        files = rt.config_sources(name, stem, path.name)
    except ValueError as exc:
        return fail(str(exc))
    for file, text in files.items():
        write_file(out.parent / file, text)
    print(
        f"{robot.name}: {name} ({rt.label}, {args.precision}) -> {out.parent / (stem + '.c')}, "
        f"{out.parent / (stem + '.h')}; compile it with the pipeline's folder "
        f"(manipgen generate {args.robot or doc['robot']} --precision {args.precision} ...)"
    )
    return 0
