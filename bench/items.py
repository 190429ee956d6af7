"""What one item's transition costs on the item records (docs/design/item-records.md), by the size
of its step.

A transition of an item kept as a record of its own is a read of its record, a compare-and-set
on it, and "is any item of the step still open?". Each is one index look-up, so its cost must
not grow with the step: this prints it for a step of 1,000 records and one of 10,000, side by
side, on a SQLite file and on a SecantusDB server (a real MongoDB wire-protocol server started
for the run). Wall time per operation, median of the transitions; prints figures, asserts
nothing. `python -m bench.items` alone, or part of `make bench`; BATON_BENCH_ITEM_TRANSITIONS
(default 100 per step) and BATON_BENCH_ITEM_STEPS (default "1000,10000") size it.

SecantusDB, unlike MongoDB, reads every entry an index range matches before it applies a limit,
so there `any_open` costs the number of open records; a MongoDB server stops at the first.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.engine.document import ItemRecord
from common.engine.states import StepState
from common.store.mongo.items import MongoItemStore
from common.store.sqlite.items import SqliteItemStore
from common.store.mongo.client import open_client
from tests.support.secantus import secantus_server

SIZES = tuple(int(size) for size in os.environ.get("BATON_BENCH_ITEM_STEPS", "1000,10000").split(","))
BATCH = 500
OPERATIONS = ("get", "compare_and_set", "any_open", "transition")


def transition_ms(store: Any, task_id: str, size: int, transitions: int) -> dict[str, float]:
    """Median wall ms of each operation, and of the three together, over `transitions` items
    spread across a fresh step of `size` records, each concluded in turn (the step stays open)."""
    for start in range(0, size, BATCH):  # the step's start: not timed
        store.insert_items([ItemRecord(TaskId=task_id, Cursor=1, Item=i, Value={"host": f"h{i}"})
                            for i in range(start, min(size, start + BATCH))])
    spent: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    for item in range(0, size, max(1, size // transitions))[:transitions]:
        started = time.perf_counter()
        current = store.get_item(task_id, 0, 1, item)
        read = time.perf_counter()
        done = current.model_copy(update={"State": StepState.SUCCEEDED, "Open": False, "Output": {"id": item},
                                          "Version": current.Version + 1})
        won = store.compare_and_set_item(done, current.Version)
        written = time.perf_counter()
        store.any_open(task_id, 0, 1)
        ended = time.perf_counter()
        assert won, item  # alone on the step: a lost race would be a bug, not a figure
        for name, seconds in zip(OPERATIONS, (read - started, written - read, ended - written, ended - started)):
            spent[name].append(1000 * seconds)
    return {name: statistics.median(values) for name, values in spent.items()}


def _by_size(open_store: Callable[[], Any], transitions: int) -> dict[int, dict[str, float]]:
    store = open_store()
    try:
        transition_ms(store, "warm-up", 100, 10)  # imports, caches, the first connection
        return {size: transition_ms(store, f"step-{size}", size, transitions) for size in SIZES}
    finally:
        store.close()


def item_figures(transitions: int = 100) -> dict[str, dict[int, dict[str, float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        figures = {"SQLite": _by_size(lambda: SqliteItemStore(Path(tmp) / "items.db"), transitions)}
    with secantus_server("baton-bench-items") as server:
        client = open_client(server.url, 600)  # a step's start on the test server takes minutes
        try:
            figures["SecantusDB"] = _by_size(lambda: MongoItemStore(client, "bench_items"), transitions)
        finally:
            client.close()
    return figures


def item_rows(transitions: int = 100) -> list[tuple[str, str, str]]:
    """For bench.run: one row per store, a transition's cost at each step size."""
    rows = []
    for backend, by_size in item_figures(transitions).items():
        small, large = by_size[SIZES[0]], by_size[SIZES[-1]]
        rows.append((f"an item record's transition on {backend} (get, compare-and-set, any_open)",
                     f"{small['transition']:.2f} -> {large['transition']:.2f} ms",
                     f"steps of {SIZES[0]:,} -> {SIZES[-1]:,} records; " + ", ".join(
                         f"{name} {small[name]:.2f} -> {large[name]:.2f}" for name in OPERATIONS[:-1])))
    return rows


def main() -> None:
    transitions = int(os.environ.get("BATON_BENCH_ITEM_TRANSITIONS", "100"))
    figures = item_figures(transitions)
    print(f"\nan item's transition on its own record, median wall ms of {transitions} transitions per step")
    header = "".join(f"{f'{size:,} records':>16}" for size in SIZES)
    for backend, by_size in figures.items():
        print(f"  {backend:<12}{'':<16}{header}")
        for name in OPERATIONS:
            print(f"  {'':<12}{name:<16}" + "".join(f"{by_size[size][name]:>16.3f}" for size in SIZES))


if __name__ == "__main__":
    main()
