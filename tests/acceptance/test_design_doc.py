"""docs/design.md's module table matches the tree: every package of codegen/ and host_tools/ has a
row, and its row names exactly the package's modules."""

from __future__ import annotations

import re

from tests.tooling import ROOT

ROW = re.compile(r"^\| `((?:codegen|host_tools)[\w/]*)` \| (.*) \|$")


def _table() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            # a module is a backticked name outside parentheses (which explain, and may quote names)
            names = re.sub(r"\([^)]*\)", "", m.group(2))
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", names))
    return rows


def _tree() -> dict[str, set[str]]:
    packages = [p.parent for top in ("codegen", "host_tools") for p in (ROOT / top).rglob("__init__.py")]
    return {
        str(p.relative_to(ROOT)): {f.stem for f in p.glob("*.py") if f.name != "__init__.py"}
        for p in packages
        if "__pycache__" not in p.parts
    }


def test_the_design_docs_module_table_matches_the_tree() -> None:
    table, tree = _table(), _tree()
    assert sorted(table) == sorted(tree), "packages: docs/design.md's table against the tree"
    for package, modules in tree.items():
        assert table[package] == modules, (
            package,
            {"not in the doc": sorted(modules - table[package]), "not in the tree": sorted(table[package] - modules)},
        )


def test_the_check_reads_the_rows() -> None:
    """The parser finds the table (a renamed heading or reformatted rows must not pass vacuously)."""
    table = _table()
    assert len(table) >= 12 and "codegen/emit" in table and "generate" in table["codegen/emit"]


def test_the_tests_mirror_the_packages() -> None:
    """tests/codegen/... and tests/host_tools/... (docs/design.md, "Tests"): each test folder there is
    named after a package of the tree, so a test's place says what it tests."""
    tree = _tree()
    folders = [
        p.parent.relative_to(ROOT / "tests")
        for top in ("codegen", "host_tools")
        for p in (ROOT / "tests" / top).rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    assert folders
    assert sorted({str(f) for f in folders} - set(tree)) == []
