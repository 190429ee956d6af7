"""Module registrations on MongoDB: one document per worker id (its `_id`).

Opened like the task store (common.store.mongo.base); its index is in common.store.mongo.indexes.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING

from common.store.side.modules import ModuleRegistration
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.errors import adapter_edge

_edge = adapter_edge("mongodb modules")


class MongoModuleRegistry(MongoAdapter):
    WHAT = "mongodb modules"
    COLLECTIONS = ["modules"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._modules = self._db["modules"]

    @_edge
    @again  # an upsert by worker id
    def announce(self, registration: ModuleRegistration) -> None:
        doc = {"_id": registration.WorkerId, **registration.model_dump(mode="json")}
        self._modules.replace_one({"_id": registration.WorkerId}, doc, upsert=True)

    @_edge
    @again
    def withdraw(self, worker_id: str) -> None:
        self._modules.delete_one({"_id": worker_id})

    @_edge
    def registrations(self) -> list[ModuleRegistration]:
        docs = self._modules.find({}, {"_id": False}).sort([("Module", ASCENDING), ("WorkerId", ASCENDING)])
        return [ModuleRegistration.model_validate(doc) for doc in docs]

    @_edge
    @again
    def forget_older_than(self, cutoff: float) -> int:
        return int(self._modules.delete_many({"HeartbeatAt": {"$lt": cutoff}}).deleted_count)
