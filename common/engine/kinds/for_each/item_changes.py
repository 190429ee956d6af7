"""The changes of one item record of a `for_each` step (docs/design/item-records.md), as pure
functions.

Each takes the record as read (and the task as read, for what the step and the task say) and
returns a new record to write with one compare-and-set on the record's `Version`, or a
`Refusal`. What a change owes the step (start the next item of its chain, ask whether the step
is done, send the task backward) goes into the record's `Owes`; common.relay.items applies it.
The task document is never written here.
"""

from __future__ import annotations

from common.backoff import exponential
from common.engine.core.check_again import check_message, decide_check, note_verdict
from common.engine.document import HistoryEvent, Run, Step, Task
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS
from common.engine.gates.deadline.gate import overdue
from common.engine.kinds.for_each.budget import has_budget
from common.engine.kinds.for_each.extending import extensions
from common.engine.kinds.for_each.item_record import (
    OWES_FAILED,
    OWES_ROLLBACK_SUCCESSOR,
    OWES_SETTLED,
    OWES_SUCCESSOR,
    OWES_TOLERATE,
    ItemRecord,
)
from common.engine.states import APPLIED, FINAL_STATUSES, Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.states import check_step_transition, move_run
from common.engine.core.units import (
    AttemptResult,
    IdFactory,
    Refusal,
    Timing,
    concluded_state,
    publish_entry,
    retries_left,
    store_result,
)

ITEM_HISTORY_LIMIT = 30  # an item's own events: claims, attempts, outcomes (a retry loop is bounded)


def _may_start(step: Step, item: int) -> bool:
    """Whether item `item` may start now: every extension of the step lets it (its wave opened)."""
    return all(extension.item_may_start(step, item) for extension in extensions())


def new_records(task: Task, cursor: int, values: list, timing: Timing, ids: IdFactory,
                actor: str, first: int = 0) -> list[ItemRecord]:
    """The records of a step opening over `values`: the head of each chain dispatched, the rest
    waiting for the item before them in their chain (docs/design/item-records.md, "The life of a
    step over records"). Once the task no longer goes forward (their writer was late), none is
    dispatched: every item waits, never run."""
    chains = chain_count(task, cursor) if opens_forward(task, cursor) else 0
    records = []
    for index, value in enumerate(values, start=first):  # `first`: a source's page (docs/design/item-sources.md)
        record = ItemRecord(TaskId=task.TaskId, Generation=task.Generation, Cursor=cursor, Item=index, Value=value)
        if index < chains and _may_start(task.Steps[cursor], index):  # only the first wave's
            dispatch_item(task, record, Phase.NORMAL, 1, timing, timing.now, actor, ids)
        records.append(record)
    return records


def opens_forward(task: Task, cursor: int) -> bool:
    """Whether the step's records, written now, start their chains."""
    step = task.Steps[cursor]
    return step.State is StepState.RUNNING and bool(step.ItemsOpen) and going_forward(task)


def chain_count(task: Task, cursor: int) -> int:
    step = task.Steps[cursor]
    return max(1, step.MaxParallel or step.ItemCount or 1)


def claim_item(record: ItemRecord, task: Task, dispatch_id: str, owner: str, timing: Timing) -> ItemRecord | Refusal:
    """PENDING -> RUNNING for the record's dispatch, leased to `owner`. A normal phase is refused
    once the task stopped going forward: no new normal unit starts
    (docs/design/graph-and-routing.md, "A unit fails for good")."""
    run = record.Run
    if task.TaskStatus in FINAL_STATUSES:
        return Refusal(f"task is {task.TaskStatus.name}, nothing to run")
    if run is None or run.DispatchId != dispatch_id:
        return Refusal("stale dispatch: the item has moved on")
    if run.State is not RunState.PENDING:
        return Refusal(f"already claimed by {run.Owner}")
    if run.Phase is Phase.NORMAL and not going_forward(task):
        return Refusal("the task is no longer going forward")
    if run.Phase is Phase.NORMAL and task.Paused is not None:
        return Refusal("the task is paused")
    new = copy_record(record)
    run = new.Run
    assert run is not None
    move_run(run, RunState.RUNNING)
    run.Owner, run.Deadline = owner, timing.now + timing.lease
    drop_record_outbox(new, dispatch_id)
    if run.Phase is Phase.NORMAL:
        new.Attempts, new.TimeStart = run.Attempt, new.TimeStart or timing.now
    else:
        new.RollbackAttempts, new.RollbackTimeStart = run.Attempt, new.RollbackTimeStart or timing.now
    _event(new, timing.now, "claimed", run, owner)
    return new


def renew_item_lease(record: ItemRecord, dispatch_id: str, owner: str, timing: Timing) -> ItemRecord | Refusal:
    new = _owned(record, dispatch_id, owner)
    if isinstance(new, Refusal):
        return new
    new.Run.Deadline = timing.now + timing.lease
    return new


def finish_item_attempt(record: ItemRecord, task: Task, dispatch_id: str, owner: str, result: AttemptResult,
                        timing: Timing, ids: IdFactory) -> ItemRecord | Refusal:
    """Record how the owner's attempt ended: retry it, check again later, or conclude the item
    and note what that owes the step."""
    new = _owned(record, dispatch_id, owner)
    if isinstance(new, Refusal):
        return new
    _conclude(new, new.Run, task, result, timing, owner, ids)
    return new


def release_item(record: ItemRecord, task: Task, dispatch_id: str, owner: str, timing: Timing,
                 ids: IdFactory) -> ItemRecord | Refusal:
    """Give a claimed run back (its module shuts down): dispatched again, no attempt counted;
    a normal run of a task going backward concludes as failed instead (it drains)."""
    new = _owned(record, dispatch_id, owner)
    if isinstance(new, Refusal):
        return new
    run = new.Run
    _event(new, timing.now, "released", run, owner, "module shutting down")
    if run.Phase is Phase.NORMAL and not going_forward(task):
        _conclude(new, run, task, AttemptResult(ResultCode.FAILED, "stopped by a module shutdown"), timing, owner, ids)
        return new
    new.Run = None
    dispatch_item(task, new, run.Phase, run.Attempt, timing, timing.now, owner, ids)
    return new


def expire_item(record: ItemRecord, task: Task, timing: Timing, ids: IdFactory,
                redispatch_backoff_max: int) -> ItemRecord | Refusal:
    """The sweeper's change for a record whose run passed its deadline: a lapsed lease is a
    failed attempt (`worker_lost`); a dispatch nobody claimed is published again, backing off."""
    run = record.Run
    if run is None or run.Deadline is None or run.Deadline > timing.now:
        return Refusal("nothing past its deadline")
    new = copy_record(record)
    run = new.Run
    assert run is not None
    if run.State is RunState.RUNNING:
        lost = AttemptResult(ResultCode.WORKER_LOST, f"lease of {run.Owner} lapsed")
        _conclude(new, run, task, lost, timing, "sweeper", ids)
        return new
    if run.Phase is Phase.NORMAL and not going_forward(task):
        return cancel_item(record, task, timing)
    waiting = next((e for e in new.Outbox if e.DispatchId == run.DispatchId), None)
    if waiting is None:
        new.Outbox.append(publish_entry(task, run, due_at=timing.now))
    else:
        waiting.DueAt = timing.now
    if run.HeldBy is not None:  # held by a drain: looked at again soon, no backoff, no event
        run.Deadline = timing.now + DRAIN_RECHECK_SECONDS
        return new
    run.Deadline = timing.now + exponential(timing.redeliver_after, run.Redispatches,
                                            timing.redeliver_after * redispatch_backoff_max)
    run.Redispatches += 1
    _event(new, timing.now, "redispatched", run, "sweeper", "never claimed")
    return new


def start_successor(record: ItemRecord, task: Task, timing: Timing, ids: IdFactory, actor: str) -> ItemRecord | Refusal:
    """Start a waiting item whose turn in its chain came (the item before it succeeded)."""
    if record.State is not StepState.WAITING or record.Run is not None:
        return Refusal("started already")
    if not going_forward(task) or task.Paused is not None:
        return Refusal("the task starts no new item now")
    if not _may_start(task.Steps[record.Cursor], record.Item):
        return Refusal("its wave has not opened yet")
    new = copy_record(record)
    dispatch_item(task, new, Phase.NORMAL, 1, timing, timing.now, actor, ids)
    return new


def cancel_item(record: ItemRecord, task: Task, timing: Timing) -> ItemRecord | Refusal:
    """The task went backward: a normal run nobody claimed is withdrawn
    (docs/design/graph-and-routing.md, "A unit fails for good"). A first attempt never ran
    (cancelled); a retry waiting out its backoff ran before (failed)."""
    run = record.Run
    if run is None or run.Phase is not Phase.NORMAL or run.State is not RunState.PENDING:
        return Refusal("nothing unclaimed to cancel")
    new = withdrawn(record, run.DispatchId)
    if run.Attempt == 1 and new.WaitingSince is None:
        set_item_state(new, StepState.CANCELLED)
    else:
        set_item_state(new, StepState.FAILED)
        new.TimeEnd = timing.now
    new.Owes = with_owed(new.Owes, OWES_SETTLED)
    _event(new, timing.now, "cancelled", run, "oss", "another unit failed" if task.CancelRequested is None
           else f"cancelled by {task.CancelRequested.Actor}")
    return new


def start_item_rollback(record: ItemRecord, task: Task, timing: Timing, ids: IdFactory, actor: str) -> ItemRecord | Refusal:
    """Dispatch the rollback of an applied item (its step's rollback is under way)."""
    if record.State not in APPLIED or record.Run is not None:
        return Refusal("not an applied item waiting for its rollback")
    new = copy_record(record)
    new.WaitingSince = None  # a normal phase stopped while checking again: the rollback waits anew
    new.Reopen = task.Steps[record.Cursor].ItemsReopen  # begun under the step's latest reopen, if any
    dispatch_item(task, new, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)
    return new


def withdraw_unpublished(record: ItemRecord, dispatch_id: str) -> ItemRecord | Refusal:
    """Take back a dispatch nobody has seen yet (its writer had not published it) because the
    task moved meanwhile: a step's head written as the task went backward waits again, never
    run; an item's rollback started as another item's rollback failed for good is applied again
    (no new rollback starts after that, docs/design/graph-and-routing.md, "Backward"; an operator's
    retry-rollback starts it). Not a step transition: the record is as it was, its "dispatched"
    event dropped too (the task may have ended meanwhile, and no event of its units may follow its
    final one)."""
    run = record.Run
    if run is None or run.DispatchId != dispatch_id or run.State is not RunState.PENDING:
        return Refusal("the dispatch was claimed or has moved on")
    new = withdrawn(record, dispatch_id)
    if run.Phase is Phase.NORMAL:
        new.State, new.Open = StepState.WAITING, True
    else:
        new.State, new.Open = (StepState.SUCCEEDED if new.Code is ResultCode.OK else StepState.FAILED), False
    new.History = [e for e in new.History if not (e.Event == "dispatched" and e.Phase is run.Phase
                                                   and e.Attempt == run.Attempt and e.Time == run.Since)]
    return new


def applied_owes_done(record: ItemRecord, owes: str) -> ItemRecord | Refusal:
    """The relay applied `owes`: drop it from the record."""
    if owes not in record.Owes:
        return Refusal("applied already")
    new = copy_record(record)
    new.Owes = [o for o in new.Owes if o != owes]
    return new


# --- the parts ---------------------------------------------------------------------------------


def going_forward(task: Task) -> bool:
    """Whether the task still starts normal units: running (or about to), no cancel asked."""
    return task.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) and task.CancelRequested is None


def _conclude(new: ItemRecord, run: Run, task: Task, result: AttemptResult, timing: Timing, actor: str,
              ids: IdFactory) -> None:
    step = task.Steps[new.Cursor]
    normal = run.Phase is Phase.NORMAL
    new.Run = None
    drop_record_outbox(new, run.DispatchId)
    verified = note_verdict(new, run.Phase, result)
    if verified is not None:
        _event(new, timing.now, "verified", run, actor, verified)
    if result.check_again is not None:  # "not done yet": no attempt counted, no slot held
        verdict = decide_check(task, step, new, run, result, timing.now)
        if isinstance(verdict, float):
            _event(new, timing.now, "check_again", run, actor, check_message(verdict, timing.now, result))
            dispatch_item(task, new, run.Phase, run.Attempt, timing, verdict, actor, ids)
            return
        result = verdict
    store_result(new, run.Phase, result, timing.now)
    stopping = normal and (not going_forward(task) or overdue(task, timing.now))
    if retries_left(step, run, result, stopping):
        _event(new, timing.now, "attempt_failed", run, actor, result.message)
        dispatch_item(task, new, run.Phase, run.Attempt + 1, timing, timing.now + timing.retry_delay, actor, ids)
        return
    state, event = concluded_state(result, run.Phase)
    set_item_state(new, state)
    new.WaitingSince = None
    _event(new, timing.now, event, run, actor, result.message)
    if result.ok and normal:
        new.Output = dict(result.output)
    if normal and not result.ok and has_budget(step, new.Item) and going_forward(task):
        # The relay counts the step's failures and decides (item_tolerance.tolerate_item): the
        # record stays open, so the step cannot settle under the decision.
        new.Owes = with_owed(new.Owes, OWES_TOLERATE)
        return
    if normal:
        owes = OWES_SUCCESSOR if result.ok else OWES_FAILED
    elif new.Tolerated and not result.ok:
        owes = OWES_FAILED  # its debris is left: the task goes backward (docs/design/item-records.md)
    else:
        owes = OWES_ROLLBACK_SUCCESSOR if result.ok else None
    new.Owes = with_owed(with_owed(new.Owes, owes), OWES_SETTLED)
    new.Open = False


def dispatch_item(task: Task, record: ItemRecord, phase: Phase, attempt: int, timing: Timing, due_at: float,
                  actor: str, ids: IdFactory) -> None:
    """In place: a new run of the item in `phase`, its message in the record's own outbox."""
    set_item_state(record, StepState.RUNNING if phase is Phase.NORMAL else StepState.ROLLING_BACK)
    run = Run(Cursor=record.Cursor, Item=record.Item, Phase=phase, Attempt=attempt, DispatchId=ids(),
              Deadline=due_at + timing.redeliver_after, Since=due_at)
    record.Run = run
    record.Outbox.append(publish_entry(task, run, due_at))
    record.Open = True
    _event(record, timing.now, "dispatched", run, actor)


def _owned(record: ItemRecord, dispatch_id: str, owner: str) -> ItemRecord | Refusal:
    """A copy of the record to change, while `owner` still holds the claim of its run
    `dispatch_id` (the copy's `Run` is that run): a worker's word about a run it no longer holds
    is refused."""
    run = record.Run
    if run is None or run.DispatchId != dispatch_id:
        return Refusal("stale dispatch: the item has moved on")
    if run.State is not RunState.RUNNING or run.Owner != owner:
        return Refusal(f"claim lost: run is {run.State.value}, owned by {run.Owner}")
    return copy_record(record)


def set_item_state(record: ItemRecord, state: StepState) -> None:
    """The one way an item record changes state: through the step's table of legal changes."""
    check_step_transition(record.State, state)
    record.State = state


def with_owed(owes: list[str], what: str | None) -> list[str]:
    """The record's `Owes` with `what` added once (None: nothing owed)."""
    return owes if what is None or what in owes else [*owes, what]


def note_event(record: ItemRecord, now: float, event: str, run: Run, actor: str, message: str = "") -> None:
    record.History.append(HistoryEvent(Time=now, Event=event, Cursor=run.Cursor, Item=run.Item, Phase=run.Phase,
                                       Attempt=run.Attempt, Actor=actor, Message=message))
    del record.History[:-ITEM_HISTORY_LIMIT]


_event = note_event  # the name its callers here use


def copy_record(record: ItemRecord) -> ItemRecord:
    """A deep copy to change: a change returns a new record, as the engine returns a new task."""
    return ItemRecord.model_validate(record.model_dump())


def drop_record_outbox(record: ItemRecord, dispatch_id: str) -> None:
    """In place: the record's outbox entry of that dispatch is owed no more (units.drop_outbox
    does the same for a task's own runs)."""
    record.Outbox = [e for e in record.Outbox if e.DispatchId != dispatch_id]


def withdrawn(record: ItemRecord, dispatch_id: str) -> ItemRecord:
    """A copy of the record whose run is taken away, with the outbox entry that run was owed."""
    new = copy_record(record)
    new.Run = None
    drop_record_outbox(new, dispatch_id)
    return new
