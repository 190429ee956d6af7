"""What the CLI reads of a task's items kept in records, beside the task itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from common.engine.document import Run, Task
    from common.store.tasks.port import TaskStore


class ItemReads:
    """What the CLI shows of a task's items kept in records: their counts by state and the runs
    of those in flight. The item store is opened at the first task that needs it and kept until
    the reader is closed, so a list or a watch opens it once, not at every task or look."""

    def __init__(self, store: TaskStore):
        self._store = store
        self._items: Any = None

    def counts(self, task: Task) -> dict[int, dict[str, int]]:
        """Each started for_each step's items by state."""
        from common.engine.views import keeps_records
        from oss.services.item_views import item_counts

        return item_counts(task, self._opened() if any(keeps_records(s) for s in task.Steps) else None)

    def attempts(self, task: Task) -> dict[int, tuple[int, int]]:
        """The sums of its items' attempts each step over records shows as its own."""
        from common.engine.views import keeps_records
        from oss.services.item_views import item_attempts

        return item_attempts(task, self._opened()) if any(keeps_records(s) for s in task.Steps) else {}

    def runs(self, task: Task) -> list[Run]:
        """The runs of the task's items in flight (none unless a step over records has work)."""
        if not _items_run(task):
            return []
        from oss.services.item_views import item_runs

        return item_runs(task, self._opened())

    def _opened(self) -> Any:
        if self._items is None:
            from common.store.items.open import open_item_store_for

            self._items = open_item_store_for(self._store)
        return self._items

    def __enter__(self) -> ItemReads:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._items is not None:
            self._items.close()


def _items_run(task: Task) -> bool:
    """Whether a step of the task keeps its items in records and they still have work."""
    from common.engine.views import keeps_records

    return any(keeps_records(step) and step.ItemsOpen for step in task.Steps)
