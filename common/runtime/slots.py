"""How many commands of each kind run at once in a module process, and the deliveries waiting
for a slot of their kind.

A delivery takes a slot of its command's kind before its claim, and keeps it until its outcome
is committed. One waiting for a full kind (every process slot busy, say) is parked here, unacked,
while deliveries for the other kinds go ahead; the module gives back one parked too long (see
ModuleRuntime's hold limit), as RabbitMQ's consumer_timeout would otherwise close the channel.
A freed slot goes to the parked delivery the module's order puts first (waiting_line.py: highest
priority, then arrival; overdue ones first), not to the first parked: store threads take
deliveries from the inbox as they arrive, so by the time a slot frees, the order that matters
is this one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from common.runtime.inbox import TrackedDelivery
from common.runtime.waiting_line import Clock, WaitingLine

Start = Callable[[], None]  # claims and starts the parked delivery's command, on a store thread


@dataclass
class Parked:
    delivery: TrackedDelivery
    start: Start


class Slots:
    def __init__(self, capacity: Mapping[str, int], overtake_after: float | None = None,
                 clock: Clock = time.monotonic):
        self._capacity = dict(capacity)
        self._used = {kind: 0 for kind in capacity}
        self._parked: dict[str, WaitingLine[Parked]] = {kind: WaitingLine(overtake_after, clock) for kind in capacity}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def admit(self, kind: str, delivery: TrackedDelivery, start: Start) -> bool:
        """Take a slot of `kind` (True: the caller starts now) or park the delivery (False)."""
        with self._lock:
            if self._used[kind] < self._capacity[kind]:
                self._used[kind] += 1
                return True
            self._parked[kind].put(Parked(delivery, start), delivery.priority, delivery.arrived)
            return False

    def release(self, kind: str) -> Parked | None:
        """Free a slot of `kind`; a parked delivery of that kind takes it over (returned, for
        the caller to start on a store thread, or give back and release again)."""
        with self._lock:
            parked = self._parked[kind].take()
            if parked is not None:
                return parked
            self._used[kind] -= 1
            self._idle.notify_all()
            return None

    def in_use(self) -> int:
        with self._lock:
            return sum(self._used.values())

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no slot is in use (every command ended and its outcome was committed)."""
        with self._idle:
            return self._idle.wait_for(lambda: not any(self._used.values()), timeout)

    def take_parked_since(self, cutoff: float) -> list[TrackedDelivery]:
        """Remove and return parked deliveries that arrived before `cutoff` (monotonic seconds)."""
        with self._lock:
            return [p.delivery for parked in self._parked.values() for p in parked.take_arrived_before(cutoff)]

    def drain(self) -> list[TrackedDelivery]:
        with self._lock:
            return [p.delivery for parked in self._parked.values() for p in parked.drain()]
