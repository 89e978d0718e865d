"""``manipgen export-config``'s C: a saved config as a ``const <robot>_rt_config_t`` with a
designated initialiser (the generated default config's formatter, codegen.emit.config) and its
header. The source checks the pipeline's config layout identifier at compile time, so a config
exported for one pipeline does not compile into another (whose extra fields would read zero)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from codegen import __version__
from codegen.blocks.base import Field
from codegen.emit.config import config_initializer, layout_id
from codegen.emit.cprint import Precision
from codegen.emit.templates import template_environment

C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME = 31  # C99 5.2.4.1: external identifiers distinct in their first 31 characters


def default_name(prefix: str, stem: str) -> str:
    """``<prefix>_rt_config_<stem>``, or ``<prefix>_cfg_<stem>`` cut to ``MAX_NAME`` characters when
    that is longer (give --name where two such stems share their first characters)."""
    full = f"{prefix}_rt_config_{stem}"
    return full if len(full) <= MAX_NAME else f"{prefix}_cfg_{stem}"[:MAX_NAME].rstrip("_")


def exported_config(
    prefix: str,
    blocks: Sequence[tuple[str, Sequence[Field]]],
    precision: Precision,
    values: Mapping[str, Any],
    name: str,
    file: str,
    source: str,
    label: str,
) -> dict[str, str]:
    """{file}.c and {file}.h defining ``name`` from ``values`` ("kind.field" -> array) for the
    pipeline whose config ``blocks`` (kind, fields) are given; ``source`` and ``label`` are quoted
    in the comments."""
    if not C_NAME.match(name) or len(name) > MAX_NAME:
        raise ValueError(f"--name {name!r}: a C identifier of at most {MAX_NAME} characters")
    if not C_NAME.match(file):
        raise ValueError(f"--out {file!r}: the file's stem must be a C identifier (it names the header guard)")
    ctx = {
        "p": prefix,
        "P": prefix.upper(),
        "name": name,
        "file": file,
        "guard": file.upper() + "_H",
        "source": source.replace("*/", "* /"),
        "label": label,
        "robot": prefix,
        "precision": precision,
        "version": __version__,
        "layout": layout_id(blocks, precision),
        "config": config_initializer(blocks, precision, values),
    }
    env = template_environment()
    return {f"{file}.{ext}": env.get_template(f"config.{ext}.j2").render(ctx) for ext in ("c", "h")}
