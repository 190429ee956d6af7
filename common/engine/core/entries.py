"""Every change the engine makes to a task document, as pure functions (docs/design/protocol.md,
"Transitions").

Each function takes the task as read from the store plus "now" and returns either a NEW task to
write with one compare-and-set, or a `Refusal` saying why the change does not apply (a stale
delivery, a lost lease, a task already final). No I/O here: the callers in the runtime, the
sweeper and OSS read, call one of these, and write. A task may have several runs at once; each
function finds its run by `DispatchId` in `Runs`.

The outbox lives in the document: whatever a change must tell the broker (the next steps, a
retry, an alarm, a child task to start) is appended to `Outbox` by the same change, so it is
committed atomically with the outcome and cannot be lost by a crash between write and publish.

Layout: routing (what is ready: pure graph planning), advance (applying plans, concluding runs),
task_runs (run and unit bookkeeping), subflows and child_transitions (sub-flows), this file
(the engine's entry points), operator_actions (the operators').
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.backoff import exponential
from common.engine.core.advance import advance, conclude, dispatch, with_delay
from common.engine.core.parking import lapsed as parked_lapsed
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS
from common.engine.document import ParentLink, Run, Step, StepMessage, Task
from common.engine.registry import enter_gates, expiry, kind_of
from common.tracing.carrier import TraceContext
from common.engine.states import Phase, ResultCode, RunState, TaskStatus, move_run
from common.engine.core.units import (
    Unit,
    IN_FLIGHT_BAND,
    MAX_MESSAGE_PRIORITY,
    MAX_TASK_PRIORITY,
    AttemptResult,
    IdFactory,
    Refusal,
    Timing,
    begin_attempt,
    cancel_message,
    delivered_run,
    drop_outbox,
    idempotency_key,
    new_id,
    publish_entry,
    record,
    remove_run,
    run_key,
)

__all__ = [
    "IN_FLIGHT_BAND", "MAX_MESSAGE_PRIORITY", "MAX_TASK_PRIORITY", "MAX_REDISPATCH_BACKOFF", "AttemptResult",
    "IdFactory", "Refusal", "Timing", "cancel_message", "claim", "create_task", "expire", "finish_attempt",
    "idempotency_key", "mark_sent", "new_id", "release", "renew_lease", "run_key",
]

# A run nobody claimed is re-published after redeliver_after, then after 2x, 4x ... at most this
# many times redeliver_after (see expire).
MAX_REDISPATCH_BACKOFF = 16


def create_task(
    *,
    task_type: str,
    steps: list[Step],
    parameters: dict[str, Any],
    timing: Timing,
    idempotency_key: str | None = None,
    priority: int = 0,
    user_id: str | None = None,
    labels: dict[str, str] | None = None,
    task_id: str | None = None,
    secret_parameters: list[str] | None = None,
    parent: ParentLink | None = None,
    ids: IdFactory = new_id,
    flow_version: str | None = None,
    flow_hash: str | None = None,
    trace: TraceContext | None = None,
    submitted_by: str | None = None,
    own_steps: bool = False,
    **asks: Any,
) -> Task:
    """A new task whose ready roots' dispatches sit in the outbox, ready for one insert.

    `asks`: what the submission asks of the gates, each by the keyword its gate takes
    (common.engine.registry.GATES): `freeze` (window name, its end: created in a freeze window
    whose policy is wait), `after_task` (the task it waits for), `lock` (key, limit[, mode,
    shares]), `start_at` (epoch), `deadline_seconds`. The gates open in the registry's order: the
    task waits for the window's end first, then for `after_task`, then asks for its lock.
    `steps` are templates, copied for the task; `own_steps`: they are copies already, the task's
    own (FlowDefinition.new_steps)."""
    if not steps:
        raise ValueError("a task needs at least one step")
    # `own_steps` says whose the steps are, not what to do with them: both ways the task is made
    # the same from the same steps. Two functions would each repeat every keyword above; and
    # leaving the copy to every caller would let one that forgot it share (and, setting `After`
    # below, change) its task type's templates. The copy: 3x faster than model_copy(deep=True).
    copies = list(steps) if own_steps else [Step.model_validate(s.model_dump()) for s in steps]
    for index, step in enumerate(copies):
        if step.After is None:  # a template without a graph: a line
            step.After = [index - 1] if index else []
    task = Task(
        TaskId=task_id or ids(),
        TaskType=task_type,
        TimeCreate=timing.now,
        Parameters=dict(parameters),
        SubmittedParameters=dict(parameters),
        Steps=copies,
        IdempotencyKey=idempotency_key,
        Priority=max(0, min(priority, MAX_TASK_PRIORITY)),
        UserId=user_id,
        Labels=dict(labels or {}),
        SecretParameters=sorted(secret_parameters or []),
        Parent=parent,
        FlowVersion=flow_version,
        FlowHash=flow_hash,
        Trace=trace,
        # Kept only where a step asks for it (an approval its submitter may not give): a task
        # without one is written as the previous release reads it.
        SubmittedBy=submitted_by if any(kind_of(step).needs_submitter(step) for step in copies) else None,
    )
    record(task, timing.now, "created", actor="oss")
    enter_gates(task, {name: ask for name, ask in asks.items() if ask is not None}, timing.now)
    advance(task, timing, "oss", ids)  # no sooner than a gate says (a delayed start)
    return task


def claim(task: Task, message: StepMessage, owner: str, timing: Timing) -> Task | Refusal:
    """PENDING -> RUNNING for the dispatch in `message`, leased to `owner`."""
    found = delivered_run(task, message)
    if isinstance(found, Refusal):
        return found
    if found.State is not RunState.PENDING:
        return Refusal(f"already claimed by {found.Owner}" if found.State is RunState.RUNNING else "a child task runs it")
    new = task.clone()
    run = new.run(message.DispatchId)
    assert run is not None
    move_run(run, RunState.RUNNING)
    run.Owner, run.Deadline = owner, timing.now + timing.lease
    # The claim proves the dispatch was delivered: its outbox entry goes in this same write, which
    # spares the publisher a write of its own to mark it sent.
    drop_outbox(new, run.DispatchId)
    begin_attempt(new, run, timing.now)
    record(new, timing.now, "claimed", run, actor=owner)
    return new


def renew_lease(task: Task, dispatch_id: str, owner: str, timing: Timing) -> Task | Refusal:
    """Push the lease deadline out; refused once the claim is no longer ours."""
    owned = _owned(task, dispatch_id, owner)
    if isinstance(owned, Refusal):
        return owned
    new, run = owned
    run.Deadline = timing.now + timing.lease
    return new


def finish_attempt(
    task: Task,
    dispatch_id: str,
    owner: str,
    result: AttemptResult,
    timing: Timing,
    ids: IdFactory = new_id,
) -> Task | Refusal:
    """Record how the owner's attempt ended and decide what comes next (retry, route, finish)."""
    owned = _owned(task, dispatch_id, owner)
    if isinstance(owned, Refusal):
        return owned
    new, run = owned
    conclude(new, run, result, timing, actor=owner, ids=ids)
    return new


def release(task: Task, dispatch_id: str, owner: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """Give a claimed run back (its module is shutting down): dispatched again at once.

    Not counted as an attempt: the command did not fail, its process was stopped under it.
    """
    owned = _owned(task, dispatch_id, owner)
    if isinstance(owned, Refusal):
        return owned
    new, run = owned
    record(new, timing.now, "released", run, actor=owner, message="module shutting down")
    stopping = new.CancelRequested is not None or new.TaskStatus is TaskStatus.ROLLING_BACK
    if stopping and run.Phase is Phase.NORMAL:
        # Cancelled (or draining) meanwhile: no point running it again; it may have done part of
        # its work, so it is rolled back like a unit that ended under a cancel.
        stopped = AttemptResult(ResultCode.FAILED, "stopped by a module shutdown")
        conclude(new, run, stopped, timing, actor=owner, ids=ids)
        return new
    remove_run(new, run)
    dispatch(new, run.unit, run.Phase, run.Attempt, timing, timing.now, owner, ids)
    return new


def expire(
    task: Task, timing: Timing, ids: IdFactory = new_id, retry_delays: Mapping[str, float] | None = None
) -> Task | Refusal:
    """The sweeper's change for a task with runs past their deadline, all handled at once.

    A RUNNING run lost its worker (dead or frozen): the attempt counts as failed and the unit is
    retried or routed as any failure (`retry_delays`: its backoff, by DispatchId). A PENDING run
    was never claimed (the message was lost or purged): it is published again under the same
    dispatch id, and again after twice the period, four times... (it may only be waiting in a
    long queue). A task past its own deadline (docs/design/operations.md) rolls back first, so
    nothing it had not started is sent again.
    """
    lapsed = [r.DispatchId for r in task.Runs if r.Deadline is not None and r.Deadline <= timing.now]
    if not lapsed and expiry(task, timing.now) is None:
        return Refusal("nothing past its deadline")
    new = task.clone()
    if expiry(new, timing.now) is not None:  # past its time (its own deadline): nothing unclaimed is sent again
        advance(new, timing, "sweeper", ids)
    for dispatch_id in lapsed:
        run = new.run(dispatch_id)
        if run is None:  # concluding an earlier one cancelled it
            continue
        if run.State is RunState.RUNNING:
            # A callback that came while its command ran is its outcome (the other system did
            # what the command started); else the worker's attempt is lost.
            lost = kind_of(new.Steps[run.Cursor]).lease_lapsed(new, run, timing) or AttemptResult(
                ResultCode.WORKER_LOST, f"lease of {run.Owner} lapsed")
            delay = (retry_delays or {}).get(dispatch_id, timing.retry_delay)
            conclude(new, run, lost, with_delay(timing, delay), actor="sweeper", ids=ids)
        elif run.State is RunState.PARKED:  # nobody answered in time: its kind says what that means
            parked_lapsed(new, run, timing, ids)
        else:
            _redispatch(new, run, timing)
    return new


def mark_sent(task: Task, dispatch_id: str) -> Task | Refusal:
    """Drop an outbox entry the broker confirmed (or a child-task entry that was applied)."""
    if not any(e.DispatchId == dispatch_id for e in task.Outbox):
        return Refusal("already marked sent")
    new = task.clone()
    drop_outbox(new, dispatch_id)
    return new


def noted(task: Task, now: float, event: str, *, actor: str, message: str = "", unit: Unit | None = None,
          phase: Phase | None = None) -> Task:
    """The task with one more history event, said by someone outside its flow (a reconciler
    telling what it removed in the task's name, an operator's change of an item record)."""
    new = task.clone()
    record(new, now, event, actor=actor, message=message, unit=unit, phase=phase)
    return new


# --- the parts ---------------------------------------------------------------------------------


def _owned(task: Task, dispatch_id: str, owner: str) -> tuple[Task, Run] | Refusal:
    """A copy of the task to change and its run `dispatch_id`, while `owner` still holds that
    run's claim: a worker's word about a run it no longer holds is refused."""
    run = task.run(dispatch_id)
    if run is None:
        return Refusal("stale dispatch: the task has moved on")
    if run.State is not RunState.RUNNING or run.Owner != owner:
        return Refusal(f"claim lost: run is {run.State.value}, owned by {run.Owner}")
    new = task.clone()
    copied = new.run(dispatch_id)
    assert copied is not None  # the copy has every run the task has
    return new, copied


def _redispatch(task: Task, run: Run, timing: Timing) -> None:
    waiting = next((e for e in task.Outbox if e.DispatchId == run.DispatchId), None)
    if waiting is None:
        task.Outbox.append(publish_entry(task, run, due_at=timing.now))
    else:  # due again now: the sweeper's flush sends it (a flush sends only what a change moved)
        waiting.DueAt = timing.now
    if run.HeldBy is not None:  # held by a drain: looked at again soon, no backoff, no event
        run.Deadline = timing.now + DRAIN_RECHECK_SECONDS
        return
    # Back off: a message that merely waits in a long queue (a backlog, its module down) must not
    # be copied into that queue every period; each copy lengthens the wait, so ever more runs
    # pass their deadline and the queue grows without bound (a redelivery storm).
    run.Deadline = timing.now + exponential(timing.redeliver_after, run.Redispatches,
                                            timing.redeliver_after * MAX_REDISPATCH_BACKOFF)
    run.Redispatches += 1
    record(task, timing.now, "redispatched", run, actor="sweeper", message="never claimed")
