"""`baton reconcile` against the real MariaDB and a SQLite store: it finds a leak planted by hand,
removes it only when asked, and never touches an instance of a successful or running task."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from common.engine.states import ResultCode, TaskStatus
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import AttemptResult, Timing, create_task
from modules.mysql import provision
from modules.mysql.provision import Placement
from modules.mysql.server import Server
from modules.mysql.settings import MysqlSettings
from modules.resource.requests import claim_key
from oss.cli.reconcile import reconcile
from tests.support.builders import counter_ids, make_step
from tests.support.mariadb import Sandbox, mariadb_sandbox
from tests.unit.test_transitions import message_for, run

SMALL = Capacity(1, 256, 1)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with mariadb_sandbox() as box:
        yield box


def task_in(store: SqliteStore, status: TaskStatus, prefix: str, instance: str) -> str:
    """A one-step task (init on mysql) brought to `status` by the engine's own transitions."""
    task = create_task(task_type="create", steps=[make_step("init", "mysql")], parameters={"name": instance},
                       timing=Timing(100.0), ids=counter_ids(prefix))  # fmt: skip
    if status is TaskStatus.SUCCESS:
        task = run(task, AttemptResult(ResultCode.OK, output={"instance": {"database": instance}}))
    elif status is TaskStatus.ROLLED_BACK:
        task = run(run(task, AttemptResult(ResultCode.FAILED, "boom", retryable=False)), AttemptResult(ResultCode.OK))
    elif status is TaskStatus.RUNNING:
        from common.engine.core.entries import claim

        task = claim(task, message_for(task), "w1", Timing(101.0))
    assert task.TaskStatus is status, task.TaskStatus
    store.insert(task)
    return task.TaskId


def plant(server: Server, task_id: str, name: str) -> None:
    """An instance of `task_id`, as its init created it (a leak, for a rolled-back task)."""
    provision.init_instance(server, Placement("127.0.0.1", 3306, "%", None), name=name, access="read_write",
                            password=None, task_id=task_id, key=f"{task_id}:0:normal")  # fmt: skip


def test_reconcile_finds_a_planted_leak_removes_it_only_when_asked_and_spares_the_rest(tmp_path: Any, sandbox) -> None:
    url = f"sqlite:///{tmp_path / 'baton.db'}"
    store = SqliteStore(tmp_path / "baton.db")
    inventory = open_inventory(url)
    inventory.add_host("db-1", Capacity(8, 8192, 100), time.time())
    settings = MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema)  # type: ignore[arg-type]
    server = Server.connect(settings)
    server.ensure_meta_schema()
    leak, ok, busy, lost = (sandbox.name(n) for n in ("leak", "ok", "busy", "lost"))
    rolled_back = task_in(store, TaskStatus.ROLLED_BACK, "rb", leak)
    succeeded = task_in(store, TaskStatus.SUCCESS, "ok", ok)
    running = task_in(store, TaskStatus.RUNNING, "run", busy)
    missing = task_in(store, TaskStatus.SUCCESS, "lost", lost)  # its instance was dropped by hand
    for task_id, name in ((rolled_back, leak), (succeeded, ok), (running, busy)):
        plant(server, task_id, name)
        inventory.reserve(claim_key(task_id), SMALL, name, time.time(), time.time() + 600)
    server.close()
    env = {"BATON_STORE_URL": url, **sandbox.env()}

    dry = CliRunner().invoke(reconcile, ["--json"], env=env)
    assert dry.exit_code == 0, dry.output
    listed = json.loads(dry.stdout)  # the answer alone: a log line would be on stderr (`output` holds both)
    assert [(a["kind"], a["target"]) for a in listed["actions"]] == [
        ("remove_instance", leak), ("restore_reservation", claim_key(rolled_back)),
    ]
    assert [(f["kind"], f["target"]) for f in listed["findings"]] == [("instance_missing", lost)]
    assert sandbox.databases() == {leak, ok, busy}  # a dry run changes nothing
    assert inventory.get_claim(claim_key(rolled_back), time.time()).state is ClaimState.RESERVED

    applied = CliRunner().invoke(reconcile, ["--apply"], env=env)
    assert applied.exit_code == 0, applied.output
    assert f"remove {leak}" in applied.output and "removed" in applied.output
    assert sandbox.databases() == {ok, busy} and sandbox.owned() == {ok, busy}
    assert {user for user, _ in sandbox.users()} == {ok, busy}
    assert inventory.get_claim(claim_key(rolled_back), time.time()).state is ClaimState.RESTORED
    live = {c.key for c in inventory.list_claims(time.time(), live_only=True)}
    assert live == {claim_key(succeeded), claim_key(running)}

    again = CliRunner().invoke(reconcile, [], env=env)
    assert again.exit_code == 0 and f"report instance_missing: task {missing}" in again.output
    assert "remove" not in again.output and "restore" not in again.output
    store.close()


def test_an_action_planned_for_a_task_restarted_since_is_left_alone(tmp_path: Any, sandbox) -> None:
    """An operator restarts the rolled-back task between the survey and the removal: its instance
    may be the new run's, so the reconciler leaves it (it re-reads the task before acting)."""
    from common.store.tasks.mutate import mutate
    from modules.mysql.reconcile import Reconciler

    store = SqliteStore(tmp_path / "baton.db")
    settings = MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema)  # type: ignore[arg-type]
    server = Server.connect(settings)
    server.ensure_meta_schema()
    name = sandbox.name("again")
    task_id = task_in(store, TaskStatus.ROLLED_BACK, "rb", name)
    plant(server, task_id, name)
    server.close()
    reconciler = Reconciler(store, None, settings)
    survey = reconciler.survey()
    assert [a.target for a in survey.plan.actions] == [name]

    def restarted(task):
        new = task.clone()
        new.TaskStatus = TaskStatus.RUNNING
        return new

    mutate(store, task_id, restarted)
    (outcome,) = reconciler.apply(survey.plan.actions)
    assert not outcome.done and "RUNNING" in outcome.note
    assert sandbox.databases() == {name}
    store.close()


def test_the_periodic_job_only_logs_in_a_dry_run(tmp_path: Any, sandbox) -> None:
    import structlog

    from modules.mysql.reconcile import Reconciler
    from modules.mysql.reconcile_job import run_once

    store = SqliteStore(tmp_path / "baton.db")
    settings = MysqlSettings(admin_url=sandbox.admin_url, meta_schema=sandbox.meta_schema)  # type: ignore[arg-type]
    server = Server.connect(settings)
    server.ensure_meta_schema()
    name = sandbox.name("leak")
    plant(server, task_in(store, TaskStatus.ROLLED_BACK, "rb", name), name)
    server.close()
    with structlog.testing.capture_logs() as logs:
        run_once(Reconciler(store, None, settings), apply=False)
    assert [(e["event"], e["target"]) for e in logs if "target" in e] == [("reconcile would act (dry run)", name)]
    assert sandbox.databases() == {name}
    run_once(Reconciler(store, None, settings), apply=True)
    assert sandbox.databases() == set()
    store.close()
