"""Open the resource inventory a store URL names (as common.store.factory.open_store): beside the
tasks by default, in the same SQLite file or MongoDB database. The adapter is imported on demand,
so a SQLite deployment never imports pymongo."""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.store.factory import DEFAULT_TIMEOUT_SECONDS, IndexMode, open_adapter
from modules.resource.inventory.port import Inventory
from modules.resource.settings import ResourceSettings, load_resource_settings

if TYPE_CHECKING:
    from common.settings import Settings

_PACKAGE = "modules.resource.inventory"


def open_inventory(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> Inventory:
    return open_adapter(  # type: ignore[no-any-return]
        url, f"{_PACKAGE}.sqlite:SqliteInventory", f"{_PACKAGE}.mongo:MongoInventory",
        timeout_seconds=timeout_seconds, indexes=indexes,
    )


def open_configured_inventory(
    settings: Settings,
    resource: ResourceSettings | None = None,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    indexes: IndexMode = "create",
) -> Inventory:
    """The inventory every surface uses: BATON_RESOURCE_INVENTORY_URL, else beside the tasks
    (BATON_STORE_URL of `settings`). `resource`: the module's settings, read now when None."""
    url = (resource or load_resource_settings()).inventory_url_beside(settings.store_url)
    return open_inventory(url, timeout_seconds=timeout_seconds, indexes=indexes)
