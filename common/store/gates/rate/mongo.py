"""Rate documents on MongoDB: collection `task_rates`, `Key` unique (docs/design/rates.md)."""

from __future__ import annotations

from common.engine.document import KeyRate
from common.store.mongo.keyed import MongoKeyedDocuments, key_indexes


class MongoRateStore(MongoKeyedDocuments[KeyRate]):
    COLLECTION = "task_rates"
    DOCUMENT = KeyRate
    NAMED = "rate"

    def list_rates(self, *, limit: int = 100) -> list[KeyRate]:
        return self.documents(limit)


# Added to the MongoDB index catalog (common.store.mongo.indexes.catalog) by common.store.gates.
INDEXES = key_indexes(MongoRateStore)
