"""The ModuleDrains contract, run against every backend (the inventory suite's ids)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from common.store.side.drains import changed
from tests.contract.inventory_fixtures import backend, module_drains  # noqa: F401

NOW = 1_700_000_000.0


def test_a_module_never_drained_has_no_record(module_drains: Any) -> None:
    assert module_drains.get("mysql") is None
    assert module_drains.drains() == []


def test_drain_then_undrain_keeps_who_and_why_of_each_change(module_drains: Any) -> None:
    drained = changed(None, "mysql", True, "alice", "deploy 1.4", NOW)
    assert module_drains.put(drained, None) is True
    assert module_drains.get("mysql") == drained
    undrained = changed(drained, "mysql", False, "bob", "deploy done", NOW + 60)
    assert module_drains.put(undrained, 1) is True
    stored = module_drains.get("mysql")
    assert (stored.Drained, stored.Actor, stored.Reason, stored.Since, stored.Version) == (
        False, "bob", "deploy done", NOW + 60, 2)
    module_drains.put(changed(None, "resource", True, "carol", "r", NOW), None)
    assert [d.Module for d in module_drains.drains()] == ["mysql", "resource"]


def test_a_stale_version_loses_and_changes_nothing(module_drains: Any) -> None:
    first = changed(None, "mysql", True, "alice", "deploy", NOW)
    assert module_drains.put(first, None)
    assert module_drains.put(changed(None, "mysql", True, "bob", "mine", NOW), None) is False  # exists already
    assert module_drains.put(changed(first, "mysql", False, "bob", "done", NOW), 1)
    assert module_drains.put(changed(first, "mysql", True, "carol", "late", NOW), 1) is False  # read version 1
    assert module_drains.get("mysql").Actor == "bob"
    with pytest.raises(ValueError):
        module_drains.put(changed(first, "mysql", True, "x", "y", NOW).model_copy(update={"Version": 7}), 1)


def test_racing_operators_one_wins_each_version(backend: Any) -> None:  # noqa: F811
    if not backend.shared_by_processes:
        pytest.skip("mongomock is not a server: threads share one fake")
    opened = [backend.open_module_drains() for _ in range(4)]
    try:
        opened[0].put(changed(None, "mysql", True, "seed", "seed", NOW), None)
        wins: list[str] = []
        start = threading.Barrier(len(opened))

        def race(index: int) -> None:
            read = opened[index].get("mysql")  # every operator read version 1
            start.wait()
            if opened[index].put(changed(read, "mysql", index % 2 == 0, f"op{index}", "r", NOW), 1):
                wins.append(f"op{index}")

        threads = [threading.Thread(target=race, args=(i,)) for i in range(len(opened))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(wins) == 1
        assert opened[0].get("mysql").Actor == wins[0]
    finally:
        for drains in opened:
            drains.close()
