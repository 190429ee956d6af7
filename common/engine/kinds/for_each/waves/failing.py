"""A wave's gate failing the step (a check that failed, a pause's timeout with `on_timeout:
fail`; docs/design/waves.md): the task goes backward as an item failing for good sends it."""

from __future__ import annotations

from common.engine.core.advance import advance, enter_rollback
from common.engine.core.units import IdFactory, Timing, record
from common.engine.document import Task
from common.engine.kinds.for_each.waves.opening import BATON


def fail(task: Task, cursor: int, message: str, timing: Timing, ids: IdFactory) -> None:
    """In place: the gate fails the step; the task goes backward as an item failing for good
    sends it (its applied items roll back)."""
    step = task.Steps[cursor]
    task.TaskMessage = f"{step.Name} failed: {message}"
    record(task, timing.now, "wave_failed", actor=BATON, unit=(cursor, None), message=message)
    enter_rollback(task, timing, BATON)
    advance(task, timing, BATON, ids)
