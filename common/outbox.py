"""Publishing what a committed change put in a task's outbox, then marking it sent.

Used by OSS (step 0 of a new task), by modules (the next step) and by the sweeper's relay (any
entry left unsent by a crash). Publishing twice is harmless: the claim fences duplicates.
"""

from __future__ import annotations

import heapq
import json
import threading
from collections.abc import Callable

import structlog

from common.broker.port import Broker
from common.errors import BrokerError, StoreError
from common.models import OutboxEntry, Task
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.transitions import mark_sent

log = structlog.get_logger(__name__)
Clock = Callable[[], float]


def encode(entry: OutboxEntry) -> bytes:
    return json.dumps(entry.Body, separators=(",", ":")).encode()


class OutboxPublisher:
    def __init__(self, store: TaskStore, broker: Broker, clock: Clock):
        self._store = store
        self._broker = broker
        self._clock = clock
        self._delayed = _DelayedEntries(self)

    def flush(self, task: Task, before_mark_sent: Callable[[], None] | None = None) -> None:
        """Publish every entry due now; entries due later (a retry's backoff) wait in a timer."""
        now = self._clock()
        for entry in task.Outbox:
            if entry.DueAt <= now:
                self.publish(task.TaskId, entry, before_mark_sent)
            else:
                self._delayed.add(task.TaskId, entry)

    def publish(
        self, task_id: str, entry: OutboxEntry, before_mark_sent: Callable[[], None] | None = None
    ) -> bool:
        """Publish one entry and mark it sent. False if it stays for the relay to try again."""
        try:
            self._broker.publish(
                entry.Queue, encode(entry), priority=entry.Priority, message_id=entry.DispatchId
            )
        except BrokerError as exc:
            log.warning("publish failed; the outbox relay will retry", task_id=task_id,
                        queue=entry.Queue, error=str(exc))
            return False
        if before_mark_sent:
            before_mark_sent()
        try:
            mutate(self._store, task_id, lambda t: mark_sent(t, entry.DispatchId))
        except StoreError as exc:  # published but not marked: the relay publishes it again
            log.warning("mark-sent failed", task_id=task_id, error=str(exc))
        return True

    def stop(self) -> None:
        self._delayed.stop()


class _DelayedEntries:
    """A timer thread for outbox entries due later, so a backoff never holds a worker slot.

    Only a latency aid: if this process dies, the relay publishes the entries when they are due.
    """

    def __init__(self, publisher: OutboxPublisher):
        self._publisher = publisher
        self._heap: list[tuple[float, int, str, OutboxEntry]] = []
        self._condition = threading.Condition()
        self._counter = 0
        self._stopped = False
        self._thread: threading.Thread | None = None

    def add(self, task_id: str, entry: OutboxEntry) -> None:
        with self._condition:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="baton-delayed", daemon=True)
                self._thread.start()
            self._counter += 1
            heapq.heappush(self._heap, (entry.DueAt, self._counter, task_id, entry))
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopped:
                    now = self._publisher._clock()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    wait = self._heap[0][0] - now if self._heap else None
                    self._condition.wait(timeout=wait)
                if self._stopped:
                    return
                _, _, task_id, entry = heapq.heappop(self._heap)
            self._publisher.publish(task_id, entry)
