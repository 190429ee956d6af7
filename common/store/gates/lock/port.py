"""The lock store port: one document per lock key (common.engine.gates.lock.table.KeyLock).

Adapters only read and compare-and-set whole documents; the decisions (who waits, who is
granted) are pure functions applied by common.store.gates.lock.table.LockTable, which retries a lost
race on a fresh read. Documents are never deleted: a deleted and re-created key would restart
its Version, and a writer holding an old read could then win a compare-and-set it must lose.
"""

from __future__ import annotations

from typing import Protocol

from common.engine.document import KeyLock


class LockStore(Protocol):
    def get(self, key: str) -> KeyLock | None: ...

    def list_locks(self, *, limit: int = 100) -> list[KeyLock]:
        """By key; [] when limit <= 0."""

    def compare_and_set(self, lock: KeyLock, expected_version: int) -> bool:
        """Write iff the stored Version equals `expected_version` (0: no document yet, insert it);
        `lock.Version` must be `expected_version + 1` (ValueError otherwise). False when another
        writer won."""

    def close(self) -> None: ...

