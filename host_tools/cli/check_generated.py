"""Compare the committed generated/<robot>/ folders with a fresh generation (byte for byte)."""

from __future__ import annotations

import sys
from pathlib import Path

from codegen.emit.generate import generate
from codegen.model.description import load_robot


def differences(robot_name: str, root: Path = Path("generated")) -> list[str]:
    return generate(load_robot(robot_name)).differences(root / robot_name)


def main(argv: list[str]) -> int:
    problems = [d for name in argv for d in differences(name)]
    for p in problems:
        print(p)
    if problems:
        print("run `make generated` and commit the result")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
