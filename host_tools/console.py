"""The ``manipgen`` console entry point: Ctrl-C at any moment, even while the numerical libraries
are still being imported, ends with one line and exit code 130 (outputs are written atomically,
codegen.emit.files, so nothing is left half-written)."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from host_tools.cli import main as run

        return run()
    except KeyboardInterrupt:
        print("manipgen: interrupted", file=sys.stderr)
        return 130
