"""A sweeper job that deletes records older than a retention, at most once every
PRUNE_EVERY_SECONDS, under the sweeper's lock (closed inventory claims, archived task events)."""

from __future__ import annotations

from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)
PRUNE_EVERY_SECONDS = 3600.0


class Retention:
    def __init__(self, prune: Callable[[float], int], what: str, retention_seconds: float,
                 every: float = PRUNE_EVERY_SECONDS):
        self._prune = prune  # deletes what is older than the time given; returns how many
        self._what = what
        self._retention = retention_seconds
        self._every = every
        self._last: float | None = None

    def __call__(self, now: float) -> int:
        if self._last is not None and now - self._last < self._every:
            return 0
        self._last = now
        pruned = self._prune(now - self._retention)
        if pruned:
            log.info(f"{self._what} pruned", pruned=pruned, retention_days=self._retention / 86400)
        return pruned
