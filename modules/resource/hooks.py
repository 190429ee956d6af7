"""What the resource module offers oss and the other modules (found by
common.module_hooks.module_hooks): its inventory, the inventory's settings (where it lives, how
long closed claims are kept) and the inventory's MongoDB indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modules.resource import inventory
from modules.resource.settings import load_resource_settings

if TYPE_CHECKING:  # it imports pymongo
    from common.store.mongo.indexes import ModuleIndexes


def mongo_indexes() -> ModuleIndexes:
    # Imported when asked: the index specs import pymongo, which a SQLite deployment never does.
    from modules.resource.inventory.mongo_indexes import INDEXES

    return INDEXES


HOOKS: dict[str, Any] = {
    "inventory": inventory, "inventory_settings": load_resource_settings, "mongo_indexes": mongo_indexes,
}
