"""Lock documents on MongoDB: collection `task_locks`, `Key` unique (`locks` holds the
sweeper's lease-lock; docs/design/locks.md)."""

from __future__ import annotations

from common.engine.document import KeyLock
from common.store.mongo.keyed import MongoKeyedDocuments, key_indexes


class MongoLockStore(MongoKeyedDocuments[KeyLock]):
    COLLECTION = "task_locks"
    DOCUMENT = KeyLock
    NAMED = "lock"

    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        return self.documents(limit)


# Added to the MongoDB index catalog (common.store.mongo.indexes.catalog) by common.store.gates.
INDEXES = key_indexes(MongoLockStore)
