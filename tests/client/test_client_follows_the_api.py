"""The client follows the API that OSS serves: its OpenAPI document, read from a real `baton oss`
process, against the client's calls.

- Every operation of the document is one call of the client, and every call is one operation
  (the event stream is `events`/`wait`'s).
- Each call sends the query parameters its operation names, all of them, and a body of the
  operation's request schema: the client's model has the same fields and types, and what the
  call sends (every argument given) is valid under the document's schema.
- Each call reads its operation's answer with a model of the same fields and types, which reads
  everything the document allows (null where it may be null, a field that may be absent, every
  enum value).

A change of the API that the client does not follow fails here (tests/client/schema_shapes.py
says how the two are compared; tests/client/test_schema_shapes.py that the comparison can fail).
Building a call does no I/O: the calls here are built, not sent.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema_rs
import pytest

from tests.client.live import lone_oss
from tests.client.schema_shapes import compare

from baton_client import BatonClient
from baton_client.call import Call, endpoint
from baton_client.calls import Calls
from baton_client.events import EventFollower, stream_call

pytestmark = [pytest.mark.slow]

WHY = "a reason"
# One invocation of each call, with every argument it takes given a value.
SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "submit": (("provision", {"name": "db1"}), {
        "idempotency_key": "order-1", "priority": 2, "start_at": 1.8e9, "user_id": "u1", "labels": {"team": "db"},
        "after_task": "t0"}),
    "plan": (("provision", {"name": "db1"}), {
        "idempotency_key": "order-1", "priority": 2, "start_at": 1.8e9, "user_id": "u1", "labels": {"team": "db"},
        "after_task": "t0"}),
    "get_task": (("t1",), {}),
    "list_tasks": ((), {
        "task_type": "provision", "status": 4, "user_id": "u1", "labels": {"team": "db"}, "created_from": 1.7e9,
        "created_to": 1.8e9, "search": "db1", "failed_items": True, "cursor": None, "limit": 10}),
    "list_items": (("t1", "per_node"), {"state": ["failed", "running"], "after": 3, "limit": 10, "failed": True}),
    "cancel": (("t1", WHY), {"stop_running": True}),
    "retry": (("t1", WHY), {}),
    "retry_rollback": (("t1", WHY), {}),
    "compensate": (("t1", WHY), {}),
    "pause": (("t1", WHY), {}),
    "resume": (("t1", WHY), {}),
    "redrive": (("t1", WHY), {}),
    "rollback": (("t1", WHY), {}),
    "skip": (("t1", WHY), {"step": 1, "item": 2}),
    "act": (("t1", "ask", "approve", WHY), {}),
    "callback": (("t1.secret", "succeed"), {"output": {"ticket": "CHG-1"}, "message": "done", "retryable": False}),
    "bulk": (("retry-rollback", WHY), {
        "dry_run": False, "limit": 10, "task_type": "provision", "status": "rollback_failed", "user_id": "u1",
        "labels": {"team": "db"}, "created_from": 1.7e9, "created_to": 1.8e9}),
    "migrate": (("provision", "sha256:0123456789abcdef", WHY), {"dry_run": False, "limit": 10}),
    "list_alarms": ((), {"acknowledged": False, "limit": 10}),
    "acknowledge_alarm": (("a1",), {}),
    "acknowledge_alarms": ((WHY,), {"ids": ["a1"], "kind": "dead_letter", "task_id": "t1"}),
    "list_task_types": ((), {}),
    "get_task_type": (("provision",), {}),
    "list_hosts": ((), {}),
    "add_host": (("h1",), {"cpu": 4, "memory_mb": 1024, "storage_gb": 10}),
    "drain_host": (("h1",), {}),
    "activate_host": (("h1",), {}),
    "list_modules": ((), {"stale": True}),
    "drain_module": (("spare", WHY), {}),
    "undrain_module": (("spare", WHY), {}),
    "list_locks": ((), {"key": "cluster:a", "limit": 5}),
    "create_schedule": (("nightly", "provision", {"name": "db1"}), {
        "cron": "0 3 * * *", "timezone": "Europe/Paris", "overlap": "queue", "missed": "all", "priority": 1,
        "labels": {"team": "db"}}),
    "list_schedules": ((), {"limit": 5}),
    "get_schedule": (("nightly",), {}),
    "pause_schedule": (("nightly",), {}),
    "resume_schedule": (("nightly",), {}),
    "delete_schedule": (("nightly",), {}),
    "access": ((), {}),
    "health": ((), {}),
    "ready": ((), {}),
    "metrics": ((), {}),
}  # fmt: skip
LEFT_OUT = {"create_schedule": {"interval_seconds"}}  # a schedule has a cron or an interval, not both


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("served")
    with lone_oss(work, f"sqlite:///{work / 'baton.db'}", f"memory://client-{work.name}") as oss:
        yield httpx.get(f"{oss.url}/api/v1/openapi.json", timeout=30).json()


def endpoints() -> list[str]:
    return sorted(name for name in dir(Calls) if isinstance(inspect.getattr_static(Calls, name), endpoint))


def built(name: str) -> Call[Any]:
    args, kwargs = SAMPLES[name]
    return getattr(BatonClient, name).build(*args, **kwargs)


def calls() -> dict[str, Call[Any]]:
    """Every call, by the method that makes it; the event stream's as `events`."""
    return {**{name: built(name) for name in endpoints()}, "events": stream_call("t1", 30.0)}


def operation_of(document: dict[str, Any], call: Call[Any]) -> tuple[str, str]:
    """The (path template, method) of the document that the call's path and method fit."""
    found = [
        (template, call.method.lower()) for template, item in document["paths"].items()
        if call.method.lower() in item and re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), call.path)
    ]  # fmt: skip
    assert len(found) == 1, f"{call.describe()} fits {found or 'no operation'} of the document"
    return found[0]


def test_every_call_is_sampled_with_every_argument() -> None:
    assert set(SAMPLES) == set(endpoints())
    for name in endpoints():
        parameters = inspect.signature(getattr(BatonClient, name).build).parameters
        args, kwargs = SAMPLES[name]
        given = set(list(parameters)[:len(args)]) | set(kwargs) | LEFT_OUT.get(name, set())
        assert given == set(parameters), f"{name}: give every argument a value"


def test_every_operation_of_the_document_is_one_call_of_the_client(document) -> None:
    by_operation: dict[tuple[str, str], list[str]] = {}
    for name, call in calls().items():
        by_operation.setdefault(operation_of(document, call), []).append(name)
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert documented - set(by_operation) == set(), "operations of the API the client has no call for"
    # submit and plan are both POST /tasks (plan: dry_run); every other operation has one call.
    assert {op: names for op, names in by_operation.items() if len(names) > 1} == {
        ("/api/v1/tasks", "post"): ["plan", "submit"]}


@pytest.mark.parametrize("name", [*endpoints(), "events"])
def test_a_call_sends_the_query_its_operation_names(document, name) -> None:
    call = calls()[name]
    path, method = operation_of(document, call)
    named = {p["name"] for p in document["paths"][path][method].get("parameters", []) if p["in"] == "query"}
    assert set(call.params) == named


def test_the_event_stream_resumes_with_the_header_the_document_names(document) -> None:
    parameters = document["paths"]["/api/v1/tasks/{task_id}/events"]["get"]["parameters"]
    headers = {p["name"].lower() for p in parameters if p["in"] == "header"}
    assert {name.lower() for name in EventFollower("3.14").headers()} & headers == {"last-event-id"}


@pytest.mark.parametrize("name", endpoints())
def test_a_call_sends_its_operations_body(document, name) -> None:
    call = built(name)
    path, method = operation_of(document, call)
    body = document["paths"][path][method].get("requestBody")
    if body is None:
        assert call.body is None, f"{name} sends a body its operation does not take"
        return
    schema = body["content"]["application/json"]["schema"]
    assert call.body is not None, f"{name} sends no body; its operation takes one"
    model = type(call.body)
    assert compare(model.model_json_schema(mode="serialization"), document, schema, "request", model.__name__) == []
    validator = jsonschema_rs.validator_for({**schema, "components": document["components"]})
    assert [e.message for e in validator.iter_errors(call.json())] == []


@pytest.mark.parametrize("name", endpoints())
def test_a_call_reads_its_operations_answer(document, name) -> None:
    call = built(name)
    path, method = operation_of(document, call)
    responses = document["paths"][path][method]["responses"]
    assert call.ok <= {int(status) for status in responses}, f"{name} takes as an answer a status not documented"
    for status in sorted(call.ok):
        content = responses[str(status)].get("content", {})
        if call.answer is None:
            assert content == {}, f"{name}: the answer has a body the client leaves unread"
        elif call.answer is str:
            assert "text/plain" in content
        else:
            schema = content["application/json"]["schema"]
            alternatives = schema.get("anyOf", [schema])  # POST /tasks: a task created, or a dry run's plan
            found = [compare(call.answer.model_json_schema(), document, alt, "answer", call.answer.__name__)
                     for alt in alternatives]  # fmt: skip
            assert [] in found, found
