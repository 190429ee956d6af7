"""A `for_each` step's items as the API, the CLI and the console show them: the I/O shell around
common.engine.kinds.item_views. A step over records is read from its item store (one grouped,
indexed count for the counts; one indexed page for the items); an inline step from the task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.engine.document import Run, Task
from common.engine.kinds.item_drain import IN_FLIGHT_LOOK
from common.engine.states import StepState
from common.engine.kinds.item_views import (
    ItemQuery,
    counts_view,
    inline_counts,
    inline_page,
    is_fan_out,
    item_doc,
    keeps_records,
    paged,
)
from common.masking import masked_items

if TYPE_CHECKING:
    from common.store.items_port import ItemStore


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
            counts[cursor] = counts_view(items.count_by_state(task.TaskId, task.Generation, cursor))
        else:
            counts[cursor] = counts_view(inline_counts(step))
    return counts


def item_runs(task: Task, items: ItemStore | None) -> list[Run]:
    """The runs of the items in flight of the task's steps over records that still have work: a
    view derives from them what it derives from the task's own runs (`WaitingFor` of a drain,
    `Waiting` for a module none serves). One small indexed page per such step
    (common.engine.kinds.item_drain.IN_FLIGHT_LOOK)."""
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
        records = items.page_items(task.TaskId, task.Generation, cursor, after=query.after,
                                   limit=query.limit + 1, states=query.states)  # fmt: skip
        found = [item_doc(r.Item, r) for r in records]
        count = step.ItemCount or 0
    else:
        found = inline_page(step, query)
        count = len(step.Items or ())
    page, next_after = paged(found, query.limit)
    return {"TaskId": task.TaskId, "Step": cursor, "Name": step.Name, "ItemCount": count,
            "Items": masked_items(task, page), "NextAfter": next_after}  # fmt: skip
