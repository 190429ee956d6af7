"""The task changes a step over item records asks for (docs/design/item-records.md), each a
`Task -> Task | Refusal` written with one compare-and-set, applied by common.relay.items when an
item's record owes them. They route on (common.engine.core.advance), as a concluded run does."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from common.engine.core.advance import advance, enter_rollback
from common.engine.document import OperatorRequest, Task
from common.engine.kinds.for_each.fields import HeldUnit
from common.engine.kinds.for_each.item_changes import going_forward
from common.engine.kinds.for_each.records import settle
from common.engine.states import StepState, TaskStatus
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record, unit_name


HOLDER = "baton"  # the actor of the pause a hold sets: no operator asked for it


def item_failed(task: Task, cursor: int, item: int, message: str, timing: Timing, actor: str,
                ids: IdFactory = new_id) -> Task | Refusal:
    """An item failed for good: the task goes backward, named after the first unit that failed
    (its other items drain; docs/design/graph-and-routing.md, "A unit fails for good")."""
    if not going_forward(task):
        return Refusal("the task goes backward already")
    if task.Held is not None:
        return Refusal("held already: the item waits, failed, for the operator's redrive")
    if holds_on_failure(task, cursor):
        return hold(task, cursor, item, message, timing.now, actor)
    new = task.clone()
    new.TaskMessage = f"{unit_name(new, (cursor, item))} failed: {message}"
    record(new, timing.now, "item_failed", actor=actor, message=message, unit=(cursor, item))
    enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new


def holds_on_failure(task: Task, cursor: int) -> bool:
    """Whether a failed item of step `cursor` holds the task rather than sending it backward: the
    step holds on failure (`on_failure: hold`), it and the task still go forward, and nothing
    holds the task yet. Decided here alone, for either change that may see the failure first:
    the item's own notice (`item_failed`) or the step's settle (`items_settled`)."""
    step = task.Steps[cursor]
    return (step.OnFailure == "hold" and step.State is StepState.RUNNING and going_forward(task)
            and task.Held is None)


def hold(task: Task, cursor: int, item: int | None, message: str, now: float, actor: str) -> Task:
    """The step holds instead of rolling back (docs/design/item-records.md, "Hold and redrive"):
    the failure is kept in `Held` and the pause gate holds the rest (nothing new starts, running
    units finish, nothing is rolled back) until an operator redrives it or rolls it back."""
    new = task.clone()
    why = f"{unit_name(new, (cursor, item))} failed: {message}"
    new.Held = HeldUnit(Cursor=cursor, Item=item, Message=message, Time=now)
    new.TaskMessage = f"held: {why}"
    if new.Paused is None:
        new.Paused = OperatorRequest(Actor=HOLDER, Reason=f"held: {why}", Time=now)
    record(new, now, "held", actor=actor, message=why, unit=(cursor, item))
    return new


def items_settled(task: Task, cursor: int, counts: Mapping[StepState, int], timing: Timing, actor: str,
                  outputs: Callable[[], list], failure: tuple[int, str] | None,
                  ids: IdFactory = new_id, attempts: tuple[int, int] | None = None) -> Task | Refusal:
    """No item of the step has work left in its direction: conclude that part of the step and
    route on. A failed item whose own notice was lost sends the task backward here. `attempts`:
    the sums of the items' attempts and rollback attempts, kept as the step's own."""
    if failure is not None and holds_on_failure(task, cursor):
        # Another item's end asked first: the failed item's notice (item_failed) is still owed,
        # or was lost. It would hold the task; so does this, and the notice then finds it held.
        item, message = failure
        return hold(task, cursor, item, message, timing.now, actor)
    new = settle(task, cursor, counts, timing, actor, outputs, failure, attempts)
    if isinstance(new, Refusal):
        return new
    if new.Steps[cursor].State is StepState.FAILED and new.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING):
        enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new
