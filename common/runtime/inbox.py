"""Deliveries handed over by the broker's I/O thread, waiting for a store thread.

The I/O thread must never block, so it only appends here. A delivery is acked only once its step
is claimed; one left waiting too long (here, or parked for a slot: slots.py) would hit RabbitMQ's
consumer_timeout, so the module gives such deliveries back and pauses consuming until a slot is
free (see ModuleRuntime).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from common.broker.port import Delivery
from common.runtime.waiting_line import Clock, WaitingLine

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
        return int(getattr(self.inner, "priority", 0) or 0)

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
    """What the broker handed over and no store thread took yet, in the module's order
    (waiting_line.py: highest priority first, then arrival; overdue ones first). The broker
    orders a classic queue's backlog by priority, but not what it has already handed over (up to
    the prefetch), and a quorum queue's bands arrive side by side: this is where they are put in
    order."""

    def __init__(self, overtake_after: float | None = None, clock: Clock = time.monotonic) -> None:
        self._line: WaitingLine[tuple[TrackedDelivery, Handle]] = WaitingLine(overtake_after, clock)
        self._clock = clock
        self._ready = threading.Lock()

    def put(self, delivery: Delivery, handle: Handle) -> None:
        tracked = TrackedDelivery(delivery, arrived=self._clock())
        with self._ready:
            self._line.put((tracked, handle), tracked.priority, tracked.arrived)

    def take_nowait(self) -> tuple[TrackedDelivery, Handle] | None:
        with self._ready:
            return self._line.take()

    def take_waiting_since(self, cutoff: float) -> list[TrackedDelivery]:
        """Remove and return deliveries that arrived before `cutoff` (monotonic seconds)."""
        with self._ready:
            return [tracked for tracked, _ in self._line.take_arrived_before(cutoff)]

    def drain(self) -> list[TrackedDelivery]:
        with self._ready:
            return [tracked for tracked, _ in self._line.drain()]

    def __len__(self) -> int:
        with self._ready:
            return len(self._line)
