"""Lock documents on SQLite, in the task store's file (table `task_locks`; `locks` is the
sweeper's lease-lock table; docs/design/locks.md)."""

from __future__ import annotations

from common.engine.document import KeyLock
from common.store.sqlite.keyed import SqliteKeyedDocuments


class SqliteLockStore(SqliteKeyedDocuments[KeyLock]):
    TABLE = "task_locks"
    DOCUMENT = KeyLock
    NAMED = "lock"

    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        return self.documents(limit)
