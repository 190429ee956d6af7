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

import hashlib
import string
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from common.engine.codes import OutboxKind
from common.engine.gates.lock.modes import EXCLUSIVE, EXCLUSIVE_SHARES, exclusive_left_out, fits
from common.engine.outbox import Flusher, kinds_of
from common.input_limits import escaped
from common.secrets.names import SECRET_KEY
from common.secrets.documents import mask_secrets
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


# The longest key: what `GET /api/v1/locks?key=` takes, so that every key the table lists can be
# looked up. A template longer than this is refused at load; a key longer at submission too.
MAX_KEY_LENGTH = 256
# A key made longer at run time (an item's, or from a step's output) keeps this much of its start
# and a digest of the whole: it still locks exactly the same rendered keys together.
_KEPT_OF_LONG_KEY = 200


class LockKeyError(ValueError):
    """A lock key template names a parameter the task does not have."""


class LockKeyTooLong(LockKeyError):
    """The key these parameters make is longer than MAX_KEY_LENGTH. A submission is refused;
    what runs already locks by `bounded`: the key's start and a digest of the whole."""

    def __init__(self, template: str, key: str):
        self.bounded = key[:_KEPT_OF_LONG_KEY] + "…sha256:" + hashlib.sha256(key.encode()).hexdigest()[:16]
        super().__init__(f"the lock key {template!r} makes a key of {len(key)} characters, more than {MAX_KEY_LENGTH}")


def template_fields(template: str) -> list[str]:
    """The parameter names `{name}` in a key template; ValueError when it is not one."""
    names = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"{{{field}}}: a placeholder is a parameter name only, like {{cluster}}")
        names.append(field)
    return names


def render_key(template: str, parameters: dict[str, Any], secret: Collection[str] = ()) -> str:
    """The key of these parameters. A key is shown (API, console, logs) and is the lock's
    identity, so a part that is secret is the digest of its value: one `secret` names (declared
    secret, or the `item` of a secret list), one named like a secret, or a value that holds
    one (a URL with a password, a mapping with a secret-looking key). The loader refuses
    templates that name a secret where it can tell; this covers what only a submission shows."""
    missing = [name for name in template_fields(template) if name not in parameters]
    if missing:
        raise LockKeyError(f"the lock key {template!r} needs parameter {missing[0]!r}")
    key = template.format_map({name: _part(name, parameters[name], secret) for name in template_fields(template)})
    if len(key) > MAX_KEY_LENGTH:
        raise LockKeyTooLong(template, key)
    return key


def _part(name: str, value: Any, secret: Collection[str]) -> str:
    """A value as its part of a key. Control and invisible characters are written as escapes: a
    key is a name (GET /locks?key= takes no newline, NUL or bidi control) and is shown on one line."""
    text = value if isinstance(value, str) else str(_canonical(value))
    if name in secret or SECRET_KEY.search(name) or mask_secrets(value) != value:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return escaped(text)


def _canonical(value: Any) -> Any:
    """One value, one spelling: JSON's 3 and 3.0 are one number, and a mapping is the same in
    any key order. Else two tasks on one shard would make two keys, and both hold an exclusive
    lock. What was already canonical (an int, a mapping in key order) is written as before."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:  # past it, 1e+300 stays short
        return int(value)
    if isinstance(value, dict):
        return {key: _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


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
