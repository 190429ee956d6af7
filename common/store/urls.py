"""What a store URL names: its scheme and, for SQLite, the file (the forms are listed in
common.store.factory). Pure and light: a command that reads a SQLite file directly
(oss/cli/quick_reads.py) needs these without the adapters and the document model they import."""

from __future__ import annotations

from urllib.parse import unquote

from common.errors import ConfigError
from common.secrets.urls import redacted_url

DEFAULT_STORE_URL = "sqlite:var/baton.db"  # BATON_STORE_URL's default (common.settings)


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
