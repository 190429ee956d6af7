"""Flushing the lock outbox entries (docs/design/locks.md), and reclaiming what crashes leave.

- `lock_acquire` (a new task, or a retried one): the task joins the key's line; whoever the
  change granted (maybe itself) gets `lock_granted`, which dispatches its ready roots.
- `lock_release` (a holder's final change): the task leaves; the next waiter(s) are granted.
Both are idempotent (joining twice is one place in line; leaving twice, one leave; a grant
applied twice is refused), so the sweeper's relay may repeat either after a crash.

`reclaim` is the sweeper's job: a holder or waiter whose task is gone, ended, or asks for
another key leaves; a holder whose task still waits (a crash between granting in the lock
table and writing the task) is granted again. Locks never leak, whichever process dies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from common.errors import StoreClosed, StoreError
from common.engine.changes import Refusal, Timing, lock_granted, lock_waiting, stale_member, unit_lock_granted
from common.engine.views import parse_member, unit_lock
from common.engine.codes import OutboxKind
from common.engine.document import LockHolder, OutboxEntry, Task
from common.engine.states import LockState
from common.engine.outbox import body_of
from common.store.gates.lock.table import LockTable, open_lock_store_for
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore

if TYPE_CHECKING:  # the lock gate's own bodies; body_of reads an entry as one
    from common.engine.gates.lock.bodies import LockAcquireBody, LockReleaseBody

log = structlog.get_logger(__name__)


class LockRelay:
    def __init__(self, store: TaskStore, timing: Callable[[], Timing], flush: Callable[[Task], None],
                 table: LockTable | None = None):
        self._store = store
        self._timing = timing
        self._flush = flush  # publishes what a grant put in the granted task's outbox
        self._table = table
        self._handlers = self.handlers()

    @property
    def table(self) -> LockTable:
        if self._table is None:  # opened on first use: most processes never see a lock
            self._table = LockTable(open_lock_store_for(self._store), clock=lambda: self._timing().now)
        return self._table

    def handlers(self) -> dict[OutboxKind, Callable[[str, OutboxEntry], list[LockHolder] | None]]:
        """This relay's rows of the flushers' table (common.engine.outbox.FLUSHERS): each returns
        whom its change granted, or None when the entry is moot."""
        return {OutboxKind.LOCK_ACQUIRE: self._acquire, OutboxKind.LOCK_RELEASE: self._release}

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one entry; False when a store failed (the entry stays for the relay)."""
        handler = self._handlers.get(entry.Kind)
        if handler is None:
            log.error("unknown lock entry kind; dropped", task_id=task_id, kind=entry.Kind)
            return True
        try:
            granted = handler(task_id, entry)
            if granted is not None:
                self._grant_all(entry.Body["Key"], granted)
        except StoreError as exc:
            # Closed by this process's shutdown: the next process's relay applies it, no outage.
            say = log.debug if isinstance(exc, StoreClosed) else log.warning
            say("lock entry not applied; the outbox relay will retry", task_id=task_id, kind=entry.Kind, error=str(exc))
            return False
        return True

    def _acquire(self, task_id: str, entry: OutboxEntry) -> list[LockHolder] | None:
        body: LockAcquireBody = body_of(entry.Kind, entry.Body)
        member = body.Member or task_id  # a step lock's member names its unit
        if not self._waiting(member, body.Key):
            return None  # granted, ended or gone already: a relay's late repeat
        granted = self.table.join(body.Key, member, priority=body.Priority, seq=body.Seq, limit=body.Limit,
                                  mode=body.Mode, shares=body.Shares)
        log.info("lock asked", task_id=task_id, member=member, key=body.Key, mode=body.Mode, granted=len(granted))
        if not granted:  # asked before (a crash after joining): granted then, maybe
            lock = self.table.get(body.Key)
            granted = [h for h in (lock.Holders if lock else []) if h.TaskId == member]
            if not granted and member == task_id and lock is not None:  # in line: say so
                now = self._timing().now
                mutate(self._store, task_id, lambda t: lock_waiting(t, body.Key, len(lock.Holders), now))
        return granted

    def _release(self, task_id: str, entry: OutboxEntry) -> list[LockHolder] | None:
        body: LockReleaseBody = body_of(entry.Kind, entry.Body)
        member = body.Member or task_id
        task = self._store.get(task_id)
        if task is not None and task.Generation > body.Generation:
            return None  # a late repeat: the retried task's new generation holds or awaits it now
        granted = self.table.leave(body.Key, member)
        log.info("lock released", task_id=task_id, member=member, key=body.Key, granted=len(granted))
        return granted

    def reclaim(self, limit: int = 1000) -> int:
        """The sweeper's pass over every busy lock; returns how many members it removed."""
        removed = 0
        for lock in self.table.list_locks(limit=limit):
            for member in [h.TaskId for h in lock.Holders] + [w.TaskId for w in lock.Waiters]:
                if self._stale(member, lock.Key):
                    log.warning("lock member reclaimed", member=member, key=lock.Key)
                    self._grant_all(lock.Key, self.table.leave(lock.Key, member))
                    removed += 1
                elif lock.holds(member) and self._waiting(member, lock.Key):
                    holder = next(h for h in lock.Holders if h.TaskId == member)
                    self._grant_all(lock.Key, [holder])  # granted, but the task never heard
        return removed

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    def _grant_all(self, key: str, granted: list[LockHolder]) -> None:
        line = list(granted)
        while line:
            holder = line.pop(0)
            task_id, unit = parse_member(holder.TaskId)
            timing, since = self._timing(), holder.Since
            if unit is None:
                changed = mutate(self._store, task_id, lambda t: lock_granted(t, key, timing, since=since))
            else:
                changed = mutate(self._store, task_id, lambda t: unit_lock_granted(t, unit, key, timing, since))
            if isinstance(changed, Refusal):
                if self._stale(holder.TaskId, key):  # ended while in line: pass it on
                    line += self.table.leave(key, holder.TaskId)
                continue
            log.info("lock taken", task_id=task_id, member=holder.TaskId, key=key)
            self._flush(changed)

    def _waiting(self, member: str, key: str) -> bool:
        """The member's task (or unit) still waits for `key`."""
        task_id, unit = parse_member(member)
        task = self._store.get(task_id)
        if task is None:
            return False
        if unit is None:
            return task.Lock is not None and task.Lock.Key == key and task.Lock.State == LockState.WAITING
        held = unit_lock(task, unit)
        return held is not None and held.Key == key and held.State == LockState.WAITING

    def _stale(self, member: str, key: str) -> bool:
        """Holding or awaiting `key` for this member is a leak (common.engine.gates.lock.table.stale_member)."""
        task_id, unit = parse_member(member)
        task = self._store.get(task_id)
        if unit is None:
            return stale_member(task, key)
        held = unit_lock(task, unit) if task is not None else None
        return held is None or held.Key != key
