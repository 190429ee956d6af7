"""A dry run: `POST /tasks` with `dry_run` and `baton submit --plan` answer what the task would do
(graph with for_each counts and sub-flows, locks and their holders, modules and whether they are
live, when it would start) and change nothing: no task, no message, no lock asked."""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.queues import module_queue
from common.store.side.modules import ModuleRegistration
from common.store.sqlite.modules import SqliteModuleRegistry
from oss.cli import main
from tests.api.support import FLOWS, SECRET, SUBMITTER, Api, auth, open_api
from tests.api.test_modules import announce

REPO = Path(__file__).resolve().parents[2]
PLAN_FLOWS = FLOWS + """
  rotate:
    lock: {key: "cluster:{cluster}"}
    parameters:
      cluster: {type: string, required: true}
      hosts: {type: array, default: []}
      name: {type: string, default: "db9"}
    steps:
      - name: prepare
        normal: {module: monitor, command: noop}
      - name: each_host
        for_each: hosts
        max_parallel: 3
        lock: {key: "host:{item}"}
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
      - name: child
        flow: create_db
        inputs: {name: name}
  patch:
    parameters:
      hosts: {type: array, required: true}
    steps:
      - name: each
        for_each: hosts
        tolerate: {percent: 10}
        on_failure: hold
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
  patch_inventory:
    steps:
      - name: each
        for_each: {source: {module: resource, command: noop}}
        max_parallel: 8
        normal:   {module: mysql, command: noop}
"""


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=PLAN_FLOWS)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def plan(api: Api, task_type: str, parameters: dict, expect: int = 200, **body) -> dict:
    response = api.client.post("/api/v1/tasks", json={"task_type": task_type, "parameters": parameters,
                                                      "dry_run": True, **body}, headers=auth(SUBMITTER))  # fmt: skip
    assert response.status_code == expect, response.text
    return response.json()


def nothing_created(api: Api) -> bool:
    """No task stored, and no message in any module's queue (the app declared them at start)."""
    queues = [module_queue(m) for m in ("monitor", "mysql", "resource")]
    return api.get("/api/v1/tasks").json()["items"] == [] and all(api.broker.queue_depth(q) == 0 for q in queues)


def test_a_plan_shows_the_graph_counts_sub_flow_locks_and_modules_and_creates_nothing(api):
    shown = plan(api, "rotate", {"cluster": "eu", "hosts": ["h1", "h2", "h3", "h4"]})
    steps = {s["name"]: s for s in shown["steps"]}
    assert steps["prepare"]["starts_first"] and steps["prepare"]["normal"]["module"] == "monitor"
    assert steps["each_host"]["after"] == ["prepare"] and not steps["each_host"]["starts_first"]
    assert steps["each_host"]["for_each"] == {"parameter": "hosts", "items": 4, "max_parallel": 3, "tolerate": None,
                                              "on_failure": "rollback", "waves": None, "source": None}
    assert steps["each_host"]["rollback"]["command"] == "noop_rollback"
    child = steps["child"]["sub_flow"]
    assert child["task_type"] == "create_db" and child["inputs"] == {"name": "name"}
    assert [(s["name"], s["after"]) for s in child["steps"]] == [("reserve", []), ("create", ["reserve"])]
    assert [(lock["key"], lock["scope"], lock["free"]) for lock in shown["locks"]] == [
        ("cluster:eu", "task", True), ("host:h1", "each_host", True), ("host:h2", "each_host", True),
        ("host:h3", "each_host", True), ("host:h4", "each_host", True)]  # fmt: skip
    assert shown["start"] == {"when": "now", "text": "now", "at": None, "reasons": []}
    # The child's modules count too: resource serves only its sub-flow.
    assert [(m["module"], m["live"], m["needed"]) for m in shown["modules"]] == [
        ("monitor", False, ["noop"]), ("mysql", False, ["noop", "noop_rollback"]),
        ("resource", False, ["noop", "noop_rollback"])]  # fmt: skip
    assert "module mysql has no live worker: its steps would wait in mysql" in shown["warnings"]
    assert nothing_created(api)
    assert api.get("/api/v1/locks").json()["items"] == []  # no lock asked for


def test_a_plan_names_the_holders_it_would_wait_for_and_the_live_modules(api):
    holder = api.create("rotate", parameters={"cluster": "eu"})["task_id"]
    announce(api, "monitor", "monitor@h:1", commands=("noop",))
    announce(api, "mysql", "mysql@h:1", commands=("noop",))  # does not serve noop_rollback
    shown = plan(api, "rotate", {"cluster": "eu"})
    task_lock = shown["locks"][0]
    assert (task_lock["key"], task_lock["holders"], task_lock["free"]) == ("cluster:eu", [holder], False)
    assert (shown["start"]["when"], shown["start"]["text"]) == ("lock", "once its lock is free")
    assert shown["start"]["reasons"] == [f"once lock cluster:eu is free (held by {holder}; 0 in line)"]
    modules = {m["module"]: m for m in shown["modules"]}
    assert modules["monitor"]["live"] and modules["monitor"]["missing"] == []
    assert modules["mysql"]["live"] and modules["mysql"]["missing"] == ["noop_rollback"]
    assert "module mysql serves no 'noop_rollback' now" in shown["warnings"]
    assert shown["steps"][0]["normal"]["kind"] == "async"  # as the live module announced it
    assert shown["steps"][1]["for_each"]["items"] == 0
    # The holder is still the only task, still alone on its key.
    assert [t["TaskId"] for t in api.get("/api/v1/tasks").json()["items"]] == [holder]
    assert [w["task_id"] for w in api.get("/api/v1/locks").json()["items"][0]["waiters"]] == []


def test_a_plan_says_when_it_would_start_after_a_task_or_at_its_time_or_never(api):
    later = time.time() + 3600
    assert plan(api, "create_db", {"name": "db1"}, start_at=later)["start"] == {
        "when": "at", "text": "at its start time", "at": pytest.approx(later), "reasons": ["at its start time"]}  # fmt: skip
    running = api.create()["task_id"]
    after = plan(api, "create_db", {"name": "db2"}, after_task=running)["start"]
    assert after["when"] == "after_task" and running in after["reasons"][0]
    failed = api.rolled_back()
    assert plan(api, "create_db", {"name": "db3"}, after_task=failed)["start"]["when"] == "never"
    assert len(api.get("/api/v1/tasks").json()["items"]) == 2  # the two made above, no more


def test_a_plan_answers_refusals_as_a_submission_does_and_names_an_existing_task(api):
    refused = plan(api, "create_db", {"name": "NOT OK", "cpu": 0}, expect=422)
    assert [f["path"] for f in refused["error"]["fields"]] == ["parameters.name", "parameters.cpu"]
    plan(api, "no_such_type", {}, expect=422)
    plan(api, "create_db", {"name": "db1"}, expect=404, after_task="no-such-task")
    assert nothing_created(api)
    first = api.create(parameters={"name": "db1"}, idempotency_key="order-1")["task_id"]
    assert plan(api, "create_db", {"name": "db1"}, idempotency_key="order-1")["existing_task_id"] == first
    plan(api, "create_db", {"name": "other"}, expect=409, idempotency_key="order-1")


def test_a_plan_masks_secrets(api):
    shown = plan(api, "create_db", {"name": "db1", "admin_password": SECRET})
    assert SECRET not in json.dumps(shown) and shown["parameters"]["admin_password"] != SECRET


def test_baton_submit_plan_prints_the_plan_and_creates_nothing(api, tmp_path):
    holder = api.create("rotate", parameters={"cluster": "eu"})["task_id"]
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": "memory://"}  # fmt: skip
    args = ["submit", "rotate", "cluster=eu", 'hosts=["a","b"]', "--plan"]
    text = CliRunner().invoke(main, args, env=env)
    assert text.exit_code == 0, text.output
    assert "plan of a rotate task (nothing was created)" in text.stdout
    assert "starts: once its lock is free" in text.stdout and f"held by {holder}" in text.stdout
    assert "for each of hosts: 2 items, 3 at a time" in text.stdout
    assert "sub-flow create_db" in text.stdout and "resource.noop" in text.stdout
    as_json = CliRunner().invoke(main, [*args, "--json"], env=env)
    assert json.loads(as_json.stdout)["steps"][1]["for_each"]["items"] == 2
    bad = CliRunner().invoke(main, ["submit", "rotate", "--plan"], env=env)
    assert bad.exit_code == 2 and "parameters.cluster" in bad.output
    assert [t["TaskId"] for t in api.get("/api/v1/tasks").json()["items"]] == [holder]


def test_the_docs_example_is_what_baton_prints(tmp_path):
    """docs/dry-run.md's first example, run against the repository's flows.yaml with its three
    modules live: the text block after it is exactly what `baton submit --plan` prints."""
    doc = (REPO / "docs" / "dry-run.md").read_text()
    command = re.search(r"```sh\n(baton submit [^\n]+)\n```", doc).group(1)
    printed = re.search(r"```text\n(.*?)```", doc, re.S).group(1)
    db = tmp_path / "docs.db"
    registry = SqliteModuleRegistry(db)
    now = time.time()
    for module, commands in {"monitor": ["report_event"], "mysql": ["init_instance", "clean_instance"],
                             "resource": ["check_resource", "deduct_resource", "restore_resource"]}.items():
        registry.announce(ModuleRegistration(WorkerId=f"{module}@h:1", Module=module, Commands=commands, Version="1",
                                             Host="h", Pid=1, StartedAt=now, HeartbeatAt=now))  # fmt: skip
    registry.close()
    env = {"BATON_STORE_URL": f"sqlite:///{db}", "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_BROKER_URL": "memory://"}
    result = CliRunner().invoke(main, shlex.split(command)[1:], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == printed


def test_a_plan_shows_a_fan_outs_failure_budget_and_its_policy(api, tmp_path):
    (step,) = plan(api, "patch", {"hosts": [f"h{i}" for i in range(40)]})["steps"]
    assert step["for_each"] == {"parameter": "hosts", "items": 40, "max_parallel": None, "tolerate": "10% of items",
                                "on_failure": "hold", "waves": None, "source": None}
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": "memory://"}  # fmt: skip
    text = CliRunner().invoke(main, ["submit", "patch", 'hosts=["a","b"]', "--plan"], env=env)
    assert text.exit_code == 0, text.output
    assert "tolerates 10% of items failing; holds at a failure past it" in text.stdout
    assert nothing_created(api)


def test_a_plan_of_a_source_step_says_its_count_is_unknown_until_it_runs(api, tmp_path):
    (step,) = plan(api, "patch_inventory", {})["steps"]
    assert step["for_each"] == {"parameter": None, "items": None, "max_parallel": 8, "tolerate": None,
                                "on_failure": "rollback", "waves": None, "source": "resource.noop"}
    assert step["note"] == "for_each source resource.noop (count unknown until its source runs)"
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": "memory://"}  # fmt: skip
    text = CliRunner().invoke(main, ["submit", "patch_inventory", "--plan"], env=env)
    assert text.exit_code == 0, text.output
    assert "for each item of source resource.noop: count unknown until it runs, 8 at a time" in text.stdout
    assert nothing_created(api)
