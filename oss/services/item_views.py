"""A `for_each` step's items as the API, the CLI and the console show them: the I/O shell around
common.engine.kinds.for_each.item_views. A step over records is read from its item store (one grouped,
indexed count for the counts; one indexed page for the items); an inline step from the task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.engine.document import Run, Task
from common.engine.views import (
    IN_FLIGHT_LOOK,
    MAX_PAGE,
    ItemQuery,
    counts_view,
    inline_counts,
    inline_page,
    is_fan_out,
    item_doc,
    keeps_records,
    owed_page,
    paged,
    records_counts,
    stored_states,
)
from common.engine.states import StepState
from common.secrets.task_views import masked_items

if TYPE_CHECKING:
    from common.store.items.port import ItemStore


def item_counts(task: Task, items: ItemStore | None) -> dict[int, dict[str, int]]:
    """Each started fan-out step's items by state: cursor -> {state: count}. Without an item
    store, a step over records is left out (it is shown without counts)."""
    counts = {}
    for cursor, step in enumerate(task.Steps):
        if not is_fan_out(step):
            continue
        if keeps_records(step):
            if items is None:
                continue
            counts[cursor] = counts_view(records_counts(step, items.count_by_state(task.TaskId, task.Generation, cursor)))
        else:
            counts[cursor] = counts_view(inline_counts(step))
    return counts


def item_attempts(task: Task, items: ItemStore | None) -> dict[int, tuple[int, int]]:
    """The sums of the items' attempts and rollback attempts of each step over records that needs
    them read (cursor -> (Attempts, RollbackAttempts)): what the step shows as its own, as a step
    keeping its items inline does (its outcome is its items': common.engine.core.step_summary).
    A step settles with them kept as its own (common.engine.kinds.for_each.records.settle): they
    are read while its items still have work, or for a step settled before it kept them (none,
    though it has items). Applied to the view, never written back."""
    if items is None:
        return {}
    return {cursor: items.attempt_sums(task.TaskId, task.Generation, cursor)
            for cursor, step in enumerate(task.Steps)
            if keeps_records(step) and (step.ItemsOpen or (step.ItemCount and not step.Attempts
                                                           and not step.RollbackAttempts))}


def item_runs(task: Task, items: ItemStore | None) -> list[Run]:
    """The runs of the items in flight of the task's steps over records that still have work: a
    view derives from them what it derives from the task's own runs (`WaitingFor` of a drain,
    `Waiting` for a module none serves). One small indexed page per such step
    (common.engine.kinds.for_each.item_drain.IN_FLIGHT_LOOK)."""
    runs: list[Run] = []
    if items is None:
        return runs
    states = [StepState.RUNNING, StepState.ROLLING_BACK]
    for cursor, step in enumerate(task.Steps):
        if keeps_records(step) and step.ItemsOpen:
            page = items.page_items(task.TaskId, task.Generation, cursor, limit=IN_FLIGHT_LOOK, states=states)
            runs += [record.Run for record in page if record.Run is not None]
    return runs


def item_page(task: Task, cursor: int, query: ItemQuery, items: ItemStore) -> dict[str, Any]:
    """One page of the step's items, masked, and the `after` that asks for the next one."""
    step = task.Steps[cursor]
    if keeps_records(step):
        found = [item_doc(r.Item, r, step) for r in _records_page(task, cursor, query, items)]
        count = step.ItemCount or 0
        owed = owed_page(task, cursor, query) if not found else None
        if owed is not None and not items.count_by_state(task.TaskId, task.Generation, cursor):
            found = owed  # opened a moment ago: nothing stored yet, the items are in the entry that stores them
    else:
        found = inline_page(step, query)
        count = len(step.Items or ())
    page, next_after = paged(found, query.limit)
    return {"TaskId": task.TaskId, "Step": cursor, "Name": step.Name, "ItemCount": count,
            "Items": masked_items(task, page), "NextAfter": next_after}  # fmt: skip


def _records_page(task: Task, cursor: int, query: ItemQuery, items: ItemStore) -> list:
    """Up to `query.limit` + 1 records of the step (one more tells whether a page follows)."""
    if query.failed and query.states is None:
        return items.page_failed(task.TaskId, task.Generation, cursor, after=query.after, limit=query.limit + 1)
    if query.failed:  # failed, and in one of these states now: the failed ones walked, kept by state
        wanted = set(stored_states(task.Steps[cursor], query.states))
        found, after = [], query.after
        while len(found) <= query.limit:
            page = items.page_failed(task.TaskId, task.Generation, cursor, after=after, limit=MAX_PAGE)
            found += [record for record in page if record.State in wanted]
            if len(page) < MAX_PAGE:
                break
            after = page[-1].Item
        return found[:query.limit + 1]
    return items.page_items(task.TaskId, task.Generation, cursor, after=query.after, limit=query.limit + 1,
                            states=stored_states(task.Steps[cursor], query.states))
