"""Lock documents on MongoDB: collection `task_locks`, `Key` unique (`locks` holds the
sweeper's lease-lock)."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from common.engine.gates.locks import KeyLock
from common.store.locks_port import check_next_version
from common.store import mongo_marks as marks
from common.store.mongo_base import MongoAdapter
from common.store.mongo_errors import adapter_edge

_NO_ID = {"_id": False, marks.FIELD: False}
_edge = adapter_edge("mongodb task locks")  # errors translated; alone on mongomock


class MongoLockStore(MongoAdapter):
    WHAT = "mongodb task locks"
    COLLECTIONS = ["task_locks"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._locks = self.latest(self._db["task_locks"])  # a lock is taken on what is read here

    @_edge
    def get(self, key: str) -> KeyLock | None:
        doc = self._locks.find_one({"Key": key}, dict(_NO_ID))
        return KeyLock.model_validate(doc) if doc else None

    @_edge
    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        if limit <= 0:
            return []
        docs = list(self._locks.find({}, dict(_NO_ID)).sort("Key", ASCENDING).limit(limit))
        return [KeyLock.model_validate(d) for d in docs]

    @_edge
    def compare_and_set(self, lock: KeyLock, expected_version: int) -> bool:
        check_next_version(lock, expected_version)
        doc = lock.model_dump(mode="json")
        if expected_version == 0:
            try:
                self.insert_versioned(self._locks, {"Key": lock.Key}, doc)
            except DuplicateKeyError:
                return False
            return True
        return self.write_versioned(self._locks, {"Key": lock.Key}, expected_version, doc)
