"""The names baton keeps for itself (common/reserved.py, common/flows/parameters.py) are refused
to every client: POST /tasks, POST /schedules and the service the CLI calls, each with a 422
naming the field; the published schema refuses them too, so a client following it never sends one."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from common.errors import InvalidParameters
from common.reserved import SCHEDULE_LABEL, TICK_KEY_PREFIX
from tests.api.support import SUBMITTER, Api, auth

PARENT = "0123456789abcdef0123456789abcdef"
# Every namespace: (the request's changes, the field the 422 names).
RESERVED: list[tuple[dict[str, Any], str]] = [
    ({"idempotency_key": f"{TICK_KEY_PREFIX}0f1e2d:1795000000000"}, "idempotency_key"),
    ({"idempotency_key": TICK_KEY_PREFIX}, "idempotency_key"),
    ({"idempotency_key": f"{PARENT}.0"}, "idempotency_key"),
    ({"idempotency_key": f"{PARENT}.2.17"}, "idempotency_key"),
    ({"idempotency_key": f"{PARENT}.1.g2"}, "idempotency_key"),
    ({"labels": {SCHEDULE_LABEL: "nightly"}}, f"labels.{SCHEDULE_LABEL}"),
    ({"parameters": {"name": "db1", "_baton_internal": 1}}, "parameters._baton_internal"),
    ({"parameters": {"name": "db1", "_baton_": True}}, "parameters._baton_"),
]
# Close to a reserved name, and the client's own.
TAKEN = [
    {"idempotency_key": PARENT},  # a uuid hex: a common client key
    {"idempotency_key": f"order:{TICK_KEY_PREFIX}1"},
    {"idempotency_key": f"{PARENT}.x"},
    {"labels": {"schedules": "a", "my_schedule": "b"}},
    {"parameters": {"name": "db1", "_baton_faults": []}},  # the fault rules a client may send
]


def body(changes: dict[str, Any], task_type: str = "create_db") -> dict[str, Any]:
    return {"task_type": task_type, "parameters": {"name": "db1"} if task_type == "create_db" else {}, **changes}


@pytest.mark.parametrize(("changes", "field"), RESERVED)
def test_post_tasks_refuses_every_reserved_name_naming_the_field(api: Api, changes: dict, field: str) -> None:
    response = api.client.post("/api/v1/tasks", json=body(changes), headers=auth(SUBMITTER))
    assert response.status_code == 422, response.text
    assert field in [f["path"] for f in response.json()["error"]["fields"]]
    assert api.store.list_tasks() == []


@pytest.mark.parametrize(("changes", "field"), [c for c in RESERVED if "parameters" in c[0]])
def test_a_type_without_a_parameter_schema_refuses_reserved_parameters_too(api: Api, changes: dict, field: str) -> None:
    response = api.client.post("/api/v1/tasks", json=body(changes, "free_form"), headers=auth(SUBMITTER))
    assert response.status_code == 422 and field in response.text


@pytest.mark.parametrize("changes", TAKEN)
def test_names_near_the_reserved_ones_are_the_clients(api: Api, changes: dict) -> None:
    response = api.client.post("/api/v1/tasks", json=body(changes), headers=auth(SUBMITTER))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(("changes", "field"), RESERVED)
def test_the_service_the_cli_calls_refuses_the_same(api: Api, changes: dict, field: str) -> None:
    request = body(changes)
    service = api.client.app.state.baton.service  # type: ignore[attr-defined]
    with pytest.raises(InvalidParameters) as refused:
        service.submit(request.pop("task_type"), request.pop("parameters"), **request)
    assert field in [path for path, _ in refused.value.errors]


@pytest.mark.parametrize(("changes", "field"), [c for c in RESERVED if "idempotency_key" not in c[0]])
def test_a_schedule_refuses_the_reserved_labels_and_parameters(api: Api, changes: dict, field: str) -> None:
    schedule = {"name": "pulse", "interval_seconds": 60, **body(changes)}
    response = api.client.post("/api/v1/schedules", json=schedule, headers=auth())
    assert response.status_code == 422, response.text
    assert field in [f["path"] for f in response.json()["error"]["fields"]]
    assert api.get("/api/v1/schedules").json()["items"] == []


def test_the_published_schema_refuses_every_reserved_name_and_takes_the_rest(api: Api) -> None:
    document = api.client.get("/api/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    for component, extra in (("CreateTask_create_db", {}), ("CreateSchedule_create_db", {"name": "p", "interval_seconds": 60})):
        validator = jsonschema_rs.validator_for({**schemas[component], "components": document["components"]})
        for changes, field in RESERVED:
            if component.startswith("CreateSchedule") and "idempotency_key" in changes:
                continue  # a schedule takes no key
            assert not validator.is_valid({**body(changes), **extra}), (component, field)
        for changes in TAKEN:
            if not (component.startswith("CreateSchedule") and "idempotency_key" in changes):
                assert validator.is_valid({**body(changes), **extra}), (component, changes)
