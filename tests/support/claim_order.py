"""In which order a module claimed the steps of many tasks: the rank of one task's claim among
all of them, read from each task's History (its `claimed` events and their times)."""

from __future__ import annotations

from collections.abc import Iterable

from common.engine.document import Task
from common.engine.states import Phase


def first_claim(task: Task, cursor: int = 0) -> float | None:
    """When step `cursor` of `task` was first claimed (normal phase), or None if not yet."""
    times = [e.Time for e in task.History if e.Event == "claimed" and e.Cursor == cursor and e.Phase is Phase.NORMAL]
    return min(times) if times else None


def claim_rank(tasks: Iterable[Task], task_id: str, cursor: int = 0) -> int:
    """1 + how many of `tasks` had step `cursor` claimed before `task_id` had (which must have)."""
    claims = {task.TaskId: first_claim(task, cursor) for task in tasks}
    mine = claims[task_id]
    if mine is None:
        raise ValueError(f"task {task_id} has no claim of step {cursor}")
    return 1 + sum(1 for other, at in claims.items() if other != task_id and at is not None and at < mine)
