"""The inventory on MongoDB: one document per host, holding its claims and what they use.

Why claims live inside their host's document: MongoDB makes a write to ONE document atomic, so
"is there room?" and "take it" become one conditional `find_one_and_update` - the filter guards
the free capacity with `$expr`, the update `$inc`s the host's `used` counters and `$push`es the
claim. Of two concurrent reservations that only one fits, the second finds no document matching
its filter. Every later change of a claim (deduct, restore, release, expire) changes its state and
the host's counters in the same single-document update, so the two can never drift apart.

A key must name one claim across ALL hosts: a unique index on `claims.key` (MongoDB enforces a
unique multikey index across documents) refuses the same key pushed onto a second host by a
concurrent caller; `claims.key: {$ne: key}` in the filter covers the same host. mongomock does not
enforce the cross-document part, but this adapter serializes every mongomock call of a process
(see common.store.mongo), so it holds there too.

`used` counts RESERVED claims until they are closed as expired: a reservation first closes every
due one (`expire_due`), then tries to place itself. Reads compute `used` from the claims as of the
time asked, exactly like the SQLite adapter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from pymongo import ASCENDING, MongoClient, ReturnDocument
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError, PyMongoError
from pymongo.write_concern import WriteConcern

from common.errors import StoreError
from common.store import inventory_rules as rules
from common.store.inventory_port import (
    Capacity,
    Claim,
    ClaimClosed,
    ClaimState,
    Host,
    HostConflict,
    HostState,
    NoCapacity,
    UnknownClaim,
    UnknownHost,
)
from common.store.mongo import serializer, shared_mongomock_client

COLLECTION = "inventory_hosts"
_FIELDS = ("cpu", "memory_mb", "storage_gb")
_CLOSED = [ClaimState.RESTORED.value, ClaimState.RELEASED.value, ClaimState.EXPIRED.value]
P = ParamSpec("P")
R = TypeVar("R")
Doc = dict[str, Any]


def _edge(method: Callable[P, R]) -> Callable[P, R]:
    """No pymongo exception escapes; on mongomock the whole call runs alone (see module doc)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        inventory: MongoInventory = args[0]  # type: ignore[assignment]
        try:
            with inventory._serial:
                return method(*args, **kwargs)
        except PyMongoError as e:
            raise StoreError(f"mongodb inventory: {e or type(e).__name__}") from e

    return wrapper


def _amount(doc: Doc) -> Capacity:
    return Capacity(doc["cpu"], doc["memory_mb"], doc["storage_gb"])


def _claim(doc: Doc, host: str, now: float) -> Claim:
    return Claim(
        key=doc["key"],
        host=host,
        holder=doc["holder"],
        need=_amount(doc["need"]),
        state=rules.effective_state(ClaimState(doc["state"]), doc.get("expires_at"), now),
        created_at=doc["created_at"],
        expires_at=doc.get("expires_at"),
        updated_at=doc["updated_at"],
        released_by=doc.get("released_by"),
    )


def _host(doc: Doc, now: float) -> Host:
    live = [_amount(c["need"]) for c in doc.get("claims", []) if rules.counts(ClaimState(c["state"]), c.get("expires_at"), now)]
    return Host(
        name=doc["_id"],
        capacity=_amount(doc["capacity"]),
        state=HostState(doc["state"]),
        used=Capacity.total(live),
        created_at=doc["created_at"],
    )


def _room_for(need: Capacity) -> Doc:
    """$expr: used + need <= capacity, for every resource."""
    return {
        "$and": [
            {"$lte": [{"$add": [f"$used.{f}", getattr(need, f)]}, f"$capacity.{f}"]} for f in _FIELDS
        ]
    }


def _inc(need: Capacity, sign: int) -> Doc:
    return {f"used.{f}": sign * getattr(need, f) for f in _FIELDS}


class MongoInventory:
    def __init__(self, url_or_client: str | Any, database: str = "baton", *, write_concern: str | int | None = None):
        self._owns_client = isinstance(url_or_client, str)
        try:
            self._client = MongoClient(url_or_client) if self._owns_client else url_or_client
            self._serial = serializer(self._client)
            concern = WriteConcern(w=write_concern) if write_concern is not None else None
            self._hosts: Collection[Doc] = self._client[database].get_collection(COLLECTION, write_concern=concern)
            # Only documents holding a claim are indexed: hosts without any would all index the
            # same "missing" key and collide. Created once: mongomock re-checks uniqueness of an
            # existing partial index without its filter, a server does not need it again.
            if "claim_key" not in self._hosts.index_information():
                self._create_claim_key_index()
            self._hosts.create_index([("claims.state", ASCENDING), ("claims.expires_at", ASCENDING)], name="claim_expiry")
            self._hosts.create_index([("claims.holder", ASCENDING)], name="claim_holder")
            self._hosts.create_index([("claims.released_by", ASCENDING)], name="claim_released_by")
        except PyMongoError as e:
            self.close()
            raise StoreError(f"mongodb inventory: cannot open {database!r}: {e}") from e

    def _create_claim_key_index(self) -> None:
        self._hosts.create_index(
                [("claims.key", ASCENDING)],
                name="claim_key",
                unique=True,
                partialFilterExpression={"claims.key": {"$exists": True}},
            )

    @classmethod
    def in_memory(cls, database: str = "baton") -> MongoInventory:
        """On the process's shared mongomock server (tests and demos; NOT MongoDB)."""
        return cls(shared_mongomock_client(), database)

    # --- hosts ---------------------------------------------------------------------------------

    @_edge
    def add_host(self, name: str, capacity: Capacity, now: float) -> Host:
        rules.check_host_name(name)
        rules.check_capacity(capacity, "capacity")
        fresh = {
            "capacity": capacity.as_dict(),
            "used": Capacity().as_dict(),
            "state": HostState.ACTIVE.value,
            "created_at": now,
            "updated_at": now,
            "claims": [],
        }
        self._hosts.update_one({"_id": name}, {"$setOnInsert": fresh}, upsert=True)
        host = self._get_host(name, now)
        assert host is not None
        if host.capacity != capacity:
            raise HostConflict(f"host {name} exists with capacity {host.capacity.as_dict()}")
        return host

    @_edge
    def get_host(self, name: str, now: float) -> Host | None:
        return self._get_host(name, now)

    @_edge
    def list_hosts(self, now: float) -> list[Host]:
        return [_host(doc, now) for doc in self._hosts.find({}).sort("_id", ASCENDING)]

    @_edge
    def set_host_state(self, name: str, state: HostState, now: float) -> Host:
        self._hosts.update_one(
            {"_id": name, "state": {"$ne": state.value}}, {"$set": {"state": state.value, "updated_at": now}}
        )
        host = self._get_host(name, now)
        if host is None:
            raise UnknownHost(f"no host {name}")
        return host

    # --- claims --------------------------------------------------------------------------------

    @_edge
    def reserve(self, key: str, need: Capacity, holder: str, now: float, expires_at: float) -> Claim:
        rules.check_reservation(key, holder, need)
        existing = self._get_claim(key, now)
        if existing is not None:
            return rules.check_same_request(existing, need, holder)
        self._expire_due(now)
        claim = {
            "key": key,
            "holder": holder,
            "need": need.as_dict(),
            "state": ClaimState.RESERVED.value,
            "created_at": now,
            "expires_at": expires_at,
            "updated_at": now,
            "released_by": None,
        }
        try:
            doc = self._hosts.find_one_and_update(
                {"state": HostState.ACTIVE.value, "claims.key": {"$ne": key}, "$expr": _room_for(need)},
                {"$inc": _inc(need, +1), "$push": {"claims": claim}},
                sort=[("used.memory_mb", ASCENDING), ("_id", ASCENDING)],  # rules.placement_key
                projection={"_id": True},
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            doc = None  # a concurrent call placed this key on another host first: answer with it
        placed = self._get_claim(key, now)
        if placed is not None:
            return rules.check_same_request(placed, need, holder)
        assert doc is None
        raise NoCapacity(rules.no_room_message(need, [_host(d, now) for d in self._hosts.find({})]))

    @_edge
    def get_claim(self, key: str, now: float) -> Claim | None:
        return self._get_claim(key, now)

    @_edge
    def list_claims(
        self, now: float, *, holder: str | None = None, host: str | None = None, live_only: bool = False
    ) -> list[Claim]:
        query: Doc = {} if host is None else {"_id": host}
        if holder is not None:
            query["claims.holder"] = holder
        claims = [
            _claim(c, doc["_id"], now)
            for doc in self._hosts.find(query)
            for c in doc.get("claims", [])
            if holder is None or c["holder"] == holder
        ]
        claims.sort(key=lambda c: (c.created_at, c.key))
        return [c for c in claims if c.live] if live_only else claims

    @_edge
    def deduct(self, key: str, now: float) -> Claim:
        claim = self._get_claim(key, now)
        if claim is None:
            raise UnknownClaim(f"no claim {key}")
        if claim.state is ClaimState.RESERVED:
            self._hosts.update_one(
                {"claims": {"$elemMatch": {"key": key, "state": "reserved", "expires_at": {"$gt": now}}}},
                {"$set": {"claims.$.state": "deducted", "claims.$.expires_at": None, "claims.$.updated_at": now}},
            )
            claim = self._get_claim(key, now)  # ours, or what a concurrent caller made of it
            assert claim is not None
        if claim.state is ClaimState.EXPIRED:
            self._expire_due(now)  # record what the reader already sees
        if claim.state is not ClaimState.DEDUCTED:
            raise ClaimClosed(claim)
        return claim

    @_edge
    def restore(self, key: str, now: float) -> Claim | None:
        self._expire_due(now)  # a lapsed reservation stays EXPIRED: it was never given back
        claim = self._get_claim(key, now)
        if claim is None:
            return None
        if claim.live:
            # The filter's state condition makes this count once, however many callers race.
            self._hosts.update_one(
                {"claims": {"$elemMatch": {"key": key, "state": {"$in": ["reserved", "deducted"]}}}},
                {
                    "$set": {"claims.$.state": "restored", "claims.$.expires_at": None, "claims.$.updated_at": now},
                    "$inc": _inc(claim.need, -1),
                },
            )
            claim = self._get_claim(key, now)
        return claim

    @_edge
    def release(self, holder: str, key: str, now: float) -> list[Claim]:
        rules.check_key(key)
        if not self._released_by(key, now):
            for doc in self._hosts.find({"claims": {"$elemMatch": {"holder": holder, "state": "deducted"}}}):
                for c in doc["claims"]:
                    if c["holder"] == holder and c["state"] == "deducted":
                        self._hosts.update_one(
                            {"_id": doc["_id"], "claims": {"$elemMatch": {"key": c["key"], "state": "deducted"}}},
                            {
                                "$set": {"claims.$.state": "released", "claims.$.released_by": key, "claims.$.updated_at": now},
                                "$inc": _inc(_amount(c["need"]), -1),
                            },
                        )
        return self._released_by(key, now)

    @_edge
    def expire_due(self, now: float) -> int:
        return self._expire_due(now)

    @_edge
    def prune_closed(self, closed_before: float) -> int:
        condition = {"state": {"$in": _CLOSED}, "updated_at": {"$lt": closed_before}}
        pruned = 0
        for doc in self._hosts.find({"claims": {"$elemMatch": condition}}, {"claims": True}):
            gone = sum(1 for c in doc["claims"] if c["state"] in _CLOSED and c["updated_at"] < closed_before)
            result = self._hosts.update_one({"_id": doc["_id"]}, {"$pull": {"claims": condition}})
            pruned += gone if result.modified_count else 0
        return pruned

    # --- lifecycle -----------------------------------------------------------------------------

    @_edge
    def ping(self) -> None:
        self._client.admin.command("ping")

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            client.close()

    # --- the parts -----------------------------------------------------------------------------

    def _get_host(self, name: str, now: float) -> Host | None:
        doc = self._hosts.find_one({"_id": name})
        return None if doc is None else _host(doc, now)

    def _get_claim(self, key: str, now: float) -> Claim | None:
        # Whole document, then the claim picked here: mongomock has no positional projection.
        doc = self._hosts.find_one({"claims.key": key})
        if doc is None:
            return None
        return next(_claim(c, doc["_id"], now) for c in doc["claims"] if c["key"] == key)

    def _released_by(self, key: str, now: float) -> list[Claim]:
        claims = [
            _claim(c, doc["_id"], now)
            for doc in self._hosts.find({"claims.released_by": key})
            for c in doc["claims"]
            if c.get("released_by") == key
        ]
        return sorted(claims, key=lambda c: (c.created_at, c.key))

    def _expire_due(self, now: float) -> int:
        due = {"state": "reserved", "expires_at": {"$lte": now}}
        expired = 0
        for doc in self._hosts.find({"claims": {"$elemMatch": due}}):
            for c in doc["claims"]:
                if c["state"] == "reserved" and c["expires_at"] <= now:
                    # Conditional on still being RESERVED: a concurrent deduct or restore wins or
                    # loses as a whole, and the counters move exactly once.
                    result = self._hosts.update_one(
                        {"_id": doc["_id"], "claims": {"$elemMatch": {"key": c["key"], "state": "reserved"}}},
                        {
                            "$set": {"claims.$.state": "expired", "claims.$.updated_at": c["expires_at"]},
                            "$inc": _inc(_amount(c["need"]), -1),
                        },
                    )
                    expired += result.modified_count
        return expired
