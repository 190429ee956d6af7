"""A `for_each` step's items as the API, the CLI and the console show them: the I/O shell around
common.engine.kinds.item_views. A step over records is read from its item store (one grouped,
indexed count for the counts; one indexed page for the items); an inline step from the task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.engine.document import Run, Task
from common.engine.kinds.item_drain import HELD_LOOK, held_runs
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


def held_item_runs(task: Task, items: ItemStore | None) -> list[Run]:
    """The runs a module drain holds among the items of the task's steps over records that still
    have work (for the task's `WaitingFor`): one small indexed page of each such step's items in
    flight (common.engine.kinds.item_drain.HELD_LOOK)."""
    held: list[Run] = []
    if items is None:
        return held
    for cursor, step in enumerate(task.Steps):
        if keeps_records(step) and step.ItemsOpen:
            states = [StepState.RUNNING, StepState.ROLLING_BACK]
            held += held_runs(items.page_items(task.TaskId, task.Generation, cursor, limit=HELD_LOOK, states=states))
    return held


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
