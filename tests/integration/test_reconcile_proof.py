"""`baton reconcile` (a real process) against the real MariaDB: it removes only what carries
baton's mark, reports what stands on the server rather than what a record claims, checks the
instances of successful tasks on the server, says when it could not, and records what it removed
(log line with reason and actor, and an event in the task's history)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.engine.states import TaskStatus
from common.store.sqlite.tasks import SqliteStore
from modules.mysql.server import OwnedInstance, Server
from modules.mysql.settings import MysqlSettings
from tests.integration.test_reconcile import plant, task_in
from tests.support.mariadb import Sandbox, connect, mariadb_sandbox
from tests.support.cluster import STATE_DEADLINE
from tests.support.ports import free_port


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "baton.db")
    yield opened
    opened.close()


def server_of(sandbox: Sandbox) -> Server:
    server = Server.connect(MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema))  # type: ignore[arg-type]
    server.ensure_meta_schema()
    return server


def baton_reconcile(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_LOG_FORMAT": "json", **env}
    return subprocess.run([sys.executable, "-m", "oss", "reconcile", *args], env=full, capture_output=True, text=True,
                          timeout=STATE_DEADLINE)  # fmt: skip


def by_hand(*statements: str) -> None:
    conn = connect()
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def test_a_stale_record_never_gets_a_database_created_by_hand_dropped(tmp_path: Path, sandbox, store) -> None:
    """A rolled-back task's record says `creating`, nothing was created; an operator then creates
    that name by hand: --apply removes the record and leaves the database, its data and the user."""
    name = sandbox.name("stale")
    task_id = task_in(store, TaskStatus.ROLLED_BACK, "rb", name)
    server = server_of(sandbox)
    server.claim_ownership(OwnedInstance(name, "%", task_id, f"{task_id}:0:normal", "read_write", "creating",
                                         time.time(), "a" * 32), time.time())  # fmt: skip
    server.close()

    dry = baton_reconcile(tmp_path, sandbox.env(), "--json")
    assert dry.returncode == 0, dry.stderr
    (action,) = json.loads(dry.stdout)["actions"]
    assert f"database {name} absent, user {name} absent" in action["why"]  # the server, not the record

    by_hand(f"CREATE DATABASE `{name}`", f"CREATE TABLE `{name}`.orders (id INT)", f"INSERT INTO `{name}`.orders VALUES (7)",
            f"CREATE USER '{name}'@'%' IDENTIFIED BY 'chosen-by-hand-1'")  # fmt: skip
    listed = json.loads(baton_reconcile(tmp_path, sandbox.env(), "--json").stdout)
    assert f"database {name} not created by baton, user {name} not created by baton" in listed["actions"][0]["why"]
    assert sorted(f["kind"] for f in listed["findings"]) == ["not_created_by_baton", "not_created_by_baton"]

    applied = baton_reconcile(tmp_path, sandbox.env(), "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "left alone" in applied.stdout
    assert sandbox.databases() == {name} and (name, "%") in sandbox.users()
    conn = connect(database=name)
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM orders")
        assert cur.fetchall() == ((7,),)
    conn.close()
    assert sandbox.owned() == set()  # the stale record went: it was baton's


def test_a_database_replaced_by_hand_after_baton_created_it_is_left_alone(tmp_path: Path, sandbox, store) -> None:
    """Baton's database and user of a rolled-back task, then dropped and created again by hand:
    the mark is gone with them, so nothing is dropped."""
    name = sandbox.name("swap")
    task_id = task_in(store, TaskStatus.ROLLED_BACK, "rb", name)
    server = server_of(sandbox)
    plant(server, task_id, name)
    server.close()
    by_hand(f"DROP DATABASE `{name}`", f"CREATE DATABASE `{name}`", f"DROP USER '{name}'@'%'",
            f"CREATE USER '{name}'@'%' IDENTIFIED BY 'chosen-by-hand-2'")  # fmt: skip
    applied = baton_reconcile(tmp_path, sandbox.env(), "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert sandbox.databases() == {name} and (name, "%") in sandbox.users()


def test_a_successful_tasks_instance_dropped_by_hand_is_reported_but_not_while_a_delete_runs(
    tmp_path: Path, sandbox, store
) -> None:
    kept, dropped, deleting = sandbox.name("kept"), sandbox.name("gone"), sandbox.name("deleting")
    server = server_of(sandbox)
    for name in (kept, dropped, deleting):
        plant(server, task_in(store, TaskStatus.SUCCESS, f"ok{name[-2:]}", name), name)
    server.close()
    task_in(store, TaskStatus.RUNNING, "del", deleting)  # a delete of it, under way
    by_hand(f"DROP DATABASE `{dropped}`", f"DROP DATABASE `{deleting}`")
    done = baton_reconcile(tmp_path, sandbox.env(), "--json")
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [(f["kind"], f["target"]) for f in findings] == [("instance_missing", dropped)]
    assert f"database {dropped} does not exist" in findings[0]["why"]


def test_with_mariadb_unreachable_nothing_is_reported_missing_and_it_says_it_could_not_check(
    tmp_path: Path, sandbox, store
) -> None:
    name = sandbox.name("fine")
    server = server_of(sandbox)
    plant(server, task_in(store, TaskStatus.SUCCESS, "ok", name), name)
    server.close()
    unreachable = {**sandbox.env(), "BATON_MYSQL_ADMIN_URL": f"mysql://root@127.0.0.1:{free_port()}",
                   "BATON_MYSQL_CONNECT_TIMEOUT_SECONDS": "2"}  # fmt: skip
    done = baton_reconcile(tmp_path, unreachable, "--json", "--apply")
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["findings"] == [] and result["actions"] == []
    assert any("could not check the instances of 1 successful tasks" in p for p in result["problems"])
    assert sandbox.databases() == {name}


def test_what_apply_removes_is_logged_with_reason_and_actor_and_recorded_in_the_tasks_history(
    tmp_path: Path, sandbox, store
) -> None:
    name = sandbox.name("leak")
    task_id = task_in(store, TaskStatus.ROLLED_BACK, "rb", name)
    server = server_of(sandbox)
    plant(server, task_id, name)
    server.close()
    applied = baton_reconcile(tmp_path, sandbox.env(), "--apply", "--reason", "weekly clean-up", "--as", "ops:ana")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert sandbox.databases() == set()
    lines = [json.loads(line) for line in applied.stderr.splitlines() if line.startswith("{")]
    (logged,) = [line for line in lines if line.get("event") == "reconciled"]
    assert logged["reason"] == "weekly clean-up" and logged["actor"] == "ops:ana" and logged["task_id"] == task_id
    assert "belongs to rolled-back task" in logged["why"]
    event = store.get(task_id).History[-1]  # type: ignore[union-attr]
    assert event.Event == "reconciled" and event.Actor == "ops:ana"
    assert "weekly clean-up" in event.Message and f"database {name}" in event.Message


def test_a_reason_past_the_input_limits_is_refused_naming_the_field_before_anything_is_done(
    tmp_path: Path, sandbox, store
) -> None:
    name = sandbox.name("kept")
    task_id = task_in(store, TaskStatus.ROLLED_BACK, "rb", name)
    server = server_of(sandbox)
    plant(server, task_id, name)
    server.close()
    refused = baton_reconcile(tmp_path, sandbox.env(), "--apply", "--reason", "r" * 70000)
    assert refused.returncode == 2 and "reason" in refused.stderr and "rrrr" not in refused.stderr
    assert sandbox.databases() == {name}
