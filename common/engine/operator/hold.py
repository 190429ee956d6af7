"""An operator's decision on a held task (docs/design/item-records.md, "Hold and redrive"), as
pure changes in the style of common.engine.operator.actions: each records who and why, and is
written with one compare-and-set, so of two operators deciding at once one wins and the other is
refused (the task is no longer held).

- redrive: the hold is lifted and every held step's failed units run again from where it stopped
  (a new attempt under the same idempotency keys; what succeeded never runs again). A redriven
  task whose unit fails again holds again.
- rollback: the hold is lifted and the task goes backward, as the failure would have sent it
  without `on_failure: hold`.
"""

from __future__ import annotations

from common.engine.core.advance import advance, enter_rollback
from common.engine.document import OperatorRequest, Task
from common.engine.kinds.for_each.fields import HeldUnit
from common.engine.operator.actions import check_reason
from common.engine.registry import kind_of
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record, unit_name

def held_refusal(task: Task) -> Refusal | None:
    if task.Held is None:
        return Refusal(f"task is {task.TaskStatus.name} and not held: nothing to redrive or roll back")
    if task.CancelRequested is not None:
        return Refusal(f"cancel requested by {task.CancelRequested.Actor}: it rolls back already")
    return None


def redrive(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    taken = _taken(task, reason)
    if isinstance(taken, Refusal):
        return taken
    new, held = taken
    new.Held = None
    new.Paused = None  # the redrive is the operator's "go on", whoever paused it
    new.TaskMessage = ""
    record(new, timing.now, "redriven", actor=actor, message=reason, unit=(held.Cursor, held.Item))
    request = OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)
    for cursor, step in enumerate(new.Steps):  # each kind's own part (records: the failed items again)
        kind_of(step).redrive(new, cursor, request, ids)
    advance(new, timing, actor, ids)
    return new


def rollback(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    taken = _taken(task, reason)
    if isinstance(taken, Refusal):
        return taken
    new, held = taken
    new.TaskMessage = f"{unit_name(new, (held.Cursor, held.Item))} failed: {held.Message}"
    record(new, timing.now, "rollback_requested", actor=actor, message=reason, unit=(held.Cursor, held.Item))
    enter_rollback(new, timing, actor)  # drops the pause and the hold
    new.Held = None
    advance(new, timing, actor, ids)
    return new


def _taken(task: Task, reason: str) -> tuple[Task, HeldUnit] | Refusal:
    """The copy a decision on a held task changes, and its hold; or why there is none to take."""
    check_reason(reason)
    if (refused := held_refusal(task)) is not None:
        return refused
    new = task.clone()
    assert new.Held is not None
    return new, new.Held
