"""The fast paths of POST /api/v1/tasks and GET /api/v1/tasks/{task_id} (oss/api/lean/) answer
every request as FastAPI's own handler does: the same hostile request goes to an app with the
fast paths and to one whose fast paths judge nothing, and both must give the same status, the
same body (task ids and times aside) and the same stored task; never a 500."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oss.api.lean.task_routes import ReadRoute, SubmitRoute
from tests.api.support import OPERATOR, READER, SUBMITTER, Api, auth, open_api
from fastapi.testclient import TestClient

JSON = {"content-type": "application/json"}
SUBMIT = {**auth(SUBMITTER), **JSON}
BASE = b'{"task_type": "free_form"}'
# A task id (32 hex digits) and a time in epoch seconds: the only things two apps answer differently.
VARYING = re.compile(rb"[0-9a-f]{32}|\b1\d{9}(?:\.\d+)?\b")


async def _judges_nothing(_request: Any) -> None:
    return None


@pytest.fixture
def general(api, tmp_path, monkeypatch) -> Iterator[Api]:
    """An app whose fast paths hand every request to FastAPI. An app builds its routes' handlers
    at its first request: `api` is served once before the fast paths are switched off."""
    api.client.get("/api/v1/tasks/warm", headers=auth(READER))
    monkeypatch.setattr(SubmitRoute, "lean", staticmethod(_judges_nothing))
    monkeypatch.setattr(ReadRoute, "lean", staticmethod(_judges_nothing))
    (tmp_path / "general").mkdir()
    app, store, broker = open_api(tmp_path / "general")
    with TestClient(app, raise_server_exceptions=False) as client:
        client.get("/api/v1/tasks/warm", headers=auth(READER))
        yield Api(client, store, broker)
    store.close()
    broker.close()


def _both(api: Api, general: Api, method: str, path: str, body: bytes, headers: Any) -> tuple[Any, Any]:
    fast = api.client.request(method, path, content=body, headers=headers)
    slow = general.client.request(method, path, content=body, headers=headers)
    return fast, slow


def _stored(api: Api, answer: Any) -> Any:
    task = api.store.get(answer.json()["task_id"])
    return VARYING.sub(b"X", task.model_dump_json().encode()) if task else None


def assert_same(api: Api, general: Api, method: str, path: str, body: bytes, headers: Any) -> None:
    fast, slow = _both(api, general, method, path, body, headers)
    asked = (method, path, body[:80], headers)
    assert fast.status_code < 500 and slow.status_code < 500, (asked, fast.text, slow.text)
    assert (fast.status_code, VARYING.sub(b"X", fast.content)) == (slow.status_code, VARYING.sub(b"X", slow.content)), asked
    if fast.status_code in (200, 201) and method == "POST" and "task_id" in fast.json():
        assert _stored(api, fast) == _stored(general, slow), asked
        read, read_too = (app.client.get(answer.headers.get("Location") or f"/api/v1/tasks/{answer.json()['task_id']}",
                                         headers=auth(READER)) for app, answer in ((api, fast), (general, slow)))  # fmt: skip
        assert read.status_code == 200, (asked, read.text)  # what was stored, a later read loads
        assert VARYING.sub(b"X", read.content) == VARYING.sub(b"X", read_too.content), asked


def _deep(depth: int, opening: bytes = b"[", closing: bytes = b"]", leaf: bytes = b"") -> bytes:
    return b'{"task_type": "free_form", "parameters": {"x": ' + opening * depth + leaf + closing * depth + b"}}"


BODIES = [
    b"", b" ", b"\n\t", b"null", b"[]", b"1", b'"free_form"', b"{}", BASE, BASE + b" trailing", BASE + b"\n\n",
    b"\xef\xbb\xbf" + BASE, '{"task_type": "free_form"}'.encode("utf-16"), '{"task_type": "free_form"}'.encode("utf-32-le"),
    b'{"task_type": "free_form", "task_type": "create_db"}', b'{"task_type": "create_db", "task_type": "free_form"}',
    b'{"task_type": "free_form", "labels": {"a": "b"}, "labels": {"c": "d"}}',
    *(b'{"task_type": "free_form", "priority": %s}' % n for n in (
        b"true", b"1.0", b"1.5", b"-1", b"NaN", b"Infinity", b"1e400", b'"1"', b"10000000000000000000000", b"-0")),
    *(b'{"task_type": "free_form", "start_at": %s}' % n for n in (
        b"NaN", b"-Infinity", b"1e308", b"-1e308", b"true", b'"nan"', b'"1e999"', b"99999999999999999999999", b"-5",
        b'""', b'"2026-13-01"', b'"0001-01-01T00:00:00"', b'"9999-12-31T23:59:59+14:00"')),
    *(b'{"task_type": "free_form", "dry_run": %s}' % v for v in (b"1", b'"true"', b"null")),
    *(b'{"task_type": "free_form", "idempotency_key": %s}' % k for k in (
        b'""', b'" "', b'"schedule:x"', b'"a\\u0000b"', b'"\\ud800"', b'"x.y"', b'"\\u2028"', b'"' + b"k" * 300 + b'"')),
    b'{"task_type": "free_form", "labels": null}', b'{"task_type": "free_form", "parameters": null}',
    b'{"task_type": "free_form", "labels": {"a.b": "x"}}', b'{"task_type": "free_form", "labels": {"schedule": "x"}}',
    b'{"task_type": "free_form", "user_id": "\\u202e"}', b'{"task_type": "free_form", "after_task": "nope"}',
    b'{"task_type": "\\ud800"}', b'{"task_type": "free_form\\u0000"}', b'{"task_type": "FREE_FORM"}', b'{"task_type": null}',
    b'{"task_type": "free_form", "parameters": {"a": "\xff"}}', b'{"task_type": "free_form", "parameters": {"a": "\xed\xa0\x80"}}',
    b'{"task_type": "free_form", "Parameters": {}}', b'{"task_type": "free_form", "extra": 1}',
    b'{"task_type": "create_db", "parameters": {"name": "db1", "cpu": true}}',
    b'{"task_type": "create_db", "parameters": {"name": "db1", "cpu": 1.0}}',
    b'{"task_type": "create_db", "parameters": {"name": "db1", "admin_password": 123456789012345}}',
    b'{"task_type": "free_form", "parameters": {"x": -0.0, "y": 1E+2}}',
    b'{"task_type": "free_form", "parameters": {"x": "' + b"a" * 2_000_000 + b'"}}',  # past the body limit: 413
    _deep(950), _deep(990), _deep(990, b'{"a": ', b"}", b"1"), _deep(100_000), b"[" * 100_000,
]


def test_a_hostile_body_gets_the_general_answer(api, general):
    for body in BODIES:
        assert_same(api, general, "POST", "/api/v1/tasks", body, SUBMIT)


HEADERS = [
    *({**auth(SUBMITTER), "content-type": kind} for kind in (
        "application/json; charset=utf-8", "application/json; charset=latin-1", "APPLICATION/JSON", "application/vnd.x+json",
        "application/json ", " application/json", "text/json", "text/plain", "application/x-www-form-urlencoded", "")),
    auth(SUBMITTER),  # no content type
    *({"authorization": value, **JSON} for value in (
        "bearer " + SUBMITTER, "BEARER " + SUBMITTER, "Bearer  " + SUBMITTER, "Bearer " + SUBMITTER + " ", "Bearer\t" + SUBMITTER,
        "Basic " + SUBMITTER, SUBMITTER, "Bearer", "Bearer ", "Bearer " + READER, "Bearer " + OPERATOR, b"Bearer \xff",
        ("Bearer " + SUBMITTER).encode() + b"\xff")),
    [("authorization", f"Bearer {SUBMITTER}"), ("authorization", "Bearer x"), ("content-type", "application/json")],
    [("authorization", "Bearer x"), ("authorization", f"Bearer {SUBMITTER}"), ("content-type", "application/json")],
    [("authorization", f"Bearer {SUBMITTER}"), ("content-type", "text/plain"), ("content-type", "application/json")],
    [("authorization", f"Bearer {SUBMITTER}"), ("content-type", "application/json"), ("content-type", "text/plain")],
    *({**SUBMIT, "traceparent": value} for value in (
        "garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "ff-" + "a" * 32 + "-" + "b" * 16 + "-01",
        "00-" + "A" * 32 + "-" + "B" * 16 + "-01", "00-" + "a" * 32 + "-" + "b" * 16 + "-01-x", "x" * 10_000, b"\xff\xfe")),
    {**SUBMIT, "content-encoding": "gzip"},
]


def test_odd_headers_get_the_general_answer(api, general):
    for headers in HEADERS:
        assert_same(api, general, "POST", "/api/v1/tasks", BASE, headers)


def test_odd_paths_and_methods_get_the_general_answer(api, general):
    for path in ["/api/v1/tasks?", "/api/v1/tasks?&", "/api/v1/tasks?x", "/api/v1/tasks?dry_run=true", "/api/v1/tasks/",
                 "/api/v1//tasks"]:  # fmt: skip
        for method in ["POST", "PUT", "HEAD", "OPTIONS"]:
            assert_same(api, general, method, path, BASE, SUBMIT)


READS = ["nope", "%00", "%ff", "%ed%a0%80", "a" * 5000, "%2e%2e", "a%2fb", "%20", "x?", "x?y=1", "x/"]


@pytest.mark.parametrize("headers", [auth(READER), {}, {"authorization": "Bearer nope"}, {**auth(READER), **JSON}])
def test_an_odd_read_gets_the_general_answer(api, general, headers):
    for task_id in READS:
        for method in ["GET", "HEAD", "OPTIONS", "DELETE"]:
            assert_same(api, general, method, f"/api/v1/tasks/{task_id}", b'{"x": 1}', headers)


def test_a_read_of_a_task_is_the_general_answer(api, general):
    answers = []
    for app in (api, general):  # the same submission in each app, then its read, twice (the first opens the registry)
        created = app.client.post("/api/v1/tasks", content=BASE, headers=SUBMIT)
        path = f"/api/v1/tasks/{created.json()['task_id']}"
        answers += [app.client.get(path, headers=auth(READER)) for _ in range(2)]
    assert len({(a.status_code, VARYING.sub(b"X", a.content)) for a in answers}) == 1
    assert answers[0].status_code == 200


# Values of every JSON kind a client may put anywhere in a submission, hostile ones included.
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["free_form", "create_db", "", "\ud800", "a\x00", "schedule:1", "db1", "2026-01-01"]),
)
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=8)  # fmt: skip
FIELDS = ["task_type", "parameters", "idempotency_key", "priority", "start_at", "user_id", "after_task", "labels", "dry_run", "x"]
PRINTED = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=10)  # no control character, no surrogate
# Mostly valid submissions, hostile inside: what reaches the store and the answer built from it.
VALID_MOSTLY = st.fixed_dictionaries(
    {"task_type": st.just("free_form"), "parameters": st.dictionaries(st.text(max_size=8), VALUES, max_size=4)},
    optional={"labels": st.dictionaries(st.from_regex(r"[a-z][a-z0-9_/-]{0,8}", fullmatch=True), PRINTED, max_size=3),
              "idempotency_key": PRINTED.filter(bool), "user_id": PRINTED.filter(bool),
              "priority": st.integers(0, 4), "start_at": st.floats(0, 2e9)},
)  # fmt: skip
SUBMISSIONS = st.one_of(
    VALID_MOSTLY,
    st.fixed_dictionaries({"task_type": st.sampled_from(["free_form", "create_db"])},
                          optional={name: VALUES for name in FIELDS if name != "task_type"}),
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4),
    VALUES,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=SUBMISSIONS)
def test_any_json_value_gets_the_general_answer(api, general, body):
    encoded = json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")
    assert_same(api, general, "POST", "/api/v1/tasks", encoded, SUBMIT)
