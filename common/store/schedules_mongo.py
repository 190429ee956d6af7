"""Schedules on MongoDB: one document per schedule, ScheduleId and Name unique.

Opened like the task store (common.store.mongo_client): w=majority + journal and bounded waits
unless the URL says otherwise; indexes from common.store.mongo_indexes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from bson.errors import BSONError
from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError, PyMongoError

from common.errors import DuplicateSchedule, StoreError
from common.scheduling import Schedule
from common.store.mongo import prepare_indexes, serializer, shared_mongomock_client
from common.store.mongo_client import DEFAULT_TIMEOUT_SECONDS, open_client
from common.store.mongo_errors import describe, translate
from common.store.mongo_indexes import IndexMode
from common.store.schedules_port import check_next_version

P = ParamSpec("P")
R = TypeVar("R")
_NO_ID = {"_id": False}


def _translated(method: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except DuplicateKeyError as e:
            raise DuplicateSchedule("a schedule with this id or name exists already") from e
        except (PyMongoError, BSONError, OverflowError) as e:
            raise translate(e, "mongodb schedules") from e

    return wrapper


class MongoScheduleStore:
    def __init__(
        self,
        url_or_client: str | Any,
        database: str = "baton",
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        indexes: IndexMode = "create",
    ):
        self._owns_client = isinstance(url_or_client, str)
        try:
            self._client = open_client(url_or_client, timeout_seconds) if self._owns_client else url_or_client
            self._serial = serializer(self._client)
            self._schedules = self._client[database]["schedules"]
            with self._serial:
                self.index_report = prepare_indexes(self._client[database], ["schedules"], indexes)
        except (PyMongoError, BSONError) as e:
            self.close()
            raise StoreError(f"mongodb schedules: cannot open {database!r}: {describe(e)}") from e

    @classmethod
    def in_memory(cls, database: str = "baton") -> MongoScheduleStore:
        return cls(shared_mongomock_client(), database)

    @_translated
    def insert(self, schedule: Schedule) -> None:
        with self._serial:
            self._schedules.insert_one(schedule.model_dump(mode="json"))

    @_translated
    def get(self, schedule_id: str) -> Schedule | None:
        return self._one({"ScheduleId": schedule_id})

    @_translated
    def get_by_name(self, name: str) -> Schedule | None:
        return self._one({"Name": name})

    @_translated
    def list_schedules(self, *, limit: int = 100) -> list[Schedule]:
        if limit <= 0:
            return []
        with self._serial:
            docs = list(self._schedules.find({}, dict(_NO_ID)).sort("Name", ASCENDING).limit(limit))
        return [Schedule.model_validate(d) for d in docs]

    @_translated
    def due(self, now: float, limit: int) -> list[Schedule]:
        if limit <= 0:
            return []
        query = {"Paused": False, "NextAt": {"$lte": now}}
        with self._serial:
            docs = list(self._schedules.find(query, dict(_NO_ID)).sort("NextAt", ASCENDING).limit(limit))
        return [Schedule.model_validate(d) for d in docs]

    @_translated
    def compare_and_set(self, schedule: Schedule, expected_version: int) -> bool:
        check_next_version(schedule, expected_version)
        with self._serial:
            result = self._schedules.replace_one(
                {"ScheduleId": schedule.ScheduleId, "Version": expected_version}, schedule.model_dump(mode="json")
            )
        return result.matched_count == 1

    @_translated
    def delete(self, schedule_id: str) -> bool:
        with self._serial:
            return self._schedules.delete_one({"ScheduleId": schedule_id}).deleted_count == 1

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()

    def _one(self, query: dict[str, str]) -> Schedule | None:
        with self._serial:
            doc = self._schedules.find_one(query, dict(_NO_ID))
        return Schedule.model_validate(doc) if doc else None
