"""What a token limited to namespaces costs a task listing: the first page of 50 and the counts
per status (`GET /api/v1/tasks` asks both) on a SQLite store of BATON_BENCH_SCOPE_TASKS tasks
(default 20000) of four teams, unscoped next to the same filtered by a label, and to a scope of
one namespace (a type and a label) and of three. SQLite reads a label from the document (no
column of its own), so the counts, a scan of every task, cost as much as a label filter's. Median wall ms of BATON_BENCH_SCOPE_SAMPLES (default 20) after a warm-up.
Prints figures, asserts nothing: `python -m bench.scoped_listing` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from common.access import Namespace, Scope
from common.engine.changes import Timing, create_task
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.filters import TaskFilter
from tests.support.builders import make_step

TEAMS = ("payments", "shop", "search", "infra")
TYPES = ("create_db", "resize_db", "report")
ONE: Scope = (Namespace("dbs", "operator", frozenset({"create_db"}), {"team": "payments"}),)
THREE: Scope = (*ONE, Namespace("all", "read", frozenset(), {"team": "payments"}),
                Namespace("reports", "read", frozenset({"report"}), {"team": "shop"}))  # fmt: skip


def fill(store: SqliteStore, size: int) -> None:
    now = time.time()
    for n in range(size):
        task = create_task(task_type=TYPES[n % len(TYPES)], steps=[make_step("only")], parameters={},
                           timing=Timing(now + n / 1000), labels={"team": TEAMS[n % len(TEAMS)]})  # fmt: skip
        store.insert(task)


def page_and_counts_ms(store: SqliteStore, scope: Scope | None, samples: int, labels: dict | None = None) -> float:
    def once() -> float:
        started = time.perf_counter()
        store.list_tasks(TaskFilter(scope=scope, labels=labels), limit=51)
        store.count_tasks(TaskFilter(scope=scope, labels=labels or {}))
        return (time.perf_counter() - started) * 1000

    for _ in range(3):
        once()
    return statistics.median(once() for _ in range(samples))


def scoped_rows(workdir: Path) -> list[tuple[str, str, str]]:
    size = int(os.environ.get("BATON_BENCH_SCOPE_TASKS", "20000"))
    samples = int(os.environ.get("BATON_BENCH_SCOPE_SAMPLES", "20"))
    store = SqliteStore(workdir / "scoped.db")
    try:
        fill(store, size)
        plain = page_and_counts_ms(store, None, samples)
        rows = [(f"a page of tasks and its counts, {size:,} tasks, unscoped token", f"{plain:.1f} ms", "")]
        labelled = page_and_counts_ms(store, None, samples, {"team": "payments"})
        rows.append((f"a page of tasks and its counts, {size:,} tasks, unscoped, ?label=team=payments",
                     f"{labelled:.1f} ms", f"{labelled / plain:.1f}x the unscoped"))  # fmt: skip
        for name, scope in (("one namespace", ONE), ("three namespaces", THREE)):
            ms = page_and_counts_ms(store, scope, samples)
            rows.append((f"a page of tasks and its counts, {size:,} tasks, {name}", f"{ms:.1f} ms",
                         f"{ms / plain:.1f}x the unscoped"))  # fmt: skip
        return rows
    finally:
        store.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as work:
        for row in scoped_rows(Path(work)):
            print(f"{row[0]:<75} {row[1]:>10}   {row[2]}")
