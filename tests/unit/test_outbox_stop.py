"""Stopping a publisher waits for a deferred mark-sent already running: the caller closes the
store next, and a SQLite connection closed under a query in another thread crashes the process
(a segmentation fault ended a whole test run this way)."""

from __future__ import annotations

import threading
import time
from typing import Any

from common.broker.inprocess import InProcessBroker
from common.relay.outbox import OutboxPublisher
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing, create_task
from tests.support.builders import make_step


class SlowReads:
    """The real store, whose reads and in-place mark-sents take a while: a mark-sent is still
    running when stop() comes."""

    def __init__(self, inner: SqliteStore):
        self._inner = inner
        self.reading = threading.Event()
        self.finished_at: float | None = None

    def get(self, task_id: str) -> Any:
        return self._slowly(self._inner.get, task_id)

    def drop_sent(self, task_id: str, dispatch_id: str) -> bool:
        return self._slowly(self._inner.drop_sent, task_id, dispatch_id)

    def drop_sent_many(self, entries: Any) -> Any:
        return self._slowly(self._inner.drop_sent_many, entries)

    def _slowly(self, call: Any, *args: Any) -> Any:
        self.reading.set()
        time.sleep(0.5)
        try:
            return call(*args)
        finally:
            self.finished_at = time.monotonic()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_stop_returns_only_after_a_running_mark_sent_has_finished(tmp_path):
    inner = SqliteStore(tmp_path / "tasks.db")
    store = SlowReads(inner)
    broker = InProcessBroker()
    broker.declare("mod")
    publisher = OutboxPublisher(store, broker, time.time, mark_delay=0.01)  # type: ignore[arg-type]
    try:
        task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()))
        inner.insert(task)
        publisher.flush(task)  # published now; its mark-sent runs in the timer thread
        assert store.reading.wait(5)
        publisher.stop()
        stopped_at = time.monotonic()
        assert store.finished_at is not None and store.finished_at <= stopped_at
    finally:
        broker.close()
        inner.close()
