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

from common.errors import DuplicateTask
from common.engine.document import Step, StepMessage, Task
from common.engine.states import ResultCode, TaskStatus
from common.store.mongo import MongoStore
from common.store.mutate import mutate
from common.store.sqlite import SqliteStore
from common.store.task_filters import page_key
from common.engine.transitions import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    finish_attempt,
    mark_sent,
)
from tests.contract.store_fixtures import (  # noqa: F401  (fixtures are found by name)
    StoreUnderTest,
    bump_counter,
    subject,
)
from tests.support.builders import only_run

NOW = 1_700_000_000.25
WORKER = "worker-1"


@pytest.fixture
def store(subject: StoreUnderTest) -> Any:
    return subject.store


# --- building realistic documents ----------------------------------------------------------------


def mysql_steps(retry: int = 2) -> list[Step]:
    def step(name: str, module: str, command: str, rollback: str | None) -> Step:
        return Step(
            Name=name,
            NormalModule=module,
            NormalCommand=command,
            NormalTimeout=30.0,
            NormalRetry=retry,
            RollbackModule=module if rollback else None,
            RollbackCommand=rollback,
            RollbackTimeout=20.0 if rollback else None,
            RollbackRetry=1 if rollback else None,
        )

    return [
        step("check", "resource", "check_resource", None),
        step("init", "mysql", "init_instance", "destroy_instance"),
        step("deduct", "resource", "deduct_resource", "refund_resource"),
    ]


def new_task(
    now: float = NOW,
    *,
    task_type: str = "create_mysql",
    key: str | None = None,
    start_at: float | None = None,
    redeliver_after: float = 60.0,
    retry: int = 2,
    **extra: Any,
) -> Task:
    return create_task(
        task_type=task_type,
        steps=mysql_steps(retry),
        parameters={"region": "eu-1", "size": "db.large", "disk_gb": 100},
        timing=Timing(now=now, redeliver_after=redeliver_after),
        start_at=start_at,
        idempotency_key=key,
        **extra,
    )


def claimed(task: Task, now: float) -> Task:
    """The active dispatch claimed by WORKER, as a module does on delivery."""
    active = only_run(task)
    assert active is not None
    step = task.Steps[active.Cursor]
    message = StepMessage(
        TaskId=task.TaskId,
        Cursor=active.Cursor,
        Type=active.Phase,
        Module=step.module(active.Phase),
        Command=step.command(active.Phase),
        Timeout=step.timeout(active.Phase),
        Retry=step.retry(active.Phase),
        DispatchId=active.DispatchId,
        Attempt=active.Attempt,
    )
    result = claim(task, message, WORKER, Timing(now=now))
    assert not isinstance(result, Refusal), result
    return result


def sent(task: Task) -> Task:
    """Every outbox entry confirmed by the broker."""
    for entry in list(task.Outbox):
        result = mark_sent(task, entry.DispatchId)
        assert not isinstance(result, Refusal)
        task = result
    return task


def finished(task: Task, now: float, result: AttemptResult) -> Task:
    assert only_run(task) is not None
    new = finish_attempt(task, only_run(task).DispatchId, WORKER, result, Timing(now=now))
    assert not isinstance(new, Refusal), new
    return new


def write(store: Any, task: Task, change: Any) -> Task:
    """Apply a pure change through the store's compare-and-set, as the engine does."""
    result = mutate(store, task.TaskId, change)
    assert not isinstance(result, Refusal), result
    return result


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
    done = _single_step_succeeded()  # Active is None: nothing to sweep, ever
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


def _single_step_succeeded() -> Task:
    task = create_task(
        task_type="noop",
        steps=mysql_steps()[:1],
        parameters={},
        timing=Timing(now=NOW),
    )
    done = finished(claimed(sent(task), NOW + 1), NOW + 2, AttemptResult(ResultCode.OK))
    assert done.TaskStatus is TaskStatus.SUCCESS and only_run(done) is None and not done.Outbox
    return done


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


def test_list_tasks_filters_newest_first(store: Any) -> None:
    mysql = [new_task(NOW + i, task_type="create_mysql") for i in range(4)]
    redis = [new_task(NOW + 10 + i, task_type="create_redis") for i in range(2)]
    for task in mysql + redis:
        store.insert(task)
    running = [write(store, t, lambda t: claimed(t, NOW + 20)) for t in (mysql[1], redis[0])]

    def ids(tasks: list[Task]) -> list[str]:
        return [t.TaskId for t in tasks]

    everything = [*reversed(redis), *reversed(mysql)]
    assert ids(store.list_tasks()) == ids(everything)
    assert ids(store.list_tasks(limit=3)) == ids(everything[:3])
    assert ids(store.list_tasks(task_type="create_mysql")) == ids(list(reversed(mysql)))
    assert ids(store.list_tasks(status=TaskStatus.RUNNING)) == [redis[0].TaskId, mysql[1].TaskId]
    assert ids(store.list_tasks(status=TaskStatus.RUNNING, task_type="create_mysql")) == [
        mysql[1].TaskId
    ]
    waiting_redis = store.list_tasks(status=TaskStatus.NOT_STARTED, task_type="create_redis")
    assert ids(waiting_redis) == [redis[1].TaskId]
    assert store.list_tasks(status=TaskStatus.SUCCESS) == []
    assert store.list_tasks(limit=0) == []
    assert running[0].TaskStatus is TaskStatus.RUNNING


def test_list_tasks_by_owner_label_and_time_range(store: Any) -> None:
    def make(i: int, user: str | None, labels: dict[str, str]) -> Task:
        return new_task(NOW + i, user_id=user, labels=labels)

    tasks = [
        make(0, "alice", {"team": "db", "env": "prod"}),
        make(1, "bob", {"team": "db", "env": "dev"}),
        make(2, "alice", {"team": "web"}),
        make(3, None, {"team": "db", "env": "prod"}),
        make(4, "alice", {"team": "db", "env": "prod"}),
    ]
    for task in tasks:
        store.insert(task)

    def ids(**filters: Any) -> list[int]:
        return [tasks.index(t) for t in store.list_tasks(**filters)]

    assert ids(user_id="alice") == [4, 2, 0]
    assert ids(labels={"team": "db"}) == [4, 3, 1, 0]
    assert ids(labels={"team": "db", "env": "prod"}) == [4, 3, 0]
    assert ids(labels={"team": "db", "env": "prod"}, user_id="alice") == [4, 0]
    assert ids(labels={"env": "staging"}) == []
    assert ids(labels={"nothing": "here"}) == []
    assert ids(created_from=NOW + 1, created_to=NOW + 3) == [2, 1]  # from inclusive, to exclusive
    assert ids(created_from=NOW + 3) == [4, 3]
    assert ids(created_to=NOW + 0.5) == [0]
    assert ids(user_id="alice", created_from=NOW + 1, limit=1) == [4]
    assert ids(user_id="nobody") == []


def test_list_tasks_breaks_ties_on_time_by_task_id(store: Any) -> None:
    same_time = [new_task(NOW, task_id=f"t-{i}") for i in (3, 1, 2)]
    for task in same_time:
        store.insert(task)
    assert [t.TaskId for t in store.list_tasks()] == ["t-3", "t-2", "t-1"]
    assert [t.TaskId for t in store.list_tasks(after=(NOW, "t-3"))] == ["t-2", "t-1"]
    assert [t.TaskId for t in store.list_tasks(after=(NOW, "t-1"))] == []
    assert [t.TaskId for t in store.list_tasks(after=(NOW + 1, ""))] == ["t-3", "t-2", "t-1"]


def test_pages_list_every_task_once_while_tasks_are_inserted(store: Any) -> None:
    # Ties on TimeCreate across page boundaries, and new tasks arriving between pages.
    old = [new_task(NOW + i // 3, task_id=f"old-{i:02}") for i in range(14)]
    for task in old:
        store.insert(task)
    seen: list[str] = []
    after = None
    for page_number in range(100):
        page = store.list_tasks(after=after, limit=4, labels=None)
        if not page:
            break
        seen += [t.TaskId for t in page]
        after = page_key(page[-1])
        store.insert(new_task(NOW + 100 + page_number, task_id=f"new-{page_number}"))
    expected = [t.TaskId for t in sorted(old, key=lambda t: (t.TimeCreate, t.TaskId), reverse=True)]
    assert seen == expected


def test_filtered_pages(store: Any) -> None:
    for i in range(7):
        store.insert(new_task(NOW + i, task_id=f"t-{i}", user_id="alice" if i % 2 else "bob"))
    first = store.list_tasks(user_id="bob", limit=2)
    second = store.list_tasks(user_id="bob", limit=2, after=page_key(first[-1]))
    assert [t.TaskId for t in first + second] == ["t-6", "t-4", "t-2", "t-0"]


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
    assert [t.TaskId for t in store.list_tasks(user_id="alice")] == [task.TaskId]
    store.insert(new_task(user_id="bob"))
    assert len(store.list_tasks(user_id="bob")) == 1
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
