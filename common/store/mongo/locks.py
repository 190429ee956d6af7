"""Lock documents on MongoDB: collection `task_locks`, `Key` unique (`locks` holds the
sweeper's lease-lock)."""

from __future__ import annotations

from common.engine.document import KeyLock
from common.store.mongo.keyed import MongoKeyedDocuments


class MongoLockStore(MongoKeyedDocuments[KeyLock]):
    WHAT = "mongodb task locks"
    COLLECTION = "task_locks"
    COLLECTIONS = [COLLECTION]
    DOCUMENT = KeyLock
    NAMED = "lock"

    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        return self.documents(limit)
