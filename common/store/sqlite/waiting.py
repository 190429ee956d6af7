"""The SQLite task store's waiting_unclaimed (see common.store.tasks.port), beside it to keep that
file within its size: tasks whose active run nobody claimed, due since before a time."""

from __future__ import annotations

from typing import Any

from common.engine.document import Task
from common.store.sqlite.connections import translated

# The earliest Since of a task's pending runs. Only unfinished tasks have a deadline (a partial
# index): the JSON is read for those alone.
_SINCE = ("(SELECT MIN(json_extract(r.value, '$.Since')) FROM json_each(tasks.doc, '$.Runs') AS r"
          " WHERE json_extract(r.value, '$.State') = 'pending')")  # fmt: skip
_SQL = (
    "SELECT task_id, task_type, time_create, status, doc FROM tasks WHERE deadline IS NOT NULL"
    f" AND {_SINCE} <= ? ORDER BY {_SINCE} LIMIT ?"
)


class WaitingQuery:
    _tasks: Any  # SqliteStore's: runs a query, parses its rows, skips unreadable ones

    @translated
    def waiting_unclaimed(self, since_before: float, limit: int) -> list[Task]:
        return self._tasks(_SQL, (since_before,), limit)  # type: ignore[no-any-return]
