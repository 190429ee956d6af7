"""The shipped create_mysql_cluster end to end: the real resource, mysql and monitor modules as
processes, the real RabbitMQ, the real MariaDB. A primary through the create_mysql_instance
sub-flow, replicas fanned out, the topology recorded by a join; and every rollback really undoes.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from common.engine.states import StepState, TaskStatus
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState, HostState
from tests.support.cluster import REPO, Cluster
from tests.support.graph_checks import rollback_violations
from tests.support.mariadb import Sandbox, connect, mariadb_sandbox

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture(scope="module")
def cluster(rabbitmq_url: str, sandbox: Sandbox, tmp_path_factory: Any) -> Iterator[Cluster]:
    flows = (REPO / "flows.yaml").read_text()
    cluster = Cluster(tmp_path_factory.mktemp("mysql_cluster"), rabbitmq_url, flows, extra_env=sandbox.env())
    try:
        with cluster.starting():  # side by side
            for module in ("resource", "mysql", "monitor"):
                cluster.start_module(module)
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def host(cluster: Cluster) -> Iterator[tuple[Any, str]]:
    inventory = open_inventory(cluster.store_url)
    now = time.time()
    for existing in inventory.list_hosts(now):
        if existing.state is HostState.ACTIVE:
            inventory.set_host_state(existing.name, HostState.DRAINING, now)
    name = f"h-{uuid.uuid4().hex[:8]}"
    inventory.add_host(name, Capacity(8, 8192, 100), now)
    yield inventory, name
    inventory.close()


def topology(sandbox: Sandbox, name: str) -> dict | None:
    with contextlib.closing(connect()) as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'clusters'",
                    (sandbox.meta_schema,))
        if cur.fetchone()[0] == 0:
            return None
        cur.execute(f"SELECT topology FROM `{sandbox.meta_schema}`.clusters WHERE name = %s", (name,))
        row = cur.fetchone()
    return None if row is None else json.loads(row[0])


def test_a_cluster_is_a_primary_its_replicas_and_their_recorded_topology(cluster, sandbox, host) -> None:
    inventory, host_name = host
    name, replicas = sandbox.name("cl"), [sandbox.name(f"r{i}") for i in range(3)]
    task = cluster.wait_final(cluster.submit("create_mysql_cluster", name=name, replicas=replicas).TaskId, 90)
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    child = cluster.store.get(task.Steps[0].ChildTaskId)
    assert child.TaskType == "create_mysql_instance" and child.TaskStatus is TaskStatus.SUCCESS
    assert sandbox.databases() == {name, *replicas}
    recorded = topology(sandbox, name)
    assert recorded["primary"]["database"] == name
    assert [r["database"] for r in recorded["replicas"]] == replicas  # in item order
    # The replicas' users may read, never write.
    replica = task.Parameters["add_replicas"][1]["replica"]
    with contextlib.closing(pymysql.connect(host=replica["host"], port=replica["port"], user=replica["user"],
                                            password=replica["password"], database=replica["database"])) as conn:
        with conn.cursor() as cur, pytest.raises(pymysql.err.OperationalError):
            cur.execute("CREATE TABLE t (id INT)")
    claim = inventory.get_claim(f"task:{child.TaskId}", time.time())
    assert (claim.state, claim.host) == (ClaimState.DEDUCTED, host_name)


def test_a_failing_replica_rolls_back_every_replica_and_the_primary_for_real(cluster, sandbox, host) -> None:
    inventory, host_name = host
    name, replicas = sandbox.name("bad"), [sandbox.name(f"b{i}") for i in range(4)]
    before = sandbox.databases()
    faults = [{"command": "init_replica", "action": "fail", "item": 2, "retryable": False}]
    task_id = cluster.submit("create_mysql_cluster", name=name, replicas=replicas, _baton_faults=faults).TaskId
    task = cluster.wait_final(task_id, 90)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert "step 1 (add_replicas) item 2 failed" in task.TaskMessage
    assert rollback_violations(task) == []
    child = cluster.wait_final(task.Steps[0].ChildTaskId, 60)
    assert child.TaskStatus is TaskStatus.ROLLED_BACK  # undone by its parent
    assert sandbox.databases() == before and not any(u in (name, *replicas) for u, _ in sandbox.users())
    assert inventory.get_claim(f"task:{child.TaskId}", time.time()).state is ClaimState.RESTORED
    assert task.Steps[2].State is StepState.WAITING and topology(sandbox, name) is None


def test_a_failing_join_forgets_nothing_it_did_not_record_and_undoes_the_rest(cluster, sandbox, host) -> None:
    name, replicas = sandbox.name("jn"), [sandbox.name("j0")]
    before = sandbox.databases()
    faults = [{"command": "record_topology", "action": "fail", "retryable": False}]
    task = cluster.wait_final(
        cluster.submit("create_mysql_cluster", name=name, replicas=replicas, _baton_faults=faults).TaskId, 90)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert [s.State for s in task.Steps] == [StepState.ROLLED_BACK] * 3
    assert task.Parameters.get("topology_forgotten") is False
    assert sandbox.databases() == before and topology(sandbox, name) is None
