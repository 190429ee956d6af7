"""What caller threads hand the publisher's I/O thread, and the inbox they hand it over in.

Each call carries its own future (the caller waits on it, the I/O thread resolves it) and its own
deadline (the I/O thread fails it once that passes). The inbox is the one structure both sides
touch, always under its lock; everything else of the publisher belongs to its I/O thread.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pika
from pika.channel import Channel

from common.errors import BrokerClosed, BrokerError

# The header that tells which publish a Basic.Return is about (returns carry no delivery tag).
PUBLISH_ID_HEADER = "x-baton-publish-id"

# An operation starts on the I/O thread with the operations channel and a `finish(result)`.
Start = Callable[[Channel, Callable[[Any], None]], None]


@dataclass(eq=False, kw_only=True)
class Call:
    what: str  # "publish to q1": the start of every error message about it
    give_up_at: float  # time.monotonic() after which the call fails with BrokerError
    retry: bool = True  # run again on a new connection when the connection is lost
    future: Future[Any] = field(default_factory=Future, repr=False)

    @property
    def done(self) -> bool:
        return self.future.done()

    def succeed(self, result: Any = None) -> None:
        if not self.future.done():  # failed already by its deadline: the caller has been told
            self.future.set_result(result)

    def fail(self, error: BrokerError) -> None:
        if not self.future.done():
            self.future.set_exception(error)


@dataclass(eq=False, kw_only=True)
class Publish(Call):
    queue: str
    body: bytes
    properties: pika.BasicProperties  # carries the publish id in its headers
    publish_id: str


@dataclass(eq=False, kw_only=True)
class Operation(Call):
    start: Start


class Inbox:
    """Calls not yet taken by the I/O thread, in arrival order (retries go back to the front)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._publishes: deque[Publish] = deque()
        self._operations: deque[Operation] = deque()
        self._remembered: set[str] = set()
        self._open = True

    def put(self, call: Call) -> bool:
        """Queue `call`; True if the I/O thread must be woken for it (nothing of its kind was
        waiting: otherwise the thread takes it along with those). BrokerError once shut."""
        with self._lock:
            if not self._open:
                raise BrokerClosed(f"{call.what}: the broker adapter is closed")
            calls = self._queue_of(call)
            calls.append(call)  # type: ignore[arg-type]
            return len(calls) == 1

    def put_back(self, calls: Iterable[Call]) -> None:
        """Return calls to the front, keeping their order (they were taken first)."""
        with self._lock:
            for call in reversed(list(calls)):
                self._queue_of(call).appendleft(call)  # type: ignore[arg-type]

    def take_publishes(self) -> list[Publish]:
        with self._lock:
            taken = list(self._publishes)
            self._publishes.clear()
            return taken

    def take_operation(self) -> Operation | None:
        with self._lock:
            return self._operations.popleft() if self._operations else None

    def has_work(self) -> bool:
        with self._lock:
            return bool(self._publishes or self._operations)

    def remove(self, doomed: Callable[[Call], bool]) -> list[Call]:
        """Take out (and return) the waiting calls for which `doomed` is true."""
        removed: list[Call] = []
        with self._lock:
            for calls in (self._publishes, self._operations):
                kept: list[Any] = []
                for call in calls:
                    (removed if doomed(call) else kept).append(call)
                calls.clear()
                calls.extend(kept)
        return removed

    def shut(self) -> list[Call]:
        """Refuse every later call; return those still waiting."""
        with self._lock:
            self._open = False
        return self.remove(lambda call: True)

    def remember(self, queue: str) -> None:
        with self._lock:
            self._remembered.add(queue)

    def remembered(self) -> list[str]:
        with self._lock:
            return sorted(self._remembered)

    def _queue_of(self, call: Call) -> deque[Any]:
        return self._publishes if isinstance(call, Publish) else self._operations
