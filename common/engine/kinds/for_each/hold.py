"""A held step over item records and its redrive (docs/design/item-records.md, "Hold and
redrive"): the task's side (the entry an operator's redrive adds) and the record's side (a
failed item dispatched again), as pure changes."""

from __future__ import annotations

from collections.abc import Callable

from common.engine.codes import OutboxKind
from common.engine.document import OperatorRequest, OutboxEntry, Task
from common.engine.kinds.for_each.item_changes import copy_record, dispatch_item, going_forward, set_item_state
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each.item_views import keeps_records
from common.engine.kinds.for_each.records import entry_id
from common.engine.core.units import IdFactory, Refusal, Timing
from common.engine.states import Phase, StepState

REDRIVE_ITEMS = OutboxKind.REDRIVE_ITEMS  # outbox kind: dispatch the failed items again, then go on


def redrive_records(task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
    """In place, from an operator's redrive: a step over records still running forward has its
    failed items dispatched again and its chains started where they stopped (the entry's
    flusher does it)."""
    step = task.Steps[cursor]
    if keeps_records(step) and step.ItemsOpen and step.State is StepState.RUNNING:
        body = {"Cursor": cursor, "Generation": task.Generation, "Actor": request.Actor, "Reason": request.Reason}
        entry = f"{entry_id(task, cursor, REDRIVE_ITEMS)}:{ids()}"  # a step may be redriven many times
        task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=REDRIVE_ITEMS, Body=body, DueAt=request.Time))


def redrive_item(record: ItemRecord, task: Task, actor: str, reason: str, timing: Timing,
                 ids: IdFactory) -> ItemRecord | Refusal:
    """A failed item (its normal phase failed for good, not rolled back: the task held) runs
    again as a new attempt, under the same idempotency key. Refused for any other item: one
    that succeeded is never run again, and a repeat of the entry finds this one running."""
    if record.State is not StepState.FAILED or record.Run is not None or record.Tolerated:
        return Refusal(f"item {record.Item} is {record.State.value}: only a failed item is redriven")
    if not going_forward(task) or task.Paused is not None:
        return Refusal("the task does not go forward now")
    new = copy_record(record)
    set_item_state(new, StepState.WAITING)  # failed -> waiting -> running: as a retried unit
    new.Owes = []
    dispatch_item(task, new, Phase.NORMAL, record.Attempts + 1, timing, timing.now, actor, ids)
    assert new.Run is not None
    new.History[-1].Message = f"redriven: {reason}"
    return new
