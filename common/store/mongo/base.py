"""What every MongoDB adapter shares: opening its client, mongomock's one-at-a-time lock,
preparing its indexes, and writing so that a lost answer can be settled.

Reads that decide a write (a claim, a lock, a compare-and-set and its read-back) go to the
primary with read concern "majority" (`latest`): the newest write that no failover can roll
back. Versioned writes carry a write mark (common.store.mongo.marks) and are settled by reading
back when their answer is lost (common.store.mongo.settle); idempotent calls run again (`again`).

`url_or_client`: a mongodb:// or mongodb+srv:// URL (the adapter then owns and closes the client,
opened durable and with bounded waits: common.store.mongo.client), or a ready MongoClient (or
mongomock client), which the caller keeps and closes. `indexes`: "create" the missing ones (OSS),
only "check" them (modules), or "none" (command children): common.store.mongo.indexes.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, Self, TypeVar

import structlog
from bson.errors import BSONError
from pymongo import ReadPreference
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.read_concern import ReadConcern
from pymongo.errors import PyMongoError

from common.errors import StoreError
from common.store.mongo import marks
from common.store.mongo.marks import new_mark
from common.store.mongo.settle import rerun, settle_insert, settle_write
from common.store.mongo import indexes as mongo_indexes
from common.store.mongo.client import DEFAULT_TIMEOUT_SECONDS, open_client
from common.store.mongo.errors import describe
from common.store.mongo.indexes import IndexMode

log = structlog.get_logger(__name__)
_MAJORITY = ReadConcern("majority")
R = TypeVar("R")


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
        self._budget = timeout_seconds  # how long settling a lost answer may take (mongo_settle)
        try:
            self._client = open_client(url_or_client, timeout_seconds) if self._owns_client else url_or_client
            self._serial = serializer(self._client)
            # mongomock runs no update pipelines; each of its calls runs alone (serializer), so
            # an adapter reads the old write marks and replaces within one call instead.
            self.in_memory_store = self._serial is _mongomock_calls
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

    def latest(self, collection: Collection[Any]) -> Collection[Any]:
        """`collection` read from the primary with read concern "majority": what a claim, a lock
        or a compare-and-set's read-back decides on must be the newest write that can no longer be
        rolled back, whatever read preference the URL names for the rest."""
        return collection.with_options(read_preference=ReadPreference.PRIMARY, read_concern=_MAJORITY)

    def write_versioned(self, collection: Collection[Any], key: dict[str, Any], expected_version: int,
                        doc: dict[str, Any]) -> bool:
        """The compare-and-set of a versioned document: replaced by `doc` if still at
        `expected_version`, with a write mark; a lost answer is settled by reading back
        (common.store.mongo.settle). True: applied; False: another writer took the version."""
        mark = new_mark(expected_version + 1)
        current = {**key, "Version": expected_version}

        def write() -> bool:
            if self.in_memory_store:
                old = collection.find_one(current, dict(marks.MARKS_ONLY))
                replacement = marks.with_marks(doc, (old or {}).get(marks.FIELD, []), mark)
                return collection.replace_one(current, replacement).matched_count == 1
            return collection.update_one(current, marks.marked_replacement(doc, mark)).matched_count == 1

        def read_back() -> tuple[int, list[str]] | None:
            stored = self.latest(collection).find_one(key, {"_id": False, "Version": True, marks.FIELD: True})
            return None if stored is None else (int(stored["Version"]), list(stored.get(marks.FIELD, [])))

        return settle_write(write, read_back, mark, self.WHAT, self._budget)

    def insert_versioned(self, collection: Collection[Any], key: dict[str, Any], doc: dict[str, Any]) -> None:
        """Insert a versioned document with a write mark; a lost answer is settled by reading back
        by `key`. Raises DuplicateKeyError when another document holds a unique key."""
        mark = new_mark(int(doc["Version"]))

        def read_marks() -> list[str] | None:
            stored = self.latest(collection).find_one(key, {"_id": False, marks.FIELD: True})
            return None if stored is None else list(stored.get(marks.FIELD, []))

        settle_insert(lambda: collection.insert_one({**doc, marks.FIELD: [mark]}), read_marks, mark, self.WHAT,
                      self._budget)  # fmt: skip

    def again_if_unknown(self, call: Callable[[], R]) -> R:
        """Run an idempotent call, again while its outcome is unknown
        (common.store.mongo.settle)."""
        return rerun(call, self.WHAT, self._budget)

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()


def again(method: Callable[..., R]) -> Callable[..., R]:
    """Decorate an adapter method that is idempotent as a whole (it reads what it needs and
    writes conditionally, or upserts by key): run again while its outcome is unknown. Inside
    `adapter_edge`, so the errors it finally raises are translated."""

    @functools.wraps(method)
    def wrapper(self: MongoAdapter, *args: Any, **kwargs: Any) -> R:
        return self.again_if_unknown(lambda: method(self, *args, **kwargs))

    return wrapper


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
