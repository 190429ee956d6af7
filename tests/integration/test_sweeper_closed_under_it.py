"""A sweeper whose process closed its broker or store (a shutdown that closed them first, or an
embedding's teardown) ends its rounds by itself, quietly: before, it tried every unsent entry
again, round after round, and wrote a warning for each (tens a second, into whatever the process
printed next, a CLI command's JSON included), with its timer thread left running.
Real RabbitMQ, a SQLite store, the real sweeper."""

from __future__ import annotations

import threading
import time

import pytest
import structlog

from common.broker.factory import open_broker
from common.engine.core.entries import Timing, create_task
from common.queues import module_queue
from common.relay.sweeper import SweepConfig, Sweeper
from common.store.sqlite.tasks import SqliteStore
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import wait_until

pytestmark = [pytest.mark.rabbitmq]
CONFIG = SweepConfig(lease=5.0, redeliver_after=60.0, relay_grace=1.0, interval=0.1)
STATE_DEADLINE = 60  # for the sweeper thread to end on a loaded machine: a state, not a measure


@pytest.mark.parametrize("closed", ["broker", "store"])
def test_a_sweeper_whose_broker_or_store_was_closed_ends_quietly(rabbitmq_url, tmp_path, closed):
    store, broker = SqliteStore(tmp_path / "t.db"), open_broker(rabbitmq_url)
    broker.declare(module_queue("mod"))
    for n in range(20):  # unsent first steps, past the relay's grace: the sweeper publishes them
        store.insert(create_task(task_type="t", steps=[make_step("a")], parameters={},
                                 timing=Timing(time.time() - 60), task_id=f"t{n}", ids=counter_ids(f"t{n}")))
    # Timer threads of other tests of this worker may still be ending: only the sweeper's count.
    before = {t for t in threading.enumerate() if t.name == "baton-outbox-timers"}
    sweeper = Sweeper(store, broker, CONFIG)
    (broker if closed == "broker" else store).close()
    stop = threading.Event()  # never set: the sweeper must see the close for itself
    thread = threading.Thread(target=sweeper.run, args=(stop,), name="baton-sweeper-under-test", daemon=True)
    try:
        with structlog.testing.capture_logs() as logs:
            thread.start()
            wait_until(lambda: not thread.is_alive(), STATE_DEADLINE, "the sweeper ending by itself")
        loud = [e for e in logs if e["log_level"] in ("warning", "error", "critical")]
        assert not loud, loud[:3]
        assert not [t.name for t in threading.enumerate()
                    if t.name == "baton-outbox-timers" and t.is_alive() and t not in before]  # fmt: skip
    finally:
        stop.set()
        thread.join(STATE_DEADLINE)
        broker.close()
        store.close()
