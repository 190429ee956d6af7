"""Open the task store a URL names.

- `sqlite:///absolute/path.db`  -> the file /absolute/path.db (three slashes: empty host, then the
  absolute path); SQLAlchemy's `sqlite:////absolute/path.db` means the same file
- `sqlite:relative/path.db`     -> relative to the working directory (also `sqlite:/abs/path.db`)
- `mongodb://...`, `mongodb+srv://...` -> MongoDB; the database is the URL's path
  (`mongodb://h1,h2/prod?replicaSet=rs` -> "prod"), "baton" when it has none. Writes are
  w=majority + journal and every call is bounded by `timeout_seconds` unless the URL's query string
  says otherwise (`w=1&journal=false`, `timeoutMS=...`): see common.store.mongo.client.
- `mongomock://` or `mongomock:///dbname` -> an in-memory mongomock server, shared by every store
  of this process, for tests and demos only: it is not MongoDB, nothing survives the process and
  no other process sees it.

The adapters are imported on demand, so a SQLite deployment never imports pymongo.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from common.store.tasks.port import TaskStore
from common.store.urls import sqlite_path, url_scheme

__all__ = [
    "DEFAULT_DATABASE", "IndexMode", "Opener", "adapter_class", "database_name", "open_adapter", "open_store", "opener",
    "sqlite_path", "url_scheme",
]

DEFAULT_DATABASE = "baton"
# Same as common.store.mongo.client's (importing it would import pymongo for SQLite too).
DEFAULT_TIMEOUT_SECONDS = 10.0
# MongoDB indexes: OSS and `baton store init` "create" the missing ones, modules "check" them,
# command children leave them alone ("none"). See common.store.mongo.indexes.
IndexMode = Literal["create", "check", "none"]
Port = TypeVar("Port", covariant=True)


def open_store(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> TaskStore:
    return open_adapter(  # type: ignore[no-any-return]
        url, "common.store.sqlite.tasks:SqliteStore", "common.store.mongo.tasks:MongoStore",
        timeout_seconds=timeout_seconds, indexes=indexes,
    )


def open_adapter(url: str, sqlite_class: str, mongo_class: str, *,
                 timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create") -> Any:
    """The one way from a store URL to an adapter: import the class its scheme names
    ("dotted.module:Class"; on demand, so SQLite never imports pymongo) and open it on the URL's
    file or database."""
    scheme = url_scheme(url)
    adapter = adapter_class(sqlite_class if scheme == "sqlite" else mongo_class)
    if scheme == "sqlite":
        return adapter(sqlite_path(url))
    if scheme == "mongomock":
        return adapter.in_memory(database_name(url))
    return adapter(url, database_name(url), timeout_seconds=timeout_seconds, indexes=indexes)


def adapter_class(name: str) -> Any:
    """The class a "dotted.module:Class" name stands for, imported now (not before: see above)."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


class Opener(Protocol[Port]):
    def __call__(self, url: str, *, timeout_seconds: float = ..., indexes: IndexMode = ...) -> Port: ...


def opener(port: type[Port], sqlite_class: str, mongo_class: str) -> Opener[Port]:
    """The function that opens a store of `port` on a URL, with the adapters named for each
    scheme (as open_store does for the tasks)."""

    def open_port(url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create") -> Port:
        return open_adapter(url, sqlite_class, mongo_class, timeout_seconds=timeout_seconds,  # type: ignore[no-any-return]
                            indexes=indexes)  # fmt: skip

    open_port.__doc__ = f"Open the {port.__name__} a store URL names."
    return open_port


def database_name(url: str) -> str:
    name = unquote(urlsplit(url).path.lstrip("/"))
    return name or DEFAULT_DATABASE
