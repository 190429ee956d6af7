"""Applying routing's plans to a task: dispatch what is ready, conclude runs, end the task.

`conclude` records how a run ended and routes; `advance` asks common.engine.core.routing.plan what to do
and does it until nothing is left (one change may start a whole wave of ready steps, or pass
over a chain of steps without rollback). Pure: the task given is changed in place, and the
caller writes it with one compare-and-set.
"""

from __future__ import annotations

import dataclasses

from common.engine.codes import AlarmKind
from common.engine.core.check_again import next_check, note_verdict
from common.secrets.documents import scrubbed_text
from common.engine.document import Alarm, OutboxEntry, Run, Task
from common.queues import ALARM_QUEUE
from common.engine.core.routing import plan
from common.engine.core.units import Unit, unit_state, units
from common.engine.registry import earliest_due, end_task, expiry, kind_of, release_unit, taken
from common.engine.states import Phase, ResultCode, StepState, TaskStatus, UNCLAIMED
from common.engine.core.units import (
    MAX_MESSAGE_PRIORITY,
    AttemptResult,
    IdFactory,
    Timing,
    add_run,
    cancel_message,
    concluded_state,
    drop_outbox,
    record,
    remove_run,
    retries_left,
    set_status,
    set_unit_state,
    store_result,
    unit_name,
)


def advance(task: Task, timing: Timing, actor: str, ids: IdFactory, due_at: float | None = None) -> None:
    """Start whatever the graph makes ready, pass over, or end the task
    (docs/design/graph-and-routing.md, "Routing")."""
    # A delayed start holds however the task comes here (created, resumed, woken by another task).
    due = earliest_due(task, timing.now, timing.now if due_at is None else due_at)
    expired = expiry(task, timing.now)
    if expired is not None:  # docs/design/operations.md: past its deadline, the task rolls back
        task.TaskMessage = expired
        record(task, timing.now, "deadline_passed", actor=actor, message=task.TaskMessage)
        enter_rollback(task, timing, actor)
    while move := plan(task):
        for cursor in move.open_steps:
            _open(task, cursor, timing, actor, ids)
        for unit in move.start:
            dispatch(task, unit, Phase.NORMAL, 1, timing, due, actor, ids)
        for unit in move.skip:
            set_unit_state(task, unit, StepState.SKIPPED)
        for unit in move.roll_back:
            _start_rollback(task, unit, timing, actor, ids)
        if move.finish is not None:
            finish(task, move.finish, timing.now, actor, ids)
            return


def dispatch(task: Task, unit: Unit, phase: Phase, attempt: int, timing: Timing, due_at: float,
             actor: str, ids: IdFactory) -> Run:
    """A new run of `unit`'s `phase`, and what it owes the broker (or the child) in the outbox."""
    step = task.Steps[unit[0]]
    kind = kind_of(step)
    set_unit_state(task, unit, StepState.RUNNING if phase is Phase.NORMAL else StepState.ROLLING_BACK)
    if phase is Phase.NORMAL:
        task.TaskCursor = max(task.TaskCursor, unit[0])
    run = add_run(task, unit, phase, attempt, ids, deadline=kind.run_deadline(step, timing, due_at), since=due_at)
    entry = kind.start(task, run, timing, due_at)
    # A unit's own gates first (a step lock): the outbox asks for it instead of publishing.
    if entry is not None and not (phase is Phase.NORMAL and kind.unit_gated(step) and taken(task, run, due_at)):
        task.Outbox.append(entry)  # None: its kind parked it, nothing to send
    record(task, timing.now, "dispatched", run, actor=actor)
    return run


def conclude(task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str, ids: IdFactory) -> None:
    """Record how `run` ended; retry it, or settle its unit and route."""
    unit, step = run.unit, task.Steps[run.Cursor]
    state = unit_state(task, unit)
    normal = run.Phase is Phase.NORMAL
    if result.callback is not None:  # "wait for a callback": parked, no slot held
        parked = kind_of(step).await_outside(task, run, result, timing, actor)
        if parked is None:
            return
        result = parked
    kind_of(step).before_conclude(task, run, timing)
    remove_run(task, run)
    verified = note_verdict(state, run.Phase, result)
    if verified is not None:
        record(task, timing.now, "verified", run, actor=actor, message=verified)
    if result.check_again is not None:  # "not done yet": no attempt counted, no slot held
        verdict = next_check(task, run, result, timing.now, actor)
        if isinstance(verdict, float):
            dispatch(task, unit, run.Phase, run.Attempt, timing, verdict, actor, ids)
            return
        result = verdict
    # A run its kind concludes its own way (a page of a for_each step's source) leaves the unit as it is.
    own = kind_of(step).concludes_own(step, run)
    if not own:
        store_result(state, run.Phase, result, timing.now)
    # Cancelled, or another unit failed: a normal unit gets no further attempt (it drains).
    stopping = normal and (task.CancelRequested is not None or task.TaskStatus is TaskStatus.ROLLING_BACK
                           or expiry(task, timing.now) is not None)  # fmt: skip
    if retries_left(step, run, result, stopping):
        record(task, timing.now, "attempt_failed", run, actor=actor, message=result.message)
        dispatch(task, unit, run.Phase, run.Attempt + 1, timing, timing.now + timing.retry_delay, actor, ids)
        return
    if own:  # "fetch": the unit's next run (a source's next page); "backward": as a failed unit
        then = kind_of(step).conclude_own(task, run, result, timing, actor)
        if then == "fetch":
            dispatch(task, unit, Phase.NORMAL, 1, timing, timing.now, actor, ids)
        elif then == "backward":
            enter_rollback(task, timing, actor)
        advance(task, timing, actor, ids)
        return
    new_state, event = concluded_state(result, run.Phase)
    set_unit_state(task, unit, new_state)
    state.WaitingSince = None  # the phase is over: it waits no more
    record(task, timing.now, event, run, actor=actor, message=result.message)
    if normal:
        release_unit(task, unit, timing.now)  # what it held of a gate (a step lock) until it settled
    if result.ok and normal:
        kind_of(step).absorb_output(task, run, result)
    elif result.ok and run.Item is None:
        task.Parameters.update(result.output)  # a rollback's report, as for a line
    if not result.ok and (not normal or task.TaskStatus is not TaskStatus.ROLLING_BACK):
        what = unit_name(task, unit) if normal else f"rollback of {unit_name(task, unit)}"
        task.TaskMessage = f"{what} failed: {result.message}"
    if normal and task.CancelRequested is not None:
        cancel = task.CancelRequested
        record(task, timing.now, "cancelled", run, actor=cancel.Actor, message=cancel.Reason)
    if normal and (not result.ok or task.CancelRequested is not None):
        enter_rollback(task, timing, actor)
    advance(task, timing, actor, ids)


def enter_rollback(task: Task, timing: Timing, actor: str) -> None:
    """A normal unit failed for good (or a cancel): stop starting, cancel what nobody claimed
    (docs/design/graph-and-routing.md, "A unit fails for good"). Running runs drain; routing rolls
    back once they are gone."""
    cancel = task.CancelRequested
    if cancel is not None:
        task.TaskMessage = cancel_message(cancel)
    task.Paused = None  # a pause holds the flow forward only: undoing it is never held up
    if task.TaskStatus is TaskStatus.ROLLING_BACK:
        return
    set_status(task, TaskStatus.ROLLING_BACK)
    for cursor, step in enumerate(task.Steps):  # each kind's own part (a step over records: its unclaimed items)
        kind_of(step).on_backward(task, cursor, timing.now)
    for run in [r for r in task.Runs if r.Phase is Phase.NORMAL and r.State in UNCLAIMED]:
        remove_run(task, run)
        drop_outbox(task, run.DispatchId)
        release_unit(task, run.unit, timing.now)
        # A first attempt never ran: nothing to undo. A retry waiting out its backoff ran
        # before: it may have left debris, so it is rolled back.
        state = unit_state(task, run.unit)
        if run.Attempt == 1 and state.WaitingSince is None:  # a unit checking again has run
            set_unit_state(task, run.unit, StepState.CANCELLED)
        else:
            set_unit_state(task, run.unit, StepState.FAILED)
            state.TimeEnd = timing.now
        record(task, timing.now, "cancelled", run, actor=cancel.Actor if cancel else actor,
               message=cancel.Reason if cancel else "another unit failed")


def finish(task: Task, status: TaskStatus, now: float, actor: str, ids: IdFactory) -> None:
    set_status(task, status)
    task.TimeEnd = now
    task.Paused = None
    if status is TaskStatus.SUCCESS:
        task.TaskMessage = ""
    elif status is TaskStatus.ROLLED_BACK:
        task.TaskMessage = f"rolled back: {task.TaskMessage}" if task.TaskMessage else "rolled back"
    record(task, now, f"task_{status.name.lower()}", actor=actor, message=task.TaskMessage)
    if status is TaskStatus.ROLLBACK_FAILED:
        _raise_alarm(task, now, actor, ids)
    # Each kind's and gate's part: a child tells its parent, the tasks waiting for this one are
    # woken, its units' step locks and its own lock are given back (or kept: its rollback failed).
    end_task(task, now)


def with_delay(timing: Timing, delay: float) -> Timing:
    return dataclasses.replace(timing, retry_delay=delay)


def _open(task: Task, cursor: int, timing: Timing, actor: str, ids: IdFactory) -> None:
    """Routing reached a step whose kind fixes its units first (a for_each step's items): the
    step runs, and its kind opens it; a step that fails opening sends the task backward."""
    step = task.Steps[cursor]
    task.TaskCursor = max(task.TaskCursor, cursor)
    _started(task, timing.now)
    step.TimeStart = timing.now
    set_unit_state(task, (cursor, None), StepState.RUNNING)
    failure = kind_of(step).open(task, cursor, timing, actor)
    if failure is None:
        for unit in kind_of(step).first_units(step, cursor):  # a source's first page
            dispatch(task, unit, Phase.NORMAL, 1, timing, timing.now, actor, ids)
        return
    step.Code, step.TimeEnd, step.Message = ResultCode.FAILED, timing.now, failure
    set_unit_state(task, (cursor, None), StepState.FAILED)
    task.TaskMessage = f"{unit_name(task, (cursor, None))} failed: {step.Message}"
    record(task, timing.now, "step_failed", actor=actor, message=step.Message, unit=(cursor, None))
    enter_rollback(task, timing, actor)


def _started(task: Task, now: float) -> None:
    """Work began without a module's claim (a for_each step opened, a child ended)."""
    if task.TaskStatus is TaskStatus.NOT_STARTED:
        set_status(task, TaskStatus.RUNNING)
        task.TimeStart = now


def _start_rollback(task: Task, unit: Unit, timing: Timing, actor: str, ids: IdFactory) -> None:
    state = unit_state(task, unit)
    if kind_of(task.Steps[unit[0]]).roll_back(task, unit, timing, actor):
        return  # its kind's own way (item records, a child that rolled itself back)
    state.WaitingSince = None  # a normal phase stopped while checking again: the rollback waits anew
    dispatch(task, unit, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)


def _raise_alarm(task: Task, now: float, actor: str, ids: IdFactory) -> None:
    failed = [(c, i) for c, s in enumerate(task.Steps) for i, u in units(s) if u.State is StepState.ROLLBACK_FAILED]
    cursor = failed[0][0] if failed else 0
    step = task.Steps[cursor]
    names = ", ".join(unit_name(task, u) for u in failed)
    alarm = Alarm(
        AlarmId=ids(), Kind=AlarmKind.ROLLBACK_FAILED, Time=now,
        # The failure message may quote a secret parameter; the alarm travels to the monitor's
        # log, the alarm store and a webhook, none of which knows the task's secrets: scrub here.
        Message=scrubbed_text(task.TaskMessage if len(failed) <= 1 else f"{task.TaskMessage} (rollbacks failed: {names})",
                              task),
        TaskId=task.TaskId, Cursor=cursor, Phase=Phase.ROLLBACK,
        Module=step.RollbackModule, Command=step.RollbackCommand,
    )
    task.Outbox.append(OutboxEntry(DispatchId=alarm.AlarmId, Queue=ALARM_QUEUE, Body=alarm.model_dump(mode="json"),
                                   Priority=MAX_MESSAGE_PRIORITY, DueAt=now))
    event = Run(Cursor=cursor, Item=failed[0][1] if failed else None, Phase=Phase.ROLLBACK,
                Attempt=unit_state(task, failed[0]).RollbackAttempts if failed else 1, DispatchId="")
    record(task, now, "alarm_raised", event, actor=actor, message=alarm.AlarmId)
