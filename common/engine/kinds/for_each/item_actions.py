"""Operator actions on one item of a step over records (docs/design/operator-actions.md and
docs/design/item-records.md, "What still holds"), as pure changes of its record in the style of
common.engine.kinds.for_each.item_changes: each returns a new record to write with one
compare-and-set, or a Refusal. What the change owes the step (start the next item of its chain, ask
whether the step is done) goes into `Owes`, settled as an item's outcome is (common.relay.items).
The task document is read, never written here.
"""

from __future__ import annotations

from common.engine.document import HistoryEvent, Task
from common.engine.kinds.for_each.item_record import OWES_ROLLBACK_SUCCESSOR, OWES_SETTLED, OWES_SUCCESSOR, ItemRecord
from common.engine.kinds.for_each.item_changes import (
    ITEM_HISTORY_LIMIT, copy_record, dispatch_item, going_forward, set_item_state, with_owed, withdrawn,
)
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.core.units import AttemptResult, IdFactory, Refusal, Timing, publish_entry, reset_rollback, store_result
from common.engine.core.entries import noted


def skip_item(record: ItemRecord, task: Task, actor: str, reason: str, timing: Timing) -> ItemRecord | Refusal:
    """An item that keeps failing (its last attempt failed, its retry pending or running) is
    passed as done: its run is removed (a claimed command loses its lease and is stopped), its
    chain goes on, and nothing of it is rolled back (operator_skipped, as for an inline item)."""
    name = f"item {record.Item} of step {record.Cursor}"
    if not going_forward(task):
        return Refusal(f"task is {task.TaskStatus.name}: an item can be skipped while it keeps failing (running task)")
    run = record.Run
    if task.Held is not None and record.State is StepState.FAILED and run is None and not record.Tolerated:
        return _skip_held(record, actor, reason, timing)  # a failed item of a held task: passed over
    failing = record.State is StepState.RUNNING and record.Code not in (None, ResultCode.OK)
    if not failing or run is None or run.Phase is not Phase.NORMAL:
        return Refusal(f"{name} is {record.State.value} and has not failed an attempt: "
                       "only an item that keeps failing can be skipped")  # fmt: skip
    new = withdrawn(record, run.DispatchId)
    set_item_state(new, StepState.OPERATOR_SKIPPED)
    new.Message, new.TimeEnd, new.WaitingSince = f"skipped by {actor}: {reason}", timing.now, None
    new.Owes = with_owed(with_owed(new.Owes, OWES_SUCCESSOR), OWES_SETTLED)
    new.Open = False
    _note(new, timing.now, "operator_skipped", Phase.NORMAL, run.Attempt, actor, reason)
    return new


def _skip_held(record: ItemRecord, actor: str, reason: str, timing: Timing) -> ItemRecord:
    """A held task's failed item passed as done: never redriven, never rolled back; its chain
    goes on once the task is redriven (docs/design/item-records.md, "Hold and redrive")."""
    new = copy_record(record)
    set_item_state(new, StepState.WAITING)  # failed -> waiting -> operator_skipped, as the table allows
    set_item_state(new, StepState.OPERATOR_SKIPPED)
    new.Message, new.TimeEnd = f"skipped by {actor}: {reason}", timing.now
    new.Owes = with_owed(with_owed(new.Owes, OWES_SUCCESSOR), OWES_SETTLED)
    new.Open = False
    _note(new, timing.now, "operator_skipped", Phase.NORMAL, record.Attempts, actor, reason)
    return new


def stop_item(record: ItemRecord, actor: str, reason: str, timing: Timing) -> ItemRecord | Refusal:
    """An operator's cancel that stops running runs, for an item whose normal run is claimed:
    its run is removed (the module's next lease renewal is refused and it kills the command), and
    it counts as failed (it may have done part of its work), so its rollback runs."""
    run = record.Run
    if run is None or run.Phase is not Phase.NORMAL or run.State is not RunState.RUNNING:
        return Refusal("no claimed normal run to stop")
    new = withdrawn(record, run.DispatchId)
    store_result(new, Phase.NORMAL, AttemptResult(ResultCode.FAILED, "stopped by a cancel"), timing.now)
    set_item_state(new, StepState.FAILED)
    new.WaitingSince = None
    new.Owes = with_owed(new.Owes, OWES_SETTLED)
    new.Open = False
    _note(new, timing.now, "stopped", Phase.NORMAL, run.Attempt, actor, reason)
    return new


def retry_item_rollback(record: ItemRecord, task: Task, actor: str, reason: str, timing: Timing,
                        ids: IdFactory, reopen: str | None = None) -> ItemRecord | Refusal:
    """An item whose rollback failed is dispatched again (its step was reopened backward by
    the entry `reopen`). Refused when that entry retried it already, or began its rollback:
    its failure came after the operator's action, which a repeat of the entry must not retry."""
    if record.State is not StepState.ROLLBACK_FAILED or record.Run is not None:
        return Refusal("its rollback has not failed")
    if reopen is not None and record.Reopen == reopen:
        return Refusal("retried by this reopen already")
    if task.TaskStatus is not TaskStatus.ROLLING_BACK:
        return Refusal(f"task is {task.TaskStatus.name}, not rolling back")
    new = copy_record(record)
    new.Reopen = reopen
    reset_rollback(new)
    _note(new, timing.now, "rollback_retried", Phase.ROLLBACK, 0, actor, reason)
    dispatch_item(task, new, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)
    return new


def compensate_item(record: ItemRecord, actor: str, reason: str, timing: Timing,
                    reopen: str | None = None) -> ItemRecord | Refusal:
    """The operator undid an item whose rollback failed by hand: compensated; its chain's next
    applied item rolls back next. Refused for an item whose rollback began under the same
    reopen: it failed after the operator's action (a repeat of the entry must not pass it)."""
    if record.State is not StepState.ROLLBACK_FAILED or record.Run is not None:
        return Refusal("its rollback has not failed")
    if reopen is not None and record.Reopen == reopen:
        return Refusal("its rollback began after this reopen")
    new = copy_record(record)
    new.Reopen = reopen
    set_item_state(new, StepState.COMPENSATED)
    new.RollbackMessage = f"compensated by hand by {actor}: {reason}"
    new.Owes = with_owed(with_owed(new.Owes, OWES_ROLLBACK_SUCCESSOR), OWES_SETTLED)
    new.Open = False
    _note(new, timing.now, "compensated", Phase.ROLLBACK, 0, actor, reason)
    return new


def republish_pending(record: ItemRecord, task: Task, timing: Timing) -> ItemRecord | Refusal:
    """A resumed task's item whose dispatch nobody claimed (a claim is refused while the task is
    paused, and the delivery dropped): published again now rather than at the sweeper's next
    look. A copy still in a queue is fenced by the claim (one claim per dispatch)."""
    run = record.Run
    if run is None or run.Phase is not Phase.NORMAL or run.State is not RunState.PENDING:
        return Refusal("nothing unclaimed")
    new = copy_record(record)
    run = new.Run
    assert run is not None
    if any(e.DispatchId == run.DispatchId for e in new.Outbox):
        return Refusal("not published yet: it goes at its time (a retry's backoff)")
    new.Outbox.append(publish_entry(task, run, due_at=timing.now))
    run.Deadline = timing.now + timing.redeliver_after
    return new


def noted_item_skip(task: Task, cursor: int, item: int, actor: str, reason: str, now: float) -> Task:
    """The task's history tells of an item an operator skipped (its record changed already)."""
    return noted(task, now, "operator_skipped", actor=actor, message=reason, unit=(cursor, item), phase=Phase.NORMAL)


def _note(record: ItemRecord, now: float, event: str, phase: Phase, attempt: int, actor: str, reason: str) -> None:
    record.History.append(HistoryEvent(Time=now, Event=event, Cursor=record.Cursor, Item=record.Item, Phase=phase,
                                       Attempt=attempt, Actor=actor, Message=reason))
    del record.History[:-ITEM_HISTORY_LIMIT]
