"""The broker contract inside one process: for the embedded all-in-one mode and fast tests.

It mirrors what the RabbitMQ adapter promises, so code tested against it behaves the same on a
real broker: priority queues (higher first, FIFO within a priority) with FIFO dead-letter twins,
unroutable publishes rejected, at most `prefetch` unsettled deliveries per subscription, the
handler called on a dispatcher thread of the subscription's own, unsettled deliveries returned
to the queue when the subscription stops. Nothing survives the process: "persistent" here only
means "kept until consumed".
"""

from __future__ import annotations

import heapq
import itertools
import threading
from dataclasses import dataclass, field

import structlog

from common.broker.port import DeliveryHandler, Settled
from common.errors import BrokerError, UnroutableMessage
from common.logging import exception_summary
from common.queues import check_priority, dead_letter_queue, is_dead_letter_queue

log = structlog.get_logger(__name__)

PAUSE_WAIT_SECONDS = 5.0
STOP_JOIN_SECONDS = 10.0


@dataclass
class _Message:
    body: bytes
    priority: int
    message_id: str | None
    redelivered: bool = False


@dataclass
class _Queue:
    """Heap entries are (-priority, sequence, message): sequences grow at the tail, and shrink
    below zero for messages put back at the head of their priority."""

    honours_priority: bool
    heap: list[tuple[int, int, _Message]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.heap)


class InProcessBroker:
    def __init__(self) -> None:
        # One condition for every queue and subscription: simple, and contention is irrelevant
        # at the scale of one process.
        self._cond = threading.Condition()
        self._queues: dict[str, _Queue] = {}
        self._tail = itertools.count(1)
        self._head = itertools.count(-1, -1)
        self._subscriptions: list[_InProcessSubscription] = []

    # -- the Broker port ------------------------------------------------------------------------

    def declare(self, queue: str) -> None:
        with self._cond:
            # Dead-letter twins are plain FIFO queues, as on RabbitMQ (no x-max-priority there),
            # and have no twin of their own.
            if is_dead_letter_queue(queue):
                self._queues.setdefault(queue, _Queue(honours_priority=False))
                return
            self._queues.setdefault(dead_letter_queue(queue), _Queue(honours_priority=False))
            self._queues.setdefault(queue, _Queue(honours_priority=True))

    def publish(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None
    ) -> None:
        check_priority(priority)
        with self._cond:
            if queue not in self._queues:
                raise UnroutableMessage(f"no queue {queue!r}: declare it first")
            self._push(queue, _Message(bytes(body), priority, message_id))

    def publish_soon(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None, then: Settled
    ) -> None:
        """In memory a publish is settled at once: `then` runs before this returns."""
        try:
            self.publish(queue, body, priority=priority, message_id=message_id)
        except BrokerError as exc:
            then(exc)
            return
        then(None)

    def subscribe(
        self, queue: str, handler: DeliveryHandler, *, prefetch: int
    ) -> _InProcessSubscription:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        self.declare(queue)
        subscription = _InProcessSubscription(self, queue, handler, prefetch)
        with self._cond:
            self._subscriptions.append(subscription)
        subscription.start()
        return subscription

    def queue_depth(self, queue: str) -> int:
        with self._cond:
            return len(self._existing(queue))

    def purge(self, queue: str) -> int:
        with self._cond:
            existing = self._existing(queue)
            purged = len(existing)
            existing.heap.clear()
            return purged

    def ping(self) -> None:
        """Always reachable: it lives in this process."""

    def close(self) -> None:
        with self._cond:
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription.stop()

    # -- used by subscriptions, always under self._cond -----------------------------------------

    def _existing(self, queue: str) -> _Queue:
        try:
            return self._queues[queue]
        except KeyError:
            raise BrokerError(f"no queue {queue!r}") from None

    def _push(self, queue: str, message: _Message, *, at_head: bool = False) -> None:
        target = self._queues[queue]
        priority = message.priority if target.honours_priority else 0
        sequence = next(self._head) if at_head else next(self._tail)
        heapq.heappush(target.heap, (-priority, sequence, message))
        self._cond.notify_all()

    def _pop(self, queue: str) -> _Message | None:
        heap = self._queues[queue].heap
        return heapq.heappop(heap)[2] if heap else None

    def _forget(self, subscription: _InProcessSubscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)


class _InProcessDelivery:
    def __init__(self, subscription: _InProcessSubscription, message: _Message):
        self._subscription = subscription
        self._message = message
        self.body = message.body
        self.redelivered = message.redelivered
        self.message_id = message.message_id
        self.priority = message.priority
        self.delivery_count = 0  # one process, one kind of queue: nothing to count

    def ack(self) -> None:
        self._subscription._settle(self, "ack")

    def dead_letter(self) -> None:
        self._subscription._settle(self, "dead_letter")

    def requeue(self) -> None:
        self._subscription._settle(self, "requeue")


class _InProcessSubscription:
    def __init__(
        self, broker: InProcessBroker, queue: str, handler: DeliveryHandler, prefetch: int
    ):
        self._broker = broker
        self._cond = broker._cond
        self._queue = queue
        self._handler = handler
        self._prefetch = prefetch
        self._unsettled: set[_InProcessDelivery] = set()
        self._paused = False
        self._stopping = False
        self._dispatching = False  # between taking a message and the handler returning
        self._thread = threading.Thread(
            target=self._dispatch_loop, name=f"baton-inprocess-{queue}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        with self._cond:
            self._paused = True
            # Once pause() returns the handler is not running and will not run again; unless we
            # ARE the dispatcher (pause from inside the handler), which must not wait on itself.
            if threading.current_thread() is not self._thread:
                self._cond.wait_for(lambda: not self._dispatching, timeout=PAUSE_WAIT_SECONDS)

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(STOP_JOIN_SECONDS)
        with self._cond:
            self._return_unsettled()
            self._broker._forget(self)

    def _return_unsettled(self) -> None:
        for delivery in self._unsettled:
            delivery._message.redelivered = True
            self._broker._push(self._queue, delivery._message, at_head=True)
        self._unsettled.clear()

    def _can_take(self) -> bool:
        return (
            not self._paused
            and len(self._unsettled) < self._prefetch
            and len(self._broker._queues[self._queue]) > 0
        )

    def _dispatch_loop(self) -> None:
        while True:
            with self._cond:
                self._dispatching = False
                self._cond.notify_all()  # a waiting pause() may go on
                self._cond.wait_for(lambda: self._stopping or self._can_take())
                if self._stopping:
                    return
                message = self._broker._pop(self._queue)
                assert message is not None  # _can_take saw one, under the same lock
                delivery = _InProcessDelivery(self, message)
                self._unsettled.add(delivery)
                self._dispatching = True
            self._call_handler(delivery)

    def _call_handler(self, delivery: _InProcessDelivery) -> None:
        try:
            self._handler(delivery)
        except Exception as exc:
            # A handler that raises must not kill the dispatcher; its message is poison until
            # proven otherwise (DESIGN, Reliability 8). Type and place only: see exception_summary.
            log.error("broker.handler_failed", queue=self._queue, error=type(exc).__name__, where=exception_summary(exc))
            delivery.dead_letter()

    def _settle(self, delivery: _InProcessDelivery, action: str) -> None:
        with self._cond:
            if delivery not in self._unsettled:
                # Settled already, or returned to the queue by stop(): like a delivery of a
                # lost RabbitMQ connection, settling it does nothing.
                return
            self._unsettled.remove(delivery)
            message = delivery._message
            if action == "dead_letter" and not is_dead_letter_queue(self._queue):
                # (A twin has no twin: RabbitMQ drops what is rejected there, and so do we.)
                dead = _Message(message.body, message.priority, message.message_id)
                self._broker._push(dead_letter_queue(self._queue), dead)
            elif action == "requeue":
                message.redelivered = True
                self._broker._push(self._queue, message, at_head=True)
            self._cond.notify_all()  # a prefetch slot is free
