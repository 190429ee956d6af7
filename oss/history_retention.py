"""Retention of archived task events: a job of the sweeper (BATON_TASK_HISTORY_RETENTION_DAYS).

A task's document keeps its newest events; older ones move to the task_history collection/table
(common.history), where they would otherwise stay forever. This job deletes archived events
older than the retention, at most once every PRUNE_EVERY_SECONDS, under the sweeper's lock; a
retention of 0 keeps them. The document's own newest events are never touched, so a task still
shows how it ended; a view of it then starts where its oldest kept event does.
"""

from __future__ import annotations

import structlog

from common.store.port import TaskStore
from oss.claim_retention import PRUNE_EVERY_SECONDS

log = structlog.get_logger(__name__)


class HistoryRetention:
    def __init__(self, store: TaskStore, retention_seconds: float, every: float = PRUNE_EVERY_SECONDS):
        self._store = store
        self._retention = retention_seconds
        self._every = every
        self._last: float | None = None

    def __call__(self, now: float) -> int:
        if self._last is not None and now - self._last < self._every:
            return 0
        self._last = now
        pruned = self._store.prune_history(now - self._retention)
        if pruned:
            log.info("archived task events pruned", pruned=pruned, retention_days=self._retention / 86400)
        return pruned
