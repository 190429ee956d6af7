"""Fencing tokens: a command checks, at the point of its side effect, that its step is still current.

A module replica can freeze (SIGSTOP, a long GC pause, a VM migration) past its lease. The other
replica then takes the step over, the task may even be rolled back, and when the frozen one
resumes its command carries on: it does not know it lost its lease. Discarding its outcome (the
engine does) is not enough; the side effect itself must be refused. That is what a fencing
token is for: every attempt of a step gets one (the dispatch id the task document names, with the
owner that claimed it), and the command checks it against the store right before it acts.

    def init_instance(ctx: CommandContext) -> dict:
        with my_lock(name):            # the lock the undo takes too: no window after the check
            ctx.check_fence()          # StaleFence if this attempt is no longer the task's current one
            create_the_thing()

A store-side check alone leaves a window (the step can go stale right after it), so a command
whose undo may run concurrently also keeps a record beside its own effect, checked under the
same lock or transaction as the effect: the mysql module's tombstones, the inventory's closed
claims. See docs/guide/modules.md, "Fencing".

`current_run_refusal` is the one place that decides what "current" means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from common.errors import CommandFailed
from common.engine.document import Task
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each.records import keeps_records
from common.engine.states import FINAL_STATUSES, Phase, RunState, TaskStatus


@dataclass(frozen=True)
class FencingToken:
    """Names one attempt of one step phase, as claimed by one worker."""

    task_id: str
    cursor: int
    phase: Phase
    attempt: int
    dispatch_id: str  # unique per attempt: a retry or a take-over gets a new one
    owner: str  # the worker that claimed it
    item: int | None = None  # an item of a for_each step: its run may live in the item's record


class StaleFence(CommandFailed):
    """This attempt is no longer the task's current one: its side effect must not happen.

    Not retryable: the engine discards this attempt's outcome anyway (the claim was lost), and
    whichever attempt is current does the work.
    """

    def __init__(self, token: FencingToken, reason: str):
        self.token = token
        super().__init__(f"fencing token of attempt {token.attempt} is stale: {reason}", retryable=False)


def current_run_refusal(task: Task | None, token: FencingToken) -> str | None:
    """None while `token` names the task's current run, RUNNING under the token's owner; else why not.

    Pure. A task holds several runs at once (docs/design/task-document.md, "Runs"): the token's run
    is looked up by its dispatch id, which names one attempt of one unit (a step, or an item of a
    for_each step).
    """
    if task is None:
        return "the task does not exist"
    if task.TaskStatus in FINAL_STATUSES:
        return f"the task is {task.TaskStatus.name}"
    run = task.run(token.dispatch_id)
    if run is None or (run.Cursor, run.Phase) != (token.cursor, token.phase):
        same_unit = [r for r in task.Runs if (r.Cursor, r.Phase) == (token.cursor, token.phase)]
        if same_unit:
            return f"the step was dispatched again (attempt {same_unit[0].Attempt} is current)"
        return "the task has moved on to another step"
    if run.State is not RunState.RUNNING or run.Owner != token.owner:
        return f"the step is {run.State.value} under {run.Owner}"
    return None


def current_item_run_refusal(task: Task, record: ItemRecord | None, token: FencingToken) -> str | None:
    """current_run_refusal for an item of a step over item records: its run is in its record
    (docs/design/item-records.md), the task says only whether anything may still run. Pure."""
    if task.TaskStatus in FINAL_STATUSES:
        return f"the task is {task.TaskStatus.name}"
    run = record.Run if record is not None else None
    if run is None or run.DispatchId != token.dispatch_id or run.Phase is not token.phase:
        if run is not None and run.Phase is token.phase:
            return f"the item was dispatched again (attempt {run.Attempt} is current)"
        return "the item has moved on"
    if run.State is not RunState.RUNNING or run.Owner != token.owner:
        return f"the item is {run.State.value} under {run.Owner}"
    return None


def rollback_reached(task: Task | None, cursor: int, item: int | None = None,
                     record: ItemRecord | None = None) -> bool:
    """True once the rollback of step `cursor` (of its item `item`, in a for_each step) has begun
    (or the task ended without success): an effect a late command made now is one that rollback
    may already have missed, and the command must undo it itself. `record`: the item's record,
    for a step over item records. Pure."""
    if task is None:
        return True  # gone: nobody else will undo anything
    if task.TaskStatus in FINAL_STATUSES:
        return task.TaskStatus is not TaskStatus.SUCCESS
    step = task.Steps[cursor]
    if record is not None:
        return record.RollbackAttempts > 0
    unit = step.Items[item] if item is not None and step.Items and 0 <= item < len(step.Items) else step
    return unit.RollbackAttempts > 0


ReadItem = Callable[[str, int, int, int], "ItemRecord | None"]  # task id, generation, cursor, item


def item_record_of(task: Task | None, cursor: int, item: int | None, read_item: ReadItem | None) -> ItemRecord | None:
    """The record of item `item` of step `cursor` when the step keeps its items in records."""
    if task is None or item is None or read_item is None or not keeps_records(task.Steps[cursor]):
        return None
    return read_item(task.TaskId, task.Generation, cursor, item)


def check_fence(read_task: Callable[[str], Task | None], token: FencingToken, read_item: ReadItem | None = None) -> None:
    """Raise StaleFence unless `token` is current in the store `read_task` reads from (an item
    of a step over records: in its record, which `read_item` reads)."""
    task = read_task(token.task_id)
    if task is not None and token.item is not None and keeps_records(task.Steps[token.cursor]):
        if read_item is None:
            raise StaleFence(token, "the item's record cannot be read here")
        record = read_item(task.TaskId, task.Generation, token.cursor, token.item)
        reason = current_item_run_refusal(task, record, token)
    else:
        reason = current_run_refusal(task, token)
    if reason is not None:
        raise StaleFence(token, reason)
