"""Retention of archived task events: a job of the sweeper (BATON_TASK_HISTORY_RETENTION_DAYS).

A task's document keeps its newest events; older ones move to the task_history collection/table
(common.engine.core.history), where they would otherwise stay forever. This job deletes archived events
older than the retention, at most once every PRUNE_EVERY_SECONDS, under the sweeper's lock; a
retention of 0 keeps them. The document's own newest events are never touched, so a task still
shows how it ended; a view of it then starts where its oldest kept event does.
"""

from __future__ import annotations

from common.store.tasks.port import TaskStore
from oss.services.retention import PRUNE_EVERY_SECONDS, Retention


class HistoryRetention(Retention):
    def __init__(self, store: TaskStore, retention_seconds: float, every: float = PRUNE_EVERY_SECONDS):
        super().__init__(store.prune_history, "archived task events", retention_seconds, every)

    def close(self) -> None:
        """The task store is the sweeper's own: its owner closes it."""
