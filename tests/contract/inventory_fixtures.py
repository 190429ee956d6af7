"""Which inventories (and event logs) the contract suites run against, and how to open each.

The same kinds as the task store's suite: [sqlite] (a temp file), [mongo-mongomock] (an in-memory
fake, not a server) and [mongo-secantus] (SecantusDB, a real wire-protocol server) and [mongo-real] when a MongoDB is
reachable (see store_fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from common.store.mongo.drains import MongoModuleDrains
from common.store.sqlite.drains import SqliteModuleDrains
from common.store.mongo.events import MongoEventLog
from common.store.sqlite.events import SqliteEventLog
from modules.resource.inventory.mongo import MongoInventory
from modules.resource.inventory.sqlite import SqliteInventory
from common.store.mongo.items import MongoItemStore
from common.store.sqlite.items import SqliteItemStore
from common.store.gates.lock.mongo import MongoLockStore
from common.store.gates.lock.sqlite import SqliteLockStore
from common.store.gates.rate.mongo import MongoRateStore
from common.store.gates.rate.sqlite import SqliteRateStore
from common.store.mongo.modules import MongoModuleRegistry
from common.store.sqlite.modules import SqliteModuleRegistry
from common.store.mongo.schedules import MongoScheduleStore
from common.store.sqlite.schedules import SqliteScheduleStore
from tests.contract.store_fixtures import fresh_database_name, server_client_fixture, store_kinds


@dataclass
class Backend:
    """Where an inventory lives, so other threads and processes can open their own handle."""

    kind: str
    sqlite_path: str | None = None
    mongo_url: str | None = None  # a real server only: mongomock cannot be shared by processes
    mongo_client: Any = None
    database: str | None = None

    def open_inventory(self) -> Any:
        if self.kind == "sqlite":
            return SqliteInventory(self.sqlite_path)  # type: ignore[arg-type]
        return MongoInventory(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_event_log(self) -> Any:
        if self.kind == "sqlite":
            return SqliteEventLog(self.sqlite_path)  # type: ignore[arg-type]
        return MongoEventLog(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_schedules(self) -> Any:
        if self.kind == "sqlite":
            return SqliteScheduleStore(self.sqlite_path)  # type: ignore[arg-type]
        return MongoScheduleStore(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_lock_store(self) -> Any:
        if self.kind == "sqlite":
            return SqliteLockStore(self.sqlite_path)  # type: ignore[arg-type]
        return MongoLockStore(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_rate_store(self) -> Any:
        if self.kind == "sqlite":
            return SqliteRateStore(self.sqlite_path)  # type: ignore[arg-type]
        return MongoRateStore(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_module_registry(self) -> Any:
        if self.kind == "sqlite":
            return SqliteModuleRegistry(self.sqlite_path)  # type: ignore[arg-type]
        return MongoModuleRegistry(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_module_drains(self) -> Any:
        if self.kind == "sqlite":
            return SqliteModuleDrains(self.sqlite_path)  # type: ignore[arg-type]
        return MongoModuleDrains(self.mongo_client, self.database)  # type: ignore[arg-type]

    def open_item_store(self) -> Any:
        if self.kind == "sqlite":
            return SqliteItemStore(self.sqlite_path)  # type: ignore[arg-type]
        return MongoItemStore(self.mongo_client, self.database)  # type: ignore[arg-type]

    @property
    def shared_by_processes(self) -> bool:
        return self.kind != "mongo-mongomock"


@pytest.fixture(params=store_kinds())
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    kind: str = request.param
    if kind == "sqlite":
        yield Backend(kind, sqlite_path=str(tmp_path / "baton.db"))
        return
    if kind == "mongo-mongomock":
        import mongomock

        yield Backend(kind, mongo_client=mongomock.MongoClient(), database=fresh_database_name())
        return
    client = request.getfixturevalue(server_client_fixture(kind))
    url = request.getfixturevalue("secantus_url" if kind == "mongo-secantus" else "real_mongo_url")
    database = fresh_database_name()
    try:
        yield Backend(kind, mongo_url=url, mongo_client=client, database=database)
    finally:
        client.drop_database(database)


@pytest.fixture
def inventory(backend: Backend) -> Iterator[Any]:
    opened = backend.open_inventory()
    yield opened
    opened.close()


@pytest.fixture
def event_log(backend: Backend) -> Iterator[Any]:
    opened = backend.open_event_log()
    yield opened
    opened.close()


@pytest.fixture
def schedule_store(backend: Backend) -> Iterator[Any]:
    opened = backend.open_schedules()
    yield opened
    opened.close()


@pytest.fixture
def lock_store(backend: Backend) -> Iterator[Any]:
    opened = backend.open_lock_store()
    yield opened
    opened.close()


@pytest.fixture
def rate_store(backend: Backend) -> Iterator[Any]:
    opened = backend.open_rate_store()
    yield opened
    opened.close()


@pytest.fixture
def module_registry(backend: Backend) -> Iterator[Any]:
    opened = backend.open_module_registry()
    yield opened
    opened.close()


@pytest.fixture
def item_store(backend: Backend) -> Iterator[Any]:
    opened = backend.open_item_store()
    yield opened
    opened.close()


@pytest.fixture
def module_drains(backend: Backend) -> Iterator[Any]:
    opened = backend.open_module_drains()
    yield opened
    opened.close()
