"""What taking a start slot of a rate costs (docs/design/rates.md), beside taking and giving back
a lock's slot in the same run, on SQLite: `BATON_BENCH_RATE_TAKES` (default 2,000) tasks each take
one slot (a read, the window decided, one compare-and-set) of a key whose window keeps a handful
of starts (limit 10), then of a key with room for all of them (its document grows to that many
starts: the cost of a large `limit`), then ask the full key once more (a read, no write). The
baseline is the lock table's join then leave for the same tasks (two compare-and-sets). One process, no
broker. `python -m bench.rates` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.store.gates.rate.table import RateTable
from common.store.gates.lock.table import LockTable
from common.store.gates.lock.sqlite import SqliteLockStore
from common.store.gates.rate.sqlite import SqliteRateStore


def rate_figures(takes: int = 2000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        rates, locks = RateTable(SqliteRateStore(path)), LockTable(SqliteLockStore(path))
        try:
            started = time.perf_counter()
            for n in range(takes):  # 10 per millisecond: the window keeps a handful of starts
                rates.take("host:small", f"t{n}:g0", limit=10, per=0.001)
            small = (time.perf_counter() - started) / takes
            started = time.perf_counter()
            for n in range(takes):
                rates.take("host:bench", f"t{n}:g0", limit=takes, per=3600.0)
            take = (time.perf_counter() - started) / takes
            started = time.perf_counter()
            for n in range(200):
                rates.take("host:bench", f"late{n}:g0", limit=takes, per=3600.0)  # full: read, decide, no write
            full = (time.perf_counter() - started) / 200
            started = time.perf_counter()
            for n in range(takes):
                locks.join("lock:bench", f"t{n}", priority=0, seq=n, limit=1)
                locks.leave("lock:bench", f"t{n}")
            lock = (time.perf_counter() - started) / takes
        finally:
            rates.close()
            locks.close()
    return {"takes": takes, "small_ms": small * 1000, "take_ms": take * 1000, "full_ms": full * 1000,
            "lock_ms": lock * 1000}


def rows(takes: int) -> list[tuple[str, str, str]]:
    figures = rate_figures(takes)
    return [("a rate's start slot on SQLite (limit 10)", f"{figures['small_ms']:.2f} ms",
             f"a lock's join and leave: {figures['lock_ms']:.2f} ms"),
            (f"a rate's start slot on SQLite, the window holding up to {figures['takes']:,}", f"{figures['take_ms']:.2f} ms",
             f"mean over the window's filling; asked of it full: {figures['full_ms']:.2f} ms (a read, no write)")]


if __name__ == "__main__":
    for name, value, note in rows(int(os.environ.get("BATON_BENCH_RATE_TAKES", "2000"))):
        print(f"{name}: {value} ({note})")
