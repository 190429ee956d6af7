"""A module process's view of its own drain record (docs/design/operations.md): read before a claim,
at most once a second, so a busy module costs the store one read a second, not one per delivery.

An unreachable store keeps the last answer: the claim that follows needs the store anyway, and
fails and gives the delivery back on its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from common.errors import StoreError
from common.store.side.drains import ModuleDrain, ModuleDrains

log = structlog.get_logger(__name__)
READ_EVERY_SECONDS = 1.0


class DrainWatch:
    def __init__(self, drains: ModuleDrains, module: str, clock: Callable[[], float] = time.monotonic,
                 every: float = READ_EVERY_SECONDS):
        self._drains = drains
        self._module = module
        self._clock = clock
        self._every = every
        self._lock = threading.Lock()  # deliveries are handled on several threads
        self._known: ModuleDrain | None = None
        self._read_at: float | None = None

    def current(self) -> ModuleDrain | None:
        """The module's record as read at most `every` seconds ago (None: never drained)."""
        with self._lock:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= self._every:
                try:
                    self._known = self._drains.get(self._module)
                except StoreError as exc:
                    log.warning("could not read the module's drain record; keeping the last one", error=str(exc))
                self._read_at = now
            return self._known

    def drained(self) -> ModuleDrain | None:
        """The record when the module is drained now, else None."""
        known = self.current()
        return known if known is not None and known.Drained else None

    def close(self) -> None:
        self._drains.close()
