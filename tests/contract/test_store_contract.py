"""The TaskStore contract: one set of tests, run against every store.

Test ids name the store: [sqlite], [mongo-mongomock] (an in-memory fake, not a server) and, when a
real MongoDB is reachable, [mongo-real]. The report header says which Mongo this run used.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from typing import Any

import pytest

from common.engine.core.entries import AttemptResult
from common.engine.document import Task
from common.engine.states import ResultCode, TaskStatus
from common.errors import DuplicateTask
from common.store.mongo.tasks import MongoStore
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.filters import TaskFilter
from tests.contract.store_documents import (
    NOW,
    claimed,
    finished,
    new_task,
    sent,
    single_step_succeeded,
    write,
)
from tests.contract.store_fixtures import (  # noqa: F401  (fixtures are found by name)
    StoreUnderTest,
    bump_counter,
    store,
    subject,
)
from tests.support.builders import only_run

# --- tasks: insert and read ----------------------------------------------------------------------


def test_insert_and_get_preserve_every_field(subject: StoreUnderTest) -> None:
    store = subject.store
    task = new_task(
        key="req-42",
        start_at=NOW + 5,
        priority=3,
        user_id="alice",
        labels={"team": "db", "env": "prod"},
    )
    task.Parameters.update({"nested": {"list": [1, 2.5, None, "é"]}, "flag": True, "t": 0.1 + 0.2})
    store.insert(task)
    assert store.get(task.TaskId) == task

    # A document that has been through claims, a result, a failure and a rollback dispatch.
    step0_ok = AttemptResult(ResultCode.OK, output={"quota": 7})
    progressed = sent(finished(claimed(task, NOW + 6), NOW + 7, step0_ok))
    progressed = finished(
        claimed(sent(progressed), NOW + 8),
        NOW + 9,
        AttemptResult(ResultCode.FAILED, "disk full", retryable=False),
    )
    progressed.Version = task.Version + 1
    assert store.compare_and_set(progressed, task.Version)
    read = store.get(task.TaskId)
    assert read == progressed
    assert read.TaskStatus is TaskStatus.ROLLING_BACK and read.Steps[1].Message == "disk full"


def test_stored_document_is_task_to_doc(subject: StoreUnderTest) -> None:
    task = new_task(key="shape")
    subject.store.insert(task)
    raw = subject.raw_task_doc(task.TaskId)
    raw.pop("_id", None)
    marks = raw.pop("WriteMarks", None)  # Mongo's own: what settles a lost answer (DESIGN 8.5)
    assert raw == task.to_doc()
    if subject.kind != "sqlite":
        assert isinstance(marks, list) and len(marks) == 1 and marks[0].startswith(f"{task.Version}:")


def test_get_unknown_task_is_none(store: Any) -> None:
    assert store.get("no-such-task") is None
    assert store.get_by_idempotency_key("no-such-key") is None


def test_duplicate_task_id_is_refused(store: Any) -> None:
    task = new_task()
    store.insert(task)
    twin = new_task(task_id=task.TaskId, task_type="other")
    with pytest.raises(DuplicateTask):
        store.insert(twin)
    assert store.get(task.TaskId) == task


def test_duplicate_idempotency_key_is_refused(store: Any) -> None:
    first = new_task(key="same-request")
    store.insert(first)
    with pytest.raises(DuplicateTask):
        store.insert(new_task(key="same-request"))
    assert store.get_by_idempotency_key("same-request") == first
    assert len(store.list_tasks()) == 1


def test_many_tasks_without_idempotency_key(store: Any) -> None:
    tasks = [new_task(NOW + i) for i in range(5)]
    for task in tasks:
        store.insert(task)
    assert {t.TaskId for t in store.list_tasks()} == {t.TaskId for t in tasks}


def test_get_by_idempotency_key(store: Any) -> None:
    wanted = new_task(key="k-1")
    store.insert(wanted)
    store.insert(new_task(key="k-2"))
    store.insert(new_task())
    assert store.get_by_idempotency_key("k-1") == wanted


# --- compare-and-set -----------------------------------------------------------------------------


def test_compare_and_set_wins_once_then_stale_writers_lose(store: Any) -> None:
    task = new_task()
    store.insert(task)
    winner = claimed(task, NOW + 1)
    winner.Version = task.Version + 1
    assert store.compare_and_set(winner, task.Version) is True

    late = task.model_copy(deep=True)
    late.TaskMessage = "written from a stale read"
    late.Version = task.Version + 1
    assert store.compare_and_set(late, task.Version) is False
    assert store.get(task.TaskId) == winner

    ghost = new_task()
    ghost.Version = 1
    assert store.compare_and_set(ghost, 0) is False
    assert store.get(ghost.TaskId) is None


def test_compare_and_set_requires_the_bumped_version(store: Any) -> None:
    task = new_task()
    store.insert(task)
    with pytest.raises(ValueError):
        store.compare_and_set(task, task.Version)
    assert store.get(task.TaskId) == task


def test_concurrent_mutations_from_threads_lose_no_update(store: Any) -> None:
    task = new_task()
    store.insert(task)
    threads_n, rounds = 8, 40

    def work(worker: str) -> None:
        for _ in range(rounds):
            write(store, task, functools.partial(bump_counter, worker=worker))

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = store.get(task.TaskId)
    assert final.Parameters["count"] == threads_n * rounds
    assert all(final.Parameters[f"t{i}"] == rounds for i in range(threads_n))
    assert final.Version == task.Version + threads_n * rounds


# --- queries -------------------------------------------------------------------------------------


def test_due_for_sweep_returns_lapsed_deadlines_only(store: Any) -> None:
    # create_task sets Active.Deadline = now + redeliver_after.
    early = new_task(redeliver_after=100)  # NOW + 100
    later = new_task(redeliver_after=200)  # NOW + 200
    future = new_task(redeliver_after=900)  # NOW + 900
    done = single_step_succeeded()  # Active is None: nothing to sweep, ever
    for task in (future, later, done, early):
        store.insert(task)

    due = store.due_for_sweep(NOW + 200, limit=10)
    assert [t.TaskId for t in due] == [early.TaskId, later.TaskId]
    assert [t.TaskId for t in store.due_for_sweep(NOW + 200, limit=1)] == [early.TaskId]
    assert store.due_for_sweep(NOW + 99, limit=10) == []
    assert store.due_for_sweep(NOW + 10_000, limit=0) == []


def test_due_for_sweep_follows_the_lease(store: Any) -> None:
    task = new_task(redeliver_after=100)
    store.insert(task)
    running = write(store, task, lambda t: claimed(t, NOW + 1))  # leased until NOW + 31
    assert [t.TaskId for t in store.due_for_sweep(NOW + 31, limit=10)] == [running.TaskId]
    assert store.due_for_sweep(NOW + 30, limit=10) == []


def test_unsent_outbox(store: Any) -> None:
    unsent = new_task(NOW)  # step 0 dispatch due at NOW
    confirmed = new_task(NOW)
    delayed = new_task(NOW, start_at=NOW + 500)  # due at NOW + 500
    running = new_task(NOW)
    for task in (unsent, confirmed, delayed, running):
        store.insert(task)
    write(store, confirmed, sent)
    write(store, running, lambda t: claimed(sent(t), NOW + 1))

    assert [t.TaskId for t in store.unsent_outbox(NOW + 200, limit=10)] == [unsent.TaskId]
    both = store.unsent_outbox(NOW + 500, limit=10)
    assert [t.TaskId for t in both] == [unsent.TaskId, delayed.TaskId]  # oldest first
    assert [t.TaskId for t in store.unsent_outbox(NOW + 500, limit=1)] == [unsent.TaskId]
    assert store.unsent_outbox(NOW - 1, limit=10) == []


def test_unsent_outbox_sees_the_next_dispatch(store: Any) -> None:
    task = new_task(NOW)
    store.insert(task)
    write(store, task, lambda t: claimed(sent(t), NOW + 1))
    assert store.unsent_outbox(NOW + 10, limit=10) == []
    write(store, task, lambda t: finished(t, NOW + 2, AttemptResult(ResultCode.OK)))
    assert [only_run(t).Cursor for t in store.unsent_outbox(NOW + 10, limit=10)] == [1]


def test_sqlite_file_from_before_user_id_gets_the_column(tmp_path: Any) -> None:
    path = str(tmp_path / "old.db")
    task = new_task(user_id="alice")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE tasks (task_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
            " status INTEGER NOT NULL, task_type TEXT NOT NULL, time_create REAL NOT NULL,"
            " idempotency_key TEXT UNIQUE, deadline REAL, outbox_due REAL, doc TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO tasks VALUES (?, 0, 1, ?, ?, NULL, NULL, NULL, ?)",
            (task.TaskId, task.TaskType, task.TimeCreate, task.model_dump_json()),
        )
        conn.commit()
    store = SqliteStore(path)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(user_id="alice"))] == [task.TaskId]
    store.insert(new_task(user_id="bob"))
    assert len(store.list_tasks(TaskFilter(user_id="bob"))) == 1
    store.close()


def test_a_format_1_document_in_flight_is_still_swept_and_relayed(store: Any) -> None:
    """A format 1 document, written before `Runs` (one `Active` run, no SweepAt/OutboxDue) is
    found by the sweeper's two queries until its next write gives it the new fields."""
    task = new_task(redeliver_after=100)
    doc = task.to_doc()
    run = doc.pop("Runs")[0]
    doc["Active"] = {k: v for k, v in run.items() if k not in ("Item", "Redispatches")}
    for key in ("SweepAt", "OutboxDue", "Parent"):
        doc.pop(key)
    if isinstance(store, MongoStore):
        store._tasks.insert_one(doc)  # raw, as format 1 stored it
    else:
        store.insert(Task.from_doc(doc))  # the SQLite columns were always filled by the writer
    assert [t.TaskId for t in store.due_for_sweep(NOW + 200, limit=10)] == [task.TaskId]
    assert [t.TaskId for t in store.unsent_outbox(NOW + 10, limit=10)] == [task.TaskId]
    assert only_run(store.get(task.TaskId)).DispatchId == run["DispatchId"]
