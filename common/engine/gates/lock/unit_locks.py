"""A lock on one step (flows.yaml `lock:` on a step, docs/design/locks.md): each unit of the step
(the step, or each item of a `for_each` step) holds the key while its normal phase runs, from
its first dispatch until it settles (retries keep it); rollbacks take no lock.

The unit's run waits in state `waiting_lock` (no deadline, nothing published) and the task's
`UnitLocks` says so; the lock table's member is `<TaskId>#<cursor>[.<item>]`, so the relay and
the sweeper's reclaim (common/store/gates/lock/relay.py) treat it like a task's own lock. Pure: the callers
in common.engine.core.advance change the task in place.
"""

from __future__ import annotations

from common.engine.states import UNIT_LOCKS, check_transition, move_lock, move_run
from common.engine.gates.lock.task_lock import ask_for, described, mode_fields
from common.engine.core.key_templates import LockKeyError, LockKeyTooLong, render_key
from common.engine.gates.lock.table import HELD, LOCK_ACQUIRE, LOCK_RELEASE, WAITING
from common.engine.document import OutboxEntry, Run, Task, UnitLock
from common.engine.states import RunState
from common.engine.core.units import Refusal, Timing, publish_entry, record
from common.engine.core.unit_parameters import command_parameters, unit_secrets

Unit = tuple[int, int | None]


def member_id(task_id: str, unit: Unit) -> str:
    cursor, item = unit
    return f"{task_id}#{cursor}" if item is None else f"{task_id}#{cursor}.{item}"


def parse_member(member: str) -> tuple[str, Unit | None]:
    """(task id, unit) for a step lock's member; (task id, None) for a task's own lock."""
    task_id, sep, where = member.rpartition("#")
    if not sep:
        return member, None
    cursor, _, item = where.partition(".")
    return task_id, (int(cursor), int(item) if item else None)


def unit_lock(task: Task, unit: Unit) -> UnitLock | None:
    return next((u for u in task.UnitLocks if (u.Cursor, u.Item) == unit), None)


def must_wait(task: Task, unit: Unit) -> bool:
    """The unit's step declares a lock the unit does not hold yet."""
    return task.Steps[unit[0]].Lock is not None and unit_lock(task, unit) is None


def wait_for_lock(task: Task, run: Run, now: float) -> None:
    """Instead of publishing: the run waits, and the outbox asks the lock table for the key."""
    template = task.Steps[run.Cursor].Lock
    assert template is not None
    try:
        secret = unit_secrets(task.SecretParameters, task.Steps[run.Cursor].ForEach)
        key = render_key(template.Key, command_parameters(task, run.Cursor, run.Item), secret)  # an item's: with item
    except LockKeyTooLong as too_long:
        key = too_long.bounded  # made at run time (an item, an output): not refused, still one key per value
    except LockKeyError:
        key = template.Key  # checked by the loader; a parameter left without value keys by the template
    ask = ask_for(template, key)
    move_run(run, RunState.WAITING_LOCK)
    run.Deadline = None
    check_transition(UNIT_LOCKS, None, WAITING)
    task.UnitLocks.append(UnitLock(Cursor=run.Cursor, Item=run.Item, Key=key, Mode=ask.mode, State=WAITING))
    member = member_id(task.TaskId, run.unit)
    body = {"Key": key, "Limit": ask.limit, "TaskId": task.TaskId, "Member": member,
            "Priority": task.Priority, "Seq": task.TimeCreate, **mode_fields(ask)}
    task.Outbox.append(OutboxEntry(DispatchId=f"{member}:lock:{run.DispatchId}", Kind=LOCK_ACQUIRE, Body=body, DueAt=now))
    record(task, now, "lock_waiting", run, actor="lock", message=f"waiting for lock {key} ({described(ask)})")


def unit_lock_granted(task: Task, unit: Unit, key: str, timing: Timing, since: float | None = None) -> Task | Refusal:
    """The lock table granted the unit its key: its waiting run is published."""
    held = unit_lock(task, unit)
    run = next((r for r in task.Runs if r.unit == unit and r.State is RunState.WAITING_LOCK), None)
    if held is None or held.Key != key or held.State != WAITING or run is None:
        return Refusal("no run of this unit waits for this lock")
    new = task.clone()
    lock = unit_lock(new, unit)
    run = next(r for r in new.Runs if r.DispatchId == run.DispatchId)
    assert lock is not None
    move_lock(lock, HELD, UNIT_LOCKS)
    lock.Since = timing.now if since is None else since
    move_run(run, RunState.PENDING)
    run.Since = timing.now
    run.Deadline = timing.now + timing.redeliver_after
    new.Outbox = [e for e in new.Outbox if e.DispatchId != f"{member_id(new.TaskId, unit)}:lock:{run.DispatchId}"]
    new.Outbox.append(publish_entry(new, run, timing.now))
    record(new, timing.now, "lock_taken", run, actor="lock", message=f"holds lock {key}")
    return new


def release_unit(task: Task, unit: Unit, now: float) -> None:
    """The unit settled (or was cancelled while waiting): give its key back or leave the line."""
    lock = unit_lock(task, unit)
    if lock is None:
        return
    check_transition(UNIT_LOCKS, lock.State, None)
    task.UnitLocks = [u for u in task.UnitLocks if u is not lock]
    member = member_id(task.TaskId, unit)
    body = {"Key": lock.Key, "TaskId": task.TaskId, "Member": member, "Generation": task.Generation}
    task.Outbox = [e for e in task.Outbox if not e.DispatchId.startswith(f"{member}:lock:")]
    task.Outbox.append(OutboxEntry(DispatchId=f"{member}:unlock:{task.Version}:{len(task.History)}",
                                   Kind=LOCK_RELEASE, Body=body, DueAt=now))
    record(task, now, "lock_released", actor="lock", unit=unit, message=f"released lock {lock.Key}")


def release_all_units(task: Task, now: float) -> None:
    """The task ended: no unit keeps a step lock (a cancelled or drained unit may still)."""
    for lock in list(task.UnitLocks):
        release_unit(task, (lock.Cursor, lock.Item), now)
