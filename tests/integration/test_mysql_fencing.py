"""A command that outlives its claim (its replica froze past the lease) must not redo what the
rollback undid: tombstones, the instance lock and the fencing token, against the real MariaDB."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pymysql
import pytest

from common.errors import CommandFailed
from common.engine.core.fence import FencingToken, StaleFence
from common.engine.states import Phase
from modules.mysql import provision
from modules.mysql.provision import Placement
from modules.mysql.server import Server
from modules.mysql.settings import MysqlSettings
from tests.support.mariadb import Sandbox, mariadb_sandbox

TASK, RUN, KEY = "task-1", "task-1", "task-1:2:normal"
PLACE = Placement("127.0.0.1", 3306, "%", None)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


def open_server(sandbox: Sandbox, lock_wait: int = 10) -> Server:
    settings = MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema,  # type: ignore[arg-type]
                             lock_wait_seconds=lock_wait)
    server = Server.connect(settings)
    server.ensure_meta_schema()
    return server


@pytest.fixture
def server(sandbox: Sandbox) -> Iterator[Server]:
    opened = open_server(sandbox)
    yield opened
    opened.close()


def init(server: Server, name: str, run_key: str = RUN, key: str = KEY, **extra) -> dict:
    return provision.init_instance(server, PLACE, name=name, access="read_write", password=None,
                                   task_id=TASK, key=key, run_key=run_key, **extra)  # fmt: skip


def test_a_late_init_after_the_rollback_creates_nothing(server, sandbox) -> None:
    name = sandbox.name("app")
    init(server, name)
    assert provision.clean_instance(server, name=name, task_id=TASK, run_key=RUN) == {"instance_cleaned": True}
    # The frozen replica resumes its init of the same run (same idempotency key): refused.
    with pytest.raises(CommandFailed, match="cleaned by its rollback") as refused:
        init(server, name)
    assert not refused.value.retryable
    assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()


def test_a_clean_before_any_init_still_fences_a_late_init(server, sandbox) -> None:
    """The rollback ran while init was frozen before its first statement: nothing to remove, but
    the tombstone stays, and init, resuming, creates nothing."""
    name = sandbox.name("app")
    assert provision.clean_instance(server, name=name, task_id=TASK, run_key=RUN) == {"instance_cleaned": False}
    with pytest.raises(CommandFailed, match="cleaned by its rollback"):
        init(server, name)
    assert sandbox.databases() == set() and sandbox.users() == set()


def test_a_new_run_of_the_task_may_create_it_again(server, sandbox) -> None:
    name = sandbox.name("app")
    init(server, name)
    provision.clean_instance(server, name=name, task_id=TASK, run_key=RUN)
    restarted = init(server, name, run_key=f"{TASK}:g1", key=f"{TASK}:g1:2:normal")["instance"]
    assert restarted["database"] == name and sandbox.databases() == {name}


def test_a_stale_fencing_token_creates_nothing(server, sandbox) -> None:
    token = FencingToken(TASK, 2, Phase.NORMAL, 1, "dispatch-1", "mysql@a")

    def stale() -> None:
        raise StaleFence(token, "the step was dispatched again (attempt 2 is current)")

    with pytest.raises(StaleFence):
        init(server, sandbox.name("app"), fence=stale)
    assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()


def test_a_frozen_holder_of_the_instance_lock_is_cut_off_by_the_clean(sandbox) -> None:
    """A replica frozen mid-init holds the instance's lock. The clean waits lock_wait seconds,
    ends the frozen session, removes the instance; the frozen command's next statement fails."""
    name = sandbox.name("app")
    frozen, cleaner = open_server(sandbox), open_server(sandbox, lock_wait=1)
    try:
        init(frozen, name)  # created; now it "freezes" inside its next change, holding the lock
        holding = frozen.instance_lock(name)
        holding.__enter__()
        assert provision.clean_instance(cleaner, name=name, task_id=TASK, run_key=RUN) == {"instance_cleaned": True}
        with pytest.raises(pymysql.err.OperationalError):
            frozen.create_database(name)  # what the frozen init would do next, on resuming
        assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()
    finally:
        frozen.close()
        cleaner.close()


def test_concurrent_inits_and_a_clean_of_one_run_leave_nothing_or_everything_removed(sandbox) -> None:
    """Whatever the interleaving, once the clean returned, nothing of the run remains."""
    name = sandbox.name("app")
    servers = [open_server(sandbox) for _ in range(4)]
    errors: list[BaseException] = []

    def late_init(server: Server) -> None:
        try:
            init(server, name)
        except CommandFailed:
            pass  # refused: the tombstone was there first
        except BaseException as exc:  # pragma: no cover - the assertion below shows it
            errors.append(exc)

    try:
        threads = [threading.Thread(target=late_init, args=(s,)) for s in servers[:3]]
        for thread in threads:
            thread.start()
        provision.clean_instance(servers[3], name=name, task_id=TASK, run_key=RUN)
        for thread in threads:
            thread.join(30)
        assert not errors
        provision.clean_instance(servers[3], name=name, task_id=TASK, run_key=RUN)  # its retry, if any
        assert sandbox.databases() == set() and sandbox.users() == set() and sandbox.owned() == set()
    finally:
        for server in servers:
            server.close()


def test_a_late_connection_limit_change_after_its_rollback_is_refused(server, sandbox) -> None:
    name = sandbox.name("app")
    init(server, name)
    provision.set_connection_limit(server, name=name, limit=3, change_key="limit-run")
    provision.restore_connection_limit(server, name=name, change_key="limit-run")
    assert server.user_connection_limit(name, "%") == 0
    with pytest.raises(CommandFailed, match="rolled back") as refused:
        provision.set_connection_limit(server, name=name, limit=3, change_key="limit-run")
    assert not refused.value.retryable
    assert server.user_connection_limit(name, "%") == 0
