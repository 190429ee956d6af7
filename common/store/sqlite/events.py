"""The event log on SQLite, in the task store's file."""

from __future__ import annotations

import os

import pydantic_core

from common.store.side.events import Event
from common.store.sqlite.connections import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    event_id TEXT PRIMARY KEY,
    time     REAL NOT NULL,
    task_id  TEXT,
    doc      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_time ON events (time);
CREATE INDEX IF NOT EXISTS events_task_time ON events (task_id, time)
"""


class SqliteEventLog:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @translated
    def record(self, event: Event) -> bool:
        cursor = self._conns.get().execute(
            "INSERT OR IGNORE INTO events (event_id, time, task_id, doc) VALUES (?, ?, ?, ?)",
            (event.EventId, event.Time, event.TaskId, event.model_dump_json()),
        )
        return cursor.rowcount == 1

    @translated
    def list_events(self, *, task_id: str | None = None, limit: int = 100) -> list[Event]:
        if limit <= 0:
            return []
        if task_id is None:
            sql, params = "SELECT doc FROM events ORDER BY time DESC LIMIT ?", (limit,)
        else:
            sql, params = "SELECT doc FROM events WHERE task_id = ? ORDER BY time DESC LIMIT ?", (task_id, limit)
        rows = self._conns.get().execute(sql, params)
        return [Event.model_validate(pydantic_core.from_json(doc)) for (doc,) in rows]

    def close(self) -> None:
        self._conns.close()
