"""The task store's drop_sent (a deferred mark-sent without reading the task), on every store of the
contract suite: written, it is exactly what mark_sent through mutate writes; not written, nothing
changed. SQLite writes it in place, and its text is the encoder's, byte for byte."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

import pytest

from common.engine.changes import Refusal, mark_sent
from common.engine.document import OutboxEntry, Task
from common.store.sqlite.outbox import DROPS_IN_PLACE
from tests.contract import store_fixtures
from tests.contract.store_fixtures import StoreUnderTest
from tests.contract.test_store_contract import NOW, claimed, new_task, write

subject = store_fixtures.subject  # the contract suite's fixture: every store it runs on

# Numbers SQLite would print otherwise if it printed them from a double (15 digits), and strings
# its JSON functions must carry over unchanged.
DUES = (NOW + 0.1234567890123, NOW + 7, NOW - 0.123456, NOW + 1e-7, NOW + 86_400.5)
# Many entries, due out of their order (the earliest, extra-13, neither first nor last): those
# kept around one dropped amid them stay in the array's order.
MANY_DUES = tuple(NOW + (7 * n + 5) % 24 + 0.1234567890123 for n in range(24))


def with_entries(task: Task, dues: tuple[float, ...] = DUES) -> Task:
    task.Outbox += [OutboxEntry(DispatchId=f"extra-{n}", Queue="q", Body={"n": n, "text": "é \"q\" \\ \u2028"}, DueAt=due)
                    for n, due in enumerate(dues)]
    task.Parameters["note"] = "quote \" backslash \\ tab \t unicode é ✓"
    task.Parameters["big"] = 1234567890123456789  # 8 bytes: what MongoDB stores
    return task


def marked_the_usual_way(task: Task, dispatch_id: str) -> Task:
    expected = mark_sent(Task.from_json(task.to_json()), dispatch_id)
    assert not isinstance(expected, Refusal)
    expected.Version = task.Version + 1
    return Task.from_json(expected.to_json())  # its derived fields (OutboxDue) as written


def sqlite_row(subject: StoreUnderTest, task_id: str) -> tuple[Any, ...]:
    with contextlib.closing(sqlite3.connect(subject.store.path)) as conn:  # type: ignore[attr-defined]
        return conn.execute("SELECT version, outbox_due, deadline, status, doc FROM tasks WHERE task_id = ?",
                            (task_id,)).fetchone()


@pytest.mark.parametrize(("which", "dues"), [("extra-0", DUES), ("extra-2", DUES), ("first", DUES), ("extra-11", MANY_DUES)],
                         ids=["extra-0", "extra-2", "first", "amid-many"])
def test_a_dropped_entry_is_what_the_read_change_write_would_have_written(subject: StoreUnderTest, which: str,
                                                                          dues: tuple[float, ...]) -> None:
    store = subject.store
    task = with_entries(new_task(NOW), dues)
    store.insert(task)
    dispatch_id = task.Outbox[0].DispatchId if which == "first" else which
    expected = marked_the_usual_way(store.get(task.TaskId), dispatch_id)
    dropped = store.drop_sent(task.TaskId, dispatch_id)
    if subject.kind == "sqlite":
        assert dropped is DROPS_IN_PLACE
    if not dropped:  # this store marks with a compare-and-set: nothing written here
        assert store.get(task.TaskId).Version == task.Version
        return
    assert store.get(task.TaskId) == expected
    assert [e.DispatchId for e in store.get(task.TaskId).Outbox] == [
        e.DispatchId for e in task.Outbox if e.DispatchId != dispatch_id]
    if subject.kind == "sqlite":
        version, outbox_due, deadline, status, doc = sqlite_row(subject, task.TaskId)
        assert doc == expected.to_json()
        assert (version, outbox_due, deadline, status) == (
            expected.Version, expected.OutboxDue, expected.SweepAt, int(expected.TaskStatus))


def test_dropping_the_last_entry_leaves_no_outbox_due(subject: StoreUnderTest) -> None:
    store = subject.store
    task = new_task(NOW)
    store.insert(task)
    expected = marked_the_usual_way(task, task.Outbox[0].DispatchId)
    assert expected.Outbox == [] and expected.OutboxDue is None
    if store.drop_sent(task.TaskId, task.Outbox[0].DispatchId):
        assert store.get(task.TaskId) == expected
        assert store.unsent_outbox(NOW + 10**6, 10) == []
        if subject.kind == "sqlite":
            assert sqlite_row(subject, task.TaskId)[:2] == (expected.Version, None)
            assert sqlite_row(subject, task.TaskId)[4] == expected.to_json()  # the encoder's text


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_sqlite_leaves_a_lone_entry_of_a_document_holding_infinity_or_nan_to_the_usual_way(
        subject: StoreUnderTest, value: float) -> None:
    store = subject.store
    task = new_task(NOW, labels={})
    task.Parameters["odd"] = value
    store.insert(task)
    assert store.drop_sent(task.TaskId, task.Outbox[0].DispatchId) is False
    assert store.drop_sent_many([(task.TaskId, task.Outbox[0].DispatchId)]) == set()
    assert store.get(task.TaskId).Version == task.Version


def test_an_entry_that_is_not_there_changes_nothing(subject: StoreUnderTest) -> None:
    store = subject.store
    task = new_task(NOW)
    store.insert(task)
    taken = write(store, task, lambda t: claimed(t, NOW + 1))  # its claim removed its entry
    assert store.drop_sent(task.TaskId, task.Outbox[0].DispatchId) is False
    assert store.drop_sent("no-such-task", "no-such-entry") is False
    assert store.get(task.TaskId) == taken


def test_a_later_writer_holding_the_old_version_loses(subject: StoreUnderTest) -> None:
    store = subject.store
    task = with_entries(new_task(NOW))
    store.insert(task)
    read = store.get(task.TaskId)
    if not store.drop_sent(task.TaskId, "extra-1"):
        return
    stale = claimed(read, NOW + 1)
    stale.Version = read.Version + 1
    assert store.compare_and_set(stale, read.Version) is False  # the drop bumped the version
    assert write(store, task, lambda t: claimed(t, NOW + 1)).Version == read.Version + 2


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_sqlite_leaves_a_document_holding_infinity_or_nan_to_the_usual_way(subject: StoreUnderTest, value: float) -> None:
    store = subject.store
    task = with_entries(new_task(NOW, labels={}))
    task.Parameters["odd"] = value
    store.insert(task)
    assert store.drop_sent(task.TaskId, "extra-1") is False
    assert store.get(task.TaskId).Version == task.Version
    if subject.kind == "sqlite":
        assert sqlite_row(subject, task.TaskId)[4] == task.to_json()


def test_sqlite_leaves_a_document_marked_unreadable_to_the_usual_way(subject: StoreUnderTest) -> None:
    if subject.kind != "sqlite":
        pytest.skip("the mark of an unreadable document is SQLite's cleared columns")
    store = subject.store
    task = with_entries(new_task(NOW))
    store.insert(task)
    with contextlib.closing(sqlite3.connect(store.path)) as conn, conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE tasks SET deadline = NULL, outbox_due = NULL WHERE task_id = ?", (task.TaskId,))
    assert store.drop_sent(task.TaskId, "extra-1") is False
    assert sqlite_row(subject, task.TaskId)[4] == task.to_json()


def test_many_dropped_at_once_are_each_what_drop_sent_writes(subject: StoreUnderTest) -> None:
    """More than one transaction's worth, with entries that are not there amid them."""
    store = subject.store
    tasks = [with_entries(new_task(NOW)) for _ in range(40)]
    for task in tasks:
        store.insert(task)
    taken = write(store, tasks[3], lambda t: claimed(t, NOW + 1))  # its claim removed its entry
    expected = {t.TaskId: marked_the_usual_way(store.get(t.TaskId), "extra-2") for t in tasks if t is not tasks[3]}
    entries = [(t.TaskId, "extra-2") for t in tasks] + [(tasks[3].TaskId, tasks[3].Outbox[0].DispatchId),
                                                         ("no-such-task", "no-such-entry")]  # fmt: skip
    dropped = store.drop_sent_many(entries)
    if not dropped:  # a store that marks with a compare-and-set: nothing written here
        assert subject.kind != "sqlite" or not DROPS_IN_PLACE
        assert all(store.get(t.TaskId).Version == t.Version for t in tasks if t is not tasks[3])
        return
    assert dropped == {(t.TaskId, "extra-2") for t in tasks}  # tasks[3] kept its extra entries
    expected[tasks[3].TaskId] = marked_the_usual_way(taken, "extra-2")
    for task_id, marked in expected.items():
        assert store.get(task_id) == marked
        if subject.kind == "sqlite":
            assert sqlite_row(subject, task_id)[4] == marked.to_json()
