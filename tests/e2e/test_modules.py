"""End to end: the real resource, mysql and monitor modules as processes, the real RabbitMQ,
the real MariaDB, the shipped flows.yaml.

Every test places its tasks on a host of its own (the others drained), and every database and
user name starts with this module's sandbox prefix; the sandbox is removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pymysql
import pytest

from common.errors import BatonError
from common.engine.states import TaskStatus
from common.store.side_stores import open_event_log
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState, HostState
from common.engine.core.entries import Timing, create_task
from tests.support.cluster import REPO, Cluster, wait_until
from tests.support.mariadb import Sandbox, connect, mariadb_sandbox

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
NEED = Capacity(1, 1024, 10)  # the flow's defaults


class HookServer:
    """A webhook receiver on 127.0.0.1 that keeps every JSON body it is sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/alarms"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture(scope="module")
def hook() -> Iterator[HookServer]:
    server = HookServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def cluster(rabbitmq_url: str, sandbox: Sandbox, hook: HookServer, tmp_path_factory: Any) -> Iterator[Cluster]:
    env = {**sandbox.env(), "BATON_MONITOR_WEBHOOK_URL": hook.url}
    cluster = Cluster(tmp_path_factory.mktemp("modules"), rabbitmq_url, (REPO / "flows.yaml").read_text(), extra_env=env)
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource")
            cluster.start_module("resource", name="resource-2")  # two processes reserve at once
            cluster.start_module("mysql")
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


def only_host(inventory: Any, capacity: Capacity) -> str:
    """A new host; every other one drained, so this test's tasks land here and nowhere else."""
    now = time.time()
    for host in inventory.list_hosts(now):
        if host.state is HostState.ACTIVE:
            inventory.set_host_state(host.name, HostState.DRAINING, now)
    name = f"h-{uuid.uuid4().hex[:8]}"
    inventory.add_host(name, capacity, now)
    return name


def run(cluster: Cluster, task_type: str, **parameters: Any) -> Any:
    return cluster.wait_final(cluster.submit(task_type, **parameters).TaskId, 60)


def login(instance: dict[str, Any], database: str | None = None) -> Any:
    return pymysql.connect(
        host=instance["host"], port=instance["port"], user=instance["user"], password=instance["password"],
        database=database or instance["database"], connect_timeout=5,
    )


def used(inventory: Any, host: str) -> Capacity:
    return inventory.get_host(host, time.time()).used


# --- create and delete -----------------------------------------------------------------------------


def test_create_gives_working_credentials_and_delete_removes_everything(cluster, inventory, sandbox) -> None:
    host = only_host(inventory, Capacity(4, 4096, 100))
    name = sandbox.name("app")
    task = run(cluster, "create_mysql_instance", name=name, cpu=2, memory_mb=2048)
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    instance = task.Parameters["instance"]
    assert (instance["database"], instance["user"], instance["port"]) == (name, name, 3306)
    with contextlib.closing(login(instance)) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (42)")
        cur.execute("SELECT id FROM t")
        assert cur.fetchone() == (42,)
    claim = inventory.get_claim(f"task:{task.TaskId}", time.time())
    assert (claim.state, claim.host, claim.holder) == (ClaimState.DEDUCTED, host, name)
    assert used(inventory, host) == Capacity(2, 2048, 10)
    assert task.Parameters["reservation"]["state"] == "deducted"
    events = open_event_log(cluster.store_url).list_events(task_id=task.TaskId)
    assert [e.Kind for e in events] == ["progress"] and events[0].Subject == name
    # The password is in the task's Parameters (masked wherever shown), never in a log line.
    assert all(instance["password"] not in proc.log_text() for proc in cluster.procs.values())

    deleted = run(cluster, "delete_mysql_instance", name=name)
    assert deleted.TaskStatus is TaskStatus.SUCCESS, deleted.TaskMessage
    assert deleted.Parameters["instance_dropped"] == {"name": name, "existed": True}
    assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()
    assert inventory.get_claim(f"task:{task.TaskId}", time.time()).state is ClaimState.RELEASED
    assert used(inventory, host) == Capacity()
    with pytest.raises(pymysql.err.OperationalError):
        login(instance)


def test_failure_at_deduct_rolls_back_the_database_user_and_reservation(cluster, inventory, sandbox) -> None:
    host = only_host(inventory, Capacity(4, 4096, 100))
    name = sandbox.name("doomed")
    task = run(cluster, "create_mysql_instance", name=name,
               _baton_faults=[{"command": "deduct_resource", "action": "fail"}])
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert "step 3 (deduct_resource) failed: injected failure" in task.TaskMessage
    assert name not in sandbox.databases() and not any(u == name for u, _ in sandbox.users())
    assert sandbox.owned() == set()
    assert inventory.get_claim(f"task:{task.TaskId}", time.time()).state is ClaimState.RESTORED
    assert used(inventory, host) == Capacity()
    kinds = [e.Kind for e in open_event_log(cluster.store_url).list_events(task_id=task.TaskId)]
    assert kinds == ["abandoned", "progress"]  # newest first: announced, then abandoned


def test_concurrent_creations_fill_the_host_exactly_and_the_rest_roll_back(cluster, inventory, sandbox) -> None:
    host = only_host(inventory, Capacity(3, 3 * 1024, 30))  # room for three of the seven
    names = [sandbox.name(f"c{i}") for i in range(7)]
    ids = [cluster.submit("create_mysql_instance", name=n).TaskId for n in names]
    done = {n: cluster.wait_final(i, 60) for n, i in zip(names, ids)}
    won = {n for n, t in done.items() if t.TaskStatus is TaskStatus.SUCCESS}
    lost = {n: t for n, t in done.items() if t.TaskStatus is not TaskStatus.SUCCESS}
    assert len(won) == 3, {n: t.TaskMessage for n, t in done.items()}
    for task in lost.values():
        assert task.TaskStatus is TaskStatus.ROLLED_BACK
        assert "step 1 (check_resource) failed: no active host has room" in task.TaskMessage
    assert used(inventory, host) == Capacity(3, 3 * 1024, 30)
    assert {c.holder for c in inventory.list_claims(time.time(), host=host, live_only=True)} == won
    assert sandbox.databases() == won and sandbox.owned() == won
    for name in won:
        assert run(cluster, "delete_mysql_instance", name=name).TaskStatus is TaskStatus.SUCCESS
    assert used(inventory, host) == Capacity() and sandbox.databases() == set()


# --- names -----------------------------------------------------------------------------------------


def hostile_names(sandbox: Sandbox) -> list[str]:
    p = sandbox.prefix
    return [f"{p}a'b", f'{p}a"b', f"{p}a`b", f"{p}a%", f"{p}a%b", f"{p}a b", f"{p}A", p + "x" * 40, f"{p}é", f"{p}a;drop"]


def test_hostile_names_are_refused_at_submission(cluster, sandbox) -> None:
    before = len(cluster.store.list_tasks(limit=1000))
    for bad in hostile_names(sandbox):
        with pytest.raises(BatonError, match="parameters.name"):
            cluster.submit("create_mysql_instance", name=bad)
    assert len(cluster.store.list_tasks(limit=1000)) == before  # nothing was written


def test_hostile_names_that_skip_submission_checks_are_refused_by_the_commands(cluster, inventory, sandbox) -> None:
    # Defence in depth: tasks written straight into the store, as a buggy or older OSS might.
    only_host(inventory, Capacity(8, 8192, 100))
    steps = cluster.service._flows.get("create_mysql_instance").steps
    tasks = [create_task(task_type="create_mysql_instance", steps=steps, parameters={"name": bad},
                         timing=Timing(time.time())) for bad in hostile_names(sandbox)]
    for task in tasks:
        cluster.store.insert(task)  # its step 0 is published by the sweeper's outbox relay
    for task in tasks:
        done = cluster.wait_final(task.TaskId, 60)
        assert done.TaskStatus is TaskStatus.ROLLED_BACK
        assert "step 1 (check_resource) failed: instance name" in done.TaskMessage
        assert "is not allowed" in done.TaskMessage
        assert inventory.get_claim(f"task:{task.TaskId}", time.time()) is None  # nothing reserved
    assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()


def test_a_reserved_name_is_refused_by_init_and_its_reservation_given_back(cluster, inventory, sandbox) -> None:
    host = only_host(inventory, Capacity(4, 4096, 100))
    task = run(cluster, "create_mysql_instance", name="mysql")  # fits the pattern, but is the system schema
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    assert "step 2 (init_instance) failed: instance name 'mysql' is reserved" in task.TaskMessage
    assert task.Steps[2].Attempts == 1  # refused for good: not retried
    assert inventory.get_claim(f"task:{task.TaskId}", time.time()).state is ClaimState.RESTORED
    assert used(inventory, host) == Capacity()


def test_the_user_of_app_1_cannot_reach_appx1(cluster, inventory, sandbox) -> None:
    only_host(inventory, Capacity(4, 4096, 100))
    task = run(cluster, "create_mysql_instance", name=sandbox.name("app_1"))
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    neighbour = sandbox.name("appx1")  # "_" in an unescaped GRANT would match this "x"
    with contextlib.closing(connect()) as root, root.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{neighbour}`")
    with pytest.raises(pymysql.err.OperationalError, match="denied"):
        login(task.Parameters["instance"], database=neighbour)
    with contextlib.closing(login(task.Parameters["instance"])) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError, match="denied"):
            cur.execute(f"CREATE TABLE `{neighbour}`.t (id INT)")


# --- the connection limit flow ---------------------------------------------------------------------


def test_connection_limit_changes_and_rolls_back(cluster, inventory, sandbox) -> None:
    only_host(inventory, Capacity(4, 4096, 100))
    name = sandbox.name("lim")
    assert run(cluster, "create_mysql_instance", name=name).TaskStatus is TaskStatus.SUCCESS

    def limit() -> int:
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            cur.execute("SELECT max_user_connections FROM mysql.user WHERE User = %s", (name,))
            return int(cur.fetchone()[0])

    changed = run(cluster, "set_mysql_connection_limit", name=name, max_connections=2)
    assert changed.TaskStatus is TaskStatus.SUCCESS and limit() == 2
    failed = run(cluster, "set_mysql_connection_limit", name=name, max_connections=9,
                 _baton_faults=[{"command": "report_event", "action": "fail", "retryable": False}])
    assert failed.TaskStatus is TaskStatus.ROLLED_BACK and limit() == 2


# --- alarms ----------------------------------------------------------------------------------------


def test_a_failed_rollback_alarm_is_stored_and_reaches_the_webhook(cluster, inventory, sandbox, hook) -> None:
    only_host(inventory, Capacity(4, 4096, 100))
    faults = [
        {"command": "init_instance", "action": "fail", "retryable": False},
        {"command": "clean_instance", "phase": "rollback", "action": "fail", "retryable": False},
    ]
    task = run(cluster, "create_mysql_instance", name=sandbox.name("alarm"), _baton_faults=faults)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    wait_until(lambda: any(b["alarm"]["TaskId"] == task.TaskId for b in hook.bodies), 15, "alarm at the webhook")
    sent = next(b for b in hook.bodies if b["alarm"]["TaskId"] == task.TaskId)
    assert sent["type"] == "baton.alarm" and sent["alarm"]["Kind"] == "rollback_failed"
    assert sent["alarm"]["Command"] == "clean_instance"
    stored = [a for a in cluster.store.list_alarms() if a.TaskId == task.TaskId]
    assert [a.AlarmId for a in stored] == [sent["alarm"]["AlarmId"]]
