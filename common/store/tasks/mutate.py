"""The optimistic read-change-write loop every task change goes through."""

from __future__ import annotations

from collections.abc import Callable

from common.errors import StoreError
from common.engine.changes import Refusal, add_notifications, trim_history
from common.engine.document import Task, TaskBefore, lend_to_change
from common.store.tasks.ended import ended
from common.store.tasks.port import TaskStore
from common.store.tasks.turns import task_turn

Change = Callable[[Task], "Task | Refusal"]


def mutate(
    store: TaskStore, task_id: str, change: Change, max_tries: int = 100, *, known: Task | None = None
) -> Task | Refusal:
    """Apply `change` to the current task with one compare-and-set, re-reading on a lost race.

    Returns the task as written, or the Refusal of `change` (nothing written). A missing task is
    a Refusal too: a message may outlive its task's document in a test store or after a purge.
    `change` must be pure: it may run several times. A change of the task's status gets its
    webhook entries here (common.engine.core.notifications), so no transition can forget them.

    `known`: the task as this process last wrote it (a module's claim). The first try applies
    the change to it without reading: if nobody wrote since, the version filter matches and a
    read is saved; if somebody did (a lease renewal, an operator), the write matches nothing and
    the loop reads as usual. A refusal computed on `known` is not trusted: the stored task may
    say otherwise, so it is computed again on a fresh read. The caller gives `known` up: like a
    task read here, nobody else holds it, so the change edits it in place instead of copying it
    (`common.engine.document.lend_to_change`); use the task returned.
    """
    with task_turn(task_id):  # this process's threads take turns (common.store.tasks.turns)
        return _mutate(store, task_id, change, max_tries, known)


def _mutate(store: TaskStore, task_id: str, change: Change, max_tries: int, known: Task | None) -> Task | Refusal:
    for _ in range(max_tries):
        guessed = known is not None
        current, known = (known, None) if guessed else (store.get(task_id), None)
        if current is None:
            return Refusal(f"no task {task_id}")
        before = TaskBefore.of(current)  # the change may edit `current` itself: what the write needs of it
        lend_to_change(current)
        try:
            updated = change(current)
        finally:
            lend_to_change(None)
        if isinstance(updated, Refusal):
            if guessed:
                continue
            return updated
        updated.Version = before.Version + 1
        add_notifications(before, updated)  # webhooks of a status change: in the same write
        trim_history(store, before, updated)  # the document stays bounded (common.engine.core.history)
        if store.compare_and_set(updated, before.Version):
            updated.mark_fresh(before)  # what a flush publishes (common.relay.outbox)
            ended(store, before.TaskStatus, updated)  # this write won: its process counts the end
            return updated
    raise StoreError(f"task {task_id}: gave up after {max_tries} lost compare-and-set races")
