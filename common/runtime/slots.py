"""How many commands of each kind run at once in a module process, and the deliveries waiting
for a slot of their kind.

A delivery takes a slot of its command's kind before its claim, and keeps it until its outcome
is committed. One waiting for a full kind (every process slot busy, say) is parked here, unacked,
while deliveries for the other kinds go ahead; the module gives back one parked too long (see
ModuleRuntime's hold limit), as RabbitMQ's consumer_timeout would otherwise close the channel.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from common.runtime.inbox import TrackedDelivery

Start = Callable[[], None]  # claims and starts the parked delivery's command, on a store thread


@dataclass
class Parked:
    delivery: TrackedDelivery
    start: Start


class Slots:
    def __init__(self, capacity: Mapping[str, int]):
        self._capacity = dict(capacity)
        self._used = {kind: 0 for kind in capacity}
        self._parked: dict[str, deque[Parked]] = {kind: deque() for kind in capacity}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def admit(self, kind: str, delivery: TrackedDelivery, start: Start) -> bool:
        """Take a slot of `kind` (True: the caller starts now) or park the delivery (False)."""
        with self._lock:
            if self._used[kind] < self._capacity[kind]:
                self._used[kind] += 1
                return True
            self._parked[kind].append(Parked(delivery, start))
            return False

    def release(self, kind: str) -> Parked | None:
        """Free a slot of `kind`; a parked delivery of that kind takes it over (returned, for
        the caller to start on a store thread, or give back and release again)."""
        with self._lock:
            parked = self._parked[kind]
            if parked:
                return parked.popleft()
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
        taken: list[TrackedDelivery] = []
        with self._lock:
            for kind, parked in self._parked.items():
                old = [p for p in parked if p.delivery.arrived < cutoff]
                if old:
                    self._parked[kind] = deque(p for p in parked if p.delivery.arrived >= cutoff)
                    taken += [p.delivery for p in old]
        return taken

    def drain(self) -> list[TrackedDelivery]:
        with self._lock:
            taken = [p.delivery for parked in self._parked.values() for p in parked]
            for parked in self._parked.values():
                parked.clear()
        return taken
