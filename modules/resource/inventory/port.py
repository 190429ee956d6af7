"""The resource inventory port: hosts with capacity, and the claims tasks hold on them.

A claim is what a task holds on one host, keyed by a unique key the caller chooses (the resource
module uses one per task, so every step of the task names the same claim):

    reserve ──> RESERVED ──deduct──> DEDUCTED ──release──> RELEASED
                   │  └─ expires_at passes ──> EXPIRED       │
                   └──────────restore──> RESTORED <──restore─┘

RESERVED (until it expires) and DEDUCTED claims count against their host; the others are closed
for good: a closed claim never counts again, and reserving its key again returns it unchanged.
Every operation is idempotent on its key: repeating it gives the same answer and no second effect.

Times are UNIX epoch seconds passed in by the caller (no clock inside an adapter), like the task
store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from common.errors import BatonError


@dataclass(frozen=True)
class Capacity:
    """An amount of each resource: a host's size, what a claim needs, or what is in use."""

    cpu: int = 0
    memory_mb: int = 0
    storage_gb: int = 0

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity(
            self.cpu + other.cpu, self.memory_mb + other.memory_mb, self.storage_gb + other.storage_gb
        )

    def __sub__(self, other: Capacity) -> Capacity:
        return Capacity(
            self.cpu - other.cpu, self.memory_mb - other.memory_mb, self.storage_gb - other.storage_gb
        )

    def fits_in(self, room: Capacity) -> bool:
        return self.cpu <= room.cpu and self.memory_mb <= room.memory_mb and self.storage_gb <= room.storage_gb

    def as_dict(self) -> dict[str, int]:
        return {"cpu": self.cpu, "memory_mb": self.memory_mb, "storage_gb": self.storage_gb}

    @classmethod
    def total(cls, amounts: Iterable[Capacity]) -> Capacity:
        result = cls()
        for amount in amounts:
            result = result + amount
        return result


class HostState(StrEnum):
    ACTIVE = "active"  # takes new reservations
    DRAINING = "draining"  # keeps what it holds, takes nothing new


class ClaimState(StrEnum):
    RESERVED = "reserved"
    DEDUCTED = "deducted"
    RESTORED = "restored"
    RELEASED = "released"
    EXPIRED = "expired"


LIVE_STATES = frozenset({ClaimState.RESERVED, ClaimState.DEDUCTED})


@dataclass(frozen=True)
class Host:
    name: str
    capacity: Capacity
    state: HostState
    used: Capacity  # live claims: deductions plus reservations not yet expired
    created_at: float

    @property
    def free(self) -> Capacity:
        return self.capacity - self.used

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "state": self.state.value,
            "capacity": self.capacity.as_dict(),
            "used": self.used.as_dict(),
            "free": self.free.as_dict(),
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Claim:
    key: str
    host: str
    holder: str  # what the capacity is for (an instance name): the delete flow releases by it
    need: Capacity
    state: ClaimState  # as of the `now` the caller passed: a lapsed reservation reads EXPIRED
    created_at: float
    expires_at: float | None  # RESERVED only
    updated_at: float
    released_by: str | None = None  # the key of the release that closed it

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def as_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "host": self.host,
            "holder": self.holder,
            "need": self.need.as_dict(),
            "state": self.state.value,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "updated_at": self.updated_at,
            "released_by": self.released_by,
        }


# --- errors: each says what the caller should do --------------------------------------------------


class InventoryError(BatonError):
    """Base of the inventory's refusals."""


class InvalidInventoryInput(InventoryError, ValueError):
    """A host name, amount or key is malformed: fix the request; nothing was changed."""


class HostConflict(InventoryError):
    """A host of this name exists with another capacity: pick another name."""


class UnknownHost(InventoryError):
    """No host of this name."""


class NoCapacity(InventoryError):
    """No active host has room for the claim now: add or free capacity, then try again."""


class KeyReused(InventoryError):
    """The key names a claim made with other amounts or holder: a caller bug, never retry."""


class UnknownClaim(InventoryError):
    """No claim has this key: it was never reserved (or was pruned long after it closed)."""


class ClaimClosed(InventoryError):
    """The claim expired, was restored or released: it cannot be deducted. `claim` says which."""

    def __init__(self, claim: Claim):
        self.claim = claim
        super().__init__(f"claim {claim.key} on {claim.host} is {claim.state.value}; it can no longer be deducted")


class Inventory(Protocol):
    def add_host(self, name: str, capacity: Capacity, now: float) -> Host:
        """Add an active host. Adding it again with the same capacity returns it (HostConflict
        when the capacity differs)."""

    def get_host(self, name: str, now: float) -> Host | None: ...

    def list_hosts(self, now: float) -> list[Host]:
        """Every host, by name."""

    def set_host_state(self, name: str, state: HostState, now: float) -> Host:
        """Drain (no new reservations; claims held stay) or reactivate. UnknownHost if none."""

    def reserve(self, key: str, need: Capacity, holder: str, now: float, expires_at: float) -> Claim:
        """Place a claim on an active host with room, atomically: of concurrent reservations only
        those that fit succeed. The host with the least memory in use wins (spreads instances).

        A key already used returns its claim as it stands (whatever its state: the caller decides
        what a closed one means); KeyReused if `need` or `holder` differ. NoCapacity when no
        active host has room.
        """

    def get_claim(self, key: str, now: float) -> Claim | None: ...

    def list_claims(
        self, now: float, *, holder: str | None = None, host: str | None = None, live_only: bool = False
    ) -> list[Claim]:
        """Oldest first."""

    def deduct(self, key: str, now: float) -> Claim:
        """RESERVED -> DEDUCTED (a deduction never expires). Again: the same claim.
        UnknownClaim, or ClaimClosed when it expired, was restored or released."""

    def restore(self, key: str, now: float) -> Claim | None:
        """Give a reservation or deduction back: -> RESTORED. A closed claim (a reservation that
        expired included: it never counted after) is returned as it is; None when the key is
        unknown (nothing to give back)."""

    def release(self, holder: str, key: str, now: float) -> list[Claim]:
        """Close every deduction of `holder`: -> RELEASED, marked with `key`. Again with the same
        key: the claims it released, and nothing else changes."""

    def expire_due(self, now: float) -> int:
        """Close every reservation whose expiry is <= now. Reserving does this itself first; a
        periodic call keeps listings tidy. Returns how many it closed."""

    def prune_closed(self, closed_before: float) -> int:
        """Forget claims closed before this time (their keys become unknown). Returns how many."""

    def ping(self) -> None: ...

    def close(self) -> None: ...
