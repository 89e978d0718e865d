"""The `manipgen` console entry point: one module per command (``add_parser`` + ``run``); codegen's
commands (generate, info, convert) are in :mod:`host_tools.cli.generate`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from host_tools.cli.generate import add_force_options, build_parser, run

# command name -> its module; a command imports only its own module (a command's module may import
# scipy, matplotlib or the loopback: identify's budget is 3 s, the parser of every command 0.3 s)
COMMANDS = {
    "demo": "demo",
    "verify": "verify",
    "evaluate": "evaluate",
    "study": "study",
    "reproduce": "reproduce",
    "excite": "excite",
    "identify": "identify",
    "import-log": "import_log",
    "record": "record",
    "thresholds": "thresholds",
    "collide": "collide",
    "elastic": "elastic",
    "target": "target",
    "export-config": "export_config",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser, sub = build_parser()
    own = sub.choices  # generate, info, convert
    first = args[0] if args else ""
    if first in COMMANDS:
        chosen = [COMMANDS[first]]
    elif first in own:
        chosen = []
    else:  # --help, no command or a mistyped one: the whole list
        chosen = list(COMMANDS.values())
    for module in chosen:
        importlib.import_module(f"host_tools.cli.{module}").add_parser(sub)
    add_force_options(sub)
    return run(parser, args)
