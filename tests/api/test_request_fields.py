"""Every field of a request counts: a repeated idempotency key with any field changed is a 409
naming it; no id, key, name or label takes a control character; a task type's lock-key
parameters are required, by the published schema and by the check alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient

from oss.api.schemas import CreateTask
from tests.api.support import FLOWS, SUBMITTER, Api, auth, open_api

START = "2030-01-01T00:00:00Z"


def submit(api: Api, **fields: Any):
    return api.client.post("/api/v1/tasks", json={"task_type": "create_db", **fields}, headers=auth(SUBMITTER))


def test_a_repeat_that_changes_any_field_is_a_409_naming_it(api: Api) -> None:
    awaited, other = api.create()["task_id"], api.create(parameters={"name": "db2"})["task_id"]
    base = {"parameters": {"name": "db1"}, "priority": 1, "start_at": START, "user_id": "ann",
            "after_task": awaited, "labels": {"team": "a"}}  # fmt: skip
    changed = {  # one other value for every field of the request; the key is what repeats
        "task_type": ("free_form", "task_type"),
        "parameters": ({"name": "db9"}, "parameters.name"),
        "priority": (2, "priority"),
        "start_at": ("2030-01-01T00:00:01Z", "start_at"),
        "user_id": ("bob", "user_id"),
        "after_task": (other, "after_task"),
        "labels": ({"team": "b"}, "labels"),
    }
    # A new field needs a line here; `dry_run` creates nothing, so it is never a change (a dry
    # run of a repeat names the task the key created: tests/api/test_dry_run.py).
    assert set(changed) | {"idempotency_key", "dry_run"} == set(CreateTask.model_fields)
    for name, (value, path) in changed.items():
        key = f"order-{name}"
        assert submit(api, **base, idempotency_key=key).status_code == 201
        repeat = submit(api, **{**base, name: value}, idempotency_key=key)
        assert repeat.status_code == 409, (name, repeat.text)
        paths = [f["path"] for f in repeat.json()["error"]["fields"]]
        assert paths == [path] or (name == "task_type" and paths[0] == path), (name, paths)  # another type: its defaults too
        if name in base and name != "parameters":  # left out is a change too
            omitted = submit(api, **{k: v for k, v in base.items() if k != name}, idempotency_key=key)
            assert omitted.status_code == 409 and omitted.json()["error"]["fields"][0]["path"] == path, omitted.text


def test_a_true_repeat_names_the_awaited_task_by_id_or_by_key(api: Api) -> None:
    awaited = api.create(idempotency_key="first-one")["task_id"]
    base = {"parameters": {"name": "db1"}, "start_at": 1893456000, "idempotency_key": "second-one"}
    created = submit(api, **base, after_task="first-one")
    assert created.status_code == 201
    for name in ("first-one", awaited):
        again = submit(api, **base, after_task=name)
        assert again.status_code == 200 and again.json()["task_id"] == created.json()["task_id"]
    assert submit(api, **{**base, "start_at": START}, after_task=awaited).status_code == 200  # the same moment


# Control characters, and invisible ones: zero-width (U+200B, U+FEFF) and bidi controls (U+202E, U+2066).
CONTROL = ["\x00", "a\x00", "\x1b[2J", "a\nb", "\t", "\x7f", "\x9b", "\u200b", "\ufeff", "a\u202eb", "\u2066"]
TEXT_FIELDS = {"task_type": "create_db", "idempotency_key": "k", "user_id": "ann", "after_task": "a-task"}


@pytest.mark.parametrize("bad", CONTROL)
def test_no_identifier_takes_a_control_character(api: Api, bad: str) -> None:
    for field in TEXT_FIELDS:
        response = submit(api, parameters={"name": "db1"}, **{field: f"x{bad}"})
        assert response.status_code == 422, (field, response.text)
        assert field in [f["path"] for f in response.json()["error"]["fields"]]
    label = submit(api, parameters={"name": "db1"}, labels={"team": f"a{bad}"})
    assert label.status_code == 422 and "labels" in label.text
    schedule = api.client.post("/api/v1/schedules", headers=auth(), json={
        "name": "pulse", "task_type": f"create_db{bad}", "parameters": {"name": "db1"}, "interval_seconds": 60,
        "labels": {"team": f"a{bad}"}, "timezone": f"UTC{bad}"})  # fmt: skip
    assert schedule.status_code == 422
    assert {"task_type", "labels.team", "timezone"} <= {f["path"] for f in schedule.json()["error"]["fields"]}
    assert api.store.list_tasks() == []


@pytest.mark.parametrize("bad", CONTROL)
def test_the_service_the_cli_calls_refuses_control_characters_too(api: Api, bad: str) -> None:
    service = api.client.app.state.baton.service  # type: ignore[attr-defined]
    for field in ("idempotency_key", "user_id", "after_task"):
        with pytest.raises(Exception) as refused:
            service.submit("create_db", {"name": "db1"}, **{field: f"x{bad}"})
        assert field in [path for path, _ in refused.value.errors]  # type: ignore[attr-defined]
    assert api.store.list_tasks() == []


LOCKED = FLOWS + """
  resize:
    parameters:
      cluster: {type: string}
      size: {type: integer, default: 1}
    lock: {key: "cluster:{cluster}"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
  loose:
    lock: {key: "host:{host}"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
"""


@pytest.fixture
def locked(tmp_path: Path):
    app, store, broker = open_api(tmp_path, LOCKED)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


@pytest.mark.parametrize(("task_type", "name"), [("resize", "cluster"), ("loose", "host")])
def test_a_lock_key_parameter_is_required_by_the_schema_and_the_check_alike(locked: Api, task_type: str, name: str) -> None:
    document = locked.client.get("/api/v1/openapi.json").json()
    for body, path, extra in (("CreateTask", "/api/v1/tasks", {}), ("CreateSchedule", "/api/v1/schedules",
                                                                     {"name": "p", "interval_seconds": 60})):  # fmt: skip
        schema = document["components"]["schemas"][f"{body}_{task_type}"]
        assert name in schema["properties"]["parameters"]["required"]
        validator = jsonschema_rs.validator_for({**schema, "components": document["components"]})
        without = {"task_type": task_type, "parameters": {}, **extra}
        assert not validator.is_valid(without)
        refused = locked.client.post(path, json=without, headers=auth())
        assert refused.status_code == 422, refused.text
        assert [f["path"] for f in refused.json()["error"]["fields"]] == [f"parameters.{name}"]
        given = {**without, "parameters": {name: "c1"}}
        assert validator.is_valid(given)
        assert locked.client.post(path, json=given, headers=auth()).status_code == 201
    if task_type == "resize":  # the task type's view says so too
        shown = locked.client.get("/api/v1/task-types/resize", headers=auth()).json()["parameters"]
        assert shown["cluster"]["required"] is True and shown["size"]["required"] is False
