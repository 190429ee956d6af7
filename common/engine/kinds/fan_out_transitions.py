"""The task changes a step over item records asks for (DESIGN.md sec. 12), each a
`Task -> Task | Refusal` written with one compare-and-set, applied by common.relay.items when an
item's record owes them. They route on (common.engine.advance), as a concluded run does."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from common.engine.advance import advance, enter_rollback
from common.engine.document import Task
from common.engine.kinds.fan_out import settle
from common.engine.states import StepState, TaskStatus
from common.engine.units import IdFactory, Refusal, Timing, new_id, record, unit_name


def item_failed(task: Task, cursor: int, item: int, message: str, timing: Timing, actor: str,
                ids: IdFactory = new_id) -> Task | Refusal:
    """An item failed for good: the task goes backward, named after the first unit that failed
    (its other items drain; DESIGN.md 4.2)."""
    if task.TaskStatus not in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) or task.CancelRequested is not None:
        return Refusal("the task goes backward already")
    new = task.clone()
    new.TaskMessage = f"{unit_name(new, (cursor, item))} failed: {message}"
    record(new, timing.now, "item_failed", actor=actor, message=message, unit=(cursor, item))
    enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new


def items_settled(task: Task, cursor: int, counts: Mapping[StepState, int], timing: Timing, actor: str,
                  outputs: Callable[[], list], failure: tuple[int, str] | None,
                  ids: IdFactory = new_id) -> Task | Refusal:
    """No item of the step has work left in its direction: conclude that part of the step and
    route on. A failed item whose own notice was lost sends the task backward here."""
    new = settle(task, cursor, counts, timing, actor, outputs, failure)
    if isinstance(new, Refusal):
        return new
    if new.Steps[cursor].State is StepState.FAILED and new.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING):
        enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new
