"""The SQLite task store's archived history (common.engine.core.history), beside it to keep that file within
its size: one row per event moved out of a task's document, keyed by (task, event number)."""

from __future__ import annotations

from typing import Any

from common.engine.document import HistoryEvent
from common.store.sqlite.codec import decode, encode
from common.store.sqlite.connections import immediate
from common.store.sqlite.connections import translated

SCHEMA = """
CREATE TABLE IF NOT EXISTS task_history (
    task_id TEXT NOT NULL,
    idx     INTEGER NOT NULL,
    time    REAL NOT NULL,
    doc     TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS task_history_time ON task_history (time)
"""


class HistoryQuery:
    _conn: Any  # SqliteStore's: this thread's connection

    @translated
    def archive_history(self, task_id: str, first_index: int, events: list[HistoryEvent]) -> None:
        rows = [(task_id, first_index + n, e.Time, encode(e.model_dump(mode="json"))) for n, e in enumerate(events)]
        conn = self._conn()
        with immediate(conn):  # all of them or none
            conn.executemany("INSERT OR REPLACE INTO task_history (task_id, idx, time, doc) VALUES (?, ?, ?, ?)", rows)

    @translated
    def archived_history(self, task_id: str, start: int, stop: int) -> list[HistoryEvent]:
        rows = self._conn().execute(
            "SELECT doc FROM task_history WHERE task_id = ? AND idx >= ? AND idx < ? ORDER BY idx",
            (task_id, start, stop),
        ).fetchall()
        return [HistoryEvent.model_validate(decode(doc)) for (doc,) in rows]

    @translated
    def prune_history(self, before: float) -> int:
        return int(self._conn().execute("DELETE FROM task_history WHERE time < ?", (before,)).rowcount)
