"""Open the task store a URL names.

- `sqlite:///absolute/path.db`  -> the file /absolute/path.db (three slashes: empty host, then the
  absolute path); SQLAlchemy's `sqlite:////absolute/path.db` means the same file
- `sqlite:relative/path.db`     -> relative to the working directory (also `sqlite:/abs/path.db`)
- `mongodb://...`, `mongodb+srv://...` -> MongoDB; the database is the URL's path
  (`mongodb://h1,h2/prod?replicaSet=rs` -> "prod"), "baton" when it has none. Writes are
  w=majority + journal and every call is bounded by `timeout_seconds` unless the URL's query string
  says otherwise (`w=1&journal=false`, `timeoutMS=...`): see common.store.mongo_client.
- `mongomock://` or `mongomock:///dbname` -> an in-memory mongomock server, shared by every store
  of this process, for tests and demos only: it is not MongoDB, nothing survives the process and
  no other process sees it.

The adapters are imported on demand, so a SQLite deployment never imports pymongo.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from common.errors import ConfigError
from common.logging import redacted_url
from common.store.port import TaskStore

DEFAULT_DATABASE = "baton"
# Same as common.store.mongo_client's (importing it would import pymongo for SQLite too).
DEFAULT_TIMEOUT_SECONDS = 10.0
# MongoDB indexes: OSS and `baton store init` "create" the missing ones, modules "check" them,
# command children leave them alone ("none"). See common.store.mongo_indexes.
IndexMode = Literal["create", "check", "none"]


def open_store(
    url: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create"
) -> TaskStore:
    return open_adapter(url, "sqlite:SqliteStore", "mongo:MongoStore",  # type: ignore[no-any-return]
                        timeout_seconds=timeout_seconds, indexes=indexes)


def open_adapter(url: str, sqlite_class: str, mongo_class: str, *,
                 timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, indexes: IndexMode = "create") -> Any:
    """The one way from a store URL to an adapter: import the class its scheme names
    ("module:Class", under common.store unless dotted: a module's own adapter, e.g. the resource
    inventory's; on demand, so SQLite never imports pymongo) and open it on the URL's file or
    database."""
    scheme = url_scheme(url)
    module, _, name = (sqlite_class if scheme == "sqlite" else mongo_class).partition(":")
    adapter = getattr(importlib.import_module(module if "." in module else f"common.store.{module}"), name)
    if scheme == "sqlite":
        return adapter(sqlite_path(url))
    if scheme == "mongomock":
        return adapter.in_memory(database_name(url))
    return adapter(url, database_name(url), timeout_seconds=timeout_seconds, indexes=indexes)


def url_scheme(url: str) -> str:
    scheme, sep, _ = url.partition(":")
    scheme = scheme.lower()
    if not sep:
        raise ConfigError(f"store URL {redacted_url(url)!r} has no scheme: use sqlite:, mongodb: or mongomock:")
    if scheme not in ("sqlite", "mongodb", "mongodb+srv", "mongomock"):
        raise ConfigError(
            f"store URL scheme {scheme!r} is not supported: use sqlite:, mongodb:, mongodb+srv: "
            "or mongomock:"
        )
    return scheme


def sqlite_path(url: str) -> str:
    rest = url.partition(":")[2]
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host or not slash:
            raise ConfigError(
                f"store URL {redacted_url(url)!r}: a SQLite file has no host; write sqlite:///absolute/path.db "
                "or sqlite:relative/path.db"
            )
        rest = "/" + path.lstrip("/")
    if "?" in rest:
        raise ConfigError(f"store URL {redacted_url(url)!r}: SQLite URLs take no options")
    path = unquote(rest)
    if path in ("", "/"):
        raise ConfigError(f"store URL {redacted_url(url)!r} names no SQLite file")
    if ":memory:" in path:
        # Every thread and process opens its own connection, and each would get a different,
        # empty in-memory database.
        raise ConfigError(f"store URL {redacted_url(url)!r}: a shared store needs a file; use a temp file")
    return path


def database_name(url: str) -> str:
    name = unquote(urlsplit(url).path.lstrip("/"))
    return name or DEFAULT_DATABASE
