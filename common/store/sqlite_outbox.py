"""The SQLite task store's in_outbox (see common.store.port), beside it to keep that file within
its size: which of some outbox entries are still unsent, read from the JSON without parsing the
documents (the point: a publisher checks a batch of deferred mark-sents for the price of one
light query instead of one full read each)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from common.store.sqlite_local import translated

# SQLite's default limit of bound parameters is 999 on old builds: stay well below it.
_CHUNK = 400


class OutboxQuery:
    _conn: Any  # SqliteStore's: this thread's connection

    @translated
    def in_outbox(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        wanted = set(entries)
        task_ids = sorted({task_id for task_id, _ in wanted})
        found: set[tuple[str, str]] = set()
        for start in range(0, len(task_ids), _CHUNK):
            chunk = task_ids[start:start + _CHUNK]
            sql = (
                "SELECT tasks.task_id, json_extract(o.value, '$.DispatchId')"
                " FROM tasks, json_each(tasks.doc, '$.Outbox') AS o"
                f" WHERE tasks.task_id IN ({', '.join('?' * len(chunk))})"
            )
            rows = self._conn().execute(sql, chunk).fetchall()  # never leave a read open
            found.update(pair for pair in rows if pair in wanted)
        return found
