"""The suite's xdist groups, whatever pytest's node ids are made of.

``bash dev.sh test`` runs ``pytest -n 2 --dist loadgroup``: the tests marked with one
``xdist_group`` run in one worker, which builds their expensive module fixture once (the PyBullet
scenarios, the static-analysis variants, ...). pytest-xdist 3.8 tells its scheduler a test's group
by appending ``@<group>`` to the test's node id, written to ``item._nodeid``; pytest 9.2 keeps the
id in ``item._id`` (a structured ``NodeId``), so that write is lost and every group was spread over
both workers, each building the fixture again (pytest-xdist issue 1386; the fix, PR 1388, is not
released). Here the suffix is written where this pytest keeps the id, only where xdist's own write
did not take; tests/acceptance/test_xdist_groups.py checks that a group runs in one worker.
"""

from __future__ import annotations

import pytest


def _groups(item: pytest.Item) -> list[str]:
    """The item's xdist_group names, as xdist reads them (sorted, joined with '_')."""
    return sorted(
        {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup
        return
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
