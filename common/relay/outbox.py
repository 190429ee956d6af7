"""Publishing what a committed change put in a task's outbox, then marking it sent.

Used by OSS (the roots of a new task), by modules (the next steps) and by the sweeper's relay
(any entry left unsent by a crash). Publishing twice is harmless: the claim fences duplicates.
Entries of the sub-flow kinds go to the store instead of the broker (common.relay.child_relay), so do
those of a gate's own table (its relay, found by common.store.gates: the lock's, the rate's); all
are marked sent at once: no claim will remove them.
Webhook entries go to the webhook deliverer where there is one (the sweeper's,
common.relay.webhooks); elsewhere they wait for the sweeper's relay.

Marking sent is deferred: usually the next module's claim has removed the entry by then (see
transitions.claim), so the mark costs only a share of one light query for a batch of entries
(common.relay.outbox_marks), instead of a write, off the step's critical path.
An entry whose mark never happens (this process died) is published again by the relay and
fenced by the claim.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from typing import Any

import structlog

from common.broker.port import Broker
from common.relay.child_relay import ChildRelay
from common.relay.encoding import encode
from common.relay.item_outbox import ItemOutbox
from common.relay.items import ItemRelay
from common.store.items.open import open_item_store_for
from common.store.items.port import ItemStore
from common.errors import BrokerClosed, BrokerError, StoreClosed, StoreError, UnreadableTask
from common.logging import exception_summary
from common.metrics import RuntimeMetrics
from common.engine.codes import OutboxKind
from common.engine.document import OutboxEntry, Task
from common.engine.outbox import Flusher, flusher_of
from common.relay.outbox_marks import DeferredMarks
from common.store.factory import adapter_class
from common.store.gates import gate_table, gate_tables
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.engine.changes import Timing, mark_sent
from common.relay.webhooks import WebhookDeliverer

log = structlog.get_logger(__name__)
Clock = Callable[[], float]
DEFAULT_MARK_DELAY = 1.0  # keep it well under the relay's grace period


# Outbox entries due within this many seconds get an in-process timer; later ones wait for the
# relay (the sweeper publishes every entry past its due time), which already covers restarts.
TIMER_HORIZON = 300.0


def mark_delay_for(relay_grace: float) -> float:
    """Mark sent before the relay would consider the entry lost and publish it again."""
    return min(DEFAULT_MARK_DELAY, relay_grace / 2)


class OutboxPublisher:
    def __init__(
        self,
        store: TaskStore,
        broker: Broker,
        clock: Clock,
        mark_delay: float = DEFAULT_MARK_DELAY,
        metrics: RuntimeMetrics | None = None,
        *,
        lease: float = 30.0,
        redeliver_after: float = 60.0,
        webhooks: WebhookDeliverer | None = None,
        items: ItemStore | None = None,
    ):
        self._webhooks = webhooks
        self._metrics = metrics
        self.closed = False  # this process closed the broker or store under it: it is shutting down
        timing = lambda: Timing(clock(), lease, redeliver_after)  # noqa: E731
        self._children = ChildRelay(store, timing, self.flush)
        # Each gate's own relay (common.store.gates), for the outbox entries its table carries.
        self.gate_relays = {table.flusher: adapter_class(table.relay)(store, timing, self.flush)
                            for table in gate_tables() if table.relay is not None and table.flusher is not None}
        self._store = store
        self._broker = broker
        self._clock = clock
        self._timers = _Timers(clock)
        self._marks = DeferredMarks(store.in_outbox, self._mark_sent, self._timers, clock, mark_delay,
                                    mark_many=self._mark_all_sent)
        # The items of steps over records (docs/design/item-records.md), beside the tasks.
        self.item_store = items if items is not None else open_item_store_for(store)
        self.item_outbox = ItemOutbox(self.item_store, broker, clock, self._timers.at, mark_delay, TIMER_HORIZON)
        self.items = ItemRelay(store, self.item_store, timing, self.flush, self.item_outbox.flush)
        self._relays = {Flusher.CHILDREN: self._children, Flusher.ITEMS: self.items, **self.gate_relays}

    @staticmethod
    def owed(task: Task) -> list[OutboxEntry]:
        """What a flush of `task` publishes: not an entry published already by the change that
        added it (its claim has not come yet), or left to the relay by a writer that died:
        publishing every unclaimed entry at every commit sent a for_each's items again and again
        (a hundred items left a thousand duplicates in the queue, in front of every other task's
        steps)."""
        return [e for e in task.Outbox if e.Kind != OutboxKind.PUBLISH or task.is_fresh(e)]

    def flush(self, task: Task, before_mark_sent: Callable[[], None] | None = None,
              owed: list[OutboxEntry] | None = None) -> None:  # fmt: skip
        """Publish the entries the change that wrote `task` added (every entry of a task not
        written by common.store.tasks.mutate), without waiting for the broker's confirms: the caller
        goes on (its next step, its answer). Entries due later (a retry's backoff) wait in a
        timer. Whatever fails stays in the outbox for the relay, as with `publish`.

        `owed`: `owed(task)` as the caller took it, before it let another thread's change edit
        the task (common/runtime/last_written.py); the flush then reads nothing of it but its id."""
        now = self._clock()
        task_id = task.TaskId
        for entry in self.owed(task) if owed is None else owed:
            if entry.DueAt > now:
                if entry.DueAt - now <= TIMER_HORIZON:
                    self._timers.at(entry.DueAt, lambda e=entry: self.publish(task_id, e))
                # Due later (a start_at days away): the relay publishes it when due. A timer for
                # it would hold memory for as long (any client can ask for year 9999) for no gain.
            elif entry.Kind == OutboxKind.PUBLISH:
                self._publish_soon(task_id, entry, before_mark_sent)
            else:  # a webhook, a lock or a child's signal: no broker confirm to wait for
                self.publish(task_id, entry, before_mark_sent)

    def publish(
        self,
        task_id: str,
        entry: OutboxEntry,
        before_mark_sent: Callable[[], None] | None = None,
        *,
        mark_now: bool = False,
    ) -> bool:
        """Publish one entry and (soon) mark it sent. False if it stays for the relay to retry."""
        flusher = flusher_of(entry.Kind)
        if flusher is Flusher.WEBHOOK:  # never an HTTP call here: the deliverer's thread removes it
            if self._webhooks is not None:
                self._webhooks.offer(task_id, entry)
            return False
        if flusher is not Flusher.BROKER:
            if not self._relays[flusher].apply(task_id, entry):
                return False
            self._mark_sent(task_id, entry.DispatchId)
            return True
        try:
            self._broker.publish(
                entry.Queue, encode(entry), priority=entry.Priority, message_id=entry.DispatchId
            )
        except BrokerError as exc:
            self._published(task_id, entry, before_mark_sent, exc)
            return False
        self._published(task_id, entry, before_mark_sent, None, mark_now=mark_now)
        return True

    def _publish_soon(self, task_id: str, entry: OutboxEntry, before_mark_sent: Callable[[], None] | None) -> None:
        self._broker.publish_soon(
            entry.Queue, encode(entry), priority=entry.Priority, message_id=entry.DispatchId,
            then=lambda error: self._published(task_id, entry, before_mark_sent, error),
        )

    def _published(
        self,
        task_id: str,
        entry: OutboxEntry,
        before_mark_sent: Callable[[], None] | None,
        error: BrokerError | None,
        *,
        mark_now: bool = False,
    ) -> None:
        """The broker confirmed the entry (or failed it): mark it sent, now or soon. Runs on the
        broker's I/O thread after a `publish_soon`: a deferred mark is only a note in memory."""
        if error is not None:
            # Closed by this process's shutdown: not an outage, and the next process's relay
            # publishes it. The owner (a sweeper) reads `closed` to end its rounds.
            self.closed = self.closed or isinstance(error, BrokerClosed)
            say = log.debug if isinstance(error, BrokerClosed) else log.warning
            say("publish failed; the outbox relay will retry", task_id=task_id, queue=entry.Queue, error=str(error))
            return
        if self._metrics:
            self._metrics.outbox_lag.observe(max(0.0, self._clock() - entry.DueAt))
        if before_mark_sent:
            before_mark_sent()
        if mark_now:
            self._mark_sent(task_id, entry.DispatchId)
        else:
            self._marks.add(task_id, entry.DispatchId)

    def relay_of(self, gate: str) -> Any:
        """The relay of the table `gate` keeps of its own (common.store.gates), KeyError naming it
        when no folder declares one."""
        return self.gate_relays[gate_table(gate).flusher]

    @property
    def locks(self) -> Any:
        """The lock gate's relay (its table, its reclaim), as the lock flow tests reach it."""
        return self.relay_of("lock")

    def stop(self) -> None:
        self._timers.stop()
        if self._webhooks is not None:
            self._webhooks.stop()
        for relay in self.gate_relays.values():
            relay.close()
        self.item_store.close()

    def _mark_sent(self, task_id: str, dispatch_id: str) -> None:
        try:
            if self._store.drop_sent(task_id, dispatch_id):  # in place, where the store can
                return
            mutate(self._store, task_id, lambda t: mark_sent(t, dispatch_id))
        except (StoreError, UnreadableTask) as exc:  # published, not marked: the relay retries
            self.closed = self.closed or isinstance(exc, StoreClosed)
            (log.debug if isinstance(exc, StoreClosed) else log.warning)("mark-sent failed", task_id=task_id, error=str(exc))

    def _mark_all_sent(self, entries: list[tuple[str, str]]) -> None:
        """Each entry as _mark_sent marks it; those the store edits in place a batch of writes at a
        time (a commit each cost as much again)."""
        try:
            dropped = self._store.drop_sent_many(entries)
        except StoreError as exc:  # maybe some written: one at a time finds an entry gone, and writes nothing
            self.closed = self.closed or isinstance(exc, StoreClosed)
            if isinstance(exc, StoreClosed):
                return
            dropped = set()
        for task_id, dispatch_id in entries:
            if (task_id, dispatch_id) not in dropped:
                self._mark_sent(task_id, dispatch_id)


class _Timers:
    """One thread running callbacks at their due times, so a wait never holds a worker slot."""

    def __init__(self, clock: Clock):
        self._clock = clock
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._condition = threading.Condition()
        self._counter = 0
        self._stopped = False
        self._thread: threading.Thread | None = None

    def at(self, due: float, callback: Callable[[], object]) -> None:
        with self._condition:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="baton-outbox-timers", daemon=True)
                self._thread.start()
            self._counter += 1
            heapq.heappush(self._heap, (due, self._counter, callback))
            self._condition.notify()

    def stop(self, timeout: float = 10.0) -> None:
        """No callback runs after this returns (within `timeout`): the caller may close the store.

        A callback already running finishes first; one that is only due is dropped (the relay
        publishes or marks what it would have)."""
        with self._condition:
            self._stopped = True
            self._condition.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopped:
                    now = self._clock()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    # Bounded: a wait past the platform's time_t (year 9999) raised OverflowError
                    # and ended this thread, and with it every later mark-sent of the process.
                    wait = min(self._heap[0][0] - now, TIMER_HORIZON) if self._heap else None
                    self._condition.wait(timeout=wait)
                if self._stopped:
                    return
                _, _, callback = heapq.heappop(self._heap)
            try:
                callback()
            except Exception as exc:  # one failed callback must not stop the others
                log.error("outbox timer callback failed", error=type(exc).__name__, where=exception_summary(exc))
