"""Deferred mark-sents, checked a batch at a time.

A published outbox entry is marked sent a moment later (common.relay.outbox), and by then the next
module's claim has usually removed it already. Asking the store about each one cost a full read
of its task per transition; asking once for every entry that came due (`TaskStore.in_outbox`,
one light query) costs a fraction of that, and only the entries still there are read and written.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

import structlog

from common.errors import StoreError

log = structlog.get_logger(__name__)
Clock = Callable[[], float]


class Scheduler(Protocol):
    def at(self, due: float, callback: Callable[[], object]) -> None: ...


class DeferredMarks:
    def __init__(
        self,
        in_outbox: Callable[[list[tuple[str, str]]], set[tuple[str, str]]],
        mark_one: Callable[[str, str], None],
        timers: Scheduler,
        clock: Clock,
        delay: float,
        mark_many: Callable[[list[tuple[str, str]]], None] | None = None,
    ):
        """`mark_many`: marks the unsent entries of a check at once (mark_one each otherwise)."""
        self._in_outbox = in_outbox
        self._mark_one = mark_one
        self._mark_many = mark_many
        self._timers = timers
        self._clock = clock
        self._delay = delay
        self._lock = threading.Lock()
        self._due: deque[tuple[float, str, str]] = deque()  # in the order added, so by due time
        self._scheduled = False

    def add(self, task_id: str, dispatch_id: str) -> None:
        due = self._clock() + self._delay
        with self._lock:
            self._due.append((due, task_id, dispatch_id))
            if self._scheduled:
                return
            self._scheduled = True
        self._timers.at(due, self._check)

    def _check(self) -> None:
        """Every entry whose delay has passed (each waits its full delay: a claim had the time
        to remove it), in one query; the rest wait for the next check."""
        now = self._clock()
        with self._lock:
            batch: list[tuple[str, str]] = []
            while self._due and self._due[0][0] <= now:
                _, task_id, dispatch_id = self._due.popleft()
                batch.append((task_id, dispatch_id))
            next_due = self._due[0][0] if self._due else None
            self._scheduled = next_due is not None
        if next_due is not None:
            # Not before half a delay from now: a steady stream of entries would otherwise be
            # checked one query each. An entry waits at most 1.5 delays (under the relay's grace).
            self._timers.at(max(next_due, now + self._delay / 2), self._check)
        if not batch:
            return
        try:
            unsent = self._in_outbox(batch)
        except StoreError as exc:  # published, not marked: the relay publishes them again
            log.warning("mark-sent check failed", entries=len(batch), error=str(exc))
            return
        still = [entry for entry in batch if entry in unsent]
        if self._mark_many is not None and still:
            self._mark_many(still)
            return
        for task_id, dispatch_id in still:
            self._mark_one(task_id, dispatch_id)
