"""Lock documents on SQLite, in the task store's file (table `task_locks`; `locks` is the
sweeper's lease-lock table)."""

from __future__ import annotations

import os

from common.engine.gates.locks import KeyLock
from common.store.locks_port import check_next_version
from common.store.sqlite_local import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_locks (
    key     TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    doc     TEXT NOT NULL
)
"""


class SqliteLockStore:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @translated
    def get(self, key: str) -> KeyLock | None:
        row = self._conns.get().execute("SELECT doc FROM task_locks WHERE key = ?", (key,)).fetchone()
        return KeyLock.model_validate_json(row[0]) if row else None

    @translated
    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        if limit <= 0:
            return []
        rows = self._conns.get().execute("SELECT doc FROM task_locks ORDER BY key LIMIT ?", (limit,)).fetchall()
        return [KeyLock.model_validate_json(doc) for (doc,) in rows]

    @translated
    def compare_and_set(self, lock: KeyLock, expected_version: int) -> bool:
        check_next_version(lock, expected_version)
        conn = self._conns.get()
        if expected_version == 0:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO task_locks (key, version, doc) VALUES (?, ?, ?)",
                (lock.Key, lock.Version, lock.model_dump_json()),
            )
        else:
            cursor = conn.execute(
                "UPDATE task_locks SET version = ?, doc = ? WHERE key = ? AND version = ?",
                (lock.Version, lock.model_dump_json(), lock.Key, expected_version),
            )
        return cursor.rowcount == 1

    def close(self) -> None:
        self._conns.close()
