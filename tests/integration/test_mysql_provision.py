"""modules/mysql/provision.py against the real MariaDB, in one process (no broker): idempotency,
ownership, grants and removal, statement by statement."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
import structlog

from common.errors import CommandFailed
from modules.mysql import provision
from modules.mysql.provision import Placement
from modules.mysql.server import OwnedInstance, Server
from modules.mysql.settings import MysqlSettings
from tests.support.cluster import wait_until
from tests.support.mariadb import Sandbox, connect, mariadb_sandbox

TASK, KEY = "task-1", "task-1:2:normal"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


@pytest.fixture
def server(sandbox: Sandbox) -> Iterator[Server]:
    settings = MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema)  # type: ignore[arg-type]
    opened = Server.connect(settings)
    opened.ensure_meta_schema()
    yield opened
    opened.close()


@pytest.fixture
def place(sandbox: Sandbox) -> Placement:
    return Placement("127.0.0.1", 3306, "%", None)


def init(server: Server, place: Placement, name: str, task: str = TASK, key: str = KEY, **extra: Any) -> dict:
    return provision.init_instance(
        server, place, name=name, access=extra.pop("access", "read_write"), password=extra.pop("password", None),
        task_id=task, key=key,
    )["instance"]


def login(instance: dict, **extra: Any) -> Any:
    return connect(user=instance["user"], password=instance["password"], database=instance["database"], **extra)


def test_init_creates_a_database_and_a_user_that_can_log_in_and_use_it(server, place, sandbox) -> None:
    name = sandbox.name("app")
    instance = init(server, place, name)
    assert instance["database"] == instance["user"] == name and instance["port"] == 3306
    assert len(instance["password"]) == 32 and instance["password"].isalnum()
    with contextlib.closing(login(instance)) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (1)")
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (1,)
    assert sandbox.owned() == {name}


def test_a_rerun_creates_nothing_more_and_reports_the_same_password(server, place, sandbox) -> None:
    name = sandbox.name("app")
    first = init(server, place, name)
    with structlog.testing.capture_logs() as logs:
        again = init(server, place, name)
    assert again == first
    assert [e["event"] for e in logs if "instance" in e["event"]] == ["instance ready already; nothing created"]
    assert sandbox.users() == {(name, "%")} and sandbox.databases() == {name}
    login(again).close()


def test_a_rerun_after_a_crash_mid_way_finishes_the_work(server, place, sandbox) -> None:
    name = sandbox.name("app")
    # What a crash right after CREATE DATABASE leaves: the ownership row and the database.
    server.claim_ownership(OwnedInstance(name, "%", TASK, KEY, "read_write", "creating", 0.0), 0.0)
    server.create_database(name)
    instance = init(server, place, name)
    login(instance).close()
    assert server.owned(name).state == "ready"


def test_a_submitted_password_is_used_as_given(server, place, sandbox) -> None:
    instance = init(server, place, sandbox.name("app"), password="chosen 'quote\" pass`word%")
    assert instance["password"] == "chosen 'quote\" pass`word%"
    login(instance).close()


def test_read_only_access_can_read_but_not_write(server, place, sandbox) -> None:
    instance = init(server, place, sandbox.name("ro"), access="read_only")
    server._run(f"CREATE TABLE `{instance['database']}`.t (id INT)")
    with contextlib.closing(login(instance)) as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM t")
        with pytest.raises(pymysql.err.OperationalError, match="denied"):
            cur.execute("INSERT INTO t VALUES (1)")


def test_the_user_of_app_1_cannot_reach_appx1(server, place, sandbox) -> None:
    # Unescaped, `_` in GRANT ... ON `app_1`.* is a wildcard that matches the "x".
    instance = init(server, place, sandbox.name("app_1"))
    neighbour = sandbox.name("appx1")
    server._run(f"CREATE DATABASE `{neighbour}`")
    with contextlib.closing(login(instance)) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError, match="denied"):
            cur.execute(f"USE `{neighbour}`")
        cur.execute("SHOW DATABASES")
        assert {name for (name,) in cur.fetchall()} == {"information_schema", instance["database"]}
    with pytest.raises(pymysql.err.OperationalError, match="denied"):
        login({**instance, "database": neighbour})


def test_a_name_taken_outside_baton_is_refused_and_left_alone(server, place, sandbox) -> None:
    name = sandbox.name("theirs")
    server._run(f"CREATE DATABASE `{name}`")
    with pytest.raises(CommandFailed, match="not created by baton") as refused:
        init(server, place, name)
    assert refused.value.retryable is False
    assert provision.clean_instance(server, name=name, task_id=TASK) == {"instance_cleaned": False}
    with pytest.raises(CommandFailed, match="not created by baton"):
        provision.drop_instance(server, name=name, user_host="%")
    assert sandbox.databases() == {name} and sandbox.owned() == set()


def test_another_tasks_instance_is_refused_and_its_clean_up_leaves_it_alone(server, place, sandbox) -> None:
    name = sandbox.name("app")
    instance = init(server, place, name, task="first", key="first:2:normal")
    with pytest.raises(CommandFailed, match="created by task first"):
        init(server, place, name, task="second", key="second:2:normal")
    assert provision.clean_instance(server, name=name, task_id="second") == {"instance_cleaned": False}
    login(instance).close()


def test_clean_removes_exactly_what_init_created_once(server, place, sandbox) -> None:
    name, bystander = sandbox.name("app"), sandbox.name("app2")
    init(server, place, name)
    init(server, place, bystander, task="other", key="other:2:normal")
    assert provision.clean_instance(server, name=name, task_id=TASK) == {"instance_cleaned": True}
    assert provision.clean_instance(server, name=name, task_id=TASK) == {"instance_cleaned": False}
    assert sandbox.databases() == {bystander} and sandbox.users() == {(bystander, "%")}
    assert sandbox.owned() == {bystander}


def test_drop_removes_the_instance_and_ends_its_sessions(server, place, sandbox) -> None:
    name = sandbox.name("app")
    instance = init(server, place, name)
    session = login(instance)
    assert provision.drop_instance(server, name=name, user_host="%") == {"instance_dropped": {"name": name, "existed": True}}
    assert provision.drop_instance(server, name=name, user_host="%") == {"instance_dropped": {"name": name, "existed": False}}
    assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()
    with pytest.raises(pymysql.err.MySQLError):
        with session.cursor() as cur:
            cur.execute("SELECT 1")


def test_connection_limit_is_set_and_restored_once(server, place, sandbox) -> None:
    name = sandbox.name("app")
    init(server, place, name)
    changed = provision.set_connection_limit(server, name=name, limit=3, change_key="limit-task")
    assert changed["connection_limit"] == {"name": name, "max_connections": 3, "previous": 0}
    # A re-run keeps the limit that was in force BEFORE the first run as the one to restore.
    again = provision.set_connection_limit(server, name=name, limit=3, change_key="limit-task")
    assert again == changed and server.user_connection_limit(name, "%") == 3
    provision.restore_connection_limit(server, name=name, change_key="limit-task")
    provision.restore_connection_limit(server, name=name, change_key="limit-task")
    assert server.user_connection_limit(name, "%") == 0
    assert provision.restore_connection_limit(server, name=name, change_key="never") == {"connection_limit_restored": False}
    with pytest.raises(CommandFailed, match="no ready instance"):
        provision.set_connection_limit(server, name=sandbox.name("nope"), limit=3, change_key="x")


def test_await_disconnect_checks_again_while_the_instances_clients_stay(server, place, sandbox) -> None:
    name = sandbox.name("app")
    instance = init(server, place, name)
    wait = {"name": name, "force": False, "check_every": 2.5}
    sessions = [login(instance), login(instance)]
    assert provision.await_disconnect(server, **wait) == {
        "_baton": {"check_again": 2.5, "progress": f"2 sessions of {name} still open"}}
    sessions.pop().close()
    wait_until(lambda: server.session_count(name) == 1, 10, "the session to end")  # the server ends it a moment later
    assert provision.await_disconnect(server, **wait)["_baton"]["progress"] == f"1 session of {name} still open"
    assert provision.await_disconnect(server, **{**wait, "force": True}) == {"disconnected": {"name": name, "forced": True}}
    sessions.pop().close()
    wait_until(lambda: server.session_count(name) == 0, 10, "the session to end")
    assert provision.await_disconnect(server, **wait) == {"disconnected": {"name": name, "forced": False}}
    # Not baton's: nothing to wait for (the drop refuses it, or finds it gone).
    assert provision.await_disconnect(server, **{**wait, "name": sandbox.name("none")})["disconnected"]["forced"] is False


def test_a_name_taken_by_hand_between_the_record_and_the_create_is_refused_and_survives_the_rollback(
    server, place, sandbox
) -> None:
    """The record is written, then someone creates the database (or the user) by hand before
    baton's CREATE: init refuses it (no mark), and the task's rollback drops nothing of it."""
    db_name, user_name = sandbox.name("raced"), sandbox.name("racedu")
    for name in (db_name, user_name):
        server.claim_ownership(OwnedInstance(name, "%", TASK, KEY, "read_write", "creating", 1.0, "b" * 32), 1.0)
    with contextlib.closing(connect()) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db_name}`")
        cur.execute("CREATE USER %s@'%%' IDENTIFIED BY 'chosen-by-hand-3'", (user_name,))
    with pytest.raises(CommandFailed, match="database .* was not created by baton"):
        init(server, place, db_name)
    with pytest.raises(CommandFailed, match="user .* was not created by baton"):
        init(server, place, user_name)
    for name in (db_name, user_name):
        cleaned = provision.clean_instance(server, name=name, task_id=TASK)
        assert cleaned["instance_cleaned"] and cleaned["instance_left_alone"]
    assert db_name in sandbox.databases() and (user_name, "%") in sandbox.users()
    assert sandbox.owned() == set()


def test_a_re_run_finishes_a_creation_interrupted_after_the_user_was_announced(server, place, sandbox) -> None:
    """A crash after the intent to create the user was recorded: the re-run creates it and proves it."""
    name = sandbox.name("resume")
    first = init(server, place, name)
    server.set_user_mark(name, "pending", 2.0)
    assert init(server, place, name) == first
    row = server.owned(name)
    assert row is not None and row.user_mark not in (None, "pending")
    assert provision.presence(server, row) == provision.Presence(provision.BATONS, provision.BATONS)
