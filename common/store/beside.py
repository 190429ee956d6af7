"""Open a side store beside a task store: the same SQLite file, or the same MongoDB database on
the same client. The adapter classes are named, not imported, so a SQLite deployment never
imports pymongo."""

from __future__ import annotations

from typing import Any

from common.errors import StoreError
from common.store.factory import adapter_class


def open_beside(task_store: Any, sqlite_class: str, mongo_class: str, what: str) -> Any:
    """`sqlite_class`, `mongo_class`: "module:Class". On MongoDB the task store prepares every
    collection's indexes (OSS and `baton store init` create them, modules check them), so the
    side store is opened with indexes="none"."""
    path = getattr(task_store, "path", None)
    if isinstance(path, str):
        return adapter_class(sqlite_class)(path)
    database = getattr(task_store, "_db", None)
    if database is not None:
        return adapter_class(mongo_class)(task_store._client, database.name, indexes="none")
    raise StoreError(f"no {what} beside a {type(task_store).__name__}")

