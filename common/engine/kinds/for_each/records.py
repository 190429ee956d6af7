"""A `for_each` step whose items live in records of their own: the task's side
(docs/design/item-records.md).

The task document keeps the step's `ItemCount`, whether any item still has work in the step's
current direction (`ItemsOpen`) and the step's outcome; it is written when the step opens, when
an item fails for good, when the items settle, and when the step's rollback starts. Everything
an item does in between is a change of its record (common.engine.kinds.for_each.item_changes).

Routing treats such a step as one unit: while `ItemsOpen` it counts as running work, like a run
(common.engine.core.routing); the changes that then route are in changes.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

from common.engine.codes import OutboxKind
from common.engine.outbox import Flusher, kinds_of
from common.engine.document import OperatorRequest, OutboxEntry, Step, StepItem, Task
from common.engine.kinds.for_each.budget import describe
from common.engine.kinds.for_each.item_changes import going_forward
from common.engine.kinds.for_each.item_views import RECORDS, keeps_records
from common.engine.states import ResultCode, StepState, TaskStatus, check_step_transition
from common.engine.core.units import Refusal, Timing, record, unit_name

OPEN_ITEMS = OutboxKind.OPEN_ITEMS  # outbox kind: insert the records, dispatch each chain's head
CANCEL_ITEMS = OutboxKind.CANCEL_ITEMS  # outbox kind: withdraw the normal runs nobody claimed
ROLLBACK_ITEMS = OutboxKind.ROLLBACK_ITEMS  # outbox kind: start the rollback of each chain's first applied item
RESUME_ITEMS = OutboxKind.RESUME_ITEMS  # outbox kind: a resumed task starts each idle chain's next item
REOPEN_ROLLBACKS = OutboxKind.REOPEN_ROLLBACKS  # outbox kind: an operator retried or compensated failed rollbacks
ITEM_KINDS = kinds_of(Flusher.ITEMS)


class SettleRefusal(Enum):
    """The codes of a settle's refusals that callers act on."""

    UNACCOUNTED = "unaccounted"  # the step's items do not add up to its ItemCount: the relay logs it


UNACCOUNTED = SettleRefusal.UNACCOUNTED


# Which for_each steps keep their items in records: command steps without a step lock. A sub-flow
# step's items and items under a step lock stay inline (their gates read the task document), as
# do the items of a task stored before records (its steps have no ItemStore).
# On by default; the setting `item_records` (BATON_ITEM_RECORDS=false, the same in every process:
# OSS, modules, sweeper) keeps every for_each step's items inline, as before records, should a
# deployment need a way back. A step opened over records finishes over records either way.
RECORDS_ENABLED = True


def wire_records(settings: Any) -> None:
    """Take the process's `item_records` setting, where its entry point wires the engine. Only a
    value given (environment, config file) changes the default: a process that embeds the
    engine with its own choice (a test's) keeps it."""
    global RECORDS_ENABLED
    if "item_records" in settings.model_fields_set:
        RECORDS_ENABLED = bool(settings.item_records)


def use_records(enabled: bool) -> bool:
    """Set whether for_each steps opening in this process keep their items in records (a
    benchmark's or an embedding process's own choice); returns the choice it replaces."""
    global RECORDS_ENABLED
    before, RECORDS_ENABLED = RECORDS_ENABLED, enabled
    return before


def records_for(step: Step) -> bool:
    """Whether a for_each step opening now keeps its items in records."""
    return RECORDS_ENABLED and step.Flow is None and step.Lock is None


def entry_id(task: Task, cursor: int, kind: str) -> str:
    return f"{task.TaskId}:g{task.Generation}:{cursor}:{kind}"


def open_records(task: Task, cursor: int, values: list, now: float) -> None:
    """In place, from the change that opens the step: the records are owed (an outbox entry with
    the values, fixed now), and the step runs until they settle."""
    step = task.Steps[cursor]
    step.ItemStore, step.ItemCount, step.ItemsOpen = RECORDS, len(values), True
    body = {"Cursor": cursor, "Generation": task.Generation, "Values": values}
    task.Outbox.append(OutboxEntry(DispatchId=entry_id(task, cursor, OPEN_ITEMS), Kind=OPEN_ITEMS, Body=body, DueAt=now))


def withdraw_unclaimed(task: Task, cursor: int, now: float) -> None:
    """In place, from the change that sends the task backward: a step over records still running
    forward has its unclaimed normal runs withdrawn (the entry's flusher does it)."""
    step = task.Steps[cursor]
    if keeps_records(step) and step.ItemsOpen and step.State is StepState.RUNNING:
        entry = entry_id(task, cursor, CANCEL_ITEMS)
        if not any(e.DispatchId == entry for e in task.Outbox):
            body = {"Cursor": cursor, "Generation": task.Generation}
            task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=CANCEL_ITEMS, Body=body, DueAt=now))


def stop_claimed(task: Task, cursor: int, request: OperatorRequest) -> None:
    """In place, from an operator's cancel that stops running runs: the entry that withdraws the
    step's unclaimed normal runs stops its claimed ones too (their runs removed: a module's next
    lease renewal is refused and it kills the command; each item counts as failed, as a stopped
    run in the task does). The cancel's turn backward finds the entry there already."""
    step = task.Steps[cursor]
    if not (keeps_records(step) and step.ItemsOpen and step.State is StepState.RUNNING):
        return
    stop = {"Actor": request.Actor, "Reason": request.Reason}
    entry = entry_id(task, cursor, CANCEL_ITEMS)
    found = next((e for e in task.Outbox if e.DispatchId == entry), None)
    if found is not None:
        found.Body = {**found.Body, "Stop": stop}
        return
    body = {"Cursor": cursor, "Generation": task.Generation, "Stop": stop}
    task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=CANCEL_ITEMS, Body=body, DueAt=request.Time))


def start_rollback(task: Task, cursor: int, now: float) -> None:
    """In place, from routing's decision to roll the step back: its applied items' rollbacks are
    owed (the entry's flusher starts each chain's first one)."""
    step = task.Steps[cursor]
    check_step_transition(step.State, StepState.ROLLING_BACK)
    step.State, step.ItemsOpen = StepState.ROLLING_BACK, True
    step.RollbackTimeStart = step.RollbackTimeStart or now
    body = {"Cursor": cursor, "Generation": task.Generation}
    task.Outbox.append(OutboxEntry(DispatchId=entry_id(task, cursor, ROLLBACK_ITEMS), Kind=ROLLBACK_ITEMS,
                                   Body=body, DueAt=now))


def resume_records(task: Task, cursor: int, now: float, ids: Callable[[], str]) -> None:
    """In place, from an operator's resume: a pause held the step's next items back (a chain's
    successor was not started, a dispatch not claimed); the entry's flusher starts them."""
    step = task.Steps[cursor]
    if step.ItemsOpen and step.State is StepState.RUNNING:
        body = {"Cursor": cursor, "Generation": task.Generation}
        entry = f"{entry_id(task, cursor, RESUME_ITEMS)}:{ids()}"  # a step may be resumed many times
        task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=RESUME_ITEMS, Body=body, DueAt=now))


def reopen_rollback(task: Task, cursor: int, action: str, actor: str, reason: str, now: float,
                    ids: Callable[[], str]) -> None:
    """In place, from an operator's retry-rollback or compensate of a step over records whose
    items' rollback failed: the step rolls back again; the entry's flusher retries (or marks
    compensated) each failed item's rollback and goes on with the items still applied."""
    step = task.Steps[cursor]
    check_step_transition(step.State, StepState.ROLLING_BACK)
    step.State, step.ItemsOpen = StepState.ROLLING_BACK, True
    step.RollbackCode, step.RollbackMessage, step.RollbackTimeEnd = None, "", None
    body = {"Cursor": cursor, "Generation": task.Generation, "Action": action, "Actor": actor, "Reason": reason}
    entry = f"{entry_id(task, cursor, REOPEN_ROLLBACKS)}:{ids()}"
    step.ItemsReopen = entry  # an earlier reopen's entry, repeated late, is moot from now on
    task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=REOPEN_ROLLBACKS, Body=body, DueAt=now))


def settle(task: Task, cursor: int, counts: Mapping[StepState, int], timing: Timing, actor: str,
           outputs: Callable[[], list], failure: tuple[int, str] | None,
           attempts: tuple[int, int] | None = None) -> Task | Refusal:
    """No item of the step has work left in its current direction: conclude the step (its
    forward part, or its rollback). Refused when it concluded already. `failure`: the first item
    that failed (forward) or whose rollback failed, and its message. `attempts`: the sums of its
    items' `Attempts` and `RollbackAttempts`, kept as the step's own (as an inline step's are its
    items' sums), so a view of the settled step need not add them up again."""
    step = task.Steps[cursor]
    if not keeps_records(step) or not step.ItemsOpen:
        return Refusal("the step's items settled already")
    if task.Held is not None and step.State is StepState.RUNNING:
        return Refusal("held: the step waits for an operator's redrive or rollback")
    if step.Paging is not None and not step.Paging.Done:
        return Refusal("the step's source has pages left to fetch")
    unaccounted = _unaccounted(task, step, counts)
    if unaccounted is not None:
        return unaccounted
    new = task.clone()
    step = new.Steps[cursor]
    step.ItemsOpen = False
    if attempts is not None:
        step.Attempts, step.RollbackAttempts = attempts
    if step.State is StepState.RUNNING:
        _settle_forward(new, step, cursor, counts, timing, outputs, failure)
    else:
        _settle_backward(new, step, cursor, counts, timing, failure)
    record(new, timing.now, "items_settled", actor=actor, unit=(cursor, None),
           message=", ".join(f"{n} {state.value}" for state, n in sorted(counts.items())))
    return new


def _unaccounted(task: Task, step: Step, counts: Mapping[StepState, int]) -> Refusal | None:
    """Refuse a forward settle, the task still going forward, whose items are neither all done
    (succeeded, skipped by an operator, tolerated) nor any failed: some item is still on its way
    (its record not counted in a state that ends it), and concluding now would end the step as
    if it had succeeded, without that item. The step stays open: that item's own end asks again
    and settles it. The relay logs each refusal as an inconsistency of its looks."""
    if step.State is not StepState.RUNNING or not going_forward(task):
        return None
    if step.Paging is not None and step.Paging.Failed is not None:
        return None
    if counts.get(StepState.FAILED, 0) or counts.get(StepState.ROLLBACK_FAILED, 0):
        return None  # a failure's lost notice: the step fails (see _settle_forward)
    ends = (StepState.SUCCEEDED, StepState.OPERATOR_SKIPPED, StepState.ROLLED_BACK)
    if sum(counts.get(state, 0) for state in ends) == step.ItemCount:
        return None
    by_state = ", ".join(f"{n} {state.value}" for state, n in sorted(counts.items()))
    reason = f"the step's items do not add up to its ItemCount ({step.ItemCount}): {by_state or 'no records'}"
    return Refusal(reason, code=UNACCOUNTED)


def _settle_forward(task: Task, step: Step, cursor: int, counts: Mapping[StepState, int], timing: Timing,
                    outputs: Callable[[], list], failure: tuple[int, str] | None) -> None:
    done = counts.get(StepState.SUCCEEDED, 0) + counts.get(StepState.OPERATOR_SKIPPED, 0)
    tolerated = counts.get(StepState.ROLLED_BACK, 0)  # forward, only an item within the budget rolled back
    step.TimeEnd = timing.now
    source_failed = step.Paging.Failed if step.Paging is not None else None
    if done + tolerated == step.ItemCount and task.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) \
            and source_failed is None:
        check_step_transition(step.State, StepState.SUCCEEDED)
        step.State, step.Code = StepState.SUCCEEDED, ResultCode.OK
        step.FailedItems = tolerated or None
        if tolerated:
            step.Message = f"{tolerated} of {step.ItemCount} items failed within its budget ({describe(step.Tolerate)})"
        if step.Source is None:  # a source's items' outputs stay in their records (docs/design/item-sources.md)
            task.Parameters[step.Name] = outputs()
        return
    if failure is not None and task.TaskStatus is not TaskStatus.ROLLING_BACK:
        # The failure's own notice was lost with its writer: the step's end sends the task back.
        task.TaskMessage = f"{unit_name(task, (cursor, failure[0]))} failed: {failure[1]}"
    # A tolerated item whose own rollback failed left debris: the step fails, and its rollback
    # stops on that item as on any failed rollback (docs/design/item-records.md, "A failure budget").
    failed = counts.get(StepState.FAILED, 0) + counts.get(StepState.ROLLBACK_FAILED, 0)
    applied = counts.get(StepState.SUCCEEDED, 0) + failed
    state = StepState.FAILED if failed or source_failed else StepState.SUCCEEDED if applied else StepState.CANCELLED
    check_step_transition(step.State, state)
    step.State = state
    step.Code = ResultCode.FAILED if failure is not None or failed or source_failed else None
    step.Message = failure[1] if failure is not None else f"its source failed: {source_failed}" if source_failed else ""


def _settle_backward(task: Task, step: Step, cursor: int, counts: Mapping[StepState, int], timing: Timing,
                     failure: tuple[int, str] | None) -> None:
    step.RollbackTimeEnd = timing.now
    failed = counts.get(StepState.ROLLBACK_FAILED, 0) > 0
    state = StepState.ROLLBACK_FAILED if failed else StepState.ROLLED_BACK
    check_step_transition(step.State, state)
    step.State = state
    step.RollbackCode = ResultCode.FAILED if failed else ResultCode.OK
    if failed and failure is not None:
        step.RollbackMessage = failure[1]
        task.TaskMessage = f"rollback of {unit_name(task, (cursor, failure[0]))} failed: {failure[1]}"


def inline_view(task: Task, records: Mapping[int, list]) -> Task:
    """The task as if its steps over records kept their items inline (`records`: cursor -> its
    ItemRecords in item order), with the items' events merged into the history by time: what
    a reader that knows only inline items (a check, an export) needs. Never written back."""
    view = task.clone()
    events = list(view.History)
    for cursor, items in records.items():
        step = view.Steps[cursor]
        step.Items = [StepItem.model_validate(r.model_dump(include=set(StepItem.model_fields))) for r in items]
        if step.State is StepState.SKIPPED:  # passed over backward as a whole (no rollback declared)
            for item in step.Items:
                item.State = StepState.SKIPPED if item.State in (StepState.SUCCEEDED, StepState.FAILED) else item.State
        events += [event for r in items for event in r.History]
    view.History = sorted(events, key=lambda e: e.Time)
    return view
