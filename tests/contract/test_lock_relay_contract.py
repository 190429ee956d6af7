"""The lock outbox entries and the sweeper's reclaim (common/store/gates/lock/relay.py) on every task store
kind, with the lock documents opened beside it
(common.store.gates.lock.table.open_lock_store_for)."""

from __future__ import annotations

from typing import Any

from common.engine.gates.lock.table import HELD, LOCK_ACQUIRE, LOCK_RELEASE, WAITING
from common.store.gates.lock.relay import LockRelay
from common.engine.document import Task
from common.engine.states import TaskStatus
from common.engine.core.entries import Timing, create_task
from tests.contract.store_fixtures import StoreUnderTest, subject  # noqa: F401
from tests.support.builders import counter_ids, make_step

NOW = 1_700_000_000.0
IDS = counter_ids("r")


def submit(store: Any, task_id: str, at: float) -> Task:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(at), ids=IDS,
                       lock=("k", 1), task_id=task_id)
    store.insert(task)
    return task


def entry(task: Task, kind: str) -> Any:
    return next(e for e in task.Outbox if e.Kind == kind)


def test_acquire_release_and_reclaim(subject: StoreUnderTest) -> None:
    store = subject.store
    flushed: list[Task] = []
    relay = LockRelay(store, lambda: Timing(NOW + 10), flushed.append)
    try:
        first, second, third = (submit(store, name, NOW + i) for i, name in enumerate(("a", "b", "c")))
        for task in (first, second, third):
            assert relay.apply(task.TaskId, entry(task, LOCK_ACQUIRE))
        assert relay.apply("a", entry(first, LOCK_ACQUIRE))  # a relay's repeat changes nothing
        assert [t.TaskId for t in flushed] == ["a"] and [e.Kind for e in flushed[0].Outbox] == ["publish"]
        assert store.get("a").Lock.State == HELD and store.get("b").Lock.State == WAITING
        # A waiter's place in line is said once in its history (and so to its webhooks).
        assert relay.apply("b", entry(second, LOCK_ACQUIRE))  # a repeat while it waits
        assert [e.Event for e in store.get("b").History].count("waiting_for_lock") == 1
        assert "waiting_for_lock" not in [e.Event for e in store.get("a").History]
        lock = relay.table.get("k")
        assert [h.TaskId for h in lock.Holders] == ["a"] and [w.TaskId for w in lock.Waiters] == ["b", "c"]

        # a's final change was written, then its process died before the release was flushed:
        # the sweeper's reclaim passes the lock on.
        ended = store.get("a").model_copy(update={"TaskStatus": TaskStatus.SUCCESS, "Version": 2})
        assert store.compare_and_set(ended, 1)
        assert relay.reclaim() == 1
        assert store.get("b").Lock.State == HELD and [t.TaskId for t in flushed] == ["a", "b"]
        assert relay.reclaim() == 0  # nothing left to reclaim: idempotent

        # Granted in the lock table, but the process died before writing the task: reclaim grants it.
        relay.table.leave("k", "b")
        assert store.get("c").Lock.State == WAITING and relay.table.get("k").holds("c")
        relay.reclaim()
        assert store.get("c").Lock.State == HELD

        # A release applied twice is one release; a holder whose task is gone is reclaimed.
        release = {"Kind": LOCK_RELEASE, "DispatchId": "x", "Body": {"Key": "k", "TaskId": "c"}, "DueAt": NOW}
        from common.engine.document import OutboxEntry

        assert relay.apply("c", OutboxEntry(**release)) and relay.apply("c", OutboxEntry(**release))
        relay.table.join("k", "ghost", priority=0, seq=0, limit=1, now=NOW)
        assert relay.table.get("k").holds("ghost")
        assert relay.reclaim() == 1 and relay.table.get("k").idle

        # A crash after joining, before the grant reached the task: the relay's repeat grants it.
        fourth = submit(store, "d", NOW + 5)
        relay.table.join("k", "d", priority=0, seq=NOW + 5, limit=1)
        assert store.get("d").Lock.State == WAITING
        assert relay.apply("d", entry(fourth, LOCK_ACQUIRE)) and store.get("d").Lock.State == HELD
    finally:
        relay.close()
