"""`manipgen elastic`: elastic arms (Kirchhoff 2011): two-stage identification, tau_el collision test."""

from __future__ import annotations

import argparse

from host_tools.cli.progress import stage


def add_parser(sub: argparse._SubParsersAction) -> None:
    el = sub.add_parser(
        "elastic", help="elastic arms (Kirchhoff 2011): two-stage identification, tau_el collision test"
    )
    el_actions = el.add_subparsers(dest="action", required=True)
    ei = el_actions.add_parser(
        "identify",
        help="design both stages' excitations, simulate, identify, validate (Kirchhoff 2011 §4.3.1, Tables 4.2-4.5)",
    )
    ec = el_actions.add_parser(
        "collide", help="the tau_el momentum observer and the reflex on Kirchhoff (2011) §5.3's obstacle (Fig. 5.5)"
    )
    for a in (ei, ec):
        a.add_argument("robot", help="bundled name (e.g. biorob4) or a .yaml path with elastic joints")
        a.add_argument("--out", help="folder for the JSON, markdown / figure")
        a.add_argument("--json", action="store_true", help="print the JSON document")
        a.set_defaults(handler=run)
    ei.add_argument("--periods", type=int, default=6, help="excitation periods simulated per stage (first skipped)")
    ei.add_argument("--noise", type=float, default=0.02, help="motor-torque (current) noise, N m standard deviation")
    ei.add_argument("--starts", type=int, default=2, help="IPOPT starts per excitation design")
    ei.add_argument("--seed", type=int, default=0)
    ei.add_argument(
        "--actuator",
        help="recorded run of the actuator stage's excitation (log .npz; with the next three: "
        "identify from logs instead of the simulated study)",
    )
    ei.add_argument("--actuator-excitation", help="its excitation (manipgen excite --stage actuator --out)")
    ei.add_argument("--load", help="recorded run of the load stage's excitation (log .npz)")
    ei.add_argument("--load-excitation", help="its excitation (manipgen excite --out)")
    ei.add_argument("--validate", help="another recorded run to validate on (log .npz)")
    ei.add_argument(
        "--current",
        action="store_true",
        help="the logs' tau holds armature currents (A): motor "
        "torque = gear_ratio x torque_constant x current (eq. 4.51)",
    )
    ei.add_argument("--config", help="config JSON of the recorded runs (e.g. their enc.motor_offset)")
    ei.add_argument(
        "--motor-offsets",
        action="store_true",
        help="also estimate each motor encoder's offset (incremental encoders referenced imprecisely)",
    )
    ec.add_argument(
        "--threshold", type=float, default=0.1, help="residual threshold per joint, N m (Kirchhoff 2011: 0.1)"
    )
    ec.add_argument("--k-r", type=float, default=0.03, help="reflex gain K_R, rad/s per N m (Kirchhoff 2011: 0.03)")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.reports import elastic as report

    console = Console(stderr=True, soft_wrap=True, markup=False)
    out = Path(args.out) if args.out else None
    if args.action == "identify":
        given = [args.actuator, args.actuator_excitation, args.load, args.load_excitation]
        problem = None
        if any(given) and not all(given):
            problem = "recorded runs need all four of --actuator, --actuator-excitation, --load, --load-excitation"
        elif (args.validate or args.current or args.config or args.motor_offsets) and not all(given):
            problem = "--validate, --current, --config and --motor-offsets go with recorded runs (--actuator ...)"
        elif not (args.periods >= 2 and args.noise >= 0 and args.starts >= 1 and args.seed >= 0):
            problem = "--periods must be >= 2, --noise >= 0, --starts >= 1, --seed >= 0"
        if problem:
            console.print(f"manipgen: error: {problem}")
            return 2
    try:
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        robot = load_robot(args.robot)
        if args.action == "identify":
            from host_tools.data.logs import Log, LogError
            from host_tools.identification.elastic import (
                ElasticIdentSettings,
                StudySettings,
                identify_logs,
                markdown,
                markdown_logs,
                study,
            )
            from host_tools.identification.excitation import Excitation

            try:
                if args.actuator:
                    with stage(console, "two-stage identification from the logs ..."):
                        doc = identify_logs(
                            robot,
                            (Log.load(args.actuator), Excitation.load(args.actuator_excitation)),
                            (Log.load(args.load), Excitation.load(args.load_excitation)),
                            Log.load(args.validate) if args.validate else None,
                            args.current,
                            ElasticIdentSettings(motor_offsets=args.motor_offsets),
                            args.config,
                        )
                    text = markdown_logs(doc)
                else:
                    with stage(console, "two-stage identification ...") as status:
                        doc = study(
                            robot,
                            StudySettings(
                                periods=args.periods, current_noise=args.noise, starts=args.starts, seed=args.seed
                            ),
                            progress=lambda s: status.update(s),
                        )
                    text = markdown(doc)
            except LogError as exc:
                raise ValueError(str(exc)) from None
            if out is not None:
                report.write_identification(doc, text, out)
        else:
            from host_tools.studies.elastic_collision import ScenarioSettings, scenario

            s = ScenarioSettings(threshold=args.threshold, k_r=args.k_r)
            with stage(console, "Kirchhoff (2011) §5.3 collision scenario ..."):
                doc = scenario(robot, s)
            if out is not None:
                report.write_collision(doc, s.joint, out)
            doc.pop("traces")
            text = report.collision_summary(doc, s.threshold)
        shown = json.dumps(doc, indent=1, allow_nan=False) if args.json else text
    except (ValueError, OptionError, DescriptionError, OSError, RuntimeError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    print(shown)
    return 0
