"""The task side of per-key locks (DESIGN.md sec. 10), as pure changes in the style of
common.transitions.

- `request_lock`: the task waits (`WaitingFor: {Kind: lock}`) and its outbox asks for the lock;
  routing starts nothing while `WaitingFor` is set.
- `lock_granted`: applied by the flusher that got the task its slot: the wait ends and the
  ready roots dispatch, in the same change.
- `release_on_finish`: the task's final change gives the lock back (an outbox entry), or, when
  its rollback failed, keeps it until an operator ends the task.
- `defer_lock` / `request_deferred_lock`: a task that also waits for another task (`after_task`)
  asks for its lock only once that task succeeded: waiting in the lock's line, or holding a
  slot, while it could not start anyway would keep out tasks that could.
"""

from __future__ import annotations

from common.locks import HELD, KEPT, LOCK_ACQUIRE, LOCK_RELEASE, PENDING, RELEASED, WAITING
from common.models import OutboxEntry, Task, TaskLock, WaitCondition
from common.statuses import TaskStatus
from common.task_runs import IdFactory, Refusal, Timing, drop_outbox, new_id, record
from common.task_waits import start_due

LOCK_WAIT = "lock"  # WaitingFor.Kind


def request_lock(task: Task, key: str, limit: int, now: float) -> None:
    """In place: the task waits for `key`; the outbox entry asks the lock table for a slot, at
    once or at the task's delayed start (common.task_waits.start_due)."""
    task.Lock = TaskLock(Key=key, Limit=limit, State=WAITING)
    task.WaitingFor = WaitCondition(Kind=LOCK_WAIT, Key=key, Since=now)
    body = {"Key": key, "Limit": limit, "TaskId": task.TaskId, "Priority": task.Priority, "Seq": task.TimeCreate}
    task.Outbox.append(OutboxEntry(DispatchId=acquire_id(task), Kind=LOCK_ACQUIRE, Body=body,
                                   DueAt=start_due(task, now)))
    record(task, now, "lock_waiting", actor="oss", message=f"waiting for lock {key} (limit {limit})")


def defer_lock(task: Task, key: str, limit: int) -> None:
    """In place: the task will ask for `key` later (request_deferred_lock); nothing asked now."""
    task.Lock = TaskLock(Key=key, Limit=limit, State=PENDING)


def request_deferred_lock(task: Task, now: float) -> None:
    """In place: a deferred lock is asked for (the awaited task succeeded)."""
    if task.Lock is not None and task.Lock.State == PENDING:
        request_lock(task, task.Lock.Key, task.Lock.Limit, now)


def acquire_id(task: Task) -> str:
    return f"{task.TaskId}:lock:g{task.Generation}"


def lock_granted(task: Task, key: str, timing: Timing, ids: IdFactory = new_id,
                 since: float | None = None) -> Task | Refusal:
    """The lock table made this task a holder of `key` (at `since`, the table's time, which
    orders grants): stop waiting and start the ready roots."""
    from common.advance import advance  # advance imports this module (finish releases)

    if task.Lock is None or task.Lock.Key != key:
        return Refusal("the task does not ask for this lock")
    if task.Lock.State != WAITING or task.TaskStatus is not TaskStatus.NOT_STARTED:
        return Refusal(f"lock is {task.Lock.State}, task {task.TaskStatus.name}: nothing to start")
    new = task.clone()
    assert new.Lock is not None
    new.Lock.State, new.Lock.Since = HELD, timing.now if since is None else since
    if new.WaitingFor is not None and new.WaitingFor.Kind == LOCK_WAIT:
        new.WaitingFor = None
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


def release_on_finish(task: Task, now: float) -> None:
    """In place, from the task's final change: give the lock back, or keep it (rollback failed)."""
    lock = task.Lock
    if lock is None or lock.State == RELEASED:
        return
    if lock.State == PENDING:  # never asked for: nothing to give back
        lock.State = RELEASED
        return
    if task.WaitingFor is not None and task.WaitingFor.Kind == LOCK_WAIT:
        task.WaitingFor = None  # cancelled while waiting: it leaves the line
    if task.TaskStatus is TaskStatus.ROLLBACK_FAILED and lock.State in (HELD, KEPT):
        lock.State = KEPT
        record(task, now, "lock_kept", actor="lock",
               message=f"lock {lock.Key} stays held until an operator ends the task")
        return
    lock.State = RELEASED
    body = {"Key": lock.Key, "TaskId": task.TaskId, "Generation": task.Generation}
    key = f"{task.TaskId}:unlock:{task.Version}:{len(task.History)}"
    task.Outbox.append(OutboxEntry(DispatchId=key, Kind=LOCK_RELEASE, Body=body, DueAt=now))
    drop_outbox(task, acquire_id(task))
    record(task, now, "lock_released", actor="lock", message=f"released lock {lock.Key}")


def request_again(task: Task, now: float) -> None:
    """In place, from an operator's retry of a rolled-back task: queue for the lock again."""
    if task.Lock is not None:
        request_lock(task, task.Lock.Key, task.Lock.Limit, now)
