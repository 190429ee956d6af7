"""A task's history kept bounded (docs/design/stores.md, "Bounded documents"): the document holds
the newest events, older ones live in the store's task_history collection/table, and readers see one
sequence.

Event n of a task (counting from 0 at its creation) is `History[n - HistoryArchived]` while it is
in the document, and the archived row (TaskId, n) once moved. A change that would grow the
document past `HISTORY_LIMIT` first copies its oldest events out (an idempotent upsert by
index), then writes the document without them: a crash or a lost race in between leaves copies
that nobody reads (readers take rows below `HistoryArchived` only) and the next change writes
again, identically.
"""

from __future__ import annotations

from typing import Protocol

from common.engine.document import HistoryEvent, Task, TaskBefore

HISTORY_LIMIT = 100
# Past the limit, the oldest events move out until this many remain: one archive write per
# fifty or so events, not one per change.
HISTORY_KEEP = 50


class HistoryArchive(Protocol):
    def archive_history(self, task_id: str, first_index: int, events: list[HistoryEvent]) -> None: ...

    def archived_history(self, task_id: str, start: int, stop: int) -> list[HistoryEvent]: ...


def overflow(current: Task | TaskBefore, updated: Task, limit: int = HISTORY_LIMIT, keep: int = HISTORY_KEEP) -> int:
    """How many of `updated`'s oldest events to move out before writing it over `current`:
    none while it holds at most `limit`, else all but the newest `keep`.

    Only events already stored may move (those `current` holds, which `updated` kept as its
    prefix): a change's own new events are never archived by a write that may still lose."""
    if len(updated.History) <= limit or updated.HistoryArchived != current.HistoryArchived:
        return 0
    return min(len(updated.History) - keep, current.history_count - current.HistoryArchived)


def trim_history(store: HistoryArchive, current: Task | TaskBefore, updated: Task) -> None:
    """Move `updated`'s oldest events to the archive, in place, before it is written."""
    moving = overflow(current, updated)
    if moving:
        store.archive_history(updated.TaskId, updated.HistoryArchived, updated.History[:moving])
        updated.History = updated.History[moving:]
        updated.HistoryArchived += moving


def events_since(store: HistoryArchive, task: Task, seen: int) -> list[HistoryEvent]:
    """The task's events from number `seen` on, in order, reading the archive only for those
    that left the document since (a watcher that fell behind)."""
    archived = store.archived_history(task.TaskId, seen, task.HistoryArchived) if seen < task.HistoryArchived else []
    return archived + task.History[max(0, seen - task.HistoryArchived):]


def with_full_history(store: HistoryArchive, task: Task) -> Task:
    """A copy of the task holding its whole history (for a view of one task), or the task
    itself when nothing was archived."""
    if not task.HistoryArchived:
        return task
    full = task.clone()
    full.History = events_since(store, task, 0)
    full.HistoryArchived = 0
    return full


def since(store: HistoryArchive, task: Task, seen: int) -> Task:
    """A copy of the task whose History holds its events from number `seen` on: what a watcher
    prints next (then it remembers `task.history_count`)."""
    view = task.clone()
    view.History = events_since(store, task, seen)
    view.HistoryArchived = seen
    return view
