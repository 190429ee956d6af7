"""Lock modes (docs/design/locks.md): which members of a key's lock may hold it at once.

flows.yaml's `lock_modes` table says which declared modes share a key; a lock that names no mode
takes it `exclusive`, which shares with no declared mode and with other `exclusive` holders only
up to the key's limit (the lock of before modes). Each member (holder or waiter) carries its
mode and its row of the table (`Shares`), copied at submission, so these decisions need no
flows.yaml and stay pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

EXCLUSIVE = "exclusive"
EXCLUSIVE_SHARES: tuple[str, ...] = (EXCLUSIVE,)


class Member(Protocol):
    Mode: str
    Shares: list[str]


def shares_of(mode: str | None, table: Mapping[str, Mapping[str, bool]] | None) -> list[str]:
    """The modes a holder in `mode` lets share its key: its row's `true` cells, in name order
    (a checked table: every declared mode has a full row)."""
    if mode is None or mode == EXCLUSIVE:
        return list(EXCLUSIVE_SHARES)
    row = (table or {}).get(mode, {})
    return sorted(other for other, shared in row.items() if shared)


def exclusive_left_out(shown: dict[str, Any]) -> dict[str, Any]:
    """A lock or member in the exclusive mode, serialized without `Mode` and `Shares`: what was
    written before modes existed (its row is always `[exclusive]`, so nothing is lost)."""
    if shown.get("Mode") in (None, EXCLUSIVE):
        return {k: v for k, v in shown.items() if k not in ("Mode", "Shares")}
    return shown


def compatible(a: Member, b: Member) -> bool:
    """Both name the other's mode: a table edited between two submissions errs towards waiting."""
    return b.Mode in a.Shares and a.Mode in b.Shares


def fits(holders: Sequence[Member], limit: int, member: Member) -> bool:
    """A free slot, and every holder shares the key with `member`."""
    return len(holders) < limit and all(compatible(h, member) for h in holders)
