"""A task as a reader that knows only inline items sees it: the items of its steps over item
records (docs/design/item-records.md) put back in `Steps[i].Items`, their events merged into the
history (common.engine.kinds.for_each.records.inline_view). For the checks of the tests; never written
back."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.kinds.for_each.records import inline_view, keeps_records
from common.store.items.open import open_item_store_for

MOST = 100_000


def with_items(store, task: Task | None) -> Task | None:
    if task is None or not any(keeps_records(step) for step in task.Steps):
        return task
    items = open_item_store_for(store)
    try:
        records = {cursor: items.page_items(task.TaskId, task.Generation, cursor, limit=MOST)
                   for cursor, step in enumerate(task.Steps) if keeps_records(step)}
    finally:
        items.close()
    return inline_view(task, records)
