"""Work handed from any thread to one thread that must not block (an I/O loop, the event loop),
with one wake-up per batch: waking such a thread writes to its wake-up socket or pipe, a system
call and a thread switch, so calls handed over while it has not yet taken the earlier ones ride
on the wake-up already sent."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class HandOff(Generic[T]):
    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        self._wake_pending = False

    def put(self, item: T) -> bool:
        """Queue `item`; True when the caller must wake the taking thread (none is on its way)."""
        with self._lock:
            self._items.append(item)
            if self._wake_pending:
                return False
            self._wake_pending = True
            return True

    def wake_failed(self) -> None:
        """The wake-up could not be sent: the next `put` sends one."""
        with self._lock:
            self._wake_pending = False

    def take(self) -> deque[T]:
        """Everything queued, in order, on the taking thread; the next `put` wakes it again."""
        with self._lock:
            items, self._items = self._items, deque()
            self._wake_pending = False
        return items
