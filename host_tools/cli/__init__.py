"""The `manipgen` console entry point: one module per command (``add_parser`` + ``run``); codegen's
commands (generate, info, convert) are in :mod:`host_tools.cli.generate`."""

from __future__ import annotations

from collections.abc import Sequence

from host_tools.cli import (
    collide,
    demo,
    elastic,
    evaluate,
    excite,
    identify,
    import_log,
    record,
    target,
    thresholds,
    verify,
)
from host_tools.cli.generate import add_force_options, build_parser, run

COMMANDS = (demo, verify, evaluate, excite, identify, import_log, record, thresholds, collide, elastic, target)


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = build_parser()
    for command in COMMANDS:
        command.add_parser(sub)
    add_force_options(sub)
    return run(parser, argv)
