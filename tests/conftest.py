"""The suite's xdist groups, whatever pytest's node ids are made of.

``bash dev.sh test`` runs ``pytest -n 2 --dist loadgroup``: the tests marked with one
``xdist_group`` run in one worker, which builds their expensive module fixture once (the PyBullet
scenarios, the static-analysis variants, ...). pytest-xdist 3.8 tells its scheduler a test's group
by appending ``@<group>`` to the test's node id, written to ``item._nodeid``; pytest 9.2 keeps the
id in ``item._id`` (a structured ``NodeId``), so that write is lost and every group was spread over
both workers, each building the fixture again (pytest-xdist issue 1386; the fix, PR 1388, is not
released). Here the suffix is written where this pytest keeps the id, only where xdist's own write
did not take. The tests of a module that use a module-scoped fixture and name no group form one
group of their own (_group_module_fixtures). tests/acceptance/test_xdist_groups.py checks both.
"""

from __future__ import annotations

import pytest

import host_tools  # noqa: F401  (before any test imports numpy: it pins the kernels, README "Reproducible figures")


def _groups(item: pytest.Item) -> list[str]:
    """The item's xdist_group names, as xdist reads them (sorted, joined with '_')."""
    return sorted(
        {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    )


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def _group_module_fixtures(items: list[pytest.Item]) -> None:
    """The tests of a module that use one of its module-scoped fixtures, and carry no group of their
    own, form one group: spread over both workers, each worker built the fixture (the Xu et al.,
    Brunot et al. and Kirchhoff reproductions, the output-error round trip, the cluster reference
    run, ...). A module fixture is there to be built once; this makes it so under loadgroup too."""
    for item in items:
        if not _groups(item) and _uses_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(f"module-fixtures:{item.nodeid.split('::')[0]}"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup
        return
    _group_module_fixtures(items)
    for item in items:
        names = _groups(item)
        if not names:
            continue
        nodeid = f"{item.nodeid}@{'_'.join(names)}"
        if item.nodeid.endswith(f"@{'_'.join(names)}"):
            continue  # xdist's own suffix took (pytest before 9.2)
        structured = getattr(item, "_id", None)
        if structured is None or not hasattr(type(structured), "parse"):
            raise RuntimeError(
                f"{item.nodeid}: this pytest keeps node ids neither in _nodeid nor in _id: "
                "the xdist groups of tests/conftest.py need updating"
            )
        item._id = type(structured).parse(nodeid)
