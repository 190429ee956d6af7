"""A task's own lock, the in-place part (docs/design/locks.md): what the task's creation, its final
change and an operator's retry do to `Task.Lock` and `WaitingFor`. The changes that start work
once a lock is granted are in lock_transitions.

- `request_lock`: the task waits (`WaitingFor: {Kind: lock}`) and its outbox asks for the lock;
  routing starts nothing while `WaitingFor` is set.
- `release_on_finish`: the task's final change gives the lock back (an outbox entry), or, when
  its rollback failed, keeps it until an operator ends the task.
- `defer_lock`: the task will ask for the key once the gates before the lock let it go (it waits
  for another task, or a freeze window's end, first: common.engine.gates.lock.gate): waiting in
  the lock's line, or holding a slot, while it could not start anyway would keep out tasks that
  could.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from common.engine.states import LOCKS, check_transition, move_lock, set_waiting
from common.engine.codes import WaitKind
from common.engine.document import LockTemplate, OutboxEntry, Task, TaskLock, WaitCondition
from common.engine.gates.lock.modes import EXCLUSIVE, EXCLUSIVE_SHARES
from common.engine.core.key_templates import LockKeyError, LockKeyTooLong, render_key
from common.engine.gates.lock.table import HELD, KEPT, LOCK_ACQUIRE, LOCK_RELEASE, PENDING, RELEASED, WAITING
from common.engine.gates.start_at.gate import start_due
from common.engine.states import LockState, TaskStatus
from common.engine.core.units import drop_outbox, record

LOCK_WAIT = WaitKind.LOCK


class LockAsk(NamedTuple):
    """What a task asks of the lock table: its rendered key, the limit, its mode and the modes
    it shares the key with (common.engine.gates.lock.modes). `LockAsk(*("k", 1))` is exclusive."""

    key: str
    limit: int = 1
    mode: str = EXCLUSIVE
    shares: tuple[str, ...] = EXCLUSIVE_SHARES


def ask_for(template: LockTemplate, key: str) -> LockAsk:
    """What a lock declared by `template` asks for under its rendered `key`."""
    if template.Mode is None or template.Mode == EXCLUSIVE:
        return LockAsk(key, template.Limit)
    return LockAsk(key, template.Limit, template.Mode, tuple(template.Shares or ()))  # [] shares with nothing


def request_lock(task: Task, ask: LockAsk, now: float) -> None:
    """In place: the task waits for the key; the outbox entry asks the lock table for a slot, at
    once or at the task's delayed start (common.engine.gates.after_task.waits.start_due)."""
    check_transition(LOCKS, None if task.Lock is None else task.Lock.State, WAITING)
    task.Lock = _task_lock(ask, WAITING)
    set_waiting(task, WaitCondition(Kind=LOCK_WAIT, Key=ask.key, Since=now))
    body = {"Key": ask.key, "Limit": ask.limit, "TaskId": task.TaskId, "Priority": task.Priority,
            "Seq": task.TimeCreate, **mode_fields(ask)}
    task.Outbox.append(OutboxEntry(DispatchId=acquire_id(task), Kind=LOCK_ACQUIRE, Body=body,
                                   DueAt=start_due(task, now)))
    record(task, now, "lock_waiting", actor="oss", message=f"waiting for lock {ask.key} ({described(ask)})")


def mode_fields(ask: LockAsk) -> dict[str, Any]:
    """An acquire body's mode: left out when exclusive, so the entry is the one of before modes
    (a process that predates them reads it)."""
    return {} if ask.mode == EXCLUSIVE else {"Mode": ask.mode, "Shares": list(ask.shares)}


def described(ask: LockAsk) -> str:
    """"limit 5", or "mode backup, limit 5" when it names a mode: for history and logs."""
    return f"limit {ask.limit}" if ask.mode == EXCLUSIVE else f"mode {ask.mode}, limit {ask.limit}"


def defer_lock(task: Task, ask: LockAsk) -> None:
    """In place: the task will ask for the key when its gate opens; nothing asked now."""
    check_transition(LOCKS, None if task.Lock is None else task.Lock.State, PENDING)
    task.Lock = _task_lock(ask, PENDING)


def _task_lock(ask: LockAsk, state: LockState) -> TaskLock:
    return TaskLock(Key=ask.key, Limit=ask.limit, Mode=ask.mode, Shares=sorted(ask.shares), State=state)


def asked(lock: TaskLock) -> LockAsk:
    """What a task's lock asks for, to ask again."""
    return LockAsk(lock.Key, lock.Limit, lock.Mode, tuple(lock.Shares))


def lock_changed(task: Task, ask: LockAsk | None) -> str | None:
    """Why moving the task to a revision whose lock asks `ask` is in doubt: its lock would change."""
    mine = asked(task.Lock) if task.Lock is not None else None
    return None if mine == ask else f"its lock would change ({_shown(mine)} -> {_shown(ask)})"


def _shown(ask: LockAsk | None) -> str:
    return "none" if ask is None else f"{ask.key} (mode {ask.mode}, limit {ask.limit})"


def asked_at_start(task: Task) -> set[str]:
    """Its lock's ask, made when the start comes: the entry carries the task's delayed start (in a
    document written before `StartAt` was kept)."""
    return {e.DispatchId for e in task.Outbox if e.Kind == LOCK_ACQUIRE}


def acquire_id(task: Task) -> str:
    return f"{task.TaskId}:lock:g{task.Generation}"


def release_on_finish(task: Task, now: float) -> None:
    """In place, from the task's final change: give the lock back, or keep it (rollback failed)."""
    lock = task.Lock
    if lock is None or lock.State == RELEASED:
        return
    if lock.State == PENDING:  # never asked for: nothing to give back
        move_lock(lock, RELEASED)
        return
    if task.WaitingFor is not None and task.WaitingFor.Kind == LOCK_WAIT:
        set_waiting(task, None)  # cancelled while waiting: it leaves the line
    if task.TaskStatus is TaskStatus.ROLLBACK_FAILED and lock.State in (HELD, KEPT):
        move_lock(lock, KEPT)
        record(task, now, "lock_kept", actor="lock",
               message=f"lock {lock.Key} stays held until an operator ends the task")
        return
    move_lock(lock, RELEASED)
    body = {"Key": lock.Key, "TaskId": task.TaskId, "Generation": task.Generation}
    key = f"{task.TaskId}:unlock:{task.Version}:{len(task.History)}"
    task.Outbox.append(OutboxEntry(DispatchId=key, Kind=LOCK_RELEASE, Body=body, DueAt=now))
    drop_outbox(task, acquire_id(task))
    record(task, now, "lock_released", actor="lock", message=f"released lock {lock.Key}")


def request_again(task: Task, now: float) -> None:
    """In place, from an operator's retry of a rolled-back task: queue for the lock again."""
    if task.Lock is not None:
        request_lock(task, asked(task.Lock), now)


def child_ask(body: dict[str, Any]) -> LockAsk | None:
    """The child type's lock, keyed by the child's parameters. The loader checked that the key
    names declared parameters; one left without a value keys the lock by the bare template."""
    template = body.get("Lock")
    if not template:
        return None
    try:
        key = render_key(template["Key"], body["Parameters"], body.get("SecretParameters") or ())
    except LockKeyTooLong as too_long:
        key = too_long.bounded  # the parent runs already: its child is not refused
    except LockKeyError:
        key = template["Key"]
    return ask_for(LockTemplate.model_validate(template), key)
