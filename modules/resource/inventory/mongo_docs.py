"""The inventory's MongoDB documents and the pure conversions to and from the port's types.

A host document holds its capacity, the counters of what its open claims use, and the claims
themselves (open ones, and closed ones until they are moved to the closed-claims collection); a
closed-claim document is the same claim with `_id` = key and `host` added.
"""

from __future__ import annotations

from typing import Any

from modules.resource.inventory import rules
from modules.resource.inventory.port import Capacity, Claim, ClaimState, Host, HostState

Doc = dict[str, Any]
FIELDS = ("cpu", "memory_mb", "storage_gb")
CLOSED = [ClaimState.RESTORED.value, ClaimState.RELEASED.value, ClaimState.EXPIRED.value]


def amount(doc: Doc) -> Capacity:
    return Capacity(doc["cpu"], doc["memory_mb"], doc["storage_gb"])


def claim(doc: Doc, host: str, now: float) -> Claim:
    return Claim(
        key=doc["key"],
        host=host,
        holder=doc["holder"],
        need=amount(doc["need"]),
        state=rules.effective_state(ClaimState(doc["state"]), doc.get("expires_at"), now),
        created_at=doc["created_at"],
        expires_at=doc.get("expires_at"),
        updated_at=doc["updated_at"],
        released_by=doc.get("released_by"),
    )


def closed_claim(doc: Doc, now: float) -> Claim:
    """A claim from the closed-claims collection."""
    return claim(doc, doc["host"], now)


def archived(claim_doc: Doc, host: str) -> Doc:
    """The closed-claims collection's document of a claim taken from host `host`."""
    return {**claim_doc, "_id": claim_doc["key"], "host": host}


def host(doc: Doc, now: float) -> Host:
    live = [
        amount(c["need"])
        for c in doc.get("claims", [])
        if rules.counts(ClaimState(c["state"]), c.get("expires_at"), now)
    ]
    return Host(
        name=doc["_id"],
        capacity=amount(doc["capacity"]),
        state=HostState(doc["state"]),
        used=Capacity.total(live),
        created_at=doc["created_at"],
    )


def new_host(capacity: Capacity, now: float) -> Doc:
    return {
        "capacity": capacity.as_dict(),
        "used": Capacity().as_dict(),
        "state": HostState.ACTIVE.value,
        "created_at": now,
        "updated_at": now,
        "claims": [],
    }


def new_claim(key: str, need: Capacity, holder: str, now: float, expires_at: float) -> Doc:
    return {
        "key": key,
        "holder": holder,
        "need": need.as_dict(),
        "state": ClaimState.RESERVED.value,
        "created_at": now,
        "expires_at": expires_at,
        "updated_at": now,
        "released_by": None,
    }


def room_for(need: Capacity) -> Doc:
    """$expr: used + need <= capacity, for every resource."""
    return {
        "$and": [
            {"$lte": [{"$add": [f"$used.{f}", getattr(need, f)]}, f"$capacity.{f}"]} for f in FIELDS
        ]
    }


def inc(need: Capacity, sign: int) -> Doc:
    return {f"used.{f}": sign * getattr(need, f) for f in FIELDS}


def by_age(claims: list[Claim]) -> list[Claim]:
    return sorted(claims, key=lambda c: (c.created_at, c.key))
