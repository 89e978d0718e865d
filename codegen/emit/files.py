"""Every file manipgen writes for the user goes through here (#10 item 5).

- Atomic: each file is written to a temporary sibling and renamed over its target, so a reader, a
  crash or Ctrl-C never leaves half a file.
- Owned: each output folder keeps ``.manipgen-files.json``, the SHA-256 of every file manipgen
  wrote there. A file that is not in that record, or was edited since, is the user's: it is never
  overwritten unless the command was given ``--force`` (``overwriting(True)``).
- Quiet: rewriting identical bytes touches nothing (not even the modification time).

A set of files (a generated folder) is replaced in two phases: every temporary file is written
first, the record then accepts both the old and the new content of each target, the renames
follow, and the final record lists the new content only. Interrupted anywhere, each file is
either its old or its new version and still counts as manipgen's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path

RECORD = ".manipgen-files.json"
_FORCE: ContextVar[bool] = ContextVar("manipgen_force_overwrite", default=False)


class OverwriteError(ValueError):
    """Writing would replace files manipgen did not write (or that were edited since)."""


@contextlib.contextmanager
def overwriting(force: bool) -> Iterator[None]:
    """Within the block, files that are not manipgen's may be overwritten (``--force``)."""
    token = _FORCE.set(force)
    try:
        yield
    finally:
        _FORCE.reset(token)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def read_record(folder: Path) -> dict[str, list[str]]:
    """File name -> the digests manipgen may have left there (empty if there is no readable record)."""
    try:
        doc = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        files = doc["files"]
        # plain names in this folder only: a record copied or crafted with "../x" or "/x" must not
        # make prune or the ownership check reach outside
        return {
            str(k): [str(h) for h in (v if isinstance(v, list) else [v])] for k, v in files.items() if _plain(str(k))
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _plain(name: str) -> bool:
    return name not in ("", ".", "..", RECORD) and "/" not in name and "\\" not in name and "\0" not in name


def _mode(target: Path) -> int:
    """Permissions for a new version of ``target``: the old file's, else 0666 less the umask
    (mkstemp creates 0600, which would hide the C and the reports from the rest of the team)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def record_text(record: Mapping[str, list[str]]) -> str:
    doc = {
        "about": "files manipgen wrote in this folder and their SHA-256; others are never overwritten without --force",
        "files": {k: (v[0] if len(v) == 1 else v) for k, v in sorted(record.items())},
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _replace(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary sibling and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, _mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_files(folder: str | Path, files: Mapping[str, str | bytes], prune: bool = False) -> list[str]:
    """Write ``files`` (name -> content) into ``folder``; returns the names whose bytes changed.

    ``prune``: the folder holds one output set (a generated folder) -- files manipgen wrote there
    before that are not in ``files`` are removed unless edited since. Raises OverwriteError, before
    writing anything, if a file to replace is not manipgen's and overwriting(True) is not in force."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OverwriteError(f"{folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    record = read_record(folder)
    new = {name: _bytes(data) for name, data in files.items()}
    bad = [name for name in new if not _plain(name)]
    if bad:
        raise OverwriteError(f"{folder}: {bad[0]!r} is not a plain file name")
    changed: dict[str, bytes] = {}
    old: dict[str, str] = {}
    foreign: list[str] = []
    for name, data in new.items():
        target = folder / name
        if target.is_dir():
            raise OverwriteError(f"{target}: is a folder; manipgen would write a file there")
        if not target.exists():
            changed[name] = data
            continue
        current = digest(target.read_bytes())
        if current == digest(data):
            continue
        if current not in record.get(name, []) and not _FORCE.get():
            foreign.append(name)
        old[name] = current
        changed[name] = data
    if foreign:
        shown = ", ".join(foreign[:4]) + (f" and {len(foreign) - 4} more" if len(foreign) > 4 else "")
        raise OverwriteError(
            f"{folder}: would overwrite {shown}, not written by manipgen or edited since "
            "(nothing was written; use --force to overwrite)"
        )
    stale = [
        name
        for name, hashes in record.items()
        if prune and name not in new and (folder / name).is_file() and digest((folder / name).read_bytes()) in hashes
    ]
    final = {name: hashes for name, hashes in record.items() if not prune or name in new}
    final.update({name: [digest(data)] for name, data in new.items()})
    if not changed and not stale:
        if final != record:
            _replace(folder / RECORD, record_text(final).encode("utf-8"))
        return []
    temps: dict[str, str] = {}
    try:
        for name, data in changed.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
            temps[name] = tmp
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, _mode(folder / name))
        both = {
            **record,
            **{n: sorted({*record.get(n, []), *([old[n]] if n in old else []), digest(d)}) for n, d in changed.items()},
        }
        _replace(folder / RECORD, record_text(both).encode("utf-8"))
        for name in changed:
            os.replace(temps[name], folder / name)
            del temps[name]
        for name in stale:
            (folder / name).unlink(missing_ok=True)
        _replace(folder / RECORD, record_text(final).encode("utf-8"))
    finally:
        for tmp in temps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return sorted(changed)


def write_file(path: str | Path, data: str | bytes) -> bool:
    """One output file (see write_files); True if its bytes changed."""
    path = Path(path)
    return bool(write_files(path.parent, {path.name: data}))
