"""Every task a listing filter selects, newest first, read a page at a time (keyset paging)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from common.engine.document import Task
from common.store.tasks.port import TaskStore
from common.store.tasks.filters import TaskFilter, page_key

PAGE = 500


def iterate_tasks(store: TaskStore, limit: int, task_filter: TaskFilter) -> Iterator[Task]:
    """At most `limit` tasks the filter selects (its `after`, if any, is where the first page starts)."""
    after, given = task_filter.after, 0
    while given < limit:
        wanted = min(PAGE, limit - given)
        page = store.list_tasks(replace(task_filter, after=after), limit=wanted)
        yield from page
        given += len(page)
        if len(page) < wanted:
            return
        after = page_key(page[-1])
