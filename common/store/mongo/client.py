"""How baton connects to MongoDB: durable writes and bounded waits unless the URL says otherwise.

Every Mongo adapter (tasks, locks, alarms, inventory, events, schedules) opens its client here
(common.store.mongo.base), so they all write the same way:

- **Write concern `w=majority`, `journal=true` by default.** An acknowledged write is on the
  journal of a majority of the replica set: a crash of the server (kill -9, power loss) or a
  failover right after the answer does not lose it. Without `journal`, a server acknowledges a
  write still in its memory; a task answered 201 could vanish. The URL opts out explicitly, e.g.
  `mongodb://h/baton?w=1&journal=false` (faster, and loses acknowledged writes on a crash).
- **Retryable writes and reads on** (`retryWrites=true`, `retryReads=true`, the driver's
  defaults, set explicitly so a URL cannot drop them by accident; a URL that names either keeps
  its own). The driver sends a write that met a network error or a step-down once more, to the
  new primary, which applies it at most once. What is still unknown after that is settled by
  the adapter (common.store.mongo.settle).
- **Timeouts.** `timeoutMS` bounds a whole operation (server selection, connecting, the socket
  wait, the write concern wait, the driver's own retry) by the store timeout setting, which must
  stay below the lease: a frozen server then fails a call with StoreError in time for the module
  to give its delivery back instead of outliving its lease. Server selection and connecting get
  the same bound. A URL naming any timeout option keeps its own, and baton then adds none.

The URL's query options are read case-insensitively, as the driver does.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pymongo
from pymongo import MongoClient, ReadPreference
from pymongo.errors import PyMongoError

from common.errors import StoreError
from common.store.mongo import first_contact

DEFAULT_TIMEOUT_SECONDS = 10.0
# A readiness probe (ping) answers within this, whatever the store's timeout: a probe that waits
# the full store timeout misses every outage shorter than it.
PING_SECONDS = 2.0

# A command that runs once asks whether its server answers at all within this (first_contact.py).
FIRST_CONTACT_SECONDS = 3.0

# When the URL names any of these, baton adds no timeout of its own.
_TIMEOUTS = ("timeoutms", "sockettimeoutms", "serverselectiontimeoutms", "connecttimeoutms", "wtimeoutms")


def client_options(url: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> dict[str, Any]:
    """Keyword arguments for MongoClient: baton's defaults for what the URL leaves unsaid."""
    query = {name.lower(): value for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True)}
    options: dict[str, Any] = {}
    if "w" not in query:
        options["w"] = "majority"
    if "journal" not in query and query.get("w") != "0":
        # w=0 asks for no acknowledgement at all, which the driver refuses to combine with journal.
        options["journal"] = True
    for name in ("retryWrites", "retryReads"):
        if name.lower() not in query:
            options[name] = True
    if not query.keys() & set(_TIMEOUTS):
        millis = int(timeout_seconds * 1000)
        options.update(timeoutMS=millis, serverSelectionTimeoutMS=millis, connectTimeoutMS=millis)
    return options


def open_client(url: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> MongoClient[dict[str, Any]]:
    client: MongoClient[dict[str, Any]] = MongoClient(url, **client_options(url, timeout_seconds))
    if first_contact.fail_fast and url not in first_contact.answered:
        try:
            _any_member_answers(client, timeout_seconds)
        except PyMongoError as exc:  # a StoreError whoever opened the client: "cannot be reached"
            client.close()
            raise StoreError(f"mongodb: no server answers ({type(exc).__name__}: {exc})") from None
        first_contact.answered.add(url)
    return client


def _any_member_answers(client: MongoClient[dict[str, Any]], timeout_seconds: float) -> None:
    with pymongo.timeout(min(FIRST_CONTACT_SECONDS, timeout_seconds)):
        client.admin.command("ping", read_preference=ReadPreference.NEAREST)
