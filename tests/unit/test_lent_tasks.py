"""A change run by mutate edits the task it was given in place instead of copying it (the task was
just read, or given up by the caller: nobody else holds it), and the write still knows the task
as it was: its version, its status for the webhooks, its events for the history bound. On a
real SQLite store."""

from __future__ import annotations

import threading
import time

from common.engine.core.history import HISTORY_LIMIT
from common.engine.document import NotifyTarget, StepMessage, Task
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.units import record
from common.engine.core.entries import Timing, claim, create_task
from tests.support.builders import make_step


def created(store: SqliteStore, **kwargs) -> Task:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()), **kwargs)
    store.insert(task)
    return task


def test_the_change_gets_the_task_read_for_it_and_a_clone_inside_it_is_no_copy(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    try:
        task = created(store)
        seen: list[tuple[Task, Task, Task]] = []

        def change(current: Task) -> Task:
            new = current.clone()
            seen.append((current, new, new.clone()))  # a second clone within the change copies
            new.Labels["x"] = "1"
            return new

        written = mutate(store, task.TaskId, change)
        current, new, second = seen[0]
        assert new is current and written is current and second is not current
        assert store.get(task.TaskId).Labels == {"x": "1"}
        assert written.Version == task.Version + 1
        assert task.clone() is not task  # outside a change, a clone is a copy
    finally:
        store.close()


def test_another_threads_clone_of_the_lent_task_is_a_copy(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    try:
        task = created(store)
        copies: list[bool] = []

        def change(current: Task) -> Task:
            other = threading.Thread(target=lambda: copies.append(current.clone() is not current))
            other.start()
            other.join()
            return current.clone()

        mutate(store, task.TaskId, change)
        assert copies == [True]
    finally:
        store.close()


def test_a_status_change_made_in_place_still_notifies(tmp_path):
    """The webhook entries compare the status before and after: 'before' is read before the
    change edits the task (a claim: not started -> running, the 'started' event)."""
    store = SqliteStore(tmp_path / "t.db")
    try:
        task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()))
        task.Notify = [NotifyTarget(Url="http://hooks.example/x")]
        store.insert(task)
        message = StepMessage.model_validate(task.Outbox[0].Body)
        claimed = mutate(store, task.TaskId, lambda t: claim(t, message, "me", Timing(time.time())))
        assert isinstance(claimed, Task)
        assert [e.Body["Event"] for e in claimed.Outbox if e.Kind == "webhook"] == ["started"]
    finally:
        store.close()


def test_the_history_bound_counts_only_the_events_stored_before_the_change(tmp_path):
    """A change adding 80 events to a task of about 30: only those already stored may move to
    the archive (common.engine.core.history.overflow), which needs the count from before the edit."""
    store = SqliteStore(tmp_path / "t.db")
    try:
        task = created(store)
        for n in range(30):
            mutate(store, task.TaskId, lambda t, n=n: _noted(t, [f"old{n}"]))
        stored = store.get(task.TaskId)
        before = len(stored.History)
        written = mutate(store, task.TaskId, lambda t: _noted(t, [f"new{n}" for n in range(80)]))
        assert isinstance(written, Task)
        assert before + 80 > HISTORY_LIMIT
        assert written.HistoryArchived == before  # all the stored ones, none of the change's own
        assert [e.Event for e in written.History] == [f"new{n}" for n in range(80)]
    finally:
        store.close()


def _noted(task: Task, events: list[str]) -> Task:
    new = task.clone()
    for event in events:
        record(new, time.time(), event)
    return new
