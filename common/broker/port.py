"""The broker port. Nothing above the adapters sees pika or its types.

Every queue is durable and has a dead-letter twin (`<queue>.dead`, see common.queues), declared
together by `declare`. How the adapter lays a queue out on its broker (one priority queue, or one
replicated queue per priority band) is its own business: callers name the port's queues only. Messages are persistent. `publish` returns only once the broker confirmed
the message (`publish_soon` returns at once and tells a callback), and a message no queue takes
is an error (mandatory), never a silent drop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from common.errors import BrokerError

# What a publish that does not wait is told once it is settled: None when the broker confirmed
# it, else why not (UnroutableMessage, BrokerError).
Settled = Callable[[BrokerError | None], None]


class Delivery(Protocol):
    """One received message. Settle it exactly once with ack, dead_letter or requeue.

    All three are safe to call from any thread. Settling a delivery whose connection has since
    been lost does nothing: the broker redelivers it, which the protocol tolerates.
    """

    body: bytes
    redelivered: bool
    message_id: str | None  # as given to publish
    priority: int
    # How often the broker handed this message out before without it being settled (a consumer
    # gone, a requeue): quorum queues count it and dead-letter past their delivery limit; 0
    # where the broker does not count.
    delivery_count: int

    def ack(self) -> None: ...

    def dead_letter(self) -> None:
        """Reject without requeue: the broker moves it to the queue's dead-letter twin."""

    def requeue(self) -> None:
        """Give it back to its queue for another consumer."""


class Subscription(Protocol):
    def pause(self) -> None:
        """Stop receiving new deliveries (those already received stay ours to settle)."""

    def resume(self) -> None: ...

    def stop(self) -> None:
        """Cancel the consumer and stop its I/O thread; unsettled deliveries go back to the queue."""


DeliveryHandler = Callable[[Delivery], None]


class Broker(Protocol):
    def declare(self, queue: str) -> None:
        """Declare the durable queue and its dead-letter twin. Idempotent."""

    def publish(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None
    ) -> None:
        """Publish persistently and wait for the broker's confirm. Thread-safe.

        Raises UnroutableMessage if no queue took it, BrokerError if it was not confirmed
        (after the adapter's own reconnect attempts).
        """

    def publish_soon(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None, then: Settled
    ) -> None:
        """Publish as `publish` does, without waiting: return at once and call `then` once the
        broker confirmed the message (None) or it failed (the error `publish` would raise).

        `then` runs on the adapter's I/O thread (or at once, in the caller's, when the adapter
        is closed): it must be quick and must not call the broker. Thread-safe.
        """

    def subscribe(self, queue: str, handler: DeliveryHandler, *, prefetch: int) -> Subscription:
        """Consume `queue` with at most `prefetch` unsettled deliveries.

        `handler` runs on the adapter's I/O thread and must not block: hand the delivery to a
        worker. The adapter reconnects by itself (capped backoff) after a connection loss or a
        broker restart, and resumes consuming.
        """

    def queue_depth(self, queue: str) -> int:
        """Messages ready in the queue (not counting unacknowledged ones)."""

    def purge(self, queue: str) -> int: ...

    def ping(self) -> None:
        """Raise BrokerError if the broker cannot be reached."""

    def close(self) -> None: ...
