"""The lock store contract (common/store/gates/lock/table.py), run
against every backend: SQLite, mongomock and SecantusDB (same ids as the inventory's suite).

Taking, waiting, releasing and reclaiming are idempotent, and a race for the last slot, between
threads or between processes each with its own handle, has exactly one winner. Lock modes: each
member's mode and row are stored, compatible modes share a key, and a race between modes that
exclude each other has one winner too."""

from __future__ import annotations

from typing import Any

import pytest

from common.engine.gates.lock.table import KeyLock
from common.store.gates.lock.table import LockTable
from tests.contract.inventory_fixtures import Backend, backend, lock_store  # noqa: F401
from tests.support.key_store_contract import check_compare_and_set
from tests.support.races import handles, open_where, race_processes, race_threads, won

NOW = 1_700_000_000.0


def ids(granted: list[Any]) -> list[str]:
    return [holder.TaskId for holder in granted]


def test_compare_and_set_inserts_once_and_lets_one_writer_win(lock_store: Any) -> None:
    first = KeyLock(Key="k", Limit=2, Version=1)
    rewrites = first.model_copy(update={"Limit": 3, "Version": 2}), first.model_copy(update={"Limit": 4, "Version": 2})
    check_compare_and_set(lock_store, first, KeyLock(Key="k", Version=1), rewrites)


def test_take_wait_release_in_order_and_idempotent(lock_store: Any) -> None:
    table = LockTable(lock_store)
    assert ids(table.join("k", "a", priority=0, seq=1, limit=2, now=NOW)) == ["a"]
    assert ids(table.join("k", "a", priority=0, seq=1, limit=2, now=NOW)) == []  # asked twice: one place
    assert ids(table.join("k", "b", priority=0, seq=2, limit=2, now=NOW)) == ["b"]
    assert ids(table.join("k", "c", priority=0, seq=3, limit=2, now=NOW)) == []
    assert ids(table.join("k", "d", priority=1, seq=4, limit=2, now=NOW)) == []
    lock = table.get("k")
    assert [h.TaskId for h in lock.Holders] == ["a", "b"] and [w.TaskId for w in lock.Waiters] == ["c", "d"]
    assert ids(table.leave("k", "a", now=NOW + 1)) == ["d"]  # priority first
    assert ids(table.leave("k", "a", now=NOW + 2)) == []  # released twice: one release
    assert ids(table.leave("k", "b", now=NOW + 3)) == ["c"]
    assert ids(table.leave("k", "c", now=NOW + 4)) == [] and table.leave("k", "d", now=NOW + 4) == []
    assert table.get("k").idle
    assert table.list_locks() == []  # idle keys are not listed
    assert [lock.Key for lock in table.list_locks(busy_only=False)] == ["k"]


def test_listing_is_by_key(lock_store: Any) -> None:
    table = LockTable(lock_store)
    for key in ("b", "a", "c"):
        table.join(key, "t", priority=0, seq=1, limit=1, now=NOW)
    assert [lock.Key for lock in table.list_locks()] == ["a", "b", "c"]
    assert [lock.Key for lock in table.list_locks(limit=2)] == ["a", "b"]


def test_threads_racing_for_the_last_slot_have_one_winner(backend: Backend) -> None:
    with handles(lambda: LockTable(backend.open_lock_store()), 8) as tables:
        tables[0].join("k", "holder", priority=0, seq=0, limit=2, now=NOW)
        granted = race_threads(8, lambda i: tables[i].join("k", f"t{i}", priority=0, seq=i + 1, limit=2, now=NOW))
        won = [task_id for each in granted for task_id in ids(each)]
        lock = tables[0].get("k")
        assert len(won) == 1 and [h.TaskId for h in lock.Holders] == ["holder", won[0]]
        assert len(lock.Waiters) == 7


def _join_in_process(where: tuple, worker: int, start: Any, wins: Any) -> None:
    """Entry point of a spawned process: ask for the lock with its own handle."""
    from common.store.gates.lock.mongo import MongoLockStore
    from common.store.gates.lock.sqlite import SqliteLockStore

    table = LockTable(open_where(where, SqliteLockStore, MongoLockStore))
    try:
        start.wait()  # bounded by the barrier's own timeout (tests.support.races)
        if table.join("k", f"p{worker}", priority=0, seq=worker, limit=3, now=NOW):
            won(wins)
    finally:
        table.close()


def test_processes_racing_for_the_last_slot_have_one_winner(backend: Backend) -> None:
    if not backend.shared_by_processes:
        pytest.skip("mongomock lives inside one process: the thread race covers it")
    setup = LockTable(backend.open_lock_store())
    setup.join("k", "h1", priority=0, seq=-2, limit=3, now=NOW)
    setup.join("k", "h2", priority=0, seq=-1, limit=3, now=NOW)
    workers = 4
    wins = race_processes(backend, _join_in_process, workers)
    lock = setup.get("k")
    assert wins == 1 and len(lock.Holders) == 3 and len(lock.Waiters) == workers - 1
    setup.close()


SHARES = {"backup": ["backup", "resize"], "resize": ["backup"], "delete": []}


def join_in(table: LockTable, task_id: str, mode: str, seq: float) -> list[str]:
    return ids(table.join("i", task_id, priority=0, seq=seq, limit=10, now=NOW + seq, mode=mode, shares=SHARES[mode]))


def test_modes_share_a_key_as_their_rows_say_and_the_store_keeps_each_members_mode(lock_store: Any) -> None:
    table = LockTable(lock_store)
    assert join_in(table, "b1", "backup", 1) + join_in(table, "r1", "resize", 2) + join_in(table, "b2", "backup", 3) \
        == ["b1", "r1", "b2"]
    assert join_in(table, "r2", "resize", 4) == [] and join_in(table, "d", "delete", 5) == []
    assert join_in(table, "b3", "backup", 6) == []  # would fit, but the resize ahead of it waits
    stored = lock_store.get("i")  # read back through the adapter: modes and rows survive the round trip
    assert [(h.TaskId, h.Mode, h.Shares) for h in stored.Holders] == [
        ("b1", "backup", ["backup", "resize"]), ("r1", "resize", ["backup"]), ("b2", "backup", ["backup", "resize"])]
    assert [(w.TaskId, w.Mode) for w in stored.Waiters] == [("r2", "resize"), ("d", "delete"), ("b3", "backup")]
    assert ids(table.leave("i", "r1", now=NOW + 10)) == ["r2"]  # the delete behind it still waits for all
    assert ids(table.leave("i", "b1", now=NOW + 11)) == [] and ids(table.leave("i", "b2", now=NOW + 12)) == []
    assert ids(table.leave("i", "r2", now=NOW + 13)) == ["d"]
    assert ids(table.leave("i", "d", now=NOW + 14)) == ["b3"]
    assert [(h.TaskId, h.Mode) for h in table.get("i").Holders] == [("b3", "backup")]


def test_a_lock_document_written_before_modes_reads_as_exclusive(lock_store: Any) -> None:
    assert lock_store.compare_and_set(KeyLock.model_validate(
        {"Key": "old", "Limit": 1, "Holders": [{"TaskId": "a", "Since": NOW}], "Version": 1}), 0)
    table = LockTable(lock_store)
    assert [(h.TaskId, h.Mode, h.Shares) for h in table.get("old").Holders] == [("a", "exclusive", ["exclusive"])]
    assert ids(table.join("old", "b", priority=0, seq=1, limit=1, now=NOW, mode="backup", shares=["backup"])) == []
    assert ids(table.leave("old", "a", now=NOW + 1)) == ["b"]


def test_threads_racing_in_modes_that_exclude_each_other_have_one_winner(backend: Backend) -> None:
    with handles(lambda: LockTable(backend.open_lock_store()), 6) as tables:
        tables[0].join("i", "reader", priority=0, seq=0, limit=10, now=NOW, mode="backup", shares=SHARES["backup"])
        granted = race_threads(6, lambda i: join_in(tables[i], f"r{i}", "resize", i + 1))
        won = [task_id for each in granted for task_id in each]
        lock = tables[0].get("i")
        assert len(won) == 1 and [(h.TaskId, h.Mode) for h in lock.Holders] == [("reader", "backup"), (won[0], "resize")]
