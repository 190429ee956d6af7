"""Lock documents on MongoDB: collection `task_locks`, `Key` unique (`locks` holds the
sweeper's lease-lock)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from bson.errors import BSONError
from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError, PyMongoError

from common.locks import KeyLock
from common.store.locks_port import check_next_version
from common.store.mongo_base import MongoAdapter
from common.store.mongo_errors import translate

P = ParamSpec("P")
R = TypeVar("R")
_NO_ID = {"_id": False}


def _translated(method: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (PyMongoError, BSONError, OverflowError) as e:
            raise translate(e, "mongodb task locks") from e

    return wrapper


class MongoLockStore(MongoAdapter):
    WHAT = "mongodb task locks"
    COLLECTIONS = ["task_locks"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._locks = self._db["task_locks"]

    @_translated
    def get(self, key: str) -> KeyLock | None:
        with self._serial:
            doc = self._locks.find_one({"Key": key}, dict(_NO_ID))
        return KeyLock.model_validate(doc) if doc else None

    @_translated
    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        if limit <= 0:
            return []
        with self._serial:
            docs = list(self._locks.find({}, dict(_NO_ID)).sort("Key", ASCENDING).limit(limit))
        return [KeyLock.model_validate(d) for d in docs]

    @_translated
    def compare_and_set(self, lock: KeyLock, expected_version: int) -> bool:
        check_next_version(lock, expected_version)
        doc = lock.model_dump(mode="json")
        with self._serial:
            if expected_version == 0:
                try:
                    self._locks.insert_one(doc)
                except DuplicateKeyError:
                    return False
                return True
            result = self._locks.replace_one({"Key": lock.Key, "Version": expected_version}, doc)
        return result.matched_count == 1
