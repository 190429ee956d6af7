"""The order in which a module runs the deliveries it holds: the inbox's, and each kind's parked
ones (slots.py) when a slot frees.

Highest message priority first, then in arrival order, as a classic priority queue hands out
its backlog: work in flight before new tasks, and task priority within each. But a delivery that
has waited `overtake_after` seconds goes before every one that has not (the oldest first): a
steady stream of higher priorities, more than the module's slots can run, would otherwise keep
a lower band waiting for good (docs/design/queues.md). The module sets it to half its
hold limit, so that an overdue delivery runs at the next free slot instead of being given back.

Not thread-safe: its owner holds a lock around every call. Times are monotonic seconds, given by
the caller (each entry's arrival) and by `clock` (now), so the order can be tested without
waiting.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from common.queues import QUEUE_MAX_PRIORITY

T = TypeVar("T")
Clock = Callable[[], float]


def overtake_after(hold_limit_seconds: float) -> float:
    """When a held delivery is overdue: half the hold limit, which gives it the second half to
    find a free slot before the module gives it back to the broker."""
    return hold_limit_seconds / 2


class WaitingLine(Generic[T]):
    def __init__(self, overtake_after: float | None = None, clock: Clock = time.monotonic):
        """`overtake_after`: None keeps the order strict (priority, then arrival) for good."""
        # One first-in-first-out line per priority: each line's head is its oldest entry.
        self._lines: list[deque[tuple[float, T]]] = [deque() for _ in range(QUEUE_MAX_PRIORITY + 1)]
        self._overtake_after = overtake_after
        self._clock = clock

    def put(self, item: T, priority: int, arrived: float) -> None:
        level = min(max(int(priority or 0), 0), QUEUE_MAX_PRIORITY)
        self._lines[level].append((arrived, item))

    def take(self) -> T | None:
        """The next entry to run: the oldest if it is overdue, else the highest priority's oldest."""
        heads = [line for line in self._lines if line]
        if not heads:
            return None
        line = heads[-1]
        if self._overtake_after is not None:
            oldest = min(heads, key=lambda candidate: candidate[0][0])
            if self._clock() - oldest[0][0] >= self._overtake_after:
                line = oldest
        return line.popleft()[1]

    def take_arrived_before(self, cutoff: float) -> list[T]:
        """Remove and return the entries that arrived before `cutoff`."""
        taken: list[T] = []
        for n, line in enumerate(self._lines):
            taken.extend(item for arrived, item in line if arrived < cutoff)
            self._lines[n] = deque(entry for entry in line if entry[0] >= cutoff)
        return taken

    def drain(self) -> list[T]:
        taken = [item for line in self._lines for _, item in line]
        for line in self._lines:
            line.clear()
        return taken

    def __len__(self) -> int:
        return sum(len(line) for line in self._lines)
