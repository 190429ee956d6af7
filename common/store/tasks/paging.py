"""Every task a listing filter selects, newest first, read a page at a time (keyset paging)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from common.engine.document import Task
from common.store.tasks.port import TaskStore
from common.store.tasks.filters import page_key

PAGE = 500


def iterate_tasks(store: TaskStore, limit: int, **filters: Any) -> Iterator[Task]:
    """At most `limit` tasks; `filters` as TaskStore.list_tasks takes them."""
    after, given = None, 0
    while given < limit:
        wanted = min(PAGE, limit - given)
        page = store.list_tasks(**filters, after=after, limit=wanted)
        yield from page
        given += len(page)
        if len(page) < wanted:
            return
        after = page_key(page[-1])
