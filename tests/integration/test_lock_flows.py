"""Locks with sub-flows and crashes between commit and flush, on a real SQLite store, the
in-process broker and the real sweeper (its relay and its lock job)."""

from __future__ import annotations

import contextlib
import sqlite3
import time

from common.broker.inprocess import InProcessBroker
from common.relay.gate_reclaims import GateReclaims as LockReclaim
from common.engine.document import ChildTemplate, LockTemplate, StepMessage, Task
from common.relay.outbox import OutboxPublisher
from common.queues import module_queue
from common.engine.states import ResultCode, TaskStatus
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.relay.sweeper import SweepConfig, Sweeper
from common.engine.core.entries import AttemptResult, Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step

CONFIG = SweepConfig(lease=5.0, redeliver_after=60.0, relay_grace=1.0, interval=0.1)
IDS = counter_ids("i")


def parent(task_id: str) -> Task:
    sub = make_step("sub")
    sub.NormalModule = sub.NormalCommand = sub.RollbackModule = sub.RollbackCommand = None
    sub.Flow, sub.FlowInputs = "leaf", {"db": "db"}
    sub.FlowTemplate = ChildTemplate(TaskType="leaf", Steps=[make_step("x")], Lock=LockTemplate(Key="db:{db}"))
    return create_task(task_type="p", steps=[sub], parameters={"db": "main"}, timing=Timing(time.time()),
                       task_id=task_id, ids=IDS)


def message_for(task: Task) -> StepMessage:
    (run,) = task.Runs
    step = task.Steps[run.Cursor]
    return StepMessage(TaskId=task.TaskId, Cursor=run.Cursor, Type=run.Phase, Module="mod",
                       Command=step.command(run.Phase), Timeout=5, Retry=0, DispatchId=run.DispatchId,
                       Attempt=run.Attempt)


def run_one(store: SqliteStore, publisher: OutboxPublisher, message: StepMessage) -> Task:
    """What a module does with one delivery: claim, succeed, flush what the commit owes."""
    now = time.time()
    mutate(store, message.TaskId, lambda t: claim(t, message, "w", Timing(now)))
    done = mutate(store, message.TaskId, lambda t: finish_attempt(t, message.DispatchId, "w",
                                                                  AttemptResult(ResultCode.OK), Timing(now)))
    publisher.flush(done)
    return done


def test_sub_flow_children_take_their_own_types_lock_one_at_a_time(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare(module_queue("mod"))
    publisher = OutboxPublisher(store, broker, time.time)
    try:
        for task_id in ("p1", "p2"):
            task = parent(task_id)
            store.insert(task)
            publisher.flush(task)
        first, second = store.get("p1.0"), store.get("p2.0")
        assert first.Lock.State == "held" and second.Lock.State == "waiting"
        assert second.WaitingFor.Key == "db:main" and second.Runs == []
        assert broker.queue_depth(module_queue("mod")) == 1  # only the first child's step was published
        run_one(store, publisher, message_for(first))
        assert store.get("p1").TaskStatus is TaskStatus.SUCCESS
        assert store.get("p2.0").Lock.State == "held" and broker.queue_depth(module_queue("mod")) == 2
        run_one(store, publisher, message_for(store.get("p2.0")))
        assert store.get("p2").TaskStatus is TaskStatus.SUCCESS
        assert publisher.locks.table.list_locks() == []
    finally:
        publisher.stop()
        store.close()


def test_the_sweeper_relays_lock_entries_a_crash_left_and_reclaims_a_dead_holder(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare(module_queue("mod"))
    clock = [time.time()]
    publisher = OutboxPublisher(store, broker, lambda: clock[0])
    sweeper = Sweeper(store, broker, CONFIG, clock=lambda: clock[0], jobs=[LockReclaim(publisher, every=0)])
    try:
        locked = [create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(clock[0] + i),
                              ids=IDS, lock=("k", 1), task_id=f"t{i}") for i in range(2)]
        for task in locked:
            store.insert(task)  # committed; OSS died before flushing the lock_acquire entries
        clock[0] += 5
        assert sweeper.sweep_once().relayed == 2
        assert store.get("t0").Lock.State == "held" and store.get("t1").Lock.State == "waiting"
        assert broker.queue_depth(module_queue("mod")) == 1
        # t0 ends, and its module dies before flushing the release: the relay releases it.
        message = message_for(store.get("t0"))
        mutate(store, "t0", lambda t: claim(t, message, "w", Timing(clock[0])))
        mutate(store, "t0", lambda t: finish_attempt(t, message.DispatchId, "w", AttemptResult(ResultCode.OK),
                                                      Timing(clock[0])))
        clock[0] += 5
        sweeper.sweep_once()
        assert store.get("t1").Lock.State == "held" and broker.queue_depth(module_queue("mod")) == 2
        # t1's document is purged while it holds the lock: the sweeper's lock job reclaims it.
        publisher.locks.table.join("k", "t2", priority=0, seq=0, limit=1)  # someone waits behind it
        with contextlib.closing(sqlite3.connect(tmp_path / "t.db")) as conn:  # a purge by hand
            conn.execute("DELETE FROM tasks WHERE task_id = 't1'")
            conn.commit()
        sweeper.sweep_once()
        lock = publisher.locks.table.get("k")
        assert [h.TaskId for h in lock.Holders] == [] and lock.Waiters == []  # t2 has no task either
    finally:
        sweeper.close()  # its publisher's timers end before the store closes
        publisher.stop()
        store.close()


def test_a_step_lock_lets_one_unit_at_a_time_run_that_step_across_tasks(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare(module_queue("mod"))
    publisher = OutboxPublisher(store, broker, time.time)
    step = make_step("a")
    step.Lock = LockTemplate(Key="host:{host}")
    try:
        for task_id in ("s1", "s2"):
            task = create_task(task_type="t", steps=[step, make_step("b")], parameters={"host": "h"},
                               timing=Timing(time.time()), ids=IDS, task_id=task_id)
            store.insert(task)
            publisher.flush(task)
        first, second = store.get("s1"), store.get("s2")
        assert first.Runs[0].State.value == "pending" and second.Runs[0].State.value == "waiting_lock"
        after_a = run_one(store, publisher, message_for(first))  # s1's step a ends: s2's may start
        assert after_a.Steps[1].State.value == "running"  # s1 goes on to b, without the lock
        assert store.get("s2").Runs[0].State.value == "pending"
        lock = publisher.locks.table.get("host:h")
        assert [h.TaskId for h in lock.Holders] == ["s2#0"] and lock.Waiters == []
        for task_id in ("s1", "s2", "s2"):
            run_one(store, publisher, message_for(store.get(task_id)))
        assert {store.get(t).TaskStatus for t in ("s1", "s2")} == {TaskStatus.SUCCESS}
        assert publisher.locks.table.list_locks() == []
        # A unit's membership left behind (its release lost for good): the sweeper's pass reclaims it.
        publisher.locks.table.join("host:h", "s1#0", priority=0, seq=0, limit=1)
        assert publisher.locks.reclaim() == 1 and publisher.locks.table.list_locks() == []
    finally:
        publisher.stop()
        store.close()
