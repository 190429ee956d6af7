"""The event log on MongoDB: one document per event, EventId unique.

Opened like the task store (common.store.mongo.client): w=majority + journal and bounded waits
unless the URL says otherwise; driver errors translated at the edge (common.store.mongo.errors).
"""

from __future__ import annotations

from typing import Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from common.store.side.events import Event
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.errors import adapter_edge

_edge = adapter_edge("mongodb events")


class MongoEventLog(MongoAdapter):
    WHAT = "mongodb events"
    COLLECTIONS = ["events"]

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._events = self._db["events"]

    @_edge
    @again  # keyed by EventId: recorded again, the same event
    def record(self, event: Event) -> bool:
        try:
            self._events.insert_one(event.model_dump(mode="json"))
        except DuplicateKeyError:
            return False
        return True

    @_edge
    def list_events(self, *, task_id: str | None = None, limit: int = 100) -> list[Event]:
        if limit <= 0:
            return []
        query = {} if task_id is None else {"TaskId": task_id}
        docs = list(self._events.find(query, {"_id": False}).sort("Time", DESCENDING).limit(limit))
        return [Event.model_validate(doc) for doc in docs]
