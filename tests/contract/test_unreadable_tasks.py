"""A stored task document that cannot be parsed stops nothing: on every store kind, readers skip
it or name it, the sweeper passes it by (once marked, its queries no longer return it), the
listing shows a placeholder, and exactly one alarm names the task."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from common.broker.inprocess import InProcessBroker
from common.errors import UnreadableTask
from common.store.tasks import unreadable
from common.store.mongo.tasks import MongoStore
from common.relay.sweeper import SweepConfig, Sweeper
from common.engine.core.entries import Timing, create_task

from tests.contract.store_fixtures import (  # noqa: F401  (fixtures are found by name)
    StoreUnderTest,
    subject,
)
from tests.support.builders import make_step, nested, only_run
from tests.support.cluster import STATE_DEADLINE, wait_until


def new_task(now: float = 1000.0, **parameters):
    return create_task(task_type="t", steps=[make_step("a")], parameters=parameters,
                       timing=Timing(now, redeliver_after=5))  # fmt: skip


def corrupt(subject: StoreUnderTest, task_id: str) -> None:
    """Make the stored document fail to parse, as hand edits or an older baton could."""
    store = subject.store
    if isinstance(store, MongoStore):
        store._tasks.update_one({"TaskId": task_id}, {"$set": {"Priority": "high"}})
        return
    with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Priority', 'high') WHERE task_id = ?", (task_id,))


def marked(subject: StoreUnderTest, task_id: str) -> bool:
    """Is the task out of the sweeper's sight (see common.store.tasks.unreadable)?"""
    if isinstance(subject.store, MongoStore):
        return unreadable.MARK_FIELD in subject.raw_task_doc(task_id)
    with sqlite3.connect(subject.store.path) as conn:  # type: ignore[attr-defined]
        (deadline,) = conn.execute("SELECT deadline FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return deadline is None


def test_readers_skip_name_or_show_an_unreadable_task_and_alarm_it_once(subject):
    store = subject.store
    good, bad = new_task(1000.0), new_task(1001.0)
    store.insert(good)
    store.insert(bad)
    corrupt(subject, bad.TaskId)

    with pytest.raises(UnreadableTask) as raised:
        store.get(bad.TaskId)
    assert raised.value.task_id == bad.TaskId and "Priority" in raised.value.reason
    assert store.get(good.TaskId) == good

    listed = store.list_tasks(limit=10)
    assert [t.TaskId for t in listed] == [bad.TaskId, good.TaskId]  # newest first, the page whole
    placeholder = listed[0]
    assert placeholder.TaskType == "t" and placeholder.TaskMessage.startswith("unreadable: Priority")

    alarms = [a for a in store.list_alarms() if a.Kind == unreadable.KIND]
    assert [a.TaskId for a in alarms] == [bad.TaskId]  # once, however often it was read


def test_the_sweeper_heals_the_others_and_stops_seeing_an_unreadable_task(subject):
    store = subject.store
    broker = InProcessBroker()
    broker.declare("mod")
    healthy, bad = new_task(1000.0), new_task(1000.0)
    store.insert(healthy)
    store.insert(bad)
    corrupt(subject, bad.TaskId)
    now = 2000.0  # both dispatches are long overdue
    assert {t.TaskId for t in store.due_for_sweep(now, 10)} == {healthy.TaskId}  # skipped...
    assert bad.TaskId not in {t.TaskId for t in store.unsent_outbox(now, 10)}
    assert marked(subject, bad.TaskId) and not marked(subject, healthy.TaskId)  # ...and marked

    sweeper = Sweeper(store, broker, SweepConfig(lease=30, redeliver_after=5, relay_grace=0, interval=1),
                      clock=lambda: now)  # fmt: skip
    try:
        report = sweeper.sweep_once()
    finally:
        sweeper.close()  # its relay's mark-sent timers end before the store does
    assert report.swept and report.redispatched == 1
    assert store.get(healthy.TaskId).History[-1].Message == "never claimed"


def test_a_failed_listing_leaves_no_read_open_that_would_lock_out_writes(tmp_path):
    """The root cause of "after a dozen failed list calls every POST answers 503 'database is
    locked'": a listing that raised half-way left its cursor (alive in the kept exception) with an
    open read snapshot, and the connection's next write, after another one had written, failed."""
    from common.store.sqlite.tasks import SqliteStore

    path = tmp_path / "tasks.db"
    store, other = SqliteStore(path), SqliteStore(path)
    deep = nested(199)  # deeper than the JSON reader goes: what the API took before its limits
    store.insert(new_task(1000.0))
    broken = new_task(1001.0)
    store.insert(broken)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Parameters.x', json(?)) WHERE task_id = ?",
                     (json.dumps(deep), broken.TaskId))  # fmt: skip
    store.insert(new_task(999.0))
    kept = []
    try:
        kept.append(store.list_tasks(limit=10))  # before the fix: raised, as the API's handler kept
    except Exception as exc:  # noqa: BLE001 - kept alive on purpose, like a logged exception
        kept.append(exc)
    writer = threading.Thread(target=lambda: other.insert(new_task(1002.0)))
    writer.start()
    writer.join()
    store.insert(new_task(1003.0))  # before the fix: "database is locked" after the busy timeout
    assert len(kept[0]) == 3 and kept[0][0].TaskMessage.startswith("unreadable")
    store.close()
    other.close()


def test_the_sweeper_thread_outlives_an_unexpected_error(tmp_path):
    """It crashed at every start on the unreadable document: one bug must not end the thread."""
    from common.store.sqlite.tasks import SqliteStore

    store = SqliteStore(tmp_path / "tasks.db")
    calls = []

    def due_for_sweep(now, limit):
        calls.append(now)
        if len(calls) == 1:
            raise RuntimeError("a bug in one round")
        return []

    store.due_for_sweep = due_for_sweep  # type: ignore[method-assign]
    sweeper = Sweeper(store, InProcessBroker(), SweepConfig(lease=30, redeliver_after=5, relay_grace=0, interval=0.01))
    stop = threading.Event()
    thread = threading.Thread(target=sweeper.run, args=(stop,))
    thread.start()
    wait_until(lambda: len(calls) >= 3, STATE_DEADLINE, "three sweeps")
    stop.set()
    thread.join(10)
    assert len(calls) >= 3  # it went on sweeping after the failed round
    store.close()


@pytest.mark.parametrize("parameters", [{"x": "\ud800"}, {"x": {"y": "a\udfffb"}}])
def test_a_document_no_store_can_encode_is_refused_never_a_crash(subject, parameters):
    """The edge keeps these out; the stores still refuse in their own terms if one slips by."""
    from common.errors import StoreRefused

    with pytest.raises(StoreRefused):
        subject.store.insert(new_task(1000.0, **parameters))


def test_a_document_a_newer_baton_wrote_is_skipped_but_left_in_the_sweepers_sight(subject):
    """Unknown fields only (a rolling upgrade): this process cannot read it, a newer one can.
    (The field was `Runs` before this version knew it: any name this version does not know.)"""
    store = subject.store
    task = new_task(1000.0)
    store.insert(task)
    if isinstance(store, MongoStore):
        store._tasks.update_one({"TaskId": task.TaskId}, {"$set": {"FromTheFuture": []}})
    else:
        with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE tasks SET doc = json_set(doc, '$.FromTheFuture', json('[]')) WHERE task_id = ?",
                         (task.TaskId,))
    for _ in range(2):
        assert store.due_for_sweep(2000.0, 10) == []  # skipped...
    assert not marked(subject, task.TaskId)  # ...not marked
    assert [a.TaskId for a in store.list_alarms() if a.Kind == unreadable.KIND] == [task.TaskId]


def test_a_lease_on_a_task_that_breaks_is_given_up_and_the_others_renewed(subject):
    """The heartbeat thread renews every running step of a module: one broken document must
    neither end it (every other step would lose its lease) nor hold it."""
    from common.engine.document import StepMessage
    from common.runtime.lease import LeaseKeeper
    from common.store.tasks.mutate import mutate
    from common.engine.core.entries import claim

    store = subject.store
    broken, fine = new_task(1000.0), new_task(1000.0)
    for task in (broken, fine):
        store.insert(task)
    run, step = only_run(fine), fine.Steps[0]
    message = StepMessage(TaskId=fine.TaskId, Cursor=0, Type=run.Phase, Module=step.NormalModule,
                          Command=step.NormalCommand, Timeout=step.NormalTimeout, Retry=step.NormalRetry,
                          DispatchId=run.DispatchId, Attempt=run.Attempt)  # fmt: skip
    mutate(store, fine.TaskId, lambda t: claim(t, message, "worker-1", Timing(1000.0, lease=30)))
    keeper = LeaseKeeper(store, "worker-1", lease=30, interval=1, clock=lambda: 1010.0)
    with keeper.hold(broken.TaskId, "d-broken") as gone, keeper.hold(fine.TaskId, run.DispatchId) as kept:
        corrupt(subject, broken.TaskId)
        keeper.renew_all()  # before: UnreadableTask (a ValidationError) ended the heartbeat thread
        assert gone.lost.is_set() and not kept.lost.is_set()
    assert only_run(store.get(fine.TaskId)).Deadline == 1040.0  # renewed after the broken one
