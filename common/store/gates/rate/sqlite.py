"""Rate documents on SQLite, in the task store's file (table `task_rates`,
docs/design/rates.md)."""

from __future__ import annotations

from common.engine.document import KeyRate
from common.store.sqlite.keyed import SqliteKeyedDocuments


class SqliteRateStore(SqliteKeyedDocuments[KeyRate]):
    TABLE = "task_rates"
    DOCUMENT = KeyRate
    NAMED = "rate"

    def list_rates(self, *, limit: int = 100) -> list[KeyRate]:
        return self.documents(limit)
