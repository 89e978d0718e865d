"""YAML loading that remembers where every field came from (for error messages)."""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .errors import DescriptionError

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


def dotted(path: Path_t) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _walk(node: yaml.Node, path: Path_t, lines: dict[Path_t, int]) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            out[key] = _walk(value_node, path + (key,), lines)
            lines[path + (key,)] = key_node.start_mark.line + 1  # the key's line, not the value's
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(v, path + (i,), lines) for i, v in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)
    return _scalar(node)


def _scalar(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def load_yaml(path: str | Path) -> Located:
    """Parse ``path`` keeping line numbers. Syntax errors become DescriptionError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DescriptionError(str(p), "", f"cannot read file ({exc.strerror})") from None
    return parse_yaml(text, str(p))


def parse_yaml(text: str, file: str) -> Located:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DescriptionError(
            file, "", f"YAML syntax error: {getattr(exc, 'problem', exc)}",
            mark.line + 1 if mark is not None else None,
        ) from None
    lines: dict[Path_t, int] = {}
    data = _walk(node, (), lines) if node is not None else None
    return Located(file, data, lines)


_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}


def _eval_expr(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval_expr(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
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
        out = float(value)
    elif isinstance(value, str):
        try:
            out = _eval_expr(ast.parse(value.strip(), mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:
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
