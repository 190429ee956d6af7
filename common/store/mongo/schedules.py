"""Schedules on MongoDB: one document per schedule, ScheduleId and Name unique.

Opened like the task store (common.store.mongo.client): w=majority + journal and bounded waits
unless the URL says otherwise; indexes from common.store.mongo.indexes.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from common.errors import DuplicateSchedule
from common.scheduling import Schedule
from common.store.mongo import marks
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.errors import adapter_edge
from common.store.side.schedules import check_next_version

_NO_ID = {"_id": False, marks.FIELD: False}
_edge = adapter_edge("mongodb schedules", DuplicateSchedule)  # errors translated; alone on mongomock


class MongoScheduleStore(MongoAdapter):
    WHAT = "mongodb schedules"
    COLLECTIONS = ["schedules"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._schedules = self.latest(self._db["schedules"])  # ticks decide on what is read here

    @_edge
    def insert(self, schedule: Schedule) -> None:
        try:
            self.insert_versioned(self._schedules, {"ScheduleId": schedule.ScheduleId}, schedule.model_dump(mode="json"))
        except DuplicateKeyError as e:  # named as the SQLite store names it, never the driver's text
            raise DuplicateSchedule(f"a schedule named {schedule.Name!r} exists already") from e

    @_edge
    def get(self, schedule_id: str) -> Schedule | None:
        return self._one({"ScheduleId": schedule_id})

    @_edge
    def get_by_name(self, name: str) -> Schedule | None:
        return self._one({"Name": name})

    @_edge
    def list_schedules(self, *, limit: int = 100) -> list[Schedule]:
        if limit <= 0:
            return []
        docs = list(self._schedules.find({}, dict(_NO_ID)).sort("Name", ASCENDING).limit(limit))
        return [Schedule.model_validate(d) for d in docs]

    @_edge
    def due(self, now: float, limit: int) -> list[Schedule]:
        if limit <= 0:
            return []
        query = {"Paused": False, "NextAt": {"$lte": now}}
        docs = list(self._schedules.find(query, dict(_NO_ID)).sort("NextAt", ASCENDING).limit(limit))
        return [Schedule.model_validate(d) for d in docs]

    @_edge
    def compare_and_set(self, schedule: Schedule, expected_version: int) -> bool:
        check_next_version(schedule, expected_version)
        return self.write_versioned(self._schedules, {"ScheduleId": schedule.ScheduleId}, expected_version,
                                    schedule.model_dump(mode="json"))  # fmt: skip

    @_edge
    @again
    def delete(self, schedule_id: str) -> bool:
        return self._schedules.delete_one({"ScheduleId": schedule_id}).deleted_count == 1

    def _one(self, query: dict[str, str]) -> Schedule | None:  # inside a decorated call
        doc = self._schedules.find_one(query, dict(_NO_ID))
        return Schedule.model_validate(doc) if doc else None
