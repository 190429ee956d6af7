"""Module drains on MongoDB: one document per module, `Module` unique.

Opened like the task store (common.store.mongo.base); its index is in common.store.mongo.indexes.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from common.store.mongo import marks
from common.store.side.drains import ModuleDrain, check_next_version
from common.store.mongo.base import MongoAdapter
from common.store.mongo.errors import adapter_edge

_NO_ID = {"_id": False, marks.FIELD: False}
_edge = adapter_edge("mongodb module drains")


class MongoModuleDrains(MongoAdapter):
    WHAT = "mongodb module drains"
    COLLECTIONS = ["module_drains"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        # A claim decides on what is read here: the newest write, from the primary.
        self._drains = self.latest(self._db["module_drains"])

    @_edge
    def get(self, module: str) -> ModuleDrain | None:
        doc = self._drains.find_one({"Module": module}, dict(_NO_ID))
        return ModuleDrain.model_validate(doc) if doc else None

    @_edge
    def drains(self) -> list[ModuleDrain]:
        docs = self._drains.find({}, dict(_NO_ID)).sort("Module", ASCENDING)
        return [ModuleDrain.model_validate(doc) for doc in docs]

    @_edge
    def put(self, drain: ModuleDrain, expected_version: int | None) -> bool:
        check_next_version(drain, expected_version)
        doc = drain.model_dump(mode="json")
        if expected_version is None:
            try:
                self.insert_versioned(self._drains, {"Module": drain.Module}, doc)
            except DuplicateKeyError:  # another operator created it first
                return False
            return True
        return self.write_versioned(self._drains, {"Module": drain.Module}, expected_version, doc)
