"""YAML loading that remembers where every field came from (for error messages)."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codegen.errors import DescriptionError, warn

Path_t = tuple[str | int, ...]


@dataclass
class Located:
    """A parsed YAML document plus the line (1-based) of each field path."""

    file: str
    data: Any
    lines: dict[Path_t, int] = field(default_factory=dict)

    def line(self, path: Path_t) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def error(self, path: Path_t, message: str) -> DescriptionError:
        return DescriptionError(self.file, dotted(path), message, self.line(path))

    def warn(self, path: Path_t, message: str) -> None:
        warn(self.file, dotted(path), message, self.line(path))


def dotted(path: Path_t) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


MAX_BYTES = 16 * 2**20  # robot files are kilobytes; a bigger file is a mistake or an attack
# libyaml's composer (50x faster on big files, nesting capped at 1000) when PyYAML was built with it
COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_NODES = 100_000  # after alias expansion: a "billion laughs" document stops here
MAX_EXPRESSION = 200  # characters of a number expression such as "pi/2"
# a number followed by a unit ("1.5kg", "90 deg", "10 ms"): descriptions are SI numbers
_WITH_UNIT = re.compile(
    r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z\u00b0\u00b5%][\w/^*%\u00b2\u00b3]*)\s*$"
)
# Plain data only: the YAML 1.1 core tags. Anything else (!!python/object, !include, ...) is refused.
PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")}


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """A description file as text: readable, at most ``max_bytes``, UTF-8."""
    try:
        if not path.is_file():  # devices and FIFOs would be read forever
            raise DescriptionError(str(path), "", "not a regular file" if path.exists() else "no such file")
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)  # what stat() says can lie (/proc, growing files)
        if len(data) > max_bytes:
            size = max(path.stat().st_size, len(data))
            raise DescriptionError(
                str(path),
                "",
                f"file is {size / 2**20:.0f} MiB; robot descriptions "
                f"larger than {max_bytes / 2**20:.0f} MiB are refused",
            )
    except OSError as exc:
        raise DescriptionError(str(path), "", f"cannot read file ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DescriptionError(str(path), "", f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line) from None


class _Walk:
    """Plain Python data from a composed YAML node tree, with the line of every field; refuses
    duplicate keys, non-plain tags and alias bombs."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[Path_t, int] = {}
        self.nodes = 0

    def error(self, path: Path_t, node: yaml.Node, message: str) -> DescriptionError:
        return DescriptionError(self.file, dotted(path), message, node.start_mark.line + 1)

    def walk(self, node: yaml.Node, path: Path_t) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(
                path,
                node,
                f"more than {MAX_NODES} values once aliases are expanded "
                "(an alias bomb?): robot descriptions use few aliases",
            )
        self.lines[path] = node.start_mark.line + 1
        if node.tag not in PLAIN_TAGS:
            raise self.error(
                path,
                node,
                f"tag {node.tag!r} is not allowed: robot descriptions hold "
                "plain data (numbers, strings, lists, mappings)",
            )
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise self.error(path, key_node, "keys must be plain names, not lists or mappings")
                key = str(key_node.value)
                if key in out:
                    raise self.error(
                        path + (key,), key_node, f"duplicate key (first on line {self.lines[path + (key,)]})"
                    )
                out[key] = self.walk(value_node, path + (key,))
                self.lines[path + (key,)] = key_node.start_mark.line + 1  # the key's line, not the value's
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(v, path + (i,)) for i, v in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        loader = yaml.SafeLoader("")
        try:
            return loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(path, node, f"cannot read the value ({getattr(exc, 'problem', exc)})") from None
        except ValueError:  # e.g. an integer of more digits than Python converts
            raise self.error(path, node, f"cannot read the value ({len(str(node.value))} characters)") from None
        finally:
            loader.dispose()


def load_yaml(path: str | Path) -> Located:
    """Parse ``path`` keeping line numbers. Syntax errors become DescriptionError."""
    p = Path(path)
    return parse_yaml(read_text(p), str(p))


def parse_yaml(text: str, file: str) -> Located:
    try:
        node = yaml.compose(text, Loader=COMPOSER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DescriptionError(
            file,
            "",
            f"YAML syntax error: {getattr(exc, 'problem', exc)}",
            mark.line + 1 if mark is not None else None,
        ) from None
    except RecursionError:
        raise DescriptionError(file, "", "YAML nested too deeply") from None
    walk = _Walk(file)
    try:
        data = walk.walk(node, ()) if node is not None else None
    except RecursionError:
        raise DescriptionError(file, "", "YAML nested too deeply") from None
    return Located(file, data, walk.lines)


_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _eval_expr(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval_expr(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "pi":
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval_expr(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval_expr(node.left), _eval_expr(node.right))
    raise ValueError("only numbers, pi and + - * / are allowed")


def number(doc: Located, path: Path_t, value: Any) -> float:
    """A finite real number, or an expression such as ``pi/2``."""
    if isinstance(value, bool) or value is None:
        raise doc.error(path, f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:
            raise doc.error(path, "must be finite, got an integer beyond the floating-point range") from None
    elif isinstance(value, str):
        if len(value) > MAX_EXPRESSION:
            raise doc.error(path, f"expression too long ({len(value)} characters; at most {MAX_EXPRESSION})")
        try:
            out = _eval_expr(ast.parse(value.strip(), mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
            unit = _WITH_UNIT.match(value)
            if unit and unit.group(2) == "pi":
                raise doc.error(path, f"write {unit.group(1)}*pi, not {value!r}") from None
            if unit:
                raise doc.error(path, f"numbers are SI, without units: write {unit.group(1)}, not {value!r}") from None
            raise doc.error(path, f"cannot read {value!r} as a number ({exc})") from None
    else:
        raise doc.error(path, f"expected a number, got {type(value).__name__}")
    if not math.isfinite(out):
        raise doc.error(path, f"must be finite, got {value!r}")
    return out


def vector(doc: Located, path: Path_t, value: Any, n: int) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != n:
        raise doc.error(path, f"expected a list of {n} numbers, got {value!r}")
    return tuple(number(doc, path + (i,), v) for i, v in enumerate(value))
