"""The rate store port: one document per rate key (common.engine.document.KeyRate), beside the
tasks (the same SQLite file, the same MongoDB database).

Adapters only read and compare-and-set whole documents, as the lock store's do; the decision (a
slot, or when the next frees) is the engine's pure `take`, applied by common.store.gates.rate.table.
Documents are never deleted: a re-created key would restart its Version, and a writer holding an
old read could then win a compare-and-set it must lose.
"""

from __future__ import annotations

from typing import Protocol

from common.engine.document import KeyRate


class RateStore(Protocol):
    def get(self, key: str) -> KeyRate | None: ...

    def list_rates(self, *, limit: int = 100) -> list[KeyRate]:
        """By key; [] when limit <= 0."""

    def compare_and_set(self, rate: KeyRate, expected_version: int) -> bool:
        """Write iff the stored Version equals `expected_version` (0: no document yet, insert it);
        `rate.Version` must be `expected_version + 1` (ValueError otherwise). False when another
        writer won."""

    def close(self) -> None: ...

