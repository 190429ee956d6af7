"""Keyed documents (common.store.keyed) on SQLite, in the task store's file: a table of
(key, version, doc). A compare-and-set is one statement, so SQLite's write lock orders them."""

from __future__ import annotations

import os
from typing import Any, Generic

from common.store.keyed import KeyedDocument, check_next_version
from common.store.sqlite.connections import LocalConnections, translated


class SqliteKeyedDocuments(Generic[KeyedDocument]):
    TABLE = ""  # a subclass's table
    DOCUMENT: type[KeyedDocument]
    NAMED = ""  # how a wrong Version names the document ("lock")

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        schema = f"CREATE TABLE IF NOT EXISTS {self.TABLE} (key TEXT PRIMARY KEY, version INTEGER NOT NULL, doc TEXT NOT NULL)"
        self._conns = LocalConnections(self.path, schema)

    @translated
    def get(self, key: str) -> KeyedDocument | None:
        row = self._conns.get().execute(f"SELECT doc FROM {self.TABLE} WHERE key = ?", (key,)).fetchone()
        return self.DOCUMENT.model_validate_json(row[0]) if row else None

    @translated
    def documents(self, limit: int) -> list[KeyedDocument]:
        """By key; [] when limit <= 0."""
        if limit <= 0:
            return []
        rows = self._conns.get().execute(f"SELECT doc FROM {self.TABLE} ORDER BY key LIMIT ?", (limit,)).fetchall()
        return [self.DOCUMENT.model_validate_json(doc) for (doc,) in rows]

    @translated
    def compare_and_set(self, document: KeyedDocument, expected_version: int) -> bool:
        keyed: Any = document
        check_next_version(keyed, expected_version, self.NAMED)
        conn = self._conns.get()
        if expected_version == 0:
            cursor = conn.execute(f"INSERT OR IGNORE INTO {self.TABLE} (key, version, doc) VALUES (?, ?, ?)",
                                  (keyed.Key, keyed.Version, document.model_dump_json()))  # fmt: skip
        else:
            cursor = conn.execute(f"UPDATE {self.TABLE} SET version = ?, doc = ? WHERE key = ? AND version = ?",
                                  (keyed.Version, document.model_dump_json(), keyed.Key, expected_version))  # fmt: skip
        return cursor.rowcount == 1

    def close(self) -> None:
        self._conns.close()
