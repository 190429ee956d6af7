"""The task store's waiting_unclaimed (what the sweeper's unserved-queue job reads), on every
store of the contract suite."""

from __future__ import annotations

from typing import Any

from tests.contract.store_documents import NOW, claimed, new_task, single_step_succeeded, write
from tests.contract.store_fixtures import store, subject  # noqa: F401


def test_waiting_unclaimed_returns_pending_runs_due_long_enough(store: Any) -> None:
    old = new_task(NOW)  # step 0 due at NOW, nobody claimed it
    newer = new_task(NOW + 50)
    delayed = new_task(NOW, start_at=NOW + 500)  # not due before NOW + 500
    running = new_task(NOW)
    for task in (newer, delayed, old, running, single_step_succeeded()):
        store.insert(task)
    write(store, running, lambda t: claimed(t, NOW + 1))
    assert [t.TaskId for t in store.waiting_unclaimed(NOW + 60, limit=10)] == [old.TaskId, newer.TaskId]
    assert [t.TaskId for t in store.waiting_unclaimed(NOW + 10, limit=10)] == [old.TaskId]
    assert [t.TaskId for t in store.waiting_unclaimed(NOW + 600, limit=1)] == [old.TaskId]
    assert store.waiting_unclaimed(NOW - 1, limit=10) == [] and store.waiting_unclaimed(NOW + 600, limit=0) == []
