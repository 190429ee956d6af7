"""No way out shows a secret. Secrets holding one canary go in through a type that declares them
`secret: true` and a type without `parameters:` (secret-looking keys, URL passwords, a mapping
with a password), as tasks, schedules, lock keys, failure messages, an operator's reason and an
alarm; then every GET route of the API (read from the app's OpenAPI document, so a new route is
walked too), the CLI's views, the stored webhook bodies and every log line are searched for it."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.logging import configure_logging
from common.engine.document import Alarm
from common.engine.core.notifications import WEBHOOK
from common.engine.states import ResultCode
from common.engine.core.entries import AttemptResult
from oss.cli import main
from tests.api.support import FLOWS, READER, Api, auth, open_api

CANARY = "cnry" + uuid.uuid4().hex[:12]
LEAK_FLOWS = FLOWS + """
  vault:
    lock: {key: "vault:{name}"}
    notify: {url: "http://hook:%s-user@127.0.0.1:9/hook?token=%s-query"}
    parameters:
      name: {type: string, required: true}
      password: {type: string, secret: true, min_length: 8}
      keys: {type: array, secret: true, default: []}
    steps:
      - name: rotate
        for_each: keys
        lock: {key: "key:{name}:{item_index}"}
        normal: {module: monitor, command: noop}
  courier:
    parameters:
      password: {type: string, secret: true}
    steps:
      - name: hand_over
        flow: free_form
        inputs: {note: password}
  loose:
    lock: {key: "loose:{dsn}"}
    notify: {url: "http://127.0.0.1:9/hook"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
""" % (CANARY, CANARY)
DECLARED = {"name": "v1", "password": f"{CANARY}-pw", "keys": [f"{CANARY}-k1", f"{CANARY}-k2"]}
UNDECLARED = {"api_token": f"{CANARY}-tok", "dsn": f"mysql://root:{CANARY}-url@db/x",
              "conn": {"host": "h", "password": f"{CANARY}-nested"}}  # fmt: skip


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=LEAK_FLOWS)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def _fill(api: Api) -> dict[str, list[str]]:
    """Every kind of thing that may hold a secret; the ids to walk the routes with."""
    tasks = [api.create("vault", parameters=DECLARED)["task_id"], api.create("loose", parameters=UNDECLARED)["task_id"]]
    waiting = api.create("loose", parameters=UNDECLARED)["task_id"]  # the same key: in line behind the first
    parent = api.create("courier", parameters={"password": f"{CANARY}-handed"})["task_id"]
    child = api.store.get(parent).Steps[0].ChildTaskId
    assert child is not None and api.store.get(child).Parameters["note"] == f"{CANARY}-handed"
    failed = api.create("create_db", parameters={"name": "db1", "admin_password": f"{CANARY}-admin"})["task_id"]
    api.step(failed, AttemptResult(ResultCode.FAILED, f"login with {CANARY}-admin refused"))
    assert api.act(waiting, "cancel", reason=f"the token {CANARY}-tok leaked").status_code == 200
    api.store.add_alarm(Alarm(AlarmId="a-1", Kind="rollback_failed", Time=1.0, TaskId=failed,
                              Message=f"rollback failed: auth {CANARY}-admin refused"))  # fmt: skip
    schedules = []
    for name, task_type, parameters in (("s-declared", "vault", DECLARED), ("s-loose", "loose", UNDECLARED)):
        body = {"name": name, "task_type": task_type, "parameters": parameters, "interval_seconds": 3600}
        assert api.client.post("/api/v1/schedules", json=body, headers=auth()).status_code == 201
        schedules.append(name)
    locks = [lock["key"] for lock in api.get("/api/v1/locks").json()["items"]]
    assert len(locks) >= 2  # the walk must see lock keys built from secrets, or it proves nothing
    return {"task_id": [*tasks, waiting, failed, parent, child], "schedule": schedules, "name": ["vault", "loose", "create_db"],
            "key": locks, "alarm_id": ["a-1"], "step": ["0", "rotate"]}  # fmt: skip


def _get_routes(api: Api) -> list[str]:
    return [path for path, operations in api.client.app.openapi()["paths"].items() if "get" in operations]


def _answers(api: Api, ids: dict[str, list[str]]) -> Iterator[tuple[str, str]]:
    for route in _get_routes(api):
        names = re.findall(r"{(\w+)}", route)
        assert all(n in ids for n in names), f"{route}: the walk knows no values for {names}: add them to _fill"
        paths = [route]
        for name in names:
            # A step's items: the vault task's for_each step over its secret keys (the only one).
            values = ids["task_id"][:1] if name == "task_id" and "{step}" in route else ids[name]
            paths = [p.replace(f"{{{name}}}", value) for p in paths for value in values]
        for path in paths:
            params = {"timeout": 0.5} if path.endswith("/events") else {}
            response = api.get(path, token=READER, **params)
            assert response.status_code == 200, (path, response.text)
            yield path, response.text
    for key in ids["key"]:
        yield f"/api/v1/locks?key={key}", api.get("/api/v1/locks", token=READER, key=key).text


def _cli_outputs(tmp_path, ids: dict[str, list[str]]) -> Iterator[tuple[str, str]]:
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml")}
    commands = [["list"], ["list", "--json"], ["locks"], ["locks", "--json"], ["schedules", "list"],
                ["schedules", "list", "--json"]]  # fmt: skip
    commands += [["get", t] for t in ids["task_id"]] + [["get", t, "--json"] for t in ids["task_id"]]
    commands += [["schedules", "show", s, "--json"] for s in ids["schedule"]]
    for command in commands:
        run = CliRunner().invoke(main, command, env=env)
        assert run.exit_code == 0, (command, run.output)
        yield "baton " + " ".join(command), run.output


def test_no_route_cli_view_webhook_or_log_line_shows_a_secret(api, tmp_path, capsys):
    configure_logging("json", "debug")
    try:
        ids = _fill(api)
        seen = dict(_answers(api, ids))
        seen.update(_cli_outputs(tmp_path, ids))
        for task_id in ids["task_id"]:  # the webhook bodies as stored, to be POSTed as they are
            task = api.store.get(task_id)
            bodies = [e.Body for e in task.Outbox if e.Kind == WEBHOOK]
            seen[f"webhooks of {task_id}"] = json.dumps(bodies)
        assert any(e.Kind == WEBHOOK for e in api.store.get(ids["task_id"][0]).Outbox)
    finally:
        configure_logging()
    seen["log"] = capsys.readouterr().err
    assert "lock asked" in seen["log"] and "task created" in seen["log"]  # the log was captured
    assert len([p for p in seen if p.startswith("/api/v1/tasks/")]) >= 2 * len(ids["task_id"])
    leaks = {where: text[max(0, text.find(CANARY) - 80):text.find(CANARY) + 40]
             for where, text in seen.items() if CANARY in text}
    assert not leaks, leaks
