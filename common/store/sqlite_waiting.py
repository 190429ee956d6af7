"""The SQLite task store's waiting_unclaimed (see common.store.port), beside it to keep that file
within its size: tasks whose active run nobody claimed, due since before a time."""

from __future__ import annotations

from typing import Any

from common.models import Task
from common.store.sqlite_local import translated

# Only unfinished tasks have a deadline (a partial index): the JSON is read for those alone.
_SQL = (
    "SELECT task_id, task_type, time_create, status, doc FROM tasks WHERE deadline IS NOT NULL"
    " AND json_extract(doc, '$.Active.State') = 'pending' AND json_extract(doc, '$.Active.Since') <= ?"
    " ORDER BY json_extract(doc, '$.Active.Since') LIMIT ?"
)


class WaitingQuery:
    _tasks: Any  # SqliteStore's: runs a query, parses its rows, skips unreadable ones

    @translated
    def waiting_unclaimed(self, since_before: float, limit: int) -> list[Task]:
        return self._tasks(_SQL, (since_before,), limit)  # type: ignore[no-any-return]
