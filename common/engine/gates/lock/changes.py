"""The lock table's answers applied to a task, in the style of common.engine.core.entries:
`lock_granted` (the flusher got the task its slot: the wait ends and the ready roots dispatch,
in the same change) and `lock_waiting` (it was put in line behind holders)."""

from __future__ import annotations

from common.engine.core.advance import advance
from common.engine.document import Task
from common.engine.gates.lock.table import HELD, WAITING
from common.engine.gates.lock.task_lock import LOCK_WAIT, acquire_id
from common.engine.registry import open_after
from common.engine.states import TaskStatus, move_lock, set_waiting
from common.engine.core.units import IdFactory, Refusal, Timing, drop_outbox, new_id, record


def lock_granted(task: Task, key: str, timing: Timing, ids: IdFactory = new_id,
                 since: float | None = None) -> Task | Refusal:
    """The lock table made this task a holder of `key` (at `since`, the table's time, which
    orders grants): stop waiting and start the ready roots."""
    if task.Lock is None or task.Lock.Key != key:
        return Refusal("the task does not ask for this lock")
    if task.Lock.State != WAITING or task.TaskStatus is not TaskStatus.NOT_STARTED:
        return Refusal(f"lock is {task.Lock.State}, task {task.TaskStatus.name}: nothing to start")
    new = task.clone()
    assert new.Lock is not None
    move_lock(new.Lock, HELD)
    new.Lock.Since = timing.now if since is None else since
    if new.WaitingFor is not None and new.WaitingFor.Kind == LOCK_WAIT:
        set_waiting(new, None)
        open_after(new, "lock", timing.now)  # a gate after it, if one waits its turn
    drop_outbox(new, acquire_id(new))  # applied: a relay must not ask again
    record(new, timing.now, "lock_taken", actor="lock", message=f"holds lock {key}")
    advance(new, timing, "lock", ids)
    return new


def lock_waiting(task: Task, key: str, holders: int, now: float) -> Task | Refusal:
    """The lock table put this task in line behind `holders` others: say so once, in the
    history (the console shows it, and a `waiting_for_lock` webhook goes out)."""
    if task.Lock is None or task.Lock.Key != key or task.Lock.State != WAITING:
        return Refusal("the task does not wait for this lock")
    since = task.WaitingFor.Since if task.WaitingFor is not None else 0.0
    if any(e.Event == "waiting_for_lock" for e in task.History if e.Time >= since):
        return Refusal("its wait is recorded already")  # a relay's repeat
    new = task.clone()
    record(new, now, "waiting_for_lock", actor="lock", message=f"waits for lock {key} ({holders} holding)")
    return new
