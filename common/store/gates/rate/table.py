"""Taking a start slot of a key's rate: the engine's pure `take` applied to the key's document
with a compare-and-set, re-read and re-decided when another writer won the race
(common.store.retry), so every slot is decided on every slot written before it.

The clock is read after each read of the document: a slot's time is never earlier than a read
that saw an earlier slot, whichever process wins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from common.engine.changes import Full, Taken, take
from common.engine.document import KeyRate
from common.store.side_stores import open_gate_table, open_gate_table_beside
from common.store.gates.rate.port import RateStore
from common.store.retry import compare_and_set_loop


class RateTable:
    def __init__(self, store: RateStore, clock: Callable[[], float] = time.time):
        self.store = store
        self._clock = clock

    def take(self, key: str, member: str, *, limit: int, per: float, now: float | None = None) -> Taken | Full:
        """A slot of `key` for `member` (its own again if it has one), or when the next frees."""
        outcome: list[Taken | Full] = []

        def change(current: KeyRate) -> KeyRate | None:
            new, decided = take(current, member, limit, per, self._clock() if now is None else now)
            outcome[:] = [decided]
            return None if new is current else new  # full, or its own slot already: nothing to write

        read = lambda: self.store.get(key) or KeyRate(Key=key)  # noqa: E731  (a key never used: Version 0)
        compare_and_set_loop(read(), read=read, change=change, write=self.store.compare_and_set, what=f"rate {key!r}")
        return outcome[0]

    def get(self, key: str) -> KeyRate | None:
        return self.store.get(key)

    def list_rates(self, *, limit: int = 100) -> list[KeyRate]:
        return self.store.list_rates(limit=limit)

    def close(self) -> None:
        self.store.close()


def open_rate_store_for(task_store: Any) -> RateStore:
    """The rate documents beside `task_store` (a SqliteStore or a MongoStore)."""
    return open_gate_table_beside("rate", task_store)  # type: ignore[no-any-return]


def open_rate_table(url: str, **options: Any) -> RateTable:
    """The rate table on a store URL (`options`: open_gate_table's, as `indexes="none"`)."""
    return RateTable(open_gate_table("rate", url, **options))
