"""Open the event log, the schedules, the module registry, the module drains and a gate's own
table (common.store.gates) named by a store URL (as open_store), or a gate's table beside an
open task store. A module's own store (the resource inventory) has its
opener in its module.

They live beside the tasks: in the same SQLite file, or the same MongoDB database, so one
BATON_STORE_URL configures them all. Adapters are imported on demand: a SQLite deployment never
imports pymongo.
"""

from __future__ import annotations

from typing import Any

from common.store.beside import open_beside
from common.store.factory import DEFAULT_TIMEOUT_SECONDS, IndexMode, open_adapter, opener
from common.store.gates import gate_table, gate_tables
from common.store.side.drains import ModuleDrains
from common.store.side.events import EventLog
from common.store.side.modules import ModuleRegistry
from common.store.side.schedules import ScheduleStore

open_event_log = opener(EventLog, "common.store.sqlite.events:SqliteEventLog", "common.store.mongo.events:MongoEventLog")
open_schedule_store = opener(
    ScheduleStore, "common.store.sqlite.schedules:SqliteScheduleStore", "common.store.mongo.schedules:MongoScheduleStore"
)
open_module_registry = opener(
    ModuleRegistry, "common.store.sqlite.modules:SqliteModuleRegistry", "common.store.mongo.modules:MongoModuleRegistry"
)
open_module_drains = opener(
    ModuleDrains, "common.store.sqlite.drains:SqliteModuleDrains", "common.store.mongo.drains:MongoModuleDrains"
)


def open_gate_table(gate: str, url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
                    indexes: IndexMode = "create") -> Any:
    """The table `gate` keeps of its own (its folder of common.store.gates), on a store URL."""
    table = gate_table(gate)
    return open_adapter(url, table.sqlite, table.mongo, timeout_seconds=timeout_seconds, indexes=indexes)


def open_gate_table_beside(gate: str, task_store: Any) -> Any:
    """The table `gate` keeps of its own, beside `task_store` (a SqliteStore or a MongoStore)."""
    table = gate_table(gate)
    return open_beside(task_store, table.sqlite, table.mongo, f"{gate} table")


class GateTables(dict[str, Any]):
    """Every gate's own table, by its gate's name (common.store.gates), on one store URL: what a
    dry run's plan reads of them (`get(key)`). Closing it closes each."""

    def close(self) -> None:
        for table in self.values():
            table.close()


def open_gate_tables(url: str, **options: Any) -> GateTables:
    """Every gate's own table on a store URL (`options`: open_gate_table's, as `indexes="none"`)."""
    return GateTables({table.gate: open_gate_table(table.gate, url, **options) for table in gate_tables()})
