"""The inventory's decisions as pure functions, shared by every adapter so they cannot disagree."""

from __future__ import annotations

import re
from collections.abc import Iterable

from modules.resource.inventory.port import (
    Capacity,
    Claim,
    ClaimState,
    Host,
    HostState,
    InvalidInventoryInput,
    KeyReused,
)

# DNS-label-like: it may be shown in URLs, logs and queue-free places alike.
HOST_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?$")
MAX_KEY_LENGTH = 200
MAX_HOLDER_LENGTH = 128
MAX_AMOUNT = 10**9  # far above any real host; keeps sums inside every store's integer range


def check_host_name(name: object) -> str:
    if not isinstance(name, str) or not HOST_NAME.fullmatch(name):
        raise InvalidInventoryInput(
            f"host name {name!r} is not allowed: 1 to 63 of a-z, 0-9, '.', '-', "
            "starting and ending with a letter or digit"
        )
    return name


def check_capacity(amount: Capacity, what: str) -> Capacity:
    for field, value in amount.as_dict().items():
        # bool is an int to Python; True cpus is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_AMOUNT:
            raise InvalidInventoryInput(f"{what} {field} must be a whole number from 0 to {MAX_AMOUNT} (got {value!r})")
    return amount


def check_key(key: object, what: str = "key") -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInventoryInput(f"{what} must be a non-empty string of at most {MAX_KEY_LENGTH} characters")
    return key


def check_holder(holder: object) -> str:
    if not isinstance(holder, str) or not holder or len(holder) > MAX_HOLDER_LENGTH:
        raise InvalidInventoryInput(f"holder must be a non-empty string of at most {MAX_HOLDER_LENGTH} characters")
    return holder


def effective_state(stored: ClaimState, expires_at: float | None, now: float) -> ClaimState:
    """A reservation past its expiry no longer counts, whether or not a sweep has closed it."""
    if stored is ClaimState.RESERVED and expires_at is not None and expires_at <= now:
        return ClaimState.EXPIRED
    return stored


def counts(stored: ClaimState, expires_at: float | None, now: float) -> bool:
    return effective_state(stored, expires_at, now) in (ClaimState.RESERVED, ClaimState.DEDUCTED)


def placement_key(host: Host) -> tuple[int, str]:
    """Which host a new claim goes to first: the least memory in use, then by name. The Mongo
    adapter sorts its conditional update the same way."""
    return (host.used.memory_mb, host.name)


def choose_host(hosts: Iterable[Host], need: Capacity) -> Host | None:
    candidates = [h for h in hosts if h.state is HostState.ACTIVE and need.fits_in(h.free)]
    return min(candidates, key=placement_key, default=None)


def check_same_request(claim: Claim, need: Capacity, holder: str) -> Claim:
    """A key repeated with other amounts is a caller bug: answering with the old claim would hide it."""
    if claim.need != need or claim.holder != holder:
        raise KeyReused(
            f"key {claim.key} already names a claim of {claim.need.as_dict()} for {claim.holder!r}; "
            f"asked again with {need.as_dict()} for {holder!r}"
        )
    return claim


def no_room_message(need: Capacity, hosts: list[Host]) -> str:
    active = [h for h in hosts if h.state is HostState.ACTIVE]
    if not active:
        return f"no active host to place {need.as_dict()} on ({len(hosts)} hosts, none active)"
    best = max(active, key=lambda h: (h.free.cpu, h.free.memory_mb, h.free.storage_gb))
    return (
        f"no active host has room for {need.as_dict()}: {len(active)} active hosts, "
        f"the roomiest ({best.name}) has {best.free.as_dict()} free"
    )


def check_reservation(key: object, holder: object, need: Capacity) -> None:
    """What every adapter's reserve checks before it touches its store."""
    check_key(key)
    check_holder(holder)
    check_capacity(need, "need")
