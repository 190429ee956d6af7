"""The event log on MongoDB: one document per event, EventId unique.

Opened like the task store (common.store.mongo_client): w=majority + journal and bounded waits
unless the URL says otherwise; driver errors translated at the edge (common.store.mongo_errors).
"""

from __future__ import annotations

from typing import Any

from bson.errors import BSONError
from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError, PyMongoError

from common.errors import StoreError
from common.store.events_port import Event
from common.store.mongo import prepare_indexes, serializer, shared_mongomock_client
from common.store.mongo_client import DEFAULT_TIMEOUT_SECONDS, open_client
from common.store.mongo_errors import adapter_edge, describe
from common.store.mongo_indexes import IndexMode

_edge = adapter_edge("mongodb events")


class MongoEventLog:
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
            self._events = self._client[database]["events"]
            with self._serial:
                self.index_report = prepare_indexes(self._client[database], ["events"], indexes)
        except (PyMongoError, BSONError) as e:
            self.close()
            raise StoreError(f"mongodb events: cannot open {database!r}: {describe(e)}") from e

    @classmethod
    def in_memory(cls, database: str = "baton") -> MongoEventLog:
        return cls(shared_mongomock_client(), database)

    @_edge
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

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()
