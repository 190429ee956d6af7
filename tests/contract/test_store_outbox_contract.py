"""The task store's in_outbox (a publisher's batched check of deferred mark-sents), on every store
of the contract suite."""

from __future__ import annotations

from typing import Any

from tests.contract.store_documents import NOW, claimed, new_task, write
from tests.contract.store_fixtures import store, subject  # noqa: F401


def test_in_outbox_names_the_entries_no_claim_has_removed(store: Any) -> None:
    waiting, taken, other = new_task(NOW), new_task(NOW), new_task(NOW)
    for task in (waiting, taken, other):
        store.insert(task)
    write(store, taken, lambda t: claimed(t, NOW + 1))  # its claim removed its entry
    asked = [
        (waiting.TaskId, waiting.Outbox[0].DispatchId),
        (taken.TaskId, taken.Outbox[0].DispatchId),
        (waiting.TaskId, other.Outbox[0].DispatchId),  # another task's entry: not this one's
        ("no-such-task", "no-such-entry"),
    ]
    assert store.in_outbox(asked) == {(waiting.TaskId, waiting.Outbox[0].DispatchId)}
    assert store.in_outbox([]) == set()


def test_in_outbox_answers_for_many_tasks_in_one_call(store: Any) -> None:
    tasks = [new_task(NOW) for _ in range(450)]  # past SQLite's chunk of bound parameters
    for task in tasks:
        store.insert(task)
    asked = [(t.TaskId, t.Outbox[0].DispatchId) for t in tasks]
    assert store.in_outbox(asked) == set(asked)
