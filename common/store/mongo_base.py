"""What every MongoDB adapter shares: opening its client, mongomock's one-at-a-time lock, and
preparing its indexes.

`url_or_client`: a mongodb:// or mongodb+srv:// URL (the adapter then owns and closes the client,
opened durable and with bounded waits: common.store.mongo_client), or a ready MongoClient (or
mongomock client), which the caller keeps and closes. `indexes`: "create" the missing ones (OSS),
only "check" them (modules), or "none" (command children): common.store.mongo_indexes.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Self

import structlog
from bson.errors import BSONError
from pymongo.database import Database
from pymongo.errors import PyMongoError

from common.errors import StoreError
from common.store import mongo_indexes
from common.store.mongo_client import DEFAULT_TIMEOUT_SECONDS, open_client
from common.store.mongo_errors import describe
from common.store.mongo_indexes import IndexMode

log = structlog.get_logger(__name__)


class MongoAdapter:
    WHAT = "mongodb"  # how its errors name it
    COLLECTIONS: list[str] | None = None  # whose indexes it prepares; None: the whole database's

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
            self._db: Database[Any] = self._client[database]
            with self._serial:
                self.index_report = prepare_indexes(self._db, self.COLLECTIONS, indexes)
        except (PyMongoError, BSONError) as e:
            self.close()
            raise StoreError(f"{self.WHAT}: cannot open database {database!r}: {describe(e)}") from e

    @classmethod
    def in_memory(cls, database: str = "baton") -> Self:
        """On the process's shared mongomock server, for tests and demos. NOT a MongoDB server:
        nothing is durable and no other process sees it. Every in-memory adapter of a process
        shares it, so an all-in-one demo's components see the same data."""
        return cls(shared_mongomock_client(), database)

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()


def prepare_indexes(db: Database[Any], collections: list[str] | None, mode: IndexMode) -> list[str]:
    """Create or check the indexes of these collections (None: all of baton's, see mongo_indexes);
    each problem left is logged with the way to fix it, and returned. Never refuses to start over
    an index."""
    if mode == "none":
        return []
    report = mongo_indexes.ensure(db, collections) if mode == "create" else mongo_indexes.check(db, collections)
    for problem in report:
        log.warning("mongodb index not as this version expects", problem=problem, fix="baton store migrate")
    return report


_mongomock_lock = threading.Lock()
_mongomock_client: Any = None
# mongomock is not thread-safe: it applies a filtered write as "find, then modify" without a lock
# (two threads' compare-and-sets of one version can both match, which a server never allows) and
# a read iterates over documents a write is changing. One lock around every mongomock operation in
# the process keeps the in-memory store to the contract; a real server needs none.
_mongomock_calls = threading.RLock()


def serializer(client: Any) -> contextlib.AbstractContextManager[Any]:
    if type(client).__module__.split(".")[0] == "mongomock":
        return _mongomock_calls
    return contextlib.nullcontext()


def shared_mongomock_client() -> Any:
    global _mongomock_client
    with _mongomock_lock:
        if _mongomock_client is None:
            import mongomock  # a test dependency: imported only when asked for

            _mongomock_client = mongomock.MongoClient()
        return _mongomock_client
