"""The Inventory contract under races: reservations from many threads (every backend) and from
processes (where the backend is shared by processes: SQLite, a real MongoDB; never mongomock)
never overbook, a key reserved by many takes capacity once, a deduction racing expiry ends one
way only. Backends as in tests/contract/test_inventory_contract.py."""

from __future__ import annotations

from typing import Any

import pytest

from modules.resource.inventory.port import Capacity, ClaimClosed, ClaimState, NoCapacity
from tests.contract.inventory_amounts import HOST, NOW, SMALL, reserve
from tests.contract.inventory_fixtures import Backend, backend  # noqa: F401  (fixtures are found by name)
from tests.support.races import handles, open_where, race_processes, race_threads, won


def test_concurrent_reservations_from_threads_never_overbook(backend: Backend) -> None:
    setup = backend.open_inventory()
    setup.add_host("db-a", Capacity(3, 3072, 30), NOW)
    setup.add_host("db-b", Capacity(2, 2048, 20), NOW)
    with handles(backend.open_inventory, 16) as inventories:  # each thread its own, like processes
        results = race_threads(16, lambda i: reserve(inventories[i], f"k{i}"))
    placed = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, NoCapacity)]
    assert len(placed) == 5 and len(refused) == 11, results
    hosts = {h.name: h for h in setup.list_hosts(NOW)}
    assert hosts["db-a"].used == Capacity(3, 3072, 30) and hosts["db-b"].used == Capacity(2, 2048, 20)
    assert len(setup.list_claims(NOW)) == 5
    setup.close()


def test_the_same_key_from_many_threads_takes_capacity_once(backend: Backend) -> None:
    setup = backend.open_inventory()
    setup.add_host("db-a", HOST, NOW)
    setup.add_host("db-b", HOST, NOW)
    with handles(backend.open_inventory, 8) as inventories:
        results = race_threads(8, lambda i: reserve(inventories[i], "same"))
        assert all(not isinstance(r, Exception) for r in results), results
        assert len({(r.key, r.host) for r in results}) == 1
        assert sum((h.used for h in setup.list_hosts(NOW)), Capacity()) == SMALL
        restored = race_threads(8, lambda i: inventories[i].restore("same", NOW + 1))
    assert {r.state for r in restored} == {ClaimState.RESTORED}
    assert sum((h.used for h in setup.list_hosts(NOW + 1)), Capacity()) == Capacity()
    setup.close()


def test_deduct_racing_expiry_ends_one_way_only(backend: Backend) -> None:
    setup = backend.open_inventory()
    setup.add_host("db-1", Capacity(10, 10 * 1024, 100), NOW)
    for i in range(10):
        reserve(setup, f"k{i}", ttl=10)
    expiring = NOW + 10

    def work(i: int) -> Any:
        if i == 0:
            return inventories[0].expire_due(expiring)
        outcomes = []
        for k in range(10):
            try:
                outcomes.append(inventories[1].deduct(f"k{k}", expiring - 0.001).state)
            except ClaimClosed as exc:
                outcomes.append(exc.claim.state)
        return outcomes

    with handles(backend.open_inventory, 2) as inventories:
        expired, outcomes = race_threads(2, work)
    deducted = outcomes.count(ClaimState.DEDUCTED)
    assert deducted + expired == 10, (expired, outcomes)
    assert setup.get_host("db-1", expiring).used.cpu == deducted
    setup.close()


def _reserve_in_process(where: tuple, worker: int, start: Any, placed: Any, keys: int) -> None:
    """Entry point of a spawned process: reserve `keys` distinct keys with its own handle."""
    from modules.resource.inventory.mongo import MongoInventory
    from modules.resource.inventory.sqlite import SqliteInventory

    inv: Any = open_where(where, SqliteInventory, MongoInventory)
    try:
        start.wait()  # bounded by the barrier's own timeout (tests.support.races)
        for k in range(keys):
            try:
                reserve(inv, f"p{worker}-{k}")
                won(placed)
            except NoCapacity:
                pass
    finally:
        inv.close()


def test_concurrent_reservations_from_processes_never_overbook(backend: Backend) -> None:
    if not backend.shared_by_processes:
        pytest.skip("mongomock lives inside one process: the thread race covers it")
    setup = backend.open_inventory()
    setup.add_host("db-a", Capacity(7, 7 * 1024, 70), NOW)
    setup.add_host("db-b", Capacity(5, 5 * 1024, 50), NOW)
    placed = race_processes(backend, _reserve_in_process, 4, 6)  # 4 workers of 6 keys: 24 attempts for 12 places
    assert placed == 12
    hosts = {h.name: h for h in setup.list_hosts(NOW)}
    assert hosts["db-a"].free == Capacity() and hosts["db-b"].free == Capacity()
    assert len(setup.list_claims(NOW, live_only=True)) == 12
    setup.close()
