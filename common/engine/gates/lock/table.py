"""Per-key locks (docs/design/locks.md): the lock document and the pure decisions on it.

A task type may declare `lock: {key: "cluster:{cluster}", limit: 5}`: at most `limit` tasks
whose rendered key is the same run at once; the others wait, best priority first, then in
submission order. One document per key holds who holds it and who waits; every change to it is
one compare-and-set on its `Version` (common/store/gates/lock/table.py applies these functions), so
two processes racing for the last slot cannot both win.

The task side (common/engine/gates/lock/changes.py) keeps `Task.Lock` and `Task.WaitingFor`; the outbox
entries `lock_acquire` and `lock_release` connect the two documents (common/store/gates/lock/relay.py).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from common.engine.codes import OutboxKind
from common.engine.gates.lock.modes import EXCLUSIVE, EXCLUSIVE_SHARES, exclusive_left_out, fits
from common.engine.outbox import Flusher, kinds_of
from common.engine.states import LockState, TaskStatus

LOCK_ACQUIRE = OutboxKind.LOCK_ACQUIRE
LOCK_RELEASE = OutboxKind.LOCK_RELEASE
LOCK_KINDS = kinds_of(Flusher.LOCKS)

WAITING, HELD, KEPT, RELEASED = LockState.WAITING, LockState.HELD, LockState.KEPT, LockState.RELEASED
# Not asked for yet: the task waits for another task first (`after_task`), and asks for its lock
# once that one succeeded, so it never holds a slot while it cannot start.
PENDING = LockState.PENDING
# A task in one of these is done with its lock: a holder left behind by a crash is reclaimed.
# ROLLBACK_FAILED is not one: its lock is KEPT until an operator ends the task.
RELEASING_STATUSES = frozenset({TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK})


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Member(_Doc):
    TaskId: str
    # Its mode and the modes it shares the key with (common.engine.gates.lock.modes); an exclusive
    # member is written, and a document written before modes reads, as the lock of before.
    Mode: str = EXCLUSIVE
    Shares: list[str] = Field(default_factory=lambda: list(EXCLUSIVE_SHARES))

    @model_serializer(mode="wrap")
    def _as_before_modes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return exclusive_left_out(handler(self))


class LockHolder(_Member):
    Since: float


class LockWaiter(_Member):
    Priority: int = 0
    Seq: float  # the task's submission time: FIFO within a priority
    Since: float


class KeyLock(_Doc):
    Key: str
    Limit: int = 1
    Holders: list[LockHolder] = Field(default_factory=list)
    Waiters: list[LockWaiter] = Field(default_factory=list)
    Version: int = 0

    @property
    def idle(self) -> bool:
        return not self.Holders and not self.Waiters

    def holds(self, task_id: str) -> bool:
        return any(h.TaskId == task_id for h in self.Holders)

    def waits(self, task_id: str) -> bool:
        return any(w.TaskId == task_id for w in self.Waiters)


# --- decisions on the lock document ----------------------------------------------------------------


def join(lock: KeyLock, task_id: str, priority: int, seq: float, limit: int, now: float,
         mode: str = EXCLUSIVE, shares: Collection[str] = EXCLUSIVE_SHARES) -> tuple[KeyLock, list[str]]:
    """The task asks for the lock in `mode`: it waits in line (once), then whoever fits is granted.

    Idempotent: a holder or a waiter asking again changes nothing. The newest declared limit
    wins (an edited flows.yaml takes effect as tasks ask)."""
    new = lock.model_copy(deep=True)
    new.Limit = max(1, limit)
    if not new.holds(task_id) and not new.waits(task_id):
        new.Waiters.append(LockWaiter(TaskId=task_id, Priority=priority, Seq=seq, Since=now,
                                      Mode=mode, Shares=sorted(shares)))
    return promote(new, now)


def leave(lock: KeyLock, task_id: str, now: float) -> tuple[KeyLock, list[str]]:
    """The task is done with the lock (or gave up waiting): its slot goes to the next in line."""
    new = lock.model_copy(deep=True)
    new.Holders = [h for h in new.Holders if h.TaskId != task_id]
    new.Waiters = [w for w in new.Waiters if w.TaskId != task_id]
    return promote(new, now)


def promote(lock: KeyLock, now: float) -> tuple[KeyLock, list[str]]:
    """Grant from the head of the line (best priority first, then in submission order) while
    the head fits. A waiter that does not fit stops the pass: nobody behind it overtakes, so a
    stream of shared-mode tasks cannot starve one waiting for an exclusive mode."""
    granted: list[str] = []
    for chosen in line_of(lock):
        if not fits(lock.Holders, lock.Limit, chosen):
            break
        lock.Holders.append(LockHolder(TaskId=chosen.TaskId, Since=now, Mode=chosen.Mode, Shares=chosen.Shares))
        granted.append(chosen.TaskId)
    lock.Waiters = [w for w in lock.Waiters if w.TaskId not in granted]
    return lock, granted


def line_of(lock: KeyLock) -> list[LockWaiter]:
    """The waiters in the order they will be granted."""
    return sorted(lock.Waiters, key=lambda w: (-w.Priority, w.Seq))


def stale_member(task: Any, key: str) -> bool:
    """Holding or waiting for `key` on behalf of this task is a leak: the task is gone, is done
    with its lock, or now asks for another key (a new generation, say)."""
    if task is None or task.Lock is None or task.Lock.Key != key:
        return True
    return task.TaskStatus in RELEASING_STATUSES or task.Lock.State == RELEASED
