"""A flush publishes the outbox entries its own change added (or moved), not every entry still
waiting for its claim: those were published by the change that added them. The sweeper's
re-dispatch of a message that was lost moves the entry's due time, so its flush sends it again.
Real SQLite store, the in-process broker."""

from __future__ import annotations

import time

from common.broker.inprocess import InProcessBroker
from common.engine.document import StepMessage, Task
from common.relay.outbox import OutboxPublisher
from common.engine.states import ResultCode
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.units import AttemptResult
from common.engine.core.entries import Timing, claim, create_task, expire, finish_attempt
from tests.support.builders import make_step


def parallel_roots() -> list:
    a, b, c = make_step("a"), make_step("b"), make_step("c")
    a.After, b.After, c.After = [], [], [0, 1]  # a and b at once, c once both are done
    return [a, b, c]


def run_step(store: SqliteStore, task_id: str, message: StepMessage) -> Task:
    now = time.time()
    claimed = mutate(store, task_id, lambda t: claim(t, message, "me", Timing(now)))
    assert isinstance(claimed, Task)
    ok = AttemptResult(ResultCode.OK)
    done = mutate(store, task_id, lambda t: finish_attempt(t, message.DispatchId, "me", ok, Timing(now)), known=claimed)
    assert isinstance(done, Task)
    return done


def test_a_commit_publishes_what_it_added_and_not_the_unclaimed_rest(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare("mod")
    publisher = OutboxPublisher(store, broker, time.time, mark_delay=60)
    try:
        task = create_task(task_type="t", steps=parallel_roots(), parameters={}, timing=Timing(time.time()))
        store.insert(task)
        publisher.flush(task)  # a new task: every entry is its own
        assert broker.purge("mod") == 2
        first, second = (StepMessage.model_validate(e.Body) for e in task.Outbox)
        after_a = run_step(store, task.TaskId, first)
        assert any(e.DispatchId == second.DispatchId for e in after_a.Outbox)  # b: not claimed yet
        publisher.flush(after_a)
        assert broker.queue_depth("mod") == 0  # b was sent with the task; a's commit added nothing
        after_b = run_step(store, task.TaskId, second)
        publisher.flush(after_b)
        assert broker.purge("mod") == 1  # c, which b's commit made ready
        assert after_b.Steps[2].State.value == "running"
    finally:
        publisher.stop()
        broker.close()
        store.close()


def test_the_sweepers_redispatch_of_a_lost_message_is_published_again(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare("mod")
    publisher = OutboxPublisher(store, broker, time.time, mark_delay=60)
    try:
        now = time.time()
        past = Timing(now - 5, redeliver_after=1)  # dispatched 5 s ago, due for a claim within 1
        task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=past)
        store.insert(task)
        publisher.flush(task)
        assert broker.purge("mod") == 1  # the message is lost; its entry is still in the outbox
        redispatched = mutate(store, task.TaskId, lambda t: expire(t, Timing(now, redeliver_after=1)))
        assert isinstance(redispatched, Task)
        publisher.flush(redispatched)
        assert broker.queue_depth("mod") == 1
    finally:
        publisher.stop()
        broker.close()
        store.close()
