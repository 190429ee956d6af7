"""Who counts a task's end (`baton_tasks_finished_total`): the process whose write ended it.

Every write of a task passes common.store.tasks.mutate, and of the writers racing to end a task
exactly one wins its compare-and-set: that process counts the end, once, wherever it happens (a
module's outcome, an item settled by the relay, an operator's action over REST, an approval or a
callback, a sweeper's timeout). A process that serves metrics names its counter for its store
here; the first to name one keeps it (OSS counts on its /metrics what its embedded sweeper ends).
A `baton` command acting on the store directly serves no metrics: docs/operations/metrics.md
says how those ends are seen.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from common.engine.document import Task
from common.engine.states import FINAL_STATUSES

Counter = Callable[[Task], None]
_counters: weakref.WeakKeyDictionary[Any, Counter] = weakref.WeakKeyDictionary()


def count_ends(store: Any, counter: Counter) -> None:
    """`counter` is told of each task a write through `store` ends (unless one was named first)."""
    _counters.setdefault(store, counter)


def ended(store: Any, before_status: int, task: Task) -> None:
    """Called by mutate after a write: counts `task` if that write ended it."""
    if before_status not in FINAL_STATUSES and task.TaskStatus in FINAL_STATUSES:
        counter = _counters.get(store)
        if counter is not None:
            counter(task)
