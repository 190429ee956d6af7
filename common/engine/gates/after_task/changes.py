"""The changes of a task waiting for another (docs/design/operations.md), pure like
common.engine.core.entries.

- `awaited_finished`: the awaited task ended (its `task_finished` outbox entry, or the sweeper
  found it final). Success: the wait ends and the ready roots dispatch. Anything else: the
  waiter never starts; it ends rolled back, its message naming the awaited task and how it ended.
- `recheck_later`: the sweeper found the awaited task still going: look again later.
- `listen_for`: the awaited task lists a new waiter (`AwaitedBy`), refused once it has ended.
"""

from __future__ import annotations

from common.engine.core.advance import advance, enter_rollback
from common.engine.registry import open_after
from common.engine.document import Task
from common.engine.states import FINAL_STATUSES, TaskStatus, set_waiting
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record
from common.engine.gates.after_task.waits import RECHECK_SECONDS, awaited_outcome, awaits


def awaited_finished(task: Task, awaited_id: str, status: TaskStatus, timing: Timing,
                     ids: IdFactory = new_id) -> Task | Refusal:  # fmt: skip
    if not awaits(task, awaited_id):
        return Refusal(f"not waiting for task {awaited_id} (woken already)")
    new = task.clone()
    set_waiting(new, None)
    failure = awaited_outcome(awaited_id, status)
    record(new, timing.now, "awaited_task_ended", actor="oss", message=f"task {awaited_id} ended {status.name}")
    if failure is not None:
        new.TaskMessage = failure
        enter_rollback(new, timing, "oss")
    else:
        open_after(new, "after_task", timing.now)  # its lock: asked for now (or at its delayed start)
    advance(new, timing, "oss", ids)
    return new


def recheck_later(task: Task, awaited_id: str, timing: Timing) -> Task | Refusal:
    if not awaits(task, awaited_id):
        return Refusal("not waiting any more")
    new = task.clone()
    assert new.WaitingFor is not None
    new.WaitingFor.RecheckAt = timing.now + RECHECK_SECONDS
    return new


def listen_for(awaited: Task, waiter_id: str) -> Task | Refusal:
    if awaited.TaskStatus in FINAL_STATUSES:
        return Refusal(f"task {awaited.TaskId} has ended {awaited.TaskStatus.name}")
    if waiter_id in awaited.AwaitedBy:
        return Refusal("listed already")
    new = awaited.clone()
    new.AwaitedBy.append(waiter_id)
    return new
