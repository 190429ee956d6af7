"""Module registrations on SQLite, in the task store's file."""

from __future__ import annotations

import os

import pydantic_core

from common.store.side.modules import ModuleRegistration
from common.store.sqlite.connections import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS modules (
    worker_id    TEXT PRIMARY KEY,
    module       TEXT NOT NULL,
    heartbeat_at REAL NOT NULL,
    doc          TEXT NOT NULL
)
"""


class SqliteModuleRegistry:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @translated
    def announce(self, registration: ModuleRegistration) -> None:
        self._conns.get().execute(
            "INSERT OR REPLACE INTO modules (worker_id, module, heartbeat_at, doc) VALUES (?, ?, ?, ?)",
            (registration.WorkerId, registration.Module, registration.HeartbeatAt, registration.model_dump_json()),
        )

    @translated
    def withdraw(self, worker_id: str) -> None:
        self._conns.get().execute("DELETE FROM modules WHERE worker_id = ?", (worker_id,))

    @translated
    def registrations(self) -> list[ModuleRegistration]:
        rows = self._conns.get().execute("SELECT doc FROM modules ORDER BY module, worker_id")
        return [ModuleRegistration.model_validate(pydantic_core.from_json(doc)) for (doc,) in rows]

    @translated
    def forget_older_than(self, cutoff: float) -> int:
        return self._conns.get().execute("DELETE FROM modules WHERE heartbeat_at < ?", (cutoff,)).rowcount

    def close(self) -> None:
        self._conns.close()
