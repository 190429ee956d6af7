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
    def __init__(self) -> None:
        self._items: deque[tuple[TrackedDelivery, Handle]] = deque()
        self._ready = threading.Lock()

    def put(self, delivery: Delivery, handle: Handle) -> None:
        with self._ready:
            self._items.append((TrackedDelivery(delivery), handle))

    def take_nowait(self) -> tuple[TrackedDelivery, Handle] | None:
        with self._ready:
            return self._items.popleft() if self._items else None

    def take_waiting_since(self, cutoff: float) -> list[TrackedDelivery]:
        """Remove and return deliveries that arrived before `cutoff` (monotonic seconds)."""
        with self._ready:
            old = [i for i in self._items if i[0].arrived < cutoff]
            self._items = deque(i for i in self._items if i[0].arrived >= cutoff)
        return [delivery for delivery, _ in old]

    def drain(self) -> list[TrackedDelivery]:
        with self._ready:
            items = [i[0] for i in self._items]
            self._items.clear()
        return items

    def __len__(self) -> int:
        with self._ready:
            return len(self._items)
