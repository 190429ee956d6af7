"""A start_at far in the future (any client may ask for year 9999) must not stop the process's
outbox timers: the timer's wait overflowed the platform's time_t, the timer thread died, and no
later delayed publish or mark-sent of that process ever ran."""

from __future__ import annotations

import time

from common.broker.inprocess import InProcessBroker
from common.relay.outbox import OutboxPublisher
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing, create_task
from tests.support.builders import make_step
from tests.support.cluster import STATE_DEADLINE, wait_until

YEAR_9999 = 253402300799.0


def test_a_start_in_year_9999_leaves_the_timers_of_every_other_task_working(tmp_path):
    store = SqliteStore(tmp_path / "tasks.db")
    broker = InProcessBroker()
    broker.declare("mod")
    publisher = OutboxPublisher(store, broker, time.time, mark_delay=0.01)
    try:
        now = time.time()
        for start in (YEAR_9999, now + 0.3):  # the far one first, then one due soon
            task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(now), start_at=start)
            store.insert(task)
            publisher.flush(task)
            time.sleep(0.1)  # the timer thread is waiting for the far one when the near one comes
        wait_until(lambda: broker.queue_depth("mod") >= 1, STATE_DEADLINE, "the near one published")
        assert broker.queue_depth("mod") == 1  # the near one was published by its timer
    finally:
        publisher.stop()
        broker.close()
        store.close()
