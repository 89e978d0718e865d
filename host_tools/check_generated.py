"""Compare the committed generated/<robot>/ folders with a fresh generation (byte for byte)."""

from __future__ import annotations

import sys
from pathlib import Path

from codegen.description import load_robot
from codegen.emit import generate
from codegen.outputs import RECORD, digest, record_text


def differences(robot_name: str, root: Path = Path("generated")) -> list[str]:
    fresh = dict(generate(load_robot(robot_name)).files)
    # the ownership record Generated.write leaves (codegen.outputs): a stale one would make users'
    # regeneration refuse the committed files as not manipgen's
    fresh[RECORD] = record_text({n: [digest(t.encode("utf-8"))] for n, t in fresh.items()})
    folder = root / robot_name
    committed = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    out = [f"{folder}/{n}: missing" for n in sorted(set(fresh) - committed)]
    out += [f"{folder}/{n}: not generated any more" for n in sorted(committed - set(fresh))]
    out += [
        f"{folder}/{n}: differs from a fresh generation"
        for n in sorted(set(fresh) & committed)
        if (folder / n).read_text(encoding="utf-8") != fresh[n]
    ]
    return out


def main(argv: list[str]) -> int:
    problems = [d for name in argv for d in differences(name)]
    for p in problems:
        print(p)
    if problems:
        print("run `make generated` and commit the result")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
