"""An item that failed for good in a step with a failure budget (docs/design/item-records.md, "A
failure budget"). The relay first takes the item a place in the budget (`take_budget_place`: one
compare-and-set of the task, so items failing together are decided one at a time, and an item
keeps its one place however often its decision is repeated), then this pure change decides on
the record: with a place the item rolls back on its own and its chain goes on; without one (past
the budget, or the task no longer goes forward) the record closes and owes `failed`, as without
a budget."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.kinds.for_each.budget import refuses_place
from common.engine.kinds.for_each.item_changes import (
    copy_record,
    dispatch_item,
    going_forward,
    note_event,
    with_owed,
)
from common.engine.kinds.for_each.item_record import (
    OWES_FAILED,
    OWES_SETTLED,
    OWES_SUCCESSOR,
    OWES_TOLERATE,
    ItemRecord,
)
from common.engine.states import Phase, StepState
from common.engine.core.units import IdFactory, Refusal, Timing

HOLDS_A_PLACE = "the item holds a place in the budget already"


def budget_place(task: Task, cursor: int, item: int) -> int | None:
    """The item's place in its step's budget (1 for the first item that took one), or None."""
    taken = task.Steps[cursor].ToleratedItems or []
    return taken.index(item) + 1 if item in taken else None


def take_budget_place(task: Task, cursor: int, item: int) -> Task | Refusal:
    """The task with `item` holding the next place in the step's budget; refused when it holds one
    already (a repeat: nothing is counted twice), when the budget is full, or when the step no
    longer runs forward (no item is tolerated then)."""
    step = task.Steps[cursor]
    taken = step.ToleratedItems or []
    if item in taken:
        return Refusal(HOLDS_A_PLACE)
    if not going_forward(task) or step.State is not StepState.RUNNING:
        return Refusal("the step no longer runs forward: no item is tolerated")
    refused = refuses_place(step, item, taken)
    if refused is not None:
        return Refusal(refused)
    new = task.clone()
    new.Steps[cursor].ToleratedItems = [*taken, item]
    return new


def tolerate_item(record: ItemRecord, task: Task, place: int | None, timing: Timing, ids: IdFactory,
                  actor: str) -> ItemRecord | Refusal:
    """Decide on a record owing `tolerate`, `place` being the item's place in the step's budget
    (None: it has none)."""
    if OWES_TOLERATE not in record.Owes:
        return Refusal("decided already")
    new = copy_record(record)
    new.Owes = [owed for owed in new.Owes if owed != OWES_TOLERATE]
    step = task.Steps[record.Cursor]
    tolerated = (place is not None and going_forward(task) and step.State is StepState.RUNNING
                 and record.State is StepState.FAILED and record.Run is None)
    if not tolerated:
        new.Owes = with_owed(with_owed(new.Owes, OWES_FAILED), OWES_SETTLED)
        new.Open = False
        return new
    new.Tolerated = True
    dispatch_item(task, new, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)  # its own debris
    assert new.Run is not None
    note_event(new, timing.now, "tolerated", new.Run, actor, f"failure {place} of the step's budget")
    new.Owes = with_owed(new.Owes, OWES_SUCCESSOR)
    return new
