"""The SQLite task store's alarms (see common.store.tasks.port), beside it to keep that file
within its size."""

from __future__ import annotations

from typing import Any

from common.engine.document import Alarm
from common.store.sqlite.connections import translated
from common.store.sqlite.codec import decode, encode
from common.store.sqlite.connections import immediate


def _alarm(row: tuple[str] | None) -> Alarm | None:
    return None if row is None else Alarm.model_validate(decode(row[0]))


class AlarmsQuery:
    _conn: Any  # SqliteStore's: this thread's connection

    @translated
    def add_alarm(self, alarm: Alarm) -> bool:
        doc = encode(alarm.model_dump(mode="json"))
        cursor = self._conn().execute(
            "INSERT OR IGNORE INTO alarms (alarm_id, time, acknowledged, doc) VALUES (?, ?, ?, ?)",
            (alarm.AlarmId, alarm.Time, int(alarm.Acknowledged), doc),
        )
        return cursor.rowcount == 1

    @translated
    def list_alarms(self, *, acknowledged: bool | None = None, limit: int = 100) -> list[Alarm]:
        if limit <= 0:
            return []
        if acknowledged is None:
            sql, params = "SELECT doc FROM alarms ORDER BY time DESC LIMIT ?", (limit,)
        else:
            sql = "SELECT doc FROM alarms WHERE acknowledged = ? ORDER BY time DESC LIMIT ?"
            params = (int(acknowledged), limit)
        rows = self._conn().execute(sql, params).fetchall()  # see _tasks: never leave a read open
        return [Alarm.model_validate(decode(doc)) for (doc,) in rows]

    @translated
    def acknowledge_alarm(
        self, alarm_id: str, by: str, now: float, reason: str | None = None
    ) -> Alarm | None:
        """The first acknowledgement stands: acknowledging again returns the alarm unchanged."""
        conn = self._conn()
        with immediate(conn):
            row = conn.execute("SELECT doc FROM alarms WHERE alarm_id = ?", (alarm_id,)).fetchone()
            alarm = _alarm(row)
            if alarm is None or alarm.Acknowledged:
                return alarm
            alarm.Acknowledged, alarm.AcknowledgedBy, alarm.AcknowledgedAt = True, by, now
            alarm.AcknowledgedReason = reason
            conn.execute(
                "UPDATE alarms SET acknowledged = 1, doc = ? WHERE alarm_id = ?",
                (encode(alarm.model_dump(mode="json")), alarm_id),
            )
            return alarm
