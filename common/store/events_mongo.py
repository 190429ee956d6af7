"""The event log on MongoDB: one document per event, EventId unique."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING, MongoClient
from pymongo.errors import DuplicateKeyError, PyMongoError

from common.errors import StoreError
from common.store.events_port import Event
from common.store.mongo import serializer, shared_mongomock_client


class MongoEventLog:
    def __init__(self, url_or_client: str | Any, database: str = "baton"):
        self._owns_client = isinstance(url_or_client, str)
        try:
            self._client = MongoClient(url_or_client) if self._owns_client else url_or_client
            self._serial = serializer(self._client)
            self._events = self._client[database]["events"]
            self._events.create_index([("EventId", ASCENDING)], name="event_id", unique=True)
            self._events.create_index([("TaskId", ASCENDING), ("Time", DESCENDING)], name="task_time")
            self._events.create_index([("Time", DESCENDING)], name="time")
        except PyMongoError as e:
            self.close()
            raise StoreError(f"mongodb events: cannot open {database!r}: {e}") from e

    @classmethod
    def in_memory(cls, database: str = "baton") -> MongoEventLog:
        return cls(shared_mongomock_client(), database)

    def record(self, event: Event) -> bool:
        try:
            with self._serial:
                self._events.insert_one(event.model_dump(mode="json"))
        except DuplicateKeyError:
            return False
        except PyMongoError as e:
            raise StoreError(f"mongodb events: {e}") from e
        return True

    def list_events(self, *, task_id: str | None = None, limit: int = 100) -> list[Event]:
        if limit <= 0:
            return []
        query = {} if task_id is None else {"TaskId": task_id}
        try:
            with self._serial:
                docs = list(self._events.find(query, {"_id": False}).sort("Time", DESCENDING).limit(limit))
        except PyMongoError as e:
            raise StoreError(f"mongodb events: {e}") from e
        return [Event.model_validate(doc) for doc in docs]

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()
