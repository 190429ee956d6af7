"""Deliveries handed over by the broker's I/O thread, waiting for a store thread.

The I/O thread must never block, so it only appends here. A delivery is acked only once its step
is claimed; one left waiting too long (here, or parked for a slot: slots.py) would hit RabbitMQ's
consumer_timeout, so the module gives such deliveries back and pauses consuming until a slot is
free (see ModuleRuntime).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from common.broker.port import Delivery
from common.queues import QUEUE_MAX_PRIORITY

Handle = Callable[[Delivery], None]


@dataclass
class TrackedDelivery:
    """Wraps a delivery to know whether a handler settled it (so a crash never strands one)."""

    inner: Delivery
    settled: bool = False
    arrived: float = field(default_factory=time.monotonic)

    @property
    def body(self) -> bytes:
        return self.inner.body

    @property
    def redelivered(self) -> bool:
        return self.inner.redelivered

    @property
    def priority(self) -> int:
        return self.inner.priority

    @property
    def delivery_count(self) -> int:
        return getattr(self.inner, "delivery_count", 0)

    def ack(self) -> None:
        self._settle(self.inner.ack)

    def dead_letter(self) -> None:
        self._settle(self.inner.dead_letter)

    def requeue(self) -> None:
        self._settle(self.inner.requeue)

    def _settle(self, action: Callable[[], None]) -> None:
        if not self.settled:
            self.settled = True
            action()


class Inbox:
    """Highest message priority first, then in arrival order. The broker orders a classic queue's
    backlog by priority, but not what it has already handed over (up to the prefetch), and a
    quorum queue's bands arrive side by side: this is where they are put in order."""

    def __init__(self) -> None:
        self._items: list[deque[tuple[TrackedDelivery, Handle]]] = [deque() for _ in range(QUEUE_MAX_PRIORITY + 1)]
        self._ready = threading.Lock()

    def put(self, delivery: Delivery, handle: Handle) -> None:
        level = min(max(int(getattr(delivery, "priority", 0) or 0), 0), QUEUE_MAX_PRIORITY)
        with self._ready:
            self._items[level].append((TrackedDelivery(delivery), handle))

    def take_nowait(self) -> tuple[TrackedDelivery, Handle] | None:
        with self._ready:
            for items in reversed(self._items):
                if items:
                    return items.popleft()
        return None

    def take_waiting_since(self, cutoff: float) -> list[TrackedDelivery]:
        """Remove and return deliveries that arrived before `cutoff` (monotonic seconds)."""
        old: list[TrackedDelivery] = []
        with self._ready:
            for n, items in enumerate(self._items):
                old.extend(i[0] for i in items if i[0].arrived < cutoff)
                self._items[n] = deque(i for i in items if i[0].arrived >= cutoff)
        return old

    def drain(self) -> list[TrackedDelivery]:
        with self._ready:
            items = [i[0] for level in self._items for i in level]
            for level in self._items:
                level.clear()
        return items

    def __len__(self) -> int:
        with self._ready:
            return sum(len(level) for level in self._items)
