"""Schedules on SQLite, in the task store's file."""

from __future__ import annotations

import os
import sqlite3

from common.errors import DuplicateSchedule
from common.scheduling import Schedule
from common.store.side.schedules import check_next_version
from common.store.sqlite.connections import LocalConnections, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    schedule_id TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    next_at     REAL NOT NULL,
    paused      INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    doc         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at) WHERE paused = 0
"""


class SqliteScheduleStore:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    @translated
    def insert(self, schedule: Schedule) -> None:
        try:
            self._conns.get().execute(
                "INSERT INTO schedules (schedule_id, name, next_at, paused, version, doc) VALUES (?, ?, ?, ?, ?, ?)",
                (schedule.ScheduleId, schedule.Name, schedule.NextAt, int(schedule.Paused),
                 schedule.Version, schedule.model_dump_json()),
            )
        except sqlite3.IntegrityError as e:
            raise DuplicateSchedule(f"a schedule named {schedule.Name!r} exists already") from e

    @translated
    def get(self, schedule_id: str) -> Schedule | None:
        return self._one("SELECT doc FROM schedules WHERE schedule_id = ?", (schedule_id,))

    @translated
    def get_by_name(self, name: str) -> Schedule | None:
        return self._one("SELECT doc FROM schedules WHERE name = ?", (name,))

    @translated
    def list_schedules(self, *, limit: int = 100) -> list[Schedule]:
        if limit <= 0:
            return []
        rows = self._conns.get().execute("SELECT doc FROM schedules ORDER BY name LIMIT ?", (limit,))
        return [Schedule.model_validate_json(doc) for (doc,) in rows]

    @translated
    def due(self, now: float, limit: int) -> list[Schedule]:
        if limit <= 0:
            return []
        rows = self._conns.get().execute(
            "SELECT doc FROM schedules WHERE paused = 0 AND next_at <= ? ORDER BY next_at LIMIT ?", (now, limit)
        )
        return [Schedule.model_validate_json(doc) for (doc,) in rows]

    @translated
    def compare_and_set(self, schedule: Schedule, expected_version: int) -> bool:
        check_next_version(schedule, expected_version)
        cursor = self._conns.get().execute(
            "UPDATE schedules SET next_at = ?, paused = ?, version = ?, doc = ? WHERE schedule_id = ? AND version = ?",
            (schedule.NextAt, int(schedule.Paused), schedule.Version, schedule.model_dump_json(),
             schedule.ScheduleId, expected_version),
        )
        return cursor.rowcount == 1

    @translated
    def delete(self, schedule_id: str) -> bool:
        cursor = self._conns.get().execute("DELETE FROM schedules WHERE schedule_id = ?", (schedule_id,))
        return cursor.rowcount == 1

    def close(self) -> None:
        self._conns.close()

    def _one(self, sql: str, params: tuple[str]) -> Schedule | None:
        row = self._conns.get().execute(sql, params).fetchone()
        return Schedule.model_validate_json(row[0]) if row else None
