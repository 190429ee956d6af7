"""delete_mysql_instance waits for the instance's clients to disconnect (check again later,
docs/design/operations.md), with the real modules as processes, the real RabbitMQ and the real
MariaDB, on the shipped flows.yaml (its max_wait shortened for the second test).

The mysql module runs ONE worker slot: while the delete waits, another task's mysql step runs."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from common.engine.states import ResultCode, StepState, TaskStatus
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity
from tests.e2e.test_modules import login, only_host, run
from tests.support.cluster import REPO, Cluster, wait_until
from tests.support.mariadb import Sandbox, mariadb_sandbox

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
MAX_WAIT = 3  # instead of the shipped 600 s


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture(scope="module")
def cluster(rabbitmq_url: str, sandbox: Sandbox, tmp_path_factory: Any) -> Iterator[Cluster]:
    shipped = (REPO / "flows.yaml").read_text()
    flows, replaced = re.subn(r"max_wait: 600\b", f"max_wait: {MAX_WAIT}", shipped)
    assert replaced == 1
    env = {**sandbox.env(), "BATON_MYSQL_DISCONNECT_CHECK_SECONDS": "0.3"}
    cluster = Cluster(tmp_path_factory.mktemp("disconnect"), rabbitmq_url, flows, extra_env=env)
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource")
            cluster.start_module("mysql", BATON_CONCURRENCY="1", BATON_PREFETCH="1")
            cluster.start_module("monitor")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def inventory(cluster: Cluster) -> Iterator[Any]:
    opened = open_inventory(cluster.store_url)
    yield opened
    opened.close()


def created(cluster: Cluster, inventory: Any, name: str) -> dict[str, Any]:
    only_host(inventory, Capacity(4, 4096, 100))
    task = run(cluster, "create_mysql_instance", name=name)
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    return task.Parameters["instance"]


def test_a_delete_waits_for_the_clients_to_leave_without_holding_the_mysql_slot(cluster, inventory, sandbox):
    name, other = sandbox.name("busy"), sandbox.name("quiet")
    instance = created(cluster, inventory, name)
    created(cluster, inventory, other)
    client = login(instance)
    try:
        deleting = cluster.submit("delete_mysql_instance", name=name)
        wait_until(lambda: cluster.store.get(deleting.TaskId).Steps[0].Progress == f"1 session of {name} still open",
                   30, "the delete to wait for the client")
        # The only mysql slot is free while the delete waits: another instance's change runs.
        changed = run(cluster, "set_mysql_connection_limit", name=other, max_connections=5)
        assert changed.TaskStatus is TaskStatus.SUCCESS, changed.TaskMessage
        waiting = cluster.store.get(deleting.TaskId)
        assert waiting.TaskStatus is TaskStatus.RUNNING and waiting.Steps[0].State is StepState.RUNNING
        assert name in sandbox.databases()
        with client.cursor() as cur:  # the client still works: nothing was dropped under it
            cur.execute("SELECT 1")
    finally:
        client.close()
    deleted = cluster.wait_final(deleting.TaskId, 60)
    assert deleted.TaskStatus is TaskStatus.SUCCESS, deleted.TaskMessage
    step = deleted.Steps[0]
    assert step.Attempts == 1 and step.Progress == f"1 session of {name} still open"
    assert deleted.Parameters["disconnected"] == {"name": name, "forced": False}
    assert name not in sandbox.databases() and other in sandbox.databases()
    later = [e.Time for e in deleted.History if e.Event == "check_again"]
    assert later and changed.TimeStart > min(later) and changed.TimeEnd < step.TimeEnd
    assert run(cluster, "delete_mysql_instance", name=other).TaskStatus is TaskStatus.SUCCESS


def test_clients_that_stay_past_max_wait_fail_the_delete_and_nothing_is_dropped(cluster, inventory, sandbox):
    name = sandbox.name("stays")
    instance = created(cluster, inventory, name)
    with contextlib.closing(login(instance)) as client:
        failed = run(cluster, "delete_mysql_instance", name=name)
        assert failed.TaskStatus is TaskStatus.ROLLED_BACK
        step = failed.Steps[0]
        assert step.Code is ResultCode.TIMED_OUT and f"max_wait {MAX_WAIT}s" in step.Message
        assert failed.Steps[1].State is StepState.WAITING  # the drop never ran
        assert name in sandbox.databases()
        with client.cursor() as cur:
            cur.execute("SELECT 1")  # still served

        forced = run(cluster, "delete_mysql_instance", name=name, force=True)  # ends the session
        assert forced.TaskStatus is TaskStatus.SUCCESS, forced.TaskMessage
        assert forced.Parameters["disconnected"] == {"name": name, "forced": True}
        assert name not in sandbox.databases()
        with pytest.raises(pymysql.err.MySQLError), client.cursor() as cur:
            cur.execute("SELECT 1")
