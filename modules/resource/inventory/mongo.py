"""The inventory on MongoDB: one document per host, holding its open claims and what they use.

Why open claims live inside their host's document: MongoDB makes a write to ONE document atomic,
so "is there room?" and "take it" become one conditional `find_one_and_update` - the filter guards
the free capacity with `$expr`, the update `$inc`s the host's `used` counters and `$push`es the
claim. Of two concurrent reservations that only one fits, the second finds no document matching
its filter. Every later change of a claim (deduct, restore, release, expire) changes its state and
the host's counters in the same single-document update, so the two can never drift apart.

Closed claims leave the host document. A host that kept every claim it ever had would reach
MongoDB's 16 MB document limit at about 67,000 claims, and reservations on it would then fail;
so a claim closed more than ARCHIVE_AFTER_SECONDS ago is copied to `inventory_closed_claims`
(`_id` = its key) and then pulled from the host. Copy first, pull second: at every moment the
claim is in at least one of the two, and readers look in the host documents first, then in the
closed claims, so a closed key is always found and never reserved again. A crash between the two
leaves a closed claim in both places, which the next move finishes. The grace period keeps a
reservation that checked its key just before the claim moved from placing the key again.
`prune_closed` (BATON_RESOURCE_CLAIM_RETENTION_DAYS, oss.services.claim_retention) deletes them
at last.

A key must name one claim across ALL hosts: a unique index on `claims.key` (MongoDB enforces a
unique multikey index across documents) refuses the same key pushed onto a second host by a
concurrent caller; `claims.key: {$ne: key}` in the filter covers the same host. mongomock does not
enforce the cross-document part, but this adapter serializes every mongomock call of a process
(see common.store.mongo.base), so it holds there too.

Every write call is idempotent as a whole (it reads the claim or host first and writes on a
condition), so a call whose outcome a failover left unknown simply runs again
(common.store.mongo.base.again) and finds what the first run did.

A release closes several claims, possibly on several hosts, so it cannot be one atomic write: it
first records which claims it releases (`inventory_releases`, `_id` = its key, written once), then
releases each, each conditional on still being DEDUCTED. A crash part-way and a rerun finish the
same list: idempotent per claim.

`used` counts RESERVED claims until they are closed as expired: a reservation first closes every
due one (`expire_due`), then tries to place itself. Reads compute `used` from the claims as of the
time asked, exactly like the SQLite adapter.
"""

from __future__ import annotations

from typing import Any

import pymongo
from pymongo import ASCENDING, ReturnDocument
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from modules.resource.inventory import rules
from modules.resource.inventory.mongo_docs import CLOSED, Doc, amount, archived, by_age, closed_claim, inc
from modules.resource.inventory.mongo_docs import claim as claim_of
from modules.resource.inventory.mongo_docs import host as host_of
from modules.resource.inventory.mongo_docs import new_claim, new_host, room_for
from modules.resource.inventory.port import (
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
from common.store.mongo.base import MongoAdapter, again
from common.store.mongo.client import PING_SECONDS
from common.store.mongo.errors import adapter_edge

COLLECTION = "inventory_hosts"
CLOSED_COLLECTION = "inventory_closed_claims"
RELEASES = "inventory_releases"
_COLLECTIONS = [COLLECTION, CLOSED_COLLECTION, RELEASES]
# How long a closed claim stays in its host document before it moves to the closed claims: far
# longer than any one call may take (the store timeout is below the lease), see the module doc.
ARCHIVE_AFTER_SECONDS = 300.0
_edge = adapter_edge("mongodb inventory")


class MongoInventory(MongoAdapter):
    WHAT = "mongodb inventory"
    COLLECTIONS = _COLLECTIONS

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        # Whether a key is placed, and where there is room, is decided on what is read here: the
        # primary, majority (MongoAdapter.latest).
        self._hosts: Collection[Doc] = self.latest(self._db[COLLECTION])
        self._closed: Collection[Doc] = self.latest(self._db[CLOSED_COLLECTION])
        self._releases: Collection[Doc] = self.latest(self._db[RELEASES])

    # --- hosts ---------------------------------------------------------------------------------

    @_edge
    @again
    def add_host(self, name: str, capacity: Capacity, now: float) -> Host:
        rules.check_host_name(name)
        rules.check_capacity(capacity, "capacity")
        self._hosts.update_one({"_id": name}, {"$setOnInsert": new_host(capacity, now)}, upsert=True)
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
        return [host_of(doc, now) for doc in self._hosts.find({}).sort("_id", ASCENDING)]

    @_edge
    @again
    def set_host_state(self, name: str, state: HostState, now: float) -> Host:
        self._hosts.update_one(
            {"_id": name, "state": {"$ne": state.value}}, {"$set": {"state": state.value, "updated_at": now}}
        )
        host = self._get_host(name, now)
        if host is None:
            raise UnknownHost("no such host")  # the name asked for is not echoed
        return host

    # --- claims --------------------------------------------------------------------------------

    @_edge
    @again
    def reserve(self, key: str, need: Capacity, holder: str, now: float, expires_at: float) -> Claim:
        rules.check_reservation(key, holder, need)
        existing = self._get_claim(key, now)
        if existing is not None:
            return rules.check_same_request(existing, need, holder)
        self._expire_due(now)
        self._move_closed(now - ARCHIVE_AFTER_SECONDS)
        try:
            doc = self._hosts.find_one_and_update(
                {"state": HostState.ACTIVE.value, "claims.key": {"$ne": key}, "$expr": room_for(need)},
                {"$inc": inc(need, +1), "$push": {"claims": new_claim(key, need, holder, now, expires_at)}},
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
        raise NoCapacity(rules.no_room_message(need, [host_of(d, now) for d in self._hosts.find({})]))

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
            claim_of(c, doc["_id"], now)
            for doc in self._hosts.find(query)
            for c in doc.get("claims", [])
            if holder is None or c["holder"] == holder
        ]
        if not live_only:
            seen = {c.key for c in claims}  # a claim caught mid-move is in both places
            closed: Doc = {} if host is None else {"host": host}
            if holder is not None:
                closed["holder"] = holder
            claims += [c for c in map(lambda d: closed_claim(d, now), self._closed.find(closed)) if c.key not in seen]
        claims = by_age(claims)
        return [c for c in claims if c.live] if live_only else claims

    @_edge
    @again
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
    @again
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
                    "$inc": inc(claim.need, -1),
                },
            )
            claim = self._get_claim(key, now)
        return claim

    @_edge
    @again
    def release(self, holder: str, key: str, now: float) -> list[Claim]:
        rules.check_key(key)
        keys = self._release_list(holder, key, now)
        for claim_key in keys:
            # Conditional on DEDUCTED: a claim this release (or anything else) closed already is
            # left alone, so a rerun after a crash part-way releases exactly the rest.
            self._release_one(claim_key, key, now)
        return self._released_by(key, now)

    @_edge
    @again
    def expire_due(self, now: float) -> int:
        return self._expire_due(now)

    @_edge
    @again
    def prune_closed(self, closed_before: float) -> int:
        # Moved first, so every claim to forget is in one place and counted once.
        self._move_closed(closed_before)
        pruned = self._closed.delete_many({"updated_at": {"$lt": closed_before}}).deleted_count
        self._releases.delete_many({"created_at": {"$lt": closed_before}})
        return pruned

    # --- lifecycle -----------------------------------------------------------------------------

    @_edge
    def ping(self) -> None:
        with pymongo.timeout(PING_SECONDS):  # a readiness probe: bounded even with the server gone
            self._client.admin.command("ping")

    # --- the parts -----------------------------------------------------------------------------

    def _get_host(self, name: str, now: float) -> Host | None:
        doc = self._hosts.find_one({"_id": name})
        return None if doc is None else host_of(doc, now)

    def _get_claim(self, key: str, now: float) -> Claim | None:
        # Host documents first, closed claims second: the move copies before it pulls (module doc).
        # Whole document, then the claim picked here: mongomock has no positional projection.
        doc = self._hosts.find_one({"claims.key": key})
        if doc is not None:
            return next(claim_of(c, doc["_id"], now) for c in doc["claims"] if c["key"] == key)
        closed = self._closed.find_one({"_id": key})
        return None if closed is None else closed_claim(closed, now)

    def _release_list(self, holder: str, key: str, now: float) -> list[str]:
        """The keys of the claims release `key` closes: fixed by its first call."""
        record = self._releases.find_one({"_id": key})
        if record is None:
            if self._released_by(key, now):
                return []  # released before release records existed: done then
            deducted = [
                c["key"]
                for doc in self._hosts.find({"claims": {"$elemMatch": {"holder": holder, "state": "deducted"}}})
                for c in doc["claims"]
                if c["holder"] == holder and c["state"] == "deducted"
            ]
            try:
                self._releases.insert_one({"_id": key, "holder": holder, "claims": deducted, "created_at": now})
            except DuplicateKeyError:
                pass  # a concurrent call of the same release wrote it first: follow its list
            record = self._releases.find_one({"_id": key})
            assert record is not None
        return list(record["claims"])

    def _release_one(self, claim_key: str, release_key: str, now: float) -> None:
        doc = self._hosts.find_one({"claims": {"$elemMatch": {"key": claim_key, "state": "deducted"}}})
        if doc is None:
            return
        need = amount(next(c["need"] for c in doc["claims"] if c["key"] == claim_key))
        self._hosts.update_one(
            {"_id": doc["_id"], "claims": {"$elemMatch": {"key": claim_key, "state": "deducted"}}},
            {
                "$set": {"claims.$.state": "released", "claims.$.released_by": release_key, "claims.$.updated_at": now},
                "$inc": inc(need, -1),
            },
        )

    def _released_by(self, key: str, now: float) -> list[Claim]:
        claims = {
            c["key"]: claim_of(c, doc["_id"], now)
            for doc in self._hosts.find({"claims.released_by": key})
            for c in doc["claims"]
            if c.get("released_by") == key
        }
        for doc in self._closed.find({"released_by": key}):
            claims.setdefault(doc["_id"], closed_claim(doc, now))
        return by_age(list(claims.values()))

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
                            "$inc": inc(amount(c["need"]), -1),
                        },
                    )
                    expired += result.modified_count
        return expired

    def _move_closed(self, closed_before: float) -> None:
        """Move claims closed before this time out of their host documents (see the module doc)."""
        condition = {"state": {"$in": CLOSED}, "updated_at": {"$lt": closed_before}}
        for doc in self._hosts.find({"claims": {"$elemMatch": condition}}, {"claims": True}):
            keys = []
            for c in doc["claims"]:
                if c["state"] in CLOSED and c["updated_at"] < closed_before:
                    self._closed.replace_one({"_id": c["key"]}, archived(c, doc["_id"]), upsert=True)
                    keys.append(c["key"])
            self._hosts.update_one(
                {"_id": doc["_id"]}, {"$pull": {"claims": {"key": {"$in": keys}, "state": {"$in": CLOSED}}}}
            )
