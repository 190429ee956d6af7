"""Open the item records beside a task store, as common.store.gates.lock.table opens the lock
documents: whoever holds a task store reaches a step's items with what it has."""

from __future__ import annotations

from typing import Any

from common.store.beside import open_beside
from common.store.items.port import ItemStore


def open_item_store_for(task_store: Any) -> ItemStore:
    """The item records beside `task_store` (a SqliteStore or a MongoStore)."""
    return open_beside(task_store, "common.store.sqlite.items:SqliteItemStore",  # type: ignore[no-any-return]
                       "common.store.mongo.items:MongoItemStore", "item store")
