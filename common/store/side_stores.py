"""Open the event log, the schedules, the lock documents, the module registry and the module
drains named by a store URL (as open_store). A module's own store (the resource inventory) has
its opener in its module.

They live beside the tasks: in the same SQLite file, or the same MongoDB database, so one
BATON_STORE_URL configures them all. Adapters are imported on demand: a SQLite deployment never
imports pymongo.
"""

from __future__ import annotations

from typing import Any

from common.store.drains_port import ModuleDrains
from common.store.events_port import EventLog
from common.store.factory import DEFAULT_TIMEOUT_SECONDS, IndexMode, open_adapter
from common.store.locks_port import LockStore
from common.store.modules_port import ModuleRegistry
from common.store.schedules_port import ScheduleStore


def _open(url: str, sqlite_class: str, mongo_class: str, timeout_seconds: float, indexes: IndexMode) -> Any:
    return open_adapter(url, sqlite_class, mongo_class, timeout_seconds=timeout_seconds, indexes=indexes)


def open_event_log(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> EventLog:
    return _open(url, "events_sqlite:SqliteEventLog", "events_mongo:MongoEventLog", timeout_seconds, indexes)  # type: ignore[no-any-return]


def open_schedule_store(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> ScheduleStore:
    return _open(  # type: ignore[no-any-return]
        url, "schedules_sqlite:SqliteScheduleStore", "schedules_mongo:MongoScheduleStore", timeout_seconds, indexes
    )


def open_lock_store(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> LockStore:
    return _open(  # type: ignore[no-any-return]
        url, "locks_sqlite:SqliteLockStore", "locks_mongo:MongoLockStore", timeout_seconds, indexes
    )


def open_module_registry(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> ModuleRegistry:
    return _open(  # type: ignore[no-any-return]
        url, "modules_sqlite:SqliteModuleRegistry", "modules_mongo:MongoModuleRegistry", timeout_seconds, indexes
    )


def open_module_drains(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> ModuleDrains:
    return _open(  # type: ignore[no-any-return]
        url, "drains_sqlite:SqliteModuleDrains", "drains_mongo:MongoModuleDrains", timeout_seconds, indexes
    )
