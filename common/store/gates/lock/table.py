"""Taking and giving back per-key locks: the pure decisions of common.engine.gates.lock.table, applied to one lock
document with a compare-and-set, re-read and re-decided when another writer won the race.

`open_lock_store_for` opens the lock documents beside a task store (same SQLite file, same
MongoDB database), so whoever flushes an outbox can apply lock entries with what it has;
`open_lock_store` opens them on a store URL (the CLI's lock view; the API opens every gate's table at
once: oss/api/gate_tables.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

from common.engine.views import EXCLUSIVE, EXCLUSIVE_SHARES
from common.engine.document import KeyLock, LockHolder
from common.engine.changes import join, leave
from common.store.gates.lock.port import LockStore
from common.store.side_stores import open_gate_table, open_gate_table_beside
from common.store.retry import compare_and_set_loop

Decision = Callable[[KeyLock, float], tuple[KeyLock, list[str]]]


class LockTable:
    """`now` left out: the clock is read after each read of the document, so grant times follow
    the order in which the compare-and-sets won (a grant is never dated before an earlier one)."""

    def __init__(self, store: LockStore, clock: Callable[[], float] = time.time):
        self.store = store
        self._clock = clock

    def join(self, key: str, task_id: str, *, priority: int, seq: float, limit: int,
             now: float | None = None, mode: str = EXCLUSIVE,
             shares: Collection[str] = EXCLUSIVE_SHARES) -> list[LockHolder]:
        """The task waits in line for `key` in `mode` (once); returns the holders this change granted."""
        return self._change(key, lambda lock, at: join(lock, task_id, priority, seq, limit, at, mode, shares), now)

    def leave(self, key: str, task_id: str, *, now: float | None = None) -> list[LockHolder]:
        """The task gives `key` back or leaves its line; returns the holders this change granted."""
        return self._change(key, lambda lock, at: leave(lock, task_id, at), now)

    def get(self, key: str) -> KeyLock | None:
        return self.store.get(key)

    def list_locks(self, *, limit: int = 100, busy_only: bool = True) -> list[KeyLock]:
        locks = self.store.list_locks(limit=limit if not busy_only else 10_000)
        return [lock for lock in locks if not (busy_only and lock.idle)][:limit]

    def close(self) -> None:
        self.store.close()

    def _change(self, key: str, decide: Decision, now: float | None) -> list[LockHolder]:
        granted: list[str] = []  # by the decision that was written

        def change(current: KeyLock) -> KeyLock | None:
            new, names = decide(current, self._clock() if now is None else now)
            granted[:] = names
            return None if new == current else new

        read = lambda: self.store.get(key) or KeyLock(Key=key)  # noqa: E731  (a key never asked for: Version 0)
        written = compare_and_set_loop(read(), read=read, change=change, write=self.store.compare_and_set,
                                       what=f"lock {key!r}")
        return [] if written is None else [h for h in written.Holders if h.TaskId in granted]


def open_lock_store_for(task_store: Any) -> LockStore:
    """The lock documents beside `task_store` (a SqliteStore or a MongoStore)."""
    return open_gate_table_beside("lock", task_store)  # type: ignore[no-any-return]


def open_lock_store(url: str, **options: Any) -> LockStore:
    """The lock documents on a store URL (`options`: open_gate_table's, as `indexes="none"`)."""
    return open_gate_table("lock", url, **options)  # type: ignore[no-any-return]
