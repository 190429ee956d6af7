"""Each disagreement schemathesis found between the OpenAPI document and the answers, pinned by
a plain test (test_schemathesis.py looks for the rest of the class). The document is the
module's `published` fixture (tests/api/conftest.py; test_route_walk.py checks an app serves it)."""

from __future__ import annotations

import re

import pytest

from common.store.tasks.filters import CURSOR_PATTERN, encode_cursor
from tests.api.support import OPERATOR, READER, auth


def test_a_405_names_every_method_of_the_path(api):
    for path, methods in (("/api/v1/tasks", "GET, POST"), ("/api/v1/hosts", "GET, POST")):
        answer = api.client.options(path, headers=auth())
        assert answer.status_code == 405 and answer.headers["allow"] == methods
    assert api.client.delete("/api/v1/tasks/x", headers=auth()).headers["allow"] == "GET"


@pytest.mark.parametrize("body", [b"\x80", b"\xc3(", b"\xff\xfe", b"{"])  # not UTF-8; UTF-8 but not JSON
def test_a_body_that_is_not_json_text_is_a_documented_422(api, published, body):
    answer = api.client.post("/api/v1/hosts", content=body, headers={**auth(), "Content-Type": "application/json"})
    assert answer.status_code == 422 and answer.json()["error"]["fields"] == [{"path": "body", "message": "must be a JSON document"}]
    document = published
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert {"413", "422"} <= set(operation["responses"]), f"{method} {path}"


def test_a_host_name_the_schema_allows_is_taken_and_unknown_fields_are_refused(api, published):
    pattern = published["components"]["schemas"]["HostCreate"]["properties"]["name"]["pattern"]
    for name in ("0", "db-host.1", "a" * 63):
        assert re.search(pattern, name)
        body = {"name": name, "cpu": 1, "memory_mb": 1, "storage_gb": 1}
        assert api.client.post("/api/v1/hosts", json=body, headers=auth()).status_code == 201, name
    for name in ("Db", "db_1", "a" * 64, "-a"):
        assert not re.search(pattern, name)
        body = {"name": name, "cpu": 1, "memory_mb": 1, "storage_gb": 1}
        assert api.client.post("/api/v1/hosts", json=body, headers=auth()).status_code == 422, name
    typo = {"name": "db2", "cpu": 1, "memory_mb": 1, "storage_gb": 1, "storage_tb": 1}
    answer = api.client.post("/api/v1/hosts", json=typo, headers=auth())
    assert answer.status_code == 422 and answer.json()["error"]["fields"][0]["path"] == "storage_tb"


def test_an_unknown_query_parameter_is_refused(api):
    answer = api.get("/api/v1/tasks", token=READER, stauts="4")
    assert answer.status_code == 422
    assert answer.json()["error"]["fields"][0]["path"] == "query.stauts"
    assert api.get("/api/v1/tasks", token=READER, status="4").status_code == 200


def test_a_single_valued_query_parameter_given_twice_is_refused(api):
    # The server would read one of the two and answer as if the other was never sent.
    answer = api.client.get("/api/v1/locks?key=a&key=b", headers=auth(READER))
    assert answer.status_code == 422
    assert answer.json()["error"]["fields"] == [
        {"path": "query.key", "message": "given more than once; this parameter takes one value"}]
    assert api.get("/api/v1/locks", token=READER, key="a").status_code == 200
    repeatable = api.client.get("/api/v1/tasks?label=team%3Da&label=env%3Db", headers=auth(READER))
    assert repeatable.status_code == 200


@pytest.mark.parametrize("status", ["", "9", "done", " 4"])
def test_a_status_filter_outside_the_published_enum_is_refused(api, published, status):
    enum = published["components"]["schemas"]["StatusFilter"]["enum"]
    assert status not in enum and {"4", "ROLLED_BACK", "rolled_back"} <= set(enum)
    assert api.get("/api/v1/tasks", token=READER, status=status).status_code == 422


def test_json_types_are_not_coerced(api):
    # pydantic would read true as 1 and "2" as 2; the schema says integer, so both are refused.
    for priority in (True, "2"):
        body = {"task_type": "free_form", "priority": priority}
        assert api.client.post("/api/v1/tasks", json=body, headers=auth()).status_code == 422
    body = {"name": "h1", "cpu": False, "memory_mb": 1, "storage_gb": 1}
    assert api.client.post("/api/v1/hosts", json=body, headers=auth()).status_code == 422
    assert api.create("free_form", priority=2.0)["task"]["Priority"] == 2


def test_a_reason_of_whitespace_alone_is_refused_as_the_schema_says(api, published):
    task_id = api.rolled_back()
    pattern = published["components"]["schemas"]["OperatorAction"]["properties"]["reason"]["pattern"]
    for blank in ("\x1c", "\x85 ", "\u3000"):
        assert not re.search(pattern, blank)
        assert api.act(task_id, "retry", reason=blank).status_code == 422
    assert api.act(task_id, "retry", reason=" added a host ").status_code == 200


def test_every_cursor_the_pattern_allows_decodes(api):
    assert re.fullmatch(CURSOR_PATTERN, encode_cursor((1_700_000_000.25, "é/ü")))
    for cursor in ("0~", "-12.5e-07~00ff", "99999999999999999999.5e+99~c3a9"):
        assert api.get("/api/v1/tasks", token=READER, cursor=cursor).status_code == 200, cursor


def test_a_task_shows_its_status_name_as_list_items_do(api):
    task_id = api.create("free_form")["task_id"]
    assert api.get(f"/api/v1/tasks/{task_id}").json()["TaskStatusName"] == "NOT_STARTED"
    task_id = api.rolled_back()
    assert api.act(task_id, "retry").json()["TaskStatusName"] == "NOT_STARTED"
    assert api.get(f"/api/v1/tasks/{task_id}", token=OPERATOR).json()["TaskStatus"] == 1


def test_each_task_type_has_its_own_body_schema(api, published):
    schemas = published["components"]["schemas"]
    assert schemas["CreateTask"]["discriminator"]["mapping"] == {
        "create_db": "#/components/schemas/CreateTask_create_db",
        "free_form": "#/components/schemas/CreateTask_free_form",
    }
    create_db = schemas["CreateTask_create_db"]
    assert create_db["required"] == ["parameters", "task_type"]
    parameters = create_db["properties"]["parameters"]
    assert parameters["additionalProperties"] is False and parameters["required"] == ["name"]
    assert parameters["properties"]["tier"]["enum"] == ["small", "large"]
    assert "enum" not in parameters["properties"]["admin_password"]  # a secret's choices stay unsaid
    assert schemas["CreateTask_free_form"]["properties"]["parameters"]["type"] == "object"
