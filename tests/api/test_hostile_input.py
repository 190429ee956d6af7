"""What a hostile (or careless) client can send: every case is refused at the edge with a 422
that names the path and the problem, encodes, and echoes nothing; or it is stored and readable.
Also: idempotency that tells the truth, readiness that probes writes, unreadable documents."""

from __future__ import annotations

import json
import sqlite3

import pytest
from fastapi.testclient import TestClient

from tests.api.support import SECRET, auth, open_api
from tests.support.builders import nested

H = {**auth(), "content-type": "application/json"}


def post_raw(api, body: str):
    return api.client.post("/api/v1/tasks", content=body.encode("utf-8"), headers=H)


def refused(response, path: str, words: str) -> None:
    assert response.status_code == 422, response.text
    fields = response.json()["error"]["fields"]
    assert any(f["path"].startswith(path) and words in f["message"] for f in fields), fields


def test_nesting_up_to_the_limit_is_stored_and_read_back_deeper_is_refused(api):
    ok = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "parameters": {"x": nested(31)}}, headers=auth())
    assert ok.status_code == 201, ok.text
    task = api.get(f"/api/v1/tasks/{ok.json()['task_id']}")
    assert task.status_code == 200 and task.json()["Parameters"]["x"] == nested(31)
    for depth in (32, 199, 950):  # 199: read back failed; 950: a 500 at submit
        body = '{"task_type": "free_form", "parameters": {"x": ' + "[" * depth + "]" * depth + "}}"
        refused(post_raw(api, body), "parameters.x[0]", "nested deeper than 32 levels")
    assert api.get("/api/v1/tasks").status_code == 200


@pytest.mark.parametrize(
    ("body", "path", "words"),
    [
        ('{"task_type": "free_form", "parameters": {"x": "\\ud800"}}', "parameters.x", "lone surrogate"),
        ('{"task_type": "create_db", "parameters": {"name": "\\ud800"}}', "parameters.name", "lone surrogate"),
        ('{"task_type": "free_form", "parameters": {"\\udfff": 1}}', "parameters", "lone surrogate"),
        ('{"task_type": "free_form", "parameters": {"n": 9223372036854775808}}', "parameters.n", "64-bit"),
        ('{"task_type": "free_form", "parameters": {"n": -9223372036854775809}}', "parameters.n", "64-bit"),
        ('{"task_type": "free_form", "parameters": {"n": NaN}}', "parameters.n", "not finite"),
        ('{"task_type": "free_form", "parameters": {"n": 1e999}}', "parameters.n", "not finite"),
        ('{"task_type": "free_form", "parameters": {"$where": 1}}', "parameters", '"$"'),
        ('{"task_type": "free_form", "parameters": {"a": {"b.c": 1}}}', "parameters.a", '"."'),
        ('{"task_type": "free_form", "parameters": {"a\\u0000": 1}}', "parameters", "NUL"),
    ],
)
def test_values_no_store_or_reader_can_hold_answer_422_naming_path_and_problem(api, body, path, words):
    response = post_raw(api, body)
    refused(response, path, words)
    response.text.encode("utf-8")  # the answer itself encodes (it was a 500 twice over)
    assert api.store.list_tasks() == []  # nothing written


def test_the_64_bit_bounds_themselves_are_taken(api):
    body = '{"task_type": "free_form", "parameters": {"hi": 9223372036854775807, "lo": -9223372036854775808}}'
    created = post_raw(api, body)
    assert created.status_code == 201
    assert api.get(f"/api/v1/tasks/{created.json()['task_id']}").json()["Parameters"] == {
        "hi": 2**63 - 1, "lo": -(2**63)}  # fmt: skip


def test_size_count_and_string_limits_come_from_settings(tmp_path):
    app, store, broker = open_api(tmp_path, input_max_bytes=4096, input_max_items=50, input_max_string=100)
    with TestClient(app) as client:
        def submit(parameters):
            return client.post("/api/v1/tasks", json={"task_type": "free_form", "parameters": parameters}, headers=auth())

        refused(submit({"s": "x" * 101}), "parameters.s", "longer than 100 characters")
        refused(submit({"l": list(range(51))}), "parameters", "more than 50 keys and items")
        refused(submit({f"k{i}": "y" * 90 for i in range(49)}), "parameters", "larger than 4096 bytes")
        assert submit({"s": "x" * 100, "l": list(range(40))}).status_code == 201
    store.close()
    broker.close()


def test_an_operator_reason_and_labels_are_checked_by_the_same_rules(api):
    task_id = api.create(task_type="free_form")["task_id"]
    answer = api.client.post(f"/api/v1/tasks/{task_id}/cancel", content=b'{"reason": "why \\ud800"}', headers=H)
    assert answer.status_code == 422 and answer.json()["error"]["fields"][0]["path"] == "reason"
    labels = post_raw(api, '{"task_type": "free_form", "labels": {"team": "\\ud800"}}')
    assert labels.status_code == 422 and labels.json()["error"]["fields"][0]["path"] == "labels.team"


def test_the_service_refuses_the_same_for_the_cli(api):
    """The CLI calls the same TaskService.submit: one edge, whoever submits."""
    from common.errors import InvalidInput

    service = api.client.app.state.baton.service
    with pytest.raises(InvalidInput) as raised:
        service.submit("free_form", {"x": nested(40)})
    assert raised.value.errors[0][1] == "nested deeper than 32 levels"


# --- idempotency -----------------------------------------------------------------------------


def submit(api, **body):
    return api.client.post("/api/v1/tasks", json={"task_type": "create_db", **body}, headers=auth())


def test_a_true_repeat_answers_200_and_a_different_request_409_naming_what_differs(api):
    base = {"idempotency_key": "order-9", "parameters": {"name": "db1", "admin_password": SECRET},
            "priority": 1, "labels": {"team": "a"}}  # fmt: skip
    first = submit(api, **base)
    assert first.status_code == 201
    # The defaults filled in (cpu: 1) are part of the request: giving them explicitly is the same.
    again = submit(api, **{**base, "parameters": {"name": "db1", "admin_password": SECRET, "cpu": 1}})
    assert again.status_code == 200 and again.json()["task_id"] == first.json()["task_id"]

    other = submit(api, **{**base, "parameters": {"name": "db2", "admin_password": SECRET + "-changed"},
                           "priority": 2, "labels": {"team": "b"}})  # fmt: skip
    assert other.status_code == 409
    error = other.json()["error"]
    assert error["code"] == "idempotency_conflict" and first.json()["task_id"] in error["message"]
    assert [f["path"] for f in error["fields"]] == ["parameters.admin_password", "parameters.name", "priority", "labels"]
    assert SECRET not in other.text and "db2" not in other.text  # names, never values

    other_type = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "idempotency_key": "order-9"},
                                 headers=auth())  # fmt: skip
    assert other_type.status_code == 409 and other_type.json()["error"]["fields"][0]["path"] == "task_type"
    assert len(api.store.list_tasks()) == 1


# --- readiness and unreadable documents ------------------------------------------------------


def test_readyz_says_not_ready_while_the_store_takes_no_writes(api):
    assert api.client.get("/readyz").status_code == 200
    holder = sqlite3.connect(api.store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock: reads still work
    try:
        response = api.client.get("/readyz")
        assert response.status_code == 503, response.text
        assert response.json()["checks"]["store"].startswith("failed")
        assert api.get("/api/v1/tasks").status_code == 200  # it said ready because reads worked
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert api.client.get("/readyz").status_code == 200


def test_an_unreadable_document_is_listed_as_such_and_answered_409_with_an_alarm(api):
    good = api.create(task_type="free_form")["task_id"]
    bad = api.create(task_type="free_form")["task_id"]
    with sqlite3.connect(api.store.path) as conn:  # what the API stored before its limits
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Parameters.x', json(?)) WHERE task_id = ?",
                     (json.dumps(nested(199)), bad))  # fmt: skip
    for _ in range(15):  # a dozen failed list calls used to lock every later write out
        page = api.get("/api/v1/tasks")
        assert page.status_code == 200
    items = {item["TaskId"]: item for item in page.json()["items"]}
    assert set(items) == {good, bad} and items[bad]["TaskMessage"].startswith("unreadable")
    one = api.get(f"/api/v1/tasks/{bad}")
    assert one.status_code == 409 and one.json()["error"]["code"] == "unreadable_task"
    alarms = api.get("/api/v1/alarms").json()["items"]
    assert [(a["Kind"], a["TaskId"]) for a in alarms] == [("unreadable_task", bad)]
    assert api.create(task_type="free_form")["created"] is True


def test_label_filters_are_bounded_like_labels(api):
    """A thousand label filters made one SQL statement past SQLite's limits: a 503."""
    labels = [f"k{i}=v" for i in range(33)]
    assert api.get("/api/v1/tasks", label=labels[:32]).status_code == 200
    too_many = api.get("/api/v1/tasks", label=labels * 30)
    assert too_many.status_code == 422 and too_many.json()["error"]["fields"][0]["path"] == "query.label"


def test_a_schedule_stores_only_what_a_submission_would_take(api):
    """A schedule's parameters are stored, then submitted at every tick: the same edge first."""
    body = {"name": "deep", "task_type": "free_form", "cron": "0 3 * * *",
            "parameters": {"x": nested(40), "s": "\ud800"}}  # fmt: skip
    response = api.client.post("/api/v1/schedules", content=json.dumps(body), headers=H)
    assert response.status_code == 422, response.text
    fields = {f["path"]: f["message"] for f in response.json()["error"]["fields"]}
    assert fields.pop("parameters.s") == "contains a lone surrogate (not valid Unicode)"
    assert [p.startswith("parameters.x[0]") and m.startswith("nested deeper") for p, m in fields.items()] == [True]
    assert api.get("/api/v1/schedules").json()["items"] == []


def test_a_bulk_action_lists_an_unreadable_task_as_refused_and_acts_on_the_rest(api):
    good = api.create(task_type="free_form", labels={"wave": "2"})["task_id"]
    bad = api.create(task_type="free_form", labels={"wave": "2"})["task_id"]
    with sqlite3.connect(api.store.path) as conn:
        conn.execute("UPDATE tasks SET doc = json_set(doc, '$.Priority', 'high') WHERE task_id = ?", (bad,))
    for dry_run in (True, False):
        answer = api.client.post("/api/v1/bulk/cancel", headers=auth(),
                                 json={"reason": "drill", "labels": {"wave": "2"}, "dry_run": dry_run})  # fmt: skip
        assert answer.status_code == 200, answer.text
        assert answer.json()["applied"] == [good]
        assert [r["task_id"] for r in answer.json()["refused"]] == [bad]


def test_a_different_request_that_loses_the_insert_race_is_a_409_too(api, monkeypatch):
    """Both requests looked the key up before either inserted: the loser compares with the winner."""
    first = submit(api, idempotency_key="race-1", parameters={"name": "db1"})
    assert first.status_code == 201
    monkeypatch.setattr(api.store, "get_by_idempotency_key", _none_once(api.store.get_by_idempotency_key))
    same = submit(api, idempotency_key="race-1", parameters={"name": "db1"})
    assert same.status_code == 200 and same.json()["task_id"] == first.json()["task_id"]
    monkeypatch.setattr(api.store, "get_by_idempotency_key", _none_once(api.store.get_by_idempotency_key))
    other = submit(api, idempotency_key="race-1", parameters={"name": "db2"})
    assert other.status_code == 409 and [f["path"] for f in other.json()["error"]["fields"]] == ["parameters.name"]


def _none_once(lookup):
    calls = []

    def looked_up(key):
        calls.append(key)
        return None if len(calls) == 1 else lookup(key)

    return looked_up
