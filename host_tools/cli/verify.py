"""`manipgen verify ROBOT|FOLDER`: regenerate and diff a folder, build it strictly, check the
identities and compare with Pinocchio (host_tools.studies.verify)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser(
        "verify",
        help="check a description or a generated folder: regenerate and diff, strict build, identities, Pinocchio",
    )
    v.add_argument(
        "robot",
        help="bundled name, a .yaml/.urdf path, or a generated folder (with its manifest.json)",
    )
    v.add_argument(
        "--description",
        help="FOLDER only: the description it was generated from (default: the bundled robot the "
        "manifest names); the chain flags apply to it",
    )
    v.add_argument(
        "--base-link", help="URDF (the description's or --reference's): first link of the chain (default: the root)"
    )
    v.add_argument(
        "--tip-link", help="URDF (the description's or --reference's): last link of the chain (default: the only leaf)"
    )
    v.add_argument("--overlay", help="URDF: YAML with what URDF cannot say (friction, encoders, ...)")
    v.add_argument(
        "--reference",
        metavar="URDF",
        help="compare with Pinocchio built from this URDF (e.g. the one a YAML was converted from) "
        "instead of from the description itself",
    )
    v.add_argument("--states", type=int, default=1000, help="random states of the numeric checks")
    v.add_argument("--json", action="store_true", help="print the report as JSON only")
    v.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot
    from host_tools.data.light_joints import warn_light_joints
    from host_tools.reports.verify import text
    from host_tools.studies.verify import Reference, VerifyError, verify

    start = time.perf_counter()

    def progress(stage: str) -> None:
        print(f"verify: {stage} ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    given = Path(args.robot)
    folder = given if given.is_dir() else None
    try:
        if folder is not None:
            spec = args.description or _bundled_description(folder)
        elif args.description:
            raise VerifyError("--description applies to a generated folder only")
        else:
            spec = args.robot
        if args.states < 1:
            raise VerifyError(f"--states must be at least 1, got {args.states}")
        urdf = spec.lower().endswith(".urdf")
        chain = (args.base_link, args.tip_link, args.overlay)
        if not urdf and not args.reference and any(chain):
            raise VerifyError("--base-link, --tip-link and --overlay apply to a URDF (the description or --reference)")
        robot = load_robot(spec, *chain) if urdf else load_robot(spec)
        warn_light_joints(robot)  # joints whose own tracking the input checks would flag (one notice)
        reference = Reference(args.reference or spec, *chain) if args.reference or urdf else None
        report = verify(robot, folder, reference, args.states, progress=progress)
    except (DescriptionError, VerifyError, OSError, ValueError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), indent=1))
        return 0 if report.ok else 1
    print(text(report))
    return 0 if report.ok else 1


def _bundled_description(folder: Path) -> str:
    from codegen.resources import bundled_robot_path
    from host_tools.studies.verify import VerifyError

    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifyError(f"{folder}: not a generated folder (manifest.json: {exc})") from None
    name = Path(str(manifest.get("description", ""))).stem
    found = bundled_robot_path(name)
    if found is None:
        raise VerifyError(
            f"{folder}/manifest.json: description: {manifest.get('description')!r} is not a bundled robot; "
            "give the file it was generated from: manipgen verify FOLDER --description PATH"
        )
    return str(found)
