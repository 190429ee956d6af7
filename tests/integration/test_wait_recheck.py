"""The sweeper's safety net under the outbox wake-up of a task waiting for another: a crash left
the waiter unlisted on the awaited task (or its wake-up entry unflushed). At its recheck time the
sweeper reads the awaited task: still going, it looks again later; ended, it wakes the waiter.
Real SQLite store, the in-process broker, the real sweeper."""

from __future__ import annotations

from common.broker.inprocess import InProcessBroker
from common.queues import module_queue
from common.engine.states import TaskStatus
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.relay.sweeper import SweepConfig, Sweeper
from common.engine.gates.after_task.waits import RECHECK_SECONDS
from common.engine.core.units import step_message
from common.engine.core.entries import Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step
from tests.api.support import OK

CONFIG = SweepConfig(lease=5.0, redeliver_after=60.0, relay_grace=1.0, interval=0.1)


def test_the_sweeper_wakes_a_waiter_the_awaited_task_never_listed(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare(module_queue("mod"))
    clock = [100.0]
    sweeper = Sweeper(store, broker, CONFIG, clock=lambda: clock[0])
    first = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0),
                        task_id="first", ids=counter_ids("f"))  # fmt: skip
    store.insert(first)
    waiter = create_task(task_type="t", steps=[make_step("b")], parameters={}, timing=Timing(100.0),
                         task_id="waiter", ids=counter_ids("w"), after_task="first")  # fmt: skip
    store.insert(waiter)  # and the process died before listing it on "first"
    clock[0] = 100.0 + RECHECK_SECONDS
    sweeper.sweep_once()
    assert store.get("waiter").WaitingFor.RecheckAt == clock[0] + RECHECK_SECONDS  # "first" still runs
    message = step_message(store.get("first"), store.get("first").Runs[0])
    mutate(store, "first", lambda t: claim(t, message, "w", Timing(clock[0])))
    mutate(store, "first", lambda t: finish_attempt(t, message.DispatchId, "w", OK, Timing(clock[0])))  # no waiter listed
    assert store.get("first").TaskStatus is TaskStatus.SUCCESS
    clock[0] += RECHECK_SECONDS
    sweeper.sweep_once()
    woken = store.get("waiter")
    assert woken.WaitingFor is None and woken.Steps[0].State == "running"
    assert broker.queue_depth(module_queue("mod")) >= 1  # its first step was published
    sweeper.close()  # its publisher's timers end before the store closes
    store.close()
