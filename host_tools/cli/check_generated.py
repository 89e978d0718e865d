"""Compare the committed generated/<robot>/ folders with a fresh generation (byte for byte)."""

from __future__ import annotations

import sys
from pathlib import Path

from codegen.emit.files import RECORD, digest, record_text
from codegen.emit.generate import generate
from codegen.emit.host import HOST_FOLDER
from codegen.model.description import load_robot


def differences(robot_name: str, root: Path = Path("generated")) -> list[str]:
    gen = generate(load_robot(robot_name))
    out: list[str] = []
    for folder, files in ((root / robot_name, gen.files), (root / robot_name / HOST_FOLDER, gen.host)):
        fresh = dict(files)
        # the ownership record Generated.write leaves (codegen.emit.files): a stale one would make
        # users' regeneration refuse the committed files as not manipgen's
        fresh[RECORD] = record_text({n: [digest(t.encode("utf-8"))] for n, t in fresh.items()})
        committed = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
        out += [f"{folder}/{n}: missing" for n in sorted(set(fresh) - committed)]
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
