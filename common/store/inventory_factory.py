"""Open the inventory, the event log and the schedules named by a store URL (as open_store).

They live beside the tasks: in the same SQLite file, or the same MongoDB database, so one
BATON_STORE_URL configures them all. Adapters are imported on demand: a SQLite deployment never
imports pymongo.
"""

from __future__ import annotations

from common.errors import ConfigError
from common.store.events_port import EventLog
from common.store.factory import DEFAULT_TIMEOUT_SECONDS, IndexMode, database_name, sqlite_path
from common.store.inventory_port import Inventory
from common.store.schedules_port import ScheduleStore


def _scheme(url: str) -> str:
    scheme, sep, _ = url.partition(":")
    if not sep or scheme.lower() not in ("sqlite", "mongodb", "mongodb+srv", "mongomock"):
        raise ConfigError(f"store URL {url!r}: use sqlite:, mongodb:, mongodb+srv: or mongomock:")
    return scheme.lower()


def open_inventory(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> Inventory:
    scheme = _scheme(url)
    if scheme == "sqlite":
        from common.store.inventory_sqlite import SqliteInventory

        return SqliteInventory(sqlite_path(url))
    from common.store.inventory_mongo import MongoInventory

    if scheme == "mongomock":
        return MongoInventory.in_memory(database_name(url))
    return MongoInventory(url, database_name(url), timeout_seconds=timeout_seconds, indexes=indexes)


def open_event_log(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> EventLog:
    scheme = _scheme(url)
    if scheme == "sqlite":
        from common.store.events_sqlite import SqliteEventLog

        return SqliteEventLog(sqlite_path(url))
    from common.store.events_mongo import MongoEventLog

    if scheme == "mongomock":
        return MongoEventLog.in_memory(database_name(url))
    return MongoEventLog(url, database_name(url), timeout_seconds=timeout_seconds, indexes=indexes)


def open_schedule_store(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> ScheduleStore:
    scheme = _scheme(url)
    if scheme == "sqlite":
        from common.store.schedules_sqlite import SqliteScheduleStore

        return SqliteScheduleStore(sqlite_path(url))
    from common.store.schedules_mongo import MongoScheduleStore

    if scheme == "mongomock":
        return MongoScheduleStore.in_memory(database_name(url))
    return MongoScheduleStore(url, database_name(url), timeout_seconds=timeout_seconds, indexes=indexes)
