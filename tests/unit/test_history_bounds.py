"""A task's history stays bounded in its document (common.engine.core.history, docs/design/stores.md,
"Bounded documents"): older events move to the store's archive, readers see one unbroken sequence,
and a lost race archives nothing a reader would take. On a real SQLite store."""

from __future__ import annotations

import time

from common.engine.core.history import HISTORY_KEEP, HISTORY_LIMIT, events_since, overflow, since, with_full_history
from common.engine.document import Task
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.units import record
from common.engine.core.entries import Timing, create_task
from tests.support.builders import make_step


def noted(n: int):
    def change(task: Task) -> Task:
        new = task.clone()
        record(new, time.time(), f"note{n}")
        return new

    return change


def grown(store: SqliteStore, events: int) -> Task:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()))
    store.insert(task)
    for n in range(events):
        mutate(store, task.TaskId, noted(n))
    return store.get(task.TaskId)


def test_the_document_keeps_the_newest_events_and_readers_see_them_all(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    try:
        created = len(create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(0)).History)
        task = grown(store, 250)
        assert HISTORY_KEEP <= len(task.History) <= HISTORY_LIMIT
        assert task.history_count == created + 250
        full = with_full_history(store, task)
        assert [e.Event for e in full.History][created:] == [f"note{n}" for n in range(250)]
        assert full.HistoryArchived == 0 and len(full.History) == task.history_count
        # a watcher that last saw event 10 gets everything after it, from archive and document
        assert [e.Event for e in events_since(store, task, created + 10)] == [f"note{n}" for n in range(10, 250)]
        assert [e.Event for e in since(store, task, task.history_count - 2).History] == ["note248", "note249"]
    finally:
        store.close()


def test_only_events_already_stored_are_archived():
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(0))
    current = task.clone()
    current.History = current.History * 0 + [current.History[0]] * 90
    updated = current.clone()
    updated.History = updated.History + [updated.History[0]] * 30  # one change adding 30 events
    assert overflow(current, updated) == 70  # 120 - 50 kept, all among the 90 already stored
    updated.History = updated.History + [updated.History[0]] * 200
    assert overflow(current, updated) == 90  # never the change's own new events
    updated.History = current.History + [current.History[0]] * 10
    assert overflow(current, updated) == 0  # 100: within the limit


def test_a_change_that_loses_its_race_leaves_the_readers_history_intact(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    try:
        task = grown(store, HISTORY_LIMIT)
        stale = task.clone()
        mutate(store, task.TaskId, noted(1000))  # another writer wins first
        loser = noted(2000)(stale)
        loser.Version = stale.Version + 1
        from common.engine.core.history import trim_history as trim

        trim(store, stale, loser)  # archives copies of events the stored task still holds
        assert not store.compare_and_set(loser, stale.Version)
        full = with_full_history(store, store.get(task.TaskId))
        events = [e.Event for e in full.History]
        assert events[-1] == "note1000" and "note2000" not in events
        assert len(events) == full.history_count == task.history_count + 1
    finally:
        store.close()


def test_an_event_never_goes_back_in_time_behind_one_already_committed():
    """A change computed on an earlier clock reading, applied again after losing its race, is
    recorded after the events that won: times follow the commit order (a reader merging item
    records' events by time sees the task's final event last)."""

    task = Task(TaskId="t", TaskType="x", TimeCreate=100.0, Steps=[make_step("a")])
    record(task, 105.0, "items_settled", actor="relay")
    record(task, 104.9, "task_rollback_failed", actor="monitor")
    assert [e.Time for e in task.History] == [105.0, 105.0]
    assert [e.Event for e in task.History] == ["items_settled", "task_rollback_failed"]
