"""The database server itself fails under a running system: kill -9 twice mid-run, and frozen
(SIGSTOP) for longer than the lease, with the Mongo store on a SecantusDB server of the test's own.

Real processes on the real RabbitMQ: the real resource module (its inventory in the same
database), the monitor, a sweeper, and the stand-in mysql commands (the database server under
test is MongoDB, not MariaDB). Tasks are submitted all along; a submission that raised was not
acknowledged. Afterwards:

- every acknowledged task exists and is final (kill -9 loses nothing that was acknowledged:
  before writes were durable by default, a task answered 201 could vanish);
- no step outcome was committed twice;
- every task's inventory claim agrees with how the task ended;
- after deleting every created instance, no capacity is in use. "Every": a submission that timed
  out while the server was frozen may still have been written once it ran again (the caller got
  an error, not a "no"), so the check covers every task in the store, acknowledged or not;
- frozen: modules gave deliveries back (their store calls timed out below the lease).

The normal run has a reduced version; BATON_CHAOS=full runs more tasks over a longer time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from common.errors import BatonError
from common.engine.states import FINAL_STATUSES, TaskStatus
from common.store.tasks.filters import TaskFilter
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState
from tests.chaos.plans import FULL, scale
from tests.support.cluster import Cluster, commits, wait_until
from tests.support.secantus import SecantusServer, fresh_database_name, secantus_server

pytestmark = [pytest.mark.soak, pytest.mark.rabbitmq, pytest.mark.slow, pytest.mark.timeout(1800 if FULL else 420)]

FLOWS = """
version: 1
defaults:
  timeout: 10
  retry: 6
  backoff: {initial: 0.3, max: 2, multiplier: 2, jitter: 0.1}
task_types:
  create_mysql_instance:
    parameters:
      name:       {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$"}
      cpu:        {type: integer, default: 1}
      memory_mb:  {type: integer, default: 256}
      storage_gb: {type: integer, default: 1}
    steps:
      - name: check_resource
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: init_instance
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
      - name: deduct_resource
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  delete_mysql_instance:
    parameters:
      name: {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$"}
    steps:
      - name: drop_instance
        normal: {module: mysql, command: drop_instance}
      - name: release_resource
        normal: {module: resource, command: release_resource}
"""
LEASE = 6.0  # the store timeout is a third of it


@pytest.fixture
def db_server() -> Any:
    with secantus_server("baton-e2e-db") as server:
        yield server


@pytest.fixture
def cluster(db_server: SecantusServer, rabbitmq_url: str, tmp_path: Any) -> Any:
    env = {"BATON_LEASE_SECONDS": str(LEASE), "BATON_REDELIVER_AFTER_SECONDS": "8"}
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, env, mongo_url=db_server.database_url(fresh_database_name()))
    try:
        inventory = open_inventory(cluster.store_url)
        inventory.add_host("host-1", Capacity(10_000, 10_000_000, 100_000), time.time())
        inventory.close()
        with cluster.starting():  # side by side
            cluster.start_module("resource")
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_module("monitor")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


class Submitter:
    """Submits create tasks at a steady rate in the background; remembers which were answered."""

    def __init__(self, cluster: Cluster, count: int, seconds: float):
        self.cluster, self.count, self.interval = cluster, count, seconds / count
        self.acknowledged: list[str] = []
        self.refused = 0  # raised: not acknowledged (written or not: unknown to the caller)
        self.created = 0  # tasks found in the store afterwards
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Submitter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._thread.join(300)

    def _run(self) -> None:
        for i in range(self.count):
            try:
                task = self.cluster.submit("create_mysql_instance", name=f"i{i}")
                self.acknowledged.append(task.TaskId)
            except BatonError:  # the store was down: not acknowledged, the caller would retry
                self.refused += 1
            time.sleep(self.interval)


def settle(cluster: Cluster, ids: list[str], timeout: float) -> list[Any]:
    def tasks() -> list[Any]:
        try:
            return [cluster.store.get(task_id) for task_id in ids]
        except BatonError:
            return []

    def done() -> bool:
        found = tasks()
        return bool(found) and all(t is not None and t.TaskStatus in FINAL_STATUSES and not t.Outbox for t in found)

    try:
        wait_until(done, timeout, f"{len(ids)} tasks final", interval=0.5)
    except AssertionError:
        print(cluster.logs())
        raise
    return tasks()


def check_everything(cluster: Cluster, submitter: Submitter) -> None:
    acknowledged = submitter.acknowledged
    assert acknowledged, "no task was acknowledged"
    settle(cluster, acknowledged, timeout=scale(240, 600))
    # A submission that timed out may still have been written (the server applies it when it
    # runs again): its outcome was unknown to the caller, not "not created". Every task that
    # exists is checked and deleted, acknowledged or not.
    created = [t.TaskId for t in cluster.store.list_tasks(TaskFilter(task_type="create_mysql_instance"), limit=100_000)]
    assert set(acknowledged) <= set(created), "an acknowledged task is gone"
    tasks = settle(cluster, created, timeout=scale(120, 300))
    for task in tasks:
        doubled = {step: n for step, n in commits(task).items() if n > 1}
        assert not doubled, f"{task.TaskId}: committed twice: {doubled}"
        assert task.TaskStatus in (TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK), (task.TaskId, task.TaskStatus)
    inventory = open_inventory(cluster.store_url)
    try:
        now = time.time()
        for task in tasks:
            claims = inventory.list_claims(now, holder=task.Parameters["name"])
            states = {c.state for c in claims}
            if task.TaskStatus is TaskStatus.SUCCESS:
                assert states == {ClaimState.DEDUCTED}, (task.TaskId, claims)
            else:
                assert states <= {ClaimState.RESTORED, ClaimState.EXPIRED}, (task.TaskId, claims)
        succeeded = [t for t in tasks if t.TaskStatus is TaskStatus.SUCCESS]
        deletes = [cluster.submit("delete_mysql_instance", name=t.Parameters["name"]).TaskId for t in succeeded]
        for task in settle(cluster, deletes, timeout=scale(120, 300)):
            assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskId
        assert inventory.list_claims(time.time(), live_only=True) == []
        assert inventory.get_host("host-1", time.time()).used == Capacity()  # type: ignore[union-attr]
    finally:
        inventory.close()
    submitter.created = len(created)


def test_database_server_killed_twice_mid_run(cluster: Cluster, db_server: SecantusServer) -> None:
    count, seconds = scale(24, 150), scale(12.0, 60.0)
    with Submitter(cluster, count, seconds) as submitter:
        for _ in range(2):
            time.sleep(seconds / 3)
            db_server.kill9()
            time.sleep(1.0)
            db_server.start()
    check_everything(cluster, submitter)
    print(f"kill -9 x2: {len(submitter.acknowledged)} acknowledged, {submitter.refused} raised, "
          f"{submitter.created} created")


def test_database_server_frozen_past_the_lease(cluster: Cluster, db_server: SecantusServer) -> None:
    # A burst, frozen half-way: the modules are busy claiming and committing when it stops.
    count = scale(40, 200)
    with Submitter(cluster, count, seconds=0.001 * count) as submitter:
        wait_until(lambda: len(submitter.acknowledged) >= count // 2, 60, "half the burst submitted")
        db_server.freeze()
        # Long enough for a worker stuck committing to give up once its lease lapsed, take the
        # next delivery, and find the store still frozen.
        time.sleep(LEASE * 2.5)
        # With timeouts below the lease, a module's call to the frozen store fails in time, and
        # the delivery goes back to the queue instead of the call hanging past the lease: still
        # frozen until one did (a loaded machine may take its deliveries later).
        wait_until(lambda: given_back(cluster), 60, "a delivery given back while the store is frozen")
        db_server.thaw()
    check_everything(cluster, submitter)
    print(f"frozen: {len(submitter.acknowledged)} acknowledged, {submitter.refused} raised, "
          f"{submitter.created} created, {len(given_back(cluster))} deliveries given back")


def given_back(cluster: Cluster) -> list[dict]:
    return [
        e for name in ("resource", "mysql", "monitor")
        for e in cluster.log_events(name) if e.get("event") == "store unreachable; delivery given back"
    ]  # fmt: skip
