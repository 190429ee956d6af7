"""Per-key locks end to end: 20 tasks on one key with limit 5, real module and sweeper
processes on RabbitMQ, a module and the sweeper holding the lease killed with SIGKILL mid-run.

What must hold, read from the task documents: never more than 5 tasks between their first step's
start and their last step's end at once; every task ends; the lock was granted in submission
order; and afterwards no lock is held or waited for. Runs in about 20 seconds (most of it the
killed sweeper's lease lapsing).
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3

import pytest

from common.engine.document import Task
from common.engine.states import FINAL_STATUSES, RunState, TaskStatus
from common.store.gates.lock.table import open_lock_store
from common.store.gates.lock.table import LockTable
from tests.support.cluster import Cluster, wait_until
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
LIMIT, TASKS = 5, 20
FLOWS = f"""
version: 1
defaults:
  timeout: 10
  retry: 2
  backoff: {{initial: 0.1, max: 0.4, multiplier: 2, jitter: 0.1}}
task_types:
  locked_work:
    lock: {{key: "cluster:{{cluster}}", limit: {LIMIT}}}
    parameters:
      cluster: {{type: string, required: true}}
      hold: {{type: number, default: 0.4}}
    steps:
      - name: prepare
        normal: {{module: resource, command: hold}}
      - name: left
        after: [prepare]
        normal: {{module: resource, command: hold}}
      - name: right
        after: [prepare]
        normal: {{module: mysql, command: hold}}
"""


def lease_owner(cluster: Cluster) -> str | None:
    """Who holds the sweeper's lease-lock, read from the store itself."""
    if cluster.mongo_url is None:
        with contextlib.closing(sqlite3.connect(cluster.workdir / "baton.db")) as conn:
            row = conn.execute("SELECT owner FROM locks WHERE name = 'sweeper'").fetchone()
        return row[0] if row else None
    from pymongo import MongoClient

    client: MongoClient = MongoClient(cluster.mongo_url)
    try:
        doc = client.get_default_database()["locks"].find_one({"_id": "sweeper"})
    finally:
        client.close()
    return doc["owner"] if doc else None


def sweeper_named(cluster: Cluster, owner: str) -> str:
    for name in ("sweeper-a", "sweeper-b"):
        if any(e.get("event") == "sweeper started" and e.get("owner") == owner for e in cluster.log_events(name)):
            return name
    raise AssertionError(f"no sweeper process logged owner {owner}")


def most_at_once(tasks: list[Task]) -> int:
    """The most tasks between their first step's start and their last step's end at one moment."""
    edges = []
    for task in tasks:
        edges.append((min(s.TimeStart for s in task.Steps), 1))
        edges.append((max(s.TimeEnd for s in task.Steps), -1))
    running = peak = 0
    for _, change in sorted(edges):  # an end sorts before a start at the same instant
        running += change
        peak = max(peak, running)
    return peak


def test_twenty_tasks_on_one_key_run_five_at_a_time_in_order_and_leave_no_lock_after_kills(rabbitmq_url, tmp_path,
                                                                                            request):
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, mongo_url=cluster_mongo_url(request))
    locks = LockTable(open_lock_store(cluster.store_url))
    try:
        with cluster.starting():  # side by side
            resource_a = cluster.start_module("resource", "resource-a", registry="tests.support.standin_commands:resource")
            cluster.start_module("resource", "resource-b", registry="tests.support.standin_commands:resource")
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_sweeper("sweeper-a")
        wait_until(lambda: lease_owner(cluster) is not None, 10, "a sweeper takes the lease")
        cluster.start_sweeper("sweeper-b")

        ids = [cluster.submit("locked_work", cluster="eu").TaskId for _ in range(TASKS)]
        waiting = cluster.store.get(ids[-1])
        assert waiting.WaitingFor is not None and waiting.WaitingFor.Key == "cluster:eu"

        # SIGKILL a resource process while it runs a step, and the sweeper holding the lease.
        pid = resource_a.popen.pid

        def resource_a_busy() -> bool:
            return any(r.State is RunState.RUNNING and f":{pid}:" in (r.Owner or "")
                       for t in map(cluster.store.get, ids) for r in t.Runs)

        wait_until(resource_a_busy, 30, "resource-a runs a step")
        cluster.kill("resource-a", signal.SIGKILL)
        cluster.kill(sweeper_named(cluster, lease_owner(cluster)), signal.SIGKILL)

        tasks = [cluster.wait_final(task_id, timeout=90) for task_id in ids]
        assert [t.TaskStatus for t in tasks] == [TaskStatus.SUCCESS] * TASKS, [t.TaskMessage for t in tasks]
        assert any(s.Attempts > 1 for t in tasks for s in t.Steps), "the killed module ran no step"
        assert most_at_once(tasks) <= LIMIT
        granted = sorted(tasks, key=lambda t: t.Lock.Since)
        assert [t.TaskId for t in granted] == ids, "the lock was not granted in submission order"
        assert all(t.Lock.State == "released" and t.WaitingFor is None for t in tasks)
        wait_until(lambda: locks.list_locks() == [], 15, "no lock held or waited for")
        assert all(t.TaskStatus in FINAL_STATUSES for t in map(cluster.store.get, ids))
    except AssertionError:
        print(cluster.logs())
        raise
    finally:
        locks.close()
        cluster.stop_all()
