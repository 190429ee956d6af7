"""Every kind of MongoDB write whose answer is lost, on a real wire-protocol server (SecantusDB):
the adapter settles it by reading back, and the write is applied once, never twice, never lost.

The loss is injected at the adapter's boundary (tests.support.lost_answers): the write applies
and then the driver's error is raised ("after"), or the error comes first and nothing is written
("before"), with each of the errors a failover raises. Some cases let another writer in between,
as happens during an election. docs/design/stores.md, "A MongoDB replica set failing over under a
write" points at each test from its row.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from common.engine.document import HistoryEvent, StepMessage, Task
from common.engine.gates.lock.table import KeyLock
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.states import Phase, StepState
from common.engine.core.entries import Refusal, Timing, claim, create_task, mark_sent
from common.errors import DuplicateSchedule, DuplicateTask
from common.scheduling import Schedule
from modules.resource.inventory.mongo import MongoInventory
from modules.resource.inventory.port import Capacity, ClaimState
from common.store.mongo.items import MongoItemStore
from common.store.gates.lock.mongo import MongoLockStore
from common.store.mongo.tasks import MongoStore
from common.store.tasks.mutate import mutate
from common.store.mongo.schedules import MongoScheduleStore
from tests.contract.store_documents import mysql_steps
from tests.support.builders import only_run
from tests.support.lost_answers import LosingCollection, lost_answer_errors
from tests.support.secantus import fresh_database_name

NOW = 1_700_000_000.0
ERRORS = lost_answer_errors()
CASES = [(when, name) for when in ("after", "before") for name in ERRORS]
case = pytest.mark.parametrize("when,error", CASES, ids=[f"{w}-{n}" for w, n in CASES])


@pytest.fixture
def database(secantus_client: Any) -> Iterator[str]:
    name = fresh_database_name("baton_lost")
    yield name
    secantus_client.drop_database(name)


def losing(adapter: Any, attribute: str) -> LosingCollection:
    """Put a LosingCollection in front of the adapter's collection `attribute`."""
    wrapped = LosingCollection(getattr(adapter, attribute))
    setattr(adapter, attribute, wrapped)
    return wrapped


def new_task(key: str | None = None) -> Task:
    return create_task(task_type="create_mysql", steps=mysql_steps(2), parameters={"n": 0, "w": []},
                       timing=Timing(now=NOW), idempotency_key=key)  # fmt: skip


def bump(token: str):
    """A change that counts and names itself: applied twice, it shows twice."""

    def change(task: Task) -> Task:
        task.Parameters = {"n": task.Parameters["n"] + 1, "w": [*task.Parameters["w"], token]}
        return task

    return change


def another_writer(store: MongoStore, task_id: str, change: Any) -> None:
    """A write by another process: read, change, compare-and-set (not `mutate`, whose turn on
    the task this process's own writer holds while its answer is being lost)."""
    current = store.get(task_id)
    assert current is not None
    version = current.Version
    new = change(current)
    new.Version = version + 1
    assert store.compare_and_set(new, version)


# --- task compare-and-set (every change: claim, outcome, outbox mark, operator action) ------------


@case
def test_a_task_change_whose_answer_is_lost_applies_once(secantus_client, database, when, error):
    store = MongoStore(secantus_client, database)
    task = new_task()
    store.insert(task)
    tasks = losing(store, "_tasks")
    tasks.arm(when, ERRORS[error]())
    written = mutate(store, task.TaskId, bump("ours"))
    assert tasks.faulted == 1 and not isinstance(written, Refusal)
    stored = store.get(task.TaskId)
    assert stored is not None and stored.Parameters == {"n": 1, "w": ["ours"]}
    assert stored.Version == task.Version + 1 == written.Version


@case
def test_a_lost_answer_while_another_writer_takes_the_version_is_a_lost_race(secantus_client, database, when,
                                                                              error):  # fmt: skip
    store, other = MongoStore(secantus_client, database), MongoStore(secantus_client, database)
    task = new_task()
    store.insert(task)
    tasks = losing(store, "_tasks")
    # "before": the other writer takes the version ours wanted (ours never applied: a lost race,
    # re-read and applied on top). "after": ours applied, the other writes on top of it before
    # the read-back (the marks still show ours).
    tasks.arm(when, ERRORS[error](), hook=lambda: another_writer(other, task.TaskId, bump("theirs")))
    written = mutate(store, task.TaskId, bump("ours"))
    assert not isinstance(written, Refusal)
    stored = store.get(task.TaskId)
    assert stored is not None and stored.Parameters["n"] == 2 and stored.Version == task.Version + 2
    expected = ["theirs", "ours"] if when == "before" else ["ours", "theirs"]
    assert stored.Parameters["w"] == expected


@case
def test_a_claim_whose_answer_is_lost_is_held_by_its_claimer_once(secantus_client, database, when, error):
    store = MongoStore(secantus_client, database)
    task = new_task()
    store.insert(task)
    run = only_run(task)
    step = task.Steps[run.Cursor]
    message = StepMessage(TaskId=task.TaskId, Cursor=run.Cursor, Type=run.Phase, Module=step.module(run.Phase),
                          Command=step.command(run.Phase), Timeout=step.timeout(run.Phase),
                          Retry=step.retry(run.Phase), DispatchId=run.DispatchId, Attempt=run.Attempt)  # fmt: skip
    tasks = losing(store, "_tasks")
    tasks.arm(when, ERRORS[error]())
    claimed = mutate(store, task.TaskId, lambda t: claim(t, message, "worker-1", Timing(now=NOW + 1)))
    assert not isinstance(claimed, Refusal), claimed  # the claimer knows it holds the run
    stored = store.get(task.TaskId)
    assert stored is not None and stored.Version == task.Version + 1
    assert only_run(stored).Owner == "worker-1" and only_run(stored).Phase == Phase.NORMAL
    assert [e.Event for e in stored.History].count("claimed") <= 1


@case
def test_an_outbox_mark_whose_answer_is_lost_is_marked_once(secantus_client, database, when, error):
    store = MongoStore(secantus_client, database)
    task = new_task()
    store.insert(task)
    entry = task.Outbox[0]
    tasks = losing(store, "_tasks")
    tasks.arm(when, ERRORS[error]())
    marked = mutate(store, task.TaskId, lambda t: mark_sent(t, entry.DispatchId))
    assert not isinstance(marked, Refusal)
    stored = store.get(task.TaskId)
    assert stored is not None and stored.Version == task.Version + 1
    assert stored.Outbox == marked.Outbox and stored.Outbox != task.Outbox


# --- inserts -------------------------------------------------------------------------------------


@case
def test_a_create_with_an_idempotency_key_whose_answer_is_lost_is_stored_once(secantus_client, database, when,
                                                                               error):  # fmt: skip
    store = MongoStore(secantus_client, database)
    task = new_task(key="order-1")
    tasks = losing(store, "_tasks")
    tasks.arm(when, ERRORS[error]())
    store.insert(task)  # settled: no DuplicateTask for our own insert
    assert store.get_by_idempotency_key("order-1") == store.get(task.TaskId) == task
    assert secantus_client[database]["tasks"].count_documents({"IdempotencyKey": "order-1"}) == 1


@pytest.mark.parametrize("error", list(ERRORS))
def test_a_lost_create_whose_key_another_create_took_is_a_duplicate(secantus_client, database, error):
    store, other = MongoStore(secantus_client, database), MongoStore(secantus_client, database)
    theirs = new_task(key="order-1")
    tasks = losing(store, "_tasks")
    tasks.arm("before", ERRORS[error](), hook=lambda: other.insert(theirs))
    with pytest.raises(DuplicateTask):
        store.insert(new_task(key="order-1"))
    assert store.get_by_idempotency_key("order-1") == theirs


# --- locks ---------------------------------------------------------------------------------------


@case
def test_a_lock_take_and_release_whose_answers_are_lost_apply_once(secantus_client, database, when, error):
    locks = MongoLockStore(secantus_client, database)
    documents = losing(locks, "_documents")
    first = KeyLock(Key="k", Limit=1, Version=1)
    documents.arm(when, ERRORS[error]())
    assert locks.compare_and_set(first, 0) is True  # the insert of a new lock
    changed = first.model_copy(update={"Limit": 2, "Version": 2})
    documents.arm(when, ERRORS[error]())
    assert locks.compare_and_set(changed, 1) is True
    assert locks.get("k") == changed and documents.faulted == 2
    assert locks.compare_and_set(first.model_copy(update={"Version": 2}), 1) is False  # the version is taken


@case
def test_the_sweepers_lock_whose_answers_are_lost_is_held_then_released(secantus_client, database, when, error):
    store, rival = MongoStore(secantus_client, database), MongoStore(secantus_client, database)
    documents = losing(store, "_locks")
    documents.arm(when, ERRORS[error]())
    assert store.try_lock("sweeper", "a", NOW, 30) is True
    assert rival.try_lock("sweeper", "b", NOW + 1, 30) is False  # held by "a", exactly
    documents.arm(when, ERRORS[error]())
    store.release_lock("sweeper", "a")
    assert rival.try_lock("sweeper", "b", NOW + 1, 30) is True


# --- item records --------------------------------------------------------------------------------


def item(n: int, **fields: Any) -> ItemRecord:
    return ItemRecord(TaskId="t1", Generation=0, Cursor=2, Item=n, **fields)


@case
def test_item_records_whose_answers_are_lost_are_inserted_and_changed_once(secantus_client, database, when,
                                                                            error):  # fmt: skip
    items = MongoItemStore(secantus_client, database)
    documents = losing(items, "_items")
    documents.arm(when, ERRORS[error]())
    items.insert_items([item(0), item(1)])
    assert secantus_client[database]["task_items"].count_documents({}) == 2
    stored = items.get_item("t1", 0, 2, 0)
    changed = stored.model_copy(update={"State": StepState.SUCCEEDED, "Version": stored.Version + 1})
    documents.arm(when, ERRORS[error]())
    assert items.compare_and_set_item(changed, stored.Version) is True
    assert items.get_item("t1", 0, 2, 0) == changed
    assert items.compare_and_set_item(changed, stored.Version) is False


# --- history archive, schedules, inventory ----------------------------------------------------------


@case
def test_a_history_archive_whose_answer_is_lost_holds_each_event_once(secantus_client, database, when, error):
    store = MongoStore(secantus_client, database)
    history = losing(store, "_history")
    events = [HistoryEvent(Time=NOW + n, Event="note", Message=f"e{n}") for n in range(3)]
    history.arm(when, ERRORS[error]())
    store.archive_history("t1", 0, events)
    assert store.archived_history("t1", 0, 10) == events
    assert secantus_client[database]["task_history"].count_documents({"TaskId": "t1"}) == 3


def schedule(name: str) -> Schedule:
    return Schedule(ScheduleId=f"id-{name}", Name=name, TaskType="demo", IntervalSeconds=60, Parameters={},
                    TimeCreate=NOW - 60, NextAt=NOW)  # fmt: skip


@case
def test_a_schedule_insert_and_tick_whose_answers_are_lost_apply_once(secantus_client, database, when, error):
    schedules = MongoScheduleStore(secantus_client, database)
    documents = losing(schedules, "_schedules")
    first = schedule("nightly")
    documents.arm(when, ERRORS[error]())
    schedules.insert(first)
    with pytest.raises(DuplicateSchedule):
        schedules.insert(schedule("nightly").model_copy(update={"ScheduleId": "id-other"}))
    ticked = first.model_copy(update={"NextAt": NOW + 60, "Version": first.Version + 1})
    documents.arm(when, ERRORS[error]())
    assert schedules.compare_and_set(ticked, first.Version) is True
    assert schedules.get(first.ScheduleId) == ticked
    assert schedules.compare_and_set(ticked, first.Version) is False  # one tick per version


@case
def test_inventory_writes_whose_answers_are_lost_count_once(secantus_client, database, when, error):
    inventory = MongoInventory(secantus_client, database)
    inventory.add_host("h1", Capacity(8, 8192, 100), NOW)
    hosts = losing(inventory, "_hosts")
    need = Capacity(2, 1024, 10)
    hosts.arm(when, ERRORS[error]())
    reserved = inventory.reserve("k1", need, "task-1", NOW, NOW + 60)
    assert reserved.state is ClaimState.RESERVED
    hosts.arm(when, ERRORS[error]())
    assert inventory.deduct("k1", NOW + 1).state is ClaimState.DEDUCTED
    host = inventory.get_host("h1", NOW + 1)
    assert host is not None and host.used == need  # counted once
    hosts.arm(when, ERRORS[error]())
    assert [c.key for c in inventory.release("task-1", "rel-1", NOW + 2)] == ["k1"]
    host = inventory.get_host("h1", NOW + 2)
    assert host is not None and host.used == Capacity(0, 0, 0)


def test_a_write_the_server_refuses_is_not_settled_but_raised(secantus_client, database):
    """A refusal is an answer: nothing to read back (a duplicate key stays a duplicate)."""
    store = MongoStore(secantus_client, database)
    task = new_task()
    store.insert(task)
    with pytest.raises(DuplicateTask):
        store.insert(task.model_copy(update={"IdempotencyKey": str(uuid.uuid4())}))
