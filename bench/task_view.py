"""What the task view costs for a large fan-out: `GET /api/v1/tasks/{id}` of a task whose
`for_each` step keeps 10,000 items in records of their own, next to the same task with 10
items, the same step settled (its items' attempt sums kept in the step: the view reads no
record), and a page of 100 of its items; through a real `baton oss` process over HTTP on a SQLite
file. Wall ms per request, median and p95 of BATON_BENCH_VIEW_SAMPLES (default 50) requests
after a warm-up; BATON_BENCH_VIEW_ITEMS (default 10000) sizes the large task. The records are
written straight into the store (the first half succeeded, the rest waiting), as a step
halfway through its items has them; the view reads their counts by state, never the items.
Prints figures, asserts nothing: `python -m bench.task_view` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.api import oss_ready
from bench.records_cluster import timed_gets
from common.engine.codes import OutboxKind
from common.engine.changes import Timing, create_task, new_records, use_records
from common.engine.views import keeps_records
from common.engine.states import ResultCode, StepState
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import REPO, wait_until
from tests.support.ports import free_port

TOKEN = "bench-view-token-0123456789"
BATCH = 500


def build_task(store: SqliteStore, items: SqliteItemStore, task_id: str, size: int, settled: bool = False) -> None:
    """A task whose first step fans out over `size` items kept in records, halfway through (or,
    `settled`, every item succeeded and the step concluded with its items' attempt sums kept)."""
    step = make_step("each", rollback=True)
    step.ForEach, step.MaxParallel = "hosts", 20
    enabled = use_records(True)
    try:
        task = create_task(task_type="bench_view", steps=[step], parameters={"hosts": [f"host-{i}" for i in range(size)]},
                           timing=Timing(time.time()), task_id=task_id, ids=counter_ids(task_id))  # fmt: skip
    finally:
        use_records(enabled)
    assert keeps_records(task.Steps[0])
    task.Outbox = [e for e in task.Outbox if e.Kind != OutboxKind.OPEN_ITEMS]  # opened below, by hand
    if settled:  # as records.settle leaves it
        step = task.Steps[0]
        step.ItemsOpen, step.State, step.Code, step.Attempts = False, StepState.SUCCEEDED, ResultCode.OK, size
        task.Runs, task.Outbox = [], []
    store.insert(task)
    records = new_records(task, 0, task.Parameters["hosts"], Timing(time.time()), counter_ids(f"{task_id}-i"), "bench")
    for record in records[: size if settled else size // 2]:  # the first half done, as the step's chains left them
        record.State, record.Code, record.Run, record.Outbox, record.Open = StepState.SUCCEEDED, ResultCode.OK, None, [], False
        record.Output, record.Attempts = {"host": record.Value}, 1
    for start in range(0, size, BATCH):
        items.insert_items(records[start:start + BATCH])


def _timed(client: httpx.Client, path: str, samples: int) -> dict[str, float]:
    spent = timed_gets(client, path, samples, warm_up=5)  # the first requests pay for imports and caches
    return {"p50": statistics.median(spent), "p95": spent[min(len(spent) - 1, int(len(spent) * 0.95))]}


def view_figures(workdir: Path, size: int, samples: int) -> dict[str, dict[str, float]]:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "view.db"
    store, items = SqliteStore(path), SqliteItemStore(path)
    try:
        build_task(store, items, "large", size)
        build_task(store, items, "small", 10)
        build_task(store, items, "settled", size, settled=True)
    finally:
        items.close()
        store.close()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "BATON_STORE_URL": f"sqlite:///{path}",
           "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_API_TOKENS": f"bench:{TOKEN}:read",
           "BATON_OSS_PORT": str(port), "BATON_OSS_SWEEPER": "false", "BATON_LOG_LEVEL": "warning",
           "BATON_BROKER_URL": f"amqp://guest:guest@127.0.0.1:{free_port()}/"}  # nothing listens: reads need no broker
    log = (workdir / "oss.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "oss", "oss"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: oss_ready(base), 60, "OSS ready")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            large = client.get("/api/v1/tasks/large").json()["Steps"][0]
            assert sum(large["ItemCounts"].values()) == size and large["Items"] is None, large
            return {
                "large": _timed(client, "/api/v1/tasks/large", samples),
                "small": _timed(client, "/api/v1/tasks/small", samples),
                "settled": _timed(client, "/api/v1/tasks/settled", samples),
                "page": _timed(client, f"/api/v1/tasks/large/steps/0/items?after={size // 2}&limit=100", samples),
            }
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()



def view_rows(workdir: Path) -> list[tuple[str, str, str]]:
    size = int(os.environ.get("BATON_BENCH_VIEW_ITEMS", "10000"))
    samples = int(os.environ.get("BATON_BENCH_VIEW_SAMPLES", "50"))
    figures = view_figures(workdir, size, samples)
    large, small, page, settled = figures["large"], figures["small"], figures["page"], figures["settled"]
    return [
        (f"task view (GET /tasks/ID) of a for_each over {size:,} items in records",
         f"p50 {large['p50']:.1f} ms", f"p95 {large['p95']:.1f} ms; 10 items: p50 {small['p50']:.1f} ms; "
         f"the step settled: p50 {settled['p50']:.1f} ms"),
        ("a page of 100 of its items (GET /tasks/ID/steps/0/items)", f"p50 {page['p50']:.1f} ms",
         f"p95 {page['p95']:.1f} ms"),
    ]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        for name, value, note in view_rows(Path(tmp)):
            print(f"  {name:<70}  {value:>16}  {note}")
