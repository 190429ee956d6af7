"""The task commands of `baton` through click's runner, on a temporary SQLite store: submit
(with parameter errors), list, watch (live, with its exit codes), cancel and retry, --json."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from common.store.sqlite.tasks import SqliteStore
from oss.cli import main
from tests.api.support import FAIL, FLOWS, OK, SECRET, Api
from tests.support.cluster import STATE_DEADLINE, wait_until


@pytest.fixture
def cli(tmp_path: Any, monkeypatch: pytest.MonkeyPatch):
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    env = {
        "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}",
        "BATON_FLOWS_PATH": str(flows),
        "BATON_BROKER_URL": f"memory://cli-{uuid.uuid4().hex}",
    }
    store = SqliteStore(tmp_path / "baton.db")
    driver = Api(None, store, None)  # type: ignore[arg-type]  (drives tasks through the store)

    def run(*args: str):
        return CliRunner().invoke(main, list(args), env=env)

    yield run, driver
    store.close()


def submitted(run, *args: str) -> str:
    result = run("submit", "create_db", "name=db1", f"admin_password={SECRET}", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["TaskId"]


def test_submit_prints_the_masked_document(cli):
    run, _ = cli
    result = run("submit", "create_db", "name=db1", f"admin_password={SECRET}", "--json", "--label", "team=db")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)
    assert task["Parameters"] == {"name": "db1", "admin_password": "***", "cpu": 1} and SECRET not in result.output
    assert task["Labels"] == {"team": "db"}


def test_submit_with_bad_parameters_exits_2_and_names_them(cli):
    run, _ = cli
    result = run("submit", "create_db", "name=Bad Name", "cpu=100")
    assert result.exit_code == 2
    assert "parameters.name: must match the pattern" in result.output
    assert "parameters.cpu: must be <= 64\n" in result.output and "100" not in result.output


def test_submit_checks_the_same_input_limits_as_the_api(cli, tmp_path):
    run, driver = cli
    deep = "[" * 40 + "]" * 40
    result = run("submit", "free_form", f"x={deep}", r"k=\ud800", "n=9223372036854775808")
    assert result.exit_code == 2, result.output
    assert "parameters.x[0][0]" in result.output and "nested deeper than 32 levels" in result.output
    assert "parameters.n: integer outside the signed 64-bit range" in result.output
    very_deep = tmp_path / "deep.json"
    very_deep.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + "}")  # past Python's own recursion limit
    result = run("submit", "free_form", "--params-file", str(very_deep))
    assert result.exit_code == 2 and "--params-file" in result.output, result.output
    assert driver.store.list_tasks() == []


def test_a_reused_idempotency_key_with_other_parameters_exits_2_naming_them(cli):
    run, _ = cli
    assert run("submit", "create_db", "name=db1", "--key", "k-1").exit_code == 0
    assert run("submit", "create_db", "name=db1", "--key", "k-1").exit_code == 0
    result = run("submit", "create_db", "name=db2", "cpu=4", "--key", "k-1")
    assert result.exit_code == 2 and "parameters.cpu, parameters.name differ" in result.output


def test_list_filters_and_pages(cli):
    run, _ = cli
    ids = [submitted(run, "--user", "alice" if i % 2 else "bob") for i in range(3)]
    page = json.loads(run("list", "--json", "--limit", "2").stdout)
    assert [t["TaskId"] for t in page["items"]] == ids[::-1][:2] and page["next_cursor"]
    rest = json.loads(run("list", "--json", "--cursor", page["next_cursor"]).stdout)
    assert [t["TaskId"] for t in rest["items"]] == [ids[0]] and rest["next_cursor"] is None
    alice = json.loads(run("list", "--json", "--user", "alice", "--status", "NOT_STARTED").stdout)
    assert [t["TaskId"] for t in alice["items"]] == [ids[1]]
    assert run("list", "--status", "LOST").exit_code == 2
    assert run("list", "--label", "a.b=c").exit_code == 2


def test_list_ids_prints_only_the_ids_for_a_script(cli):
    run, _ = cli
    ids = [submitted(run) for _ in range(3)]
    assert run("list", "--ids", "--limit", "2").stdout == f"{ids[2]}\n{ids[1]}\n"  # newest first, no cursor line


def test_watch_follows_a_task_live_and_exits_0_on_success(cli):
    run, driver = cli
    task_id = submitted(run)

    def module() -> None:
        time.sleep(0.3)
        driver.step(task_id)
        time.sleep(0.2)
        driver.step(task_id)

    thread = threading.Thread(target=module)
    thread.start()
    result = run("watch", task_id, "--interval", "0.05")
    thread.join()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum("step_succeeded" in line for line in lines) == 2
    assert any("task_success" in line for line in lines) and SECRET not in result.output


def test_watch_exits_1_for_a_failed_task_and_3_for_an_unknown_one(cli):
    run, driver = cli
    task_id = submitted(run)
    for result in (OK, FAIL, OK, OK):
        driver.step(task_id, result)
    watched = run("watch", task_id, "--json")
    assert watched.exit_code == 1
    events = [json.loads(line) for line in watched.stdout.splitlines() if line.startswith('{"TaskId"')]
    assert events[0]["Event"] == "created" and events[-1]["Event"] == "task_rolled_back"
    assert run("watch", "no-such-task").exit_code == 3


def test_cancel_and_retry_record_who_and_why(cli):
    run, driver = cli
    task_id = submitted(run)
    cancelled = run("cancel", task_id, "--reason", "not needed", "--as", "ann", "--json")
    assert cancelled.exit_code == 0, cancelled.output
    task = json.loads(cancelled.stdout)
    assert task["TaskStatus"] == 4 and task["TaskMessage"] == "rolled back: cancelled by ann: not needed"
    again = run("cancel", task_id, "--reason", "twice")
    assert again.exit_code == 4 and "cancel refused" in again.output
    retried = run("retry", task_id, "--reason", "needed after all", "--as", "ann")
    assert retried.exit_code == 0 and "status 1 (NOT_STARTED)" in retried.output
    history = driver.store.get(task_id).History
    assert [(e.Event, e.Actor, e.Message) for e in history if e.Event in ("cancel_requested", "retried")] == [
        ("cancel_requested", "ann", "not needed"), ("retried", "ann", "needed after all"),
    ]  # fmt: skip
    assert run("retry", "no-such-task", "--reason", "x").exit_code == 3
    assert run("cancel", task_id).exit_code == 2  # --reason is required


def test_submit_wait_prints_the_answer_and_no_log_lines(cli):
    run, driver = cli

    def module() -> None:  # steps the one task as soon as it exists, however long the submit takes
        wait_until(lambda: driver.store.list_tasks(limit=1), STATE_DEADLINE, "the submitted task", interval=0.02)
        task_id = driver.store.list_tasks(limit=1)[0].TaskId
        for _ in range(2):
            driver.step(task_id)

    thread = threading.Thread(target=module)
    thread.start()
    result = run("submit", "create_db", "name=db1", "--wait")
    thread.join()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()  # stdout and stderr together, as a terminal shows them
    assert lines[0].startswith("task ") and lines[0].endswith(" created")
    assert not [line for line in lines if "[info" in line or "task created" in line], result.output
    assert sum("step_succeeded" in line for line in lines) == 2 and "task_success" in lines[-1]
