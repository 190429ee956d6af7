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

from common.errors import DuplicateSchedule
from common.scheduling import Schedule
from common.store.mongo_base import MongoAdapter
from common.store.mongo_errors import translate
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


class MongoScheduleStore(MongoAdapter):
    WHAT = "mongodb schedules"
    COLLECTIONS = ["schedules"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._schedules = self._db["schedules"]

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

    def _one(self, query: dict[str, str]) -> Schedule | None:
        with self._serial:
            doc = self._schedules.find_one(query, dict(_NO_ID))
        return Schedule.model_validate(doc) if doc else None
