"""Flushing the lock outbox entries (DESIGN.md sec. 10), and reclaiming what crashes leave.

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

import structlog

from common.errors import StoreError
from common.lock_transitions import lock_granted
from common.locks import LOCK_ACQUIRE, LOCK_RELEASE, WAITING, LockHolder, stale_member
from common.models import OutboxEntry, Task
from common.store.locks_table import LockTable, open_lock_store_for
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.task_runs import Refusal, Timing

log = structlog.get_logger(__name__)


class LockRelay:
    def __init__(self, store: TaskStore, timing: Callable[[], Timing], flush: Callable[[Task], None],
                 table: LockTable | None = None):
        self._store = store
        self._timing = timing
        self._flush = flush  # publishes what a grant put in the granted task's outbox
        self._table = table

    @property
    def table(self) -> LockTable:
        if self._table is None:  # opened on first use: most processes never see a lock
            self._table = LockTable(open_lock_store_for(self._store), clock=lambda: self._timing().now)
        return self._table

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one entry; False when a store failed (the entry stays for the relay)."""
        body = entry.Body
        try:
            if entry.Kind == LOCK_ACQUIRE:
                task = self._store.get(task_id)
                if task is None or task.Lock is None or task.Lock.State != WAITING:
                    return True  # granted, ended or gone already: a relay's late repeat
                granted = self.table.join(body["Key"], task_id, priority=int(body.get("Priority", 0)),
                                          seq=float(body.get("Seq", 0.0)), limit=int(body.get("Limit", 1)))
                log.info("lock asked", task_id=task_id, key=body["Key"], granted=len(granted))
                if not granted:  # asked before (a crash after joining): granted then, maybe
                    lock = self.table.get(body["Key"])
                    granted = [h for h in (lock.Holders if lock else []) if h.TaskId == task_id]
            elif entry.Kind == LOCK_RELEASE:
                task = self._store.get(task_id)
                if task is not None and task.Generation > int(body.get("Generation", 0)):
                    return True  # a late repeat: the retried task's new generation holds or awaits it now
                granted = self.table.leave(body["Key"], task_id)
                log.info("lock released", task_id=task_id, key=body["Key"], granted=len(granted))
            else:
                log.error("unknown lock entry kind; dropped", task_id=task_id, kind=entry.Kind)
                return True
            self._grant_all(body["Key"], granted)
        except StoreError as exc:
            log.warning("lock entry not applied; the outbox relay will retry", task_id=task_id,
                        kind=entry.Kind, error=str(exc))
            return False
        return True

    def reclaim(self, limit: int = 1000) -> int:
        """The sweeper's pass over every busy lock; returns how many members it removed."""
        removed = 0
        for lock in self.table.list_locks(limit=limit):
            members = [h.TaskId for h in lock.Holders] + [w.TaskId for w in lock.Waiters]
            for task_id in members:
                task = self._store.get(task_id)
                if stale_member(task, lock.Key):
                    log.warning("lock member reclaimed", task_id=task_id, key=lock.Key)
                    self._grant_all(lock.Key, self.table.leave(lock.Key, task_id))
                    removed += 1
                elif lock.holds(task_id) and task is not None and task.Lock is not None \
                        and task.Lock.State == WAITING:
                    holder = next(h for h in lock.Holders if h.TaskId == task_id)
                    self._grant_all(lock.Key, [holder])  # granted, but the task never heard
        return removed

    def close(self) -> None:
        if self._table is not None:
            self._table.close()

    def _grant_all(self, key: str, granted: list[LockHolder]) -> None:
        line = list(granted)
        while line:
            holder = line.pop(0)
            task_id = holder.TaskId
            changed = mutate(self._store, task_id, lambda t: lock_granted(t, key, self._timing(), since=holder.Since))
            if isinstance(changed, Refusal):
                if stale_member(self._store.get(task_id), key):  # ended while in line: pass it on
                    line += self.table.leave(key, task_id)
                continue
            log.info("lock taken", task_id=task_id, key=key)
            self._flush(changed)
