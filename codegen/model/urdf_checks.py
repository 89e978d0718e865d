"""A URDF's XML checked before urdf_parser_py reads it.

urdf_parser_py parses with the standard library's expat (which would expand internal entities up to
its amplification limit) and checks little: duplicate names, dangling links, cycles, NaN and text
where numbers belong reach it silently or as bare assertions. This module refuses all of that with
one DescriptionError naming the file and the element, so the parser only ever sees a plain, well
formed tree of links and joints.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from codegen.errors import DescriptionError
from codegen.model.yamlio import read_text

MAX_URDF_BYTES = 32 * 2**20  # real URDFs with meshes referenced are well under 1 MiB

# element path below <link>/<joint> -> numeric attributes and how many numbers each holds
NumberTable = dict[tuple[str, ...], dict[str, int]]
LINK_NUMBERS: NumberTable = {
    ("inertial", "origin"): {"xyz": 3, "rpy": 3},
    ("inertial", "mass"): {"value": 1},
    ("inertial", "inertia"): {k: 1 for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")},
}
JOINT_NUMBERS: NumberTable = {
    ("origin",): {"xyz": 3, "rpy": 3},
    ("axis",): {"xyz": 3},
    ("limit",): {"lower": 1, "upper": 1, "effort": 1, "velocity": 1},
    ("dynamics",): {"damping": 1, "friction": 1},
    ("mimic",): {"multiplier": 1, "offset": 1},
}


class _Refused(Exception):
    pass


def _no_entities(text: str, file: str) -> None:
    """Well-formed XML without entity declarations or external DTDs (no entity expansion, no file
    or network access), checked by expat before anything builds a tree."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def doctype(name: str, system_id: str | None, public_id: str | None, internal: int) -> None:
        if system_id or public_id:
            raise _Refused("external DOCTYPE (DTD) references are refused")

    def entity(name: str, *args: object) -> None:
        raise _Refused(
            f"XML entity declarations are refused (entity {name!r}): no entity expansion in robot descriptions"
        )

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    try:
        parser.Parse(text.encode("utf-8"), True)
    except _Refused as exc:
        raise DescriptionError(file, "", str(exc), parser.CurrentLineNumber) from None
    except expat.ExpatError as exc:
        raise DescriptionError(file, "", f"not well-formed XML ({expat.ErrorString(exc.code)})", exc.lineno) from None
    except RecursionError:
        raise DescriptionError(file, "", "XML nested too deeply") from None


def _numbers(file: str, field: str, text: str, n: int) -> None:
    parts = text.split()
    try:
        values = [float(v) for v in parts]
    except ValueError:
        raise DescriptionError(file, field, f"expected {n} number{'s' if n > 1 else ''}, got {text!r}") from None
    if len(values) != n:
        raise DescriptionError(file, field, f"expected {n} number{'s' if n > 1 else ''}, got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise DescriptionError(file, field, f"must be finite, got {text!r}")


# attributes urdf_parser_py needs when their element is present
REQUIRED = {
    ("axis", "xyz"),
    ("mass", "value"),
    ("inertia", "ixx"),
    ("inertia", "ixy"),
    ("inertia", "ixz"),
    ("inertia", "iyy"),
    ("inertia", "iyz"),
    ("inertia", "izz"),
}


def _check_numbers(file: str, element: ET.Element, where: str, table: NumberTable) -> None:
    for path, attributes in table.items():
        found = [element]
        for tag in path:
            found = [c for e in found for c in e.findall(tag)]
        for e in found:
            for attr, n in attributes.items():
                field = f"{where}.{'.'.join(path)}.{attr}"
                if attr in e.attrib:
                    _numbers(file, field, e.attrib[attr], n)
                elif (path[-1], attr) in REQUIRED:
                    raise DescriptionError(file, field, "missing")


def _named(file: str, elements: list[ET.Element], kind: str) -> dict[str, ET.Element]:
    out: dict[str, ET.Element] = {}
    for e in elements:
        name = e.get("name")
        if not name:
            raise DescriptionError(file, kind, "an element without a name attribute")
        if name in out:
            raise DescriptionError(file, f"{kind}[{name}]", f"duplicate {kind} name")
        out[name] = e
    return out


def _check_tree(file: str, links: dict[str, ET.Element], joints: dict[str, ET.Element]) -> None:
    """Every joint joins two existing links, every link has at most one parent joint, and all
    links hang from one root (no cycles, no second tree)."""
    parent_of: dict[str, str] = {}
    children: dict[str, list[str]] = {}
    for name, j in joints.items():
        ends = {}
        for end in ("parent", "child"):
            e = j.find(end)
            link = e.get("link") if e is not None else None
            if link is None:
                raise DescriptionError(file, f"joint[{name}].{end}", "missing (<" + end + ' link="..."/>)')
            if link not in links:
                raise DescriptionError(file, f"joint[{name}].{end}", f"no link named {link!r}")
            ends[end] = link
        child = ends["child"]
        if child in parent_of:
            raise DescriptionError(
                file, f"link[{child}]", f"has two parent joints ({parent_of[child]}, {name}): a URDF is a tree"
            )
        parent_of[child] = name
        children.setdefault(ends["parent"], []).append(child)
    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        raise DescriptionError(
            file,
            "link",
            "no root link (the joints form a cycle)"
            if not roots
            else f"several root links ({', '.join(roots[:5])}): the links form more than one tree",
        )
    seen = {roots[0]}
    todo = [roots[0]]
    while todo:
        for c in children.get(todo.pop(), []):
            seen.add(c)
            todo.append(c)
    lost = [n for n in links if n not in seen]
    if lost:
        raise DescriptionError(
            file,
            f"link[{lost[0]}]",
            f"not reachable from the root link {roots[0]!r}: the joints through {', '.join(lost[:5])} form a cycle",
        )


def checked_urdf_text(path: Path) -> str:
    """The text of a URDF that is safe and structurally sound for urdf_parser_py."""
    file = str(path)
    text = read_text(path, MAX_URDF_BYTES)
    _no_entities(text, file)
    root = ET.fromstring(text)
    if root.tag != "robot":
        raise DescriptionError(file, "", f"the root element is <{root.tag}>; a URDF's is <robot>")
    links = _named(file, root.findall("link"), "link")
    joints = _named(file, root.findall("joint"), "joint")
    for name, link in links.items():
        _check_numbers(file, link, f"link[{name}]", LINK_NUMBERS)
    for name, j in joints.items():
        _check_numbers(file, j, f"joint[{name}]", JOINT_NUMBERS)
        limit = j.find("limit")
        if (
            j.get("type") in ("revolute", "prismatic")
            and limit is not None
            and "lower" in limit.attrib
            and "upper" in limit.attrib
            and float(limit.attrib["lower"]) > float(limit.attrib["upper"])
        ):
            raise DescriptionError(
                file, f"joint[{name}].limit", f"lower {limit.attrib['lower']} is above upper {limit.attrib['upper']}"
            )
    if not links:
        raise DescriptionError(file, "link", "the URDF has no links")
    _check_tree(file, links, joints)
    return text
