"""Module drains on SQLite, in the task store's file."""

from __future__ import annotations

import os
import sqlite3

from common.store.side.drains import ModuleDrain, check_next_version
from common.store.sqlite.connections import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS module_drains (
    module  TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    doc     TEXT NOT NULL
)
"""


class SqliteModuleDrains:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @translated
    def get(self, module: str) -> ModuleDrain | None:
        row = self._conns.get().execute("SELECT doc FROM module_drains WHERE module = ?", (module,)).fetchone()
        return ModuleDrain.model_validate_json(row[0]) if row else None

    @translated
    def drains(self) -> list[ModuleDrain]:
        rows = self._conns.get().execute("SELECT doc FROM module_drains ORDER BY module")
        return [ModuleDrain.model_validate_json(doc) for (doc,) in rows]

    @translated
    def put(self, drain: ModuleDrain, expected_version: int | None) -> bool:
        check_next_version(drain, expected_version)
        conn = self._conns.get()
        if expected_version is None:
            try:
                conn.execute("INSERT INTO module_drains (module, version, doc) VALUES (?, ?, ?)",
                             (drain.Module, drain.Version, drain.model_dump_json()))
            except sqlite3.IntegrityError:  # another operator created it first
                return False
            return True
        cursor = conn.execute("UPDATE module_drains SET version = ?, doc = ? WHERE module = ? AND version = ?",
                              (drain.Version, drain.model_dump_json(), drain.Module, expected_version))
        return cursor.rowcount == 1

    def close(self) -> None:
        self._conns.close()
