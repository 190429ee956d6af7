"""Open the resource inventory a store URL names (as common.store.factory.open_store): beside the
tasks by default, in the same SQLite file or MongoDB database. The adapter is imported on demand,
so a SQLite deployment never imports pymongo."""

from __future__ import annotations

from common.store.factory import DEFAULT_TIMEOUT_SECONDS, IndexMode, open_adapter
from modules.resource.inventory.port import Inventory

_PACKAGE = "modules.resource.inventory"


def open_inventory(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> Inventory:
    return open_adapter(  # type: ignore[no-any-return]
        url, f"{_PACKAGE}.sqlite:SqliteInventory", f"{_PACKAGE}.mongo:MongoInventory",
        timeout_seconds=timeout_seconds, indexes=indexes,
    )
