"""A pipeline's run-time config as C: the designated initialiser of ``<robot>_rt_config_t`` (the
generated default config and ``manipgen export-config``'s, one formatter) and the config layout's
identifier, which ``<robot>_rt.h`` defines and an exported config checks at compile time.

Values are written so that the compiler reads back the very bits: doubles by Python's repr (the
shortest string that round-trips), floats with 9 significant digits and an ``f`` suffix (enough
for any binary32), integers as integers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from codegen.blocks.base import Field
from codegen.emit.cprint import Precision, literal

Initializer = list[tuple[str, list[tuple[str, str]]]]  # per block kind, (field, C initialiser text)


def initializer(f: Field, values: Any, precision: Precision) -> str:
    """The C initialiser of one field (a scalar, {...} or {{...}, ...}) from ``values`` of its shape."""
    a = np.asarray(values, float).reshape(f.shape)

    def lit(v: Any) -> str:
        return literal(float(v), precision) if f.ctype == "real" else str(int(v))

    if not f.shape:
        return lit(a)
    if len(f.shape) == 1:
        return "{" + ", ".join(lit(v) for v in a) + "}"
    return "{" + ", ".join("{" + ", ".join(lit(v) for v in row) + "}" for row in a) + "}"


def config_initializer(
    blocks: Sequence[tuple[str, Sequence[Field]]], precision: Precision, values: Mapping[str, Any] | None = None
) -> Initializer:
    """Every block's config fields with their initialisers: ``values["kind.field"]`` where given,
    else the field's default."""
    given = values or {}
    return [
        (kind, [(f.name, initializer(f, given.get(f"{kind}.{f.name}", f.default_array()), precision)) for f in fields])
        for kind, fields in blocks
        if fields
    ]


def layout_id(blocks: Sequence[tuple[str, Sequence[Field]]], precision: Precision) -> str:
    """A 32-bit identifier of the config struct's layout (blocks, fields, C types, shapes, real
    type), as a C literal: equal layouts, equal identifiers."""
    text = json.dumps(
        [precision, [[kind, [[f.name, f.ctype, list(f.shape)] for f in fields]] for kind, fields in blocks if fields]]
    )
    return "0x" + hashlib.sha256(text.encode()).hexdigest()[:8].upper() + "UL"
