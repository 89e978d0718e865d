"""`manipgen generate`, `info` and `convert` (the commands that need only the generator), and what
every command shares: the top-level parser, the robot arguments, --force, the one-line errors and
warnings. host_tools.cli adds the commands that compile and run the generated C.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codegen.blocks import registry
from codegen.blocks.options import OptionError, RtOptions, parse_estimator, realtime_defaults
from codegen.emit.files import OverwriteError, overwriting, write_file
from codegen.errors import DescriptionError, ManipgenWarning, warn
from codegen.model.description import load_robot
from codegen.model.robot import Robot
from codegen.model.schema import sample_period_problems
from codegen.resources import bundled_robots

DESCRIPTION = "manipgen: a manipulator's description -> verified, allocation-free C, and the same C on the host"

Handler = Callable[[argparse.Namespace], int]


def add_robot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("robot", help=f"bundled name ({', '.join(bundled_robots())}) or a .yaml/.urdf path")
    p.add_argument("--base-link", help="URDF: first link of the chain (default: the root)")
    p.add_argument("--tip-link", help="URDF: last link of the chain (default: the only leaf)")
    p.add_argument("--overlay", help="URDF: YAML with what URDF cannot say (friction, encoders, ...)")


def sample_period_argument(text: str) -> float:
    """``--sample-period SECONDS``, checked as the description's ``sample_period`` is: one usage error
    beyond any joint controller, one warning outside the usual range (milliseconds typed as seconds)."""
    try:
        ts = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    problem, notice = sample_period_problems(ts)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    if notice:
        warn("command line", "--sample-period", notice)
    return ts


def add_beyond_limits(p: argparse.ArgumentParser) -> None:
    """``--beyond-limits``, on the commands that read a log (its positions are checked against the
    description's limits: a log in degrees, or another arm's, stops them in one line)."""
    p.add_argument(
        "--beyond-limits",
        action="store_true",
        help="take a log's joint positions (and --start-position) as they are where they lie outside the "
        "description's limits by more than 5 %% of the range (checked by default: degrees, another arm's log)",
    )


def chain_flags(args: argparse.Namespace) -> str:
    """The URDF chain arguments as typed on a command line (for the next command a tool suggests)."""
    given = (("--base-link", args.base_link), ("--tip-link", args.tip_link), ("--overlay", args.overlay))
    return "".join(f" {flag} {value}" for flag, value in given if value)


def robot_of(args: argparse.Namespace) -> Robot:
    robot = load_robot(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)
    realtime_defaults(robot)  # a bad realtime: section stops every command here, not at generation
    return robot


def _refuse_another_robots_folder(out: Path, robot: Robot) -> None:
    """The default folder out/<name> is named after the robot's name only, which two descriptions
    may share (a URDF's left and right arm are both "talos"): refuse to replace the C of another
    description -- another file or other joints -- with this one's. The same description edited
    (a mass, a limit) regenerates its folder as before."""
    try:
        manifest = json.loads((out / "manifest.json").read_text())
        theirs = (str(manifest["description"]), [str(j) for j in manifest["joints"]])
    except (OSError, ValueError, KeyError, TypeError):
        return  # no folder yet, or not a manipgen folder (write_files refuses foreign files itself)
    ours = (Path(robot.file).name, [j.name for j in robot.joints])
    if theirs != ours:
        raise OverwriteError(
            f"{out}: holds the C of another description ({theirs[0]}, joints {', '.join(theirs[1])}), "
            f"not of {ours[0]} (joints {', '.join(ours[1])}): give --out, or --force to replace it"
        )


def cmd_generate(args: argparse.Namespace) -> int:
    from codegen.emit.generate import generate
    from host_tools.data.light_joints import warn_light_joints

    robot = robot_of(args)
    warn_light_joints(robot)  # joints whose own tracking the input checks would flag (one notice)
    if args.friction_from:
        from host_tools.bindings.rt import ConfigError, with_config_terms

        try:
            robot = with_config_terms(robot, args.friction_from)
        except ConfigError as exc:
            print(f"manipgen: error: --friction-from {exc}", file=sys.stderr)
            return 2
    out = Path(args.out) if args.out else Path("out") / robot.c_name  # the repo's generated/: `make generated`
    if not args.out and not args.force:
        _refuse_another_robots_folder(out, robot)
    base = realtime_defaults(robot).options
    rt = RtOptions(
        estimator=parse_estimator(args.estimator) if args.estimator else base.estimator,
        observer=args.observer or base.observer,
        controller=args.controller or base.controller,
        constant_params=args.constant_params or base.constant_params,
        sample_period=args.sample_period or base.sample_period,
    )
    gen = generate(robot, args.precision, rt)
    gen.write(out)
    manifest = json.loads(gen.files["manifest.json"])
    print(
        f"{robot.name}: {robot.dof} joints, {manifest['n_standard']} standard / "
        f"{manifest['n_base']} base parameters -> {out}/"
    )
    for f in manifest["functions"]:
        if f["ops"] is not None:
            print(f"  {f['name']:<22} {f['ops']:>6} ops")
    print(f"real-time pipeline ({robot.c_name}_rt.h): {rt.label}")
    if robot.friction_terms:
        terms = (f"{j.name}: {', '.join(robot.terms_of(i))}" for i, j in enumerate(robot.joints) if robot.terms_of(i))
        print(f"  friction terms (run-time coefficients fric.*): {'; '.join(terms)}")
    for name, ops in manifest["rt"]["ops"].items():
        print(f"  {name:<34} {ops:>6} ops")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from codegen.symbolic.params import base_parameters, lengths

    robot = robot_of(args)
    base = base_parameters(robot)
    beta = base.values(robot.standard_parameters())
    # the length symbols of the expressions: a_i, d_i (MDH/DH) or x_i, y_i, z_i (a URDF-style
    # joint i's origin), as magnitudes in m
    used = {n: v for n, v, _ in lengths(robot) if any(n in e.replace("*", " * ").split() for e in base.expressions)}
    info = {
        "name": robot.name,
        "dof": robot.dof,
        "n_standard": robot.n_standard,
        "n_base": base.n_base,
        "n_base_inertial": base.n_inertial,
        "base_parameters": [
            {"name": n, "expression": e.split(" = ", 1)[1], "value": float(v)}
            for n, e, v in zip(base.names, base.expressions, beta)
        ],
        "lengths_m": used,
    }
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(
        f"{robot.name}: {robot.dof} joints ({', '.join(j.type for j in robot.joints)}), convention {robot.convention}"
    )
    print(
        f"standard parameters: {robot.n_standard}; base parameters: {base.n_base} "
        f"({base.n_inertial} inertial + {base.n_base - base.n_inertial} joint)"
    )
    width = max(len(n) for n in base.names)
    for n, e, v in zip(base.names, base.expressions, beta):
        print(f"  {n:<{width}} {v:>+14.6g}   {e}")
    if used:
        what = "joint i's origin x, y, z" if robot.convention == "urdf" else f"{robot.convention.upper()} a_i, d_i"
        print(
            f"lengths in the expressions ({what}; magnitudes, m): " + ", ".join(f"{n} = {v:g}" for n, v in used.items())
        )
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from codegen.model.export import robot_to_yaml

    robot = robot_of(args)
    mdh = args.convention == "mdh"
    header = (
        f"Converted by `manipgen convert{' --convention mdh' if mdh else ''}` from {Path(args.robot).name}"
        + (f" (chain {args.base_link} -> {args.tip_link})" if args.base_link or args.tip_link else "")
        + (f" with overlay {Path(args.overlay).name}" if args.overlay else "")
        + ".\n"
        + (args.header or "")
    )
    text = robot_to_yaml(robot, header, args.convention)
    if args.output:
        write_file(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(prog="manipgen", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate the C folder of a robot")
    add_robot_arguments(g)
    g.add_argument("--out", help="the folder to write (default out/<robot>)")
    g.add_argument(
        "--precision",
        choices=("double", "float"),
        default="double",
        help="real type of the generated C (float: Cortex-M4F class targets)",
    )
    g.add_argument(
        "--estimator",
        help="velocity estimator: "
        + ", ".join(
            e.name + "".join(f" {k}={v:g}" for k, v in e.defaults.items()) for e in registry.estimators().values()
        )
        + " (options as name:key=value,...; default: the robot's realtime: section, else "
        + registry.default_estimator().name
        + ")",
    )
    g.add_argument(
        "--observer",
        choices=list(registry.observers()),
        help="collision observer (default: the robot's realtime: section, else momentum)",
    )
    g.add_argument(
        "--controller",
        choices=list(registry.controllers()),
        help="controller (default: the robot's realtime: section, else computed_torque; an elastic arm: "
        "state_feedback, its motor torque)",
    )
    g.add_argument(
        "--constant-params",
        action="store_true",
        help="fold the robot's dynamic parameters into the real-time code (faster; no "
        "run-time model parameters or payload in the config)",
    )
    g.add_argument(
        "--sample-period",
        type=sample_period_argument,
        metavar="SECONDS",
        help="real-time sample period (default: the description's sample_period)",
    )
    g.add_argument(
        "--friction-from",
        metavar="CONFIG",
        help="a config JSON (identify's config_identified.json): generate the friction terms (Dahl, load-dependent, "
        "Stribeck, smooth Coulomb) it sets on each joint, besides those the description's friction: section declares",
    )
    g.set_defaults(handler=cmd_generate)
    i = sub.add_parser("info", help="degrees of freedom, standard and base parameters")
    add_robot_arguments(i)
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.set_defaults(handler=cmd_info)
    c = sub.add_parser("convert", help="freeze a URDF (+ overlay) into a robot YAML")
    add_robot_arguments(c)
    c.add_argument("-o", "--output", help="YAML file to write (default: stdout)")
    c.add_argument("--header", help="extra comment lines for the YAML header")
    c.add_argument(
        "--convention",
        choices=("urdf", "mdh"),
        default="urdf",
        help="urdf: origin + axis per joint; mdh: a modified-DH (Khalil-Craig) table from the joint axes "
        "at q = 0, links, payload and tip re-expressed in its frames (an error if the first axis is not "
        "normal to the base x axis and through it: the YAML has no base transform)",
    )
    c.set_defaults(handler=cmd_convert)
    return parser, sub


class DefaultsFormatter(argparse.HelpFormatter):
    """``--help`` shows each option's default (argparse's ArgumentDefaultsHelpFormatter would also
    print "default: None" and "default: False" for options whose default is "the description's" or
    off, and repeat defaults the help already states)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        unset = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if not action.option_strings or unset or "default" in text or "%(default)" in text:
            return action.help
        return text + " (default: %(default)s)"


class RawDefaultsFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """DefaultsFormatter that keeps the description's and epilog's line breaks (an example file)."""


def add_force_options(sub: argparse._SubParsersAction) -> None:
    """``--force`` on every command that writes files (those with an output option), recursively;
    every command's --help shows the defaults (DefaultsFormatter; a command that asked for its
    text as written keeps it)."""
    for p in set(sub.choices.values()):
        raw = issubclass(p.formatter_class, argparse.RawDescriptionHelpFormatter)
        p.formatter_class = RawDefaultsFormatter if raw else DefaultsFormatter
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        for a in nested:
            add_force_options(a)
        if any(a.dest in ("out", "output") for a in p._actions):
            p.add_argument(
                "--force",
                action="store_true",
                help="overwrite files that manipgen did not write (or that were edited since)",
            )


def _one_line(original: Callable[..., None]) -> Callable[..., None]:
    """Show manipgen's warnings as one line (``manipgen: warning: file:line: field: ...``), the
    others as ``original`` (Python's) does."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, ManipgenWarning):
            print(f"manipgen: warning: {message}", file=sys.stderr)
        else:
            original(message, category, *args, **kwargs)

    return show


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, but an optional positional (``identify ROBOT [DATA]``) may also follow the
    options (``identify arm.urdf --tip-link X run.npz``): argparse fills such a positional at its
    place or never, and the subcommands rule out ``parse_intermixed_args``."""
    args, extra = parser.parse_known_args(argv)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    empty = [
        a.dest
        for a in sub.choices[args.command]._actions
        if not a.option_strings and a.nargs == "?" and getattr(args, a.dest, None) is None
    ]
    while extra and empty and not extra[0].startswith("-"):
        setattr(args, empty.pop(0), extra.pop(0))
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    try:
        with warnings.catch_warnings():
            # each distinct warning once, wherever it is raised from (a description loaded twice
            # warns once); set before parsing: an option's check warns as the description's does
            warnings.simplefilter("once", ManipgenWarning)
            warnings.showwarning = _one_line(warnings.showwarning)
            args = _parse(parser, argv)
            handler: Handler = args.handler
            with overwriting(bool(getattr(args, "force", False))):
                return handler(args)
    except (DescriptionError, OptionError, OverwriteError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # every output is written atomically: nothing half-written remains
        print("manipgen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `manipgen info ... | head`
        sys.stderr.close()
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    np.set_printoptions(precision=6, suppress=True)
    parser, sub = build_parser()
    add_force_options(sub)
    return run(parser, argv)
