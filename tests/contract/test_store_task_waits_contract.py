"""The sweeper's query finds a task by its own deadline or its wait's recheck time, not only by
its runs' (docs/design/operations.md), on every store of the contract suite; and the awaited task's
list of waiters round-trips."""

from __future__ import annotations

from typing import Any

from common.store.tasks.mutate import mutate
from common.engine.gates.after_task.changes import listen_for
from tests.contract.store_documents import NOW, new_task
from tests.contract.store_fixtures import store, subject  # noqa: F401


def test_due_for_sweep_finds_a_task_by_its_deadline_with_no_run(store: Any) -> None:
    waiting = new_task(after_task="other", deadline_seconds=50)  # no run at all: due at NOW + 50
    timed = new_task(redeliver_after=900, deadline_seconds=100)  # its run is due at NOW + 900
    plain = new_task(redeliver_after=900)
    for task in (waiting, timed, plain):
        store.insert(task)
    assert store.get(waiting.TaskId).Runs == []
    assert store.due_for_sweep(NOW + 49, limit=10) == []
    assert [t.TaskId for t in store.due_for_sweep(NOW + 50, limit=10)] == [waiting.TaskId]
    assert [t.TaskId for t in store.due_for_sweep(NOW + 100, limit=10)] == [waiting.TaskId, timed.TaskId]


def test_due_for_sweep_finds_a_waiting_task_at_its_recheck(store: Any) -> None:
    waiting = new_task(after_task="other")
    store.insert(waiting)
    recheck = waiting.WaitingFor.RecheckAt
    assert store.due_for_sweep(recheck - 1, limit=10) == []
    assert [t.TaskId for t in store.due_for_sweep(recheck, limit=10)] == [waiting.TaskId]


def test_the_waiters_of_a_task_are_stored(store: Any) -> None:
    awaited = new_task()
    store.insert(awaited)
    mutate(store, awaited.TaskId, lambda t: listen_for(t, "waiter-1"))
    assert store.get(awaited.TaskId).AwaitedBy == ["waiter-1"]
